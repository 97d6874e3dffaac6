// State files compared by content: state_json() lists jobs in hash-map
// order, which depends on the order they were seen in, so two engines that
// remember the same jobs may write them in different orders.
#pragma once

#include <jansson.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_check.hpp"

// The state file `text` (as the engine writes it), its jobs sorted by id.
inline json_t *parse_state_sorted(const std::string &text) {
    json_t *root = json_loads(text.c_str(), 0, nullptr);
    FUZZ_CHECK(root != nullptr);
    json_t *jobs = json_object_get(root, "jobs");
    FUZZ_CHECK(json_is_array(jobs));
    std::vector<json_t *> sorted;
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) sorted.push_back(json_incref(j));
    std::sort(sorted.begin(), sorted.end(), [](json_t *a, json_t *b) {
        return json_integer_value(json_array_get(a, 0)) < json_integer_value(json_array_get(b, 0));
    });
    json_array_clear(jobs);
    for (json_t *s : sorted) json_array_append_new(jobs, s);
    return root;
}

// Two state files hold the same; if not, both are printed.
inline bool same_state(const std::string &a, const std::string &b) {
    if (a == b) return true;
    json_t *x = parse_state_sorted(a), *y = parse_state_sorted(b);
    const bool same = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    if (!same) std::fprintf(stderr, "state written:  %s\nstate reloaded: %s\n", a.c_str(), b.c_str());
    return same;
}

// The plugin's pass durations: counters and their file (jansson).
#include "stats.hpp"
#include "json_ptr.hpp"

#include <jansson.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace gpupool {

namespace {


[[noreturn]] void bad(const std::string &what) { throw std::runtime_error(what); }

// Adds a new reference; encoding fails as a whole if any value is missing.
void set(json_t *o, const char *key, json_t *v) {
    if (!v || json_object_set_new(o, key, v) != 0) bad(std::string("cannot encode ") + key);
}

json_t *jint(uint64_t v) { return json_integer(static_cast<json_int_t>(v)); }

uint64_t get_u64(json_t *o, const std::string &where, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) bad(where + key + " must be an integer");
    if (json_integer_value(v) < 0) bad(where + key + " must not be negative");
    return static_cast<uint64_t>(json_integer_value(v));
}

json_t *get_obj(json_t *o, const std::string &where, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) bad(where + key + " must be an object");
    return v;
}

// The parts of PassTime by their keys in the file.
struct Part {
    const char *key;
    uint64_t PassTime::*field;
};
const Part kParts[] = {{"lock_wait", &PassTime::lock},
                       {"snapshot", &PassTime::snapshot},
                       {"evaluate", &PassTime::evaluate},
                       {"apply", &PassTime::apply}};

json_t *figures(uint64_t last, uint64_t max, uint64_t sum) {
    json_t *o = json_object();
    if (!o) return nullptr;
    JsonPtr hold(o);
    set(o, "last", jint(last));
    set(o, "max", jint(max));
    set(o, "sum", jint(sum));
    return hold.release();
}

}  // namespace

const std::vector<uint64_t> &pass_buckets() {
    static const std::vector<uint64_t> b{1000,   2500,   5000,    10000,   25000,   50000,  100000,
                                         250000, 500000, 1000000, 2500000, 5000000, 10000000};
    return b;
}

void PassStats::note(const PassTime &t, int64_t now) {
    if (buckets.empty())
        for (uint64_t le : pass_buckets()) buckets.emplace_back(le, 0);
    if (passes == 0) since = now;
    ++passes;
    last_end = now;
    last = t;
    auto add = [&](uint64_t PassTime::*f) {
        sum.*f += t.*f;
        if (t.*f > max.*f) max.*f = t.*f;
    };
    add(&PassTime::total);
    for (const Part &p : kParts) add(p.field);
    for (auto &[le, count] : buckets)
        if (t.total <= le) ++count;
}

std::string PassStats::to_json(int64_t now) const {
    JsonPtr root(json_object());
    if (!root) bad("cannot encode statistics");
    json_t *o = root.get();
    set(o, "version", json_integer(kStatsVersion));
    set(o, "time", json_integer(now));
    set(o, "passes", jint(passes));
    set(o, "since", json_integer(since));
    set(o, "last_end", json_integer(last_end));
    json_t *total = figures(last.total, max.total, sum.total);
    set(o, "duration_us", total);
    json_t *list = json_array();
    set(total, "buckets", list);
    std::vector<std::pair<uint64_t, uint64_t>> bounds = buckets;
    if (bounds.empty())  // no pass yet: every bucket at 0
        for (uint64_t le : pass_buckets()) bounds.emplace_back(le, 0);
    for (const auto &[le, count] : bounds) {
        json_t *b = json_object();
        if (!b || json_array_append_new(list, b) != 0) bad("cannot encode buckets");
        set(b, "le", jint(le));
        set(b, "count", jint(count));
    }
    json_t *parts = json_object();
    set(o, "parts_us", parts);
    for (const Part &p : kParts) set(parts, p.key, figures(last.*p.field, max.*p.field, sum.*p.field));
    char *text = json_dumps(o, JSON_COMPACT);
    if (!text) bad("cannot encode statistics");
    std::string out(text);
    std::free(text);
    return out + "\n";
}

PassStats PassStats::from_json(const std::string &text) {
    json_error_t jerr;
    JsonPtr root(json_loadb(text.data(), text.size(), 0, &jerr));
    if (!root) bad(std::string("not JSON: ") + jerr.text + " (line " + std::to_string(jerr.line) + ")");
    json_t *o = root.get();
    if (!json_is_object(o)) bad("not a JSON object");
    uint64_t version = get_u64(o, "", "version");
    if (version != kStatsVersion) bad("unsupported version " + std::to_string(version));
    PassStats s;
    s.written = static_cast<int64_t>(get_u64(o, "", "time"));
    s.passes = get_u64(o, "", "passes");
    s.since = static_cast<int64_t>(get_u64(o, "", "since"));
    s.last_end = static_cast<int64_t>(get_u64(o, "", "last_end"));
    json_t *total = get_obj(o, "", "duration_us");
    s.last.total = get_u64(total, "duration_us.", "last");
    s.max.total = get_u64(total, "duration_us.", "max");
    s.sum.total = get_u64(total, "duration_us.", "sum");
    json_t *list = json_object_get(total, "buckets");
    if (!json_is_array(list)) bad("duration_us.buckets must be an array");
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b) {
        const std::string where = "duration_us.buckets[" + std::to_string(i) + "].";
        if (!json_is_object(b)) bad(where.substr(0, where.size() - 1) + " must be an object");
        uint64_t le = get_u64(b, where, "le"), count = get_u64(b, where, "count");
        if (!s.buckets.empty() && le <= s.buckets.back().first) bad(where + "le must be larger than the one before");
        if (!s.buckets.empty() && count < s.buckets.back().second)
            bad(where + "count must not be less than the one before");
        if (count > s.passes) bad(where + "count must not be more than passes");
        s.buckets.emplace_back(le, count);
    }
    json_t *parts = get_obj(o, "", "parts_us");
    for (const Part &p : kParts) {
        json_t *f = get_obj(parts, "parts_us.", p.key);
        const std::string where = std::string("parts_us.") + p.key + ".";
        s.last.*p.field = get_u64(f, where, "last");
        s.max.*p.field = get_u64(f, where, "max");
        s.sum.*p.field = get_u64(f, where, "sum");
    }
    return s;
}

PassStats load_stats_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) bad(path + ": " + std::strerror(errno));
    constexpr size_t kMax = 1 << 20;
    std::string text(kMax + 1, '\0');
    in.read(&text[0], static_cast<std::streamsize>(text.size()));
    if (in.bad()) bad(path + ": read error");
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > kMax) bad(path + ": larger than 1 MiB");
    try {
        return PassStats::from_json(text);
    } catch (const std::runtime_error &e) {
        bad(path + ": " + e.what());
    }
}

}  // namespace gpupool

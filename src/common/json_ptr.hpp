// One owner for jansson values: the core, the gpupool command, the
// simulator and the tests hold each json_t they make through JsonPtr; and
// the one builder of arrays of objects they all write.
#pragma once

#include <jansson.h>

#include <memory>

namespace gpupool {

struct JsonDel {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDel>;

// A JSON array of an object per item, each filled by fill(object, item).
template <typename Items, typename Fill>
json_t *jarray_of(const Items &items, Fill fill) {
    json_t *a = json_array();
    for (const auto &item : items) {
        json_t *o = json_object();
        fill(o, item);
        json_array_append_new(a, o);
    }
    return a;
}

}  // namespace gpupool

// One owner for jansson values: the core, the gpupool command, the
// simulator and the tests hold each json_t they make through JsonPtr.
#pragma once

#include <jansson.h>

#include <memory>

namespace gpupool {

struct JsonDel {
    void operator()(json_t *j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDel>;

}  // namespace gpupool

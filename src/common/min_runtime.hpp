// MinRuntime (policy.md R6): a preemptible job that started less than its
// pool's MinRuntime ago is no victim yet.  The one home of that arithmetic:
// the engine's preemption checks, `gpupool why` and the simulator ask here.
#pragma once

#include <cstdint>

#include "usage.hpp"

namespace gpupool {

// When MinRuntime stops protecting a job started at `start`; 0 when it does
// not protect it at `now` (none set, or already over).  The simulator's
// clock starts at 0, so a start of 0 is a time like any other.
inline int64_t min_runtime_end(int64_t min_runtime, int64_t start, int64_t now) {
    if (min_runtime <= 0) return 0;
    const int64_t end = sat_add(start, min_runtime);
    return now < end ? end : 0;
}

}  // namespace gpupool

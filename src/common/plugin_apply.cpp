#include "plugin_apply.hpp"

#include "gpupool.h"

namespace gpupool {

bool waits_for_pass(int admission, const PlaceFacts &f) {
    if (admission == GP_HELD_QUOTA) return false;  // held already
    if (f.no_room) return true;
    // The user's throttle replaced gpupool's cap; until a pass caps it
    // again, the scheduler would start every task that fits.
    if (f.throttle) return admission == GP_ADMIT_QUOTA;
    // At submit Slurm sets the priority before it makes a job array record
    // (job_allocate, then _create_job_array), and tests whether an
    // ordinary job may start now (job_independent sets its begin time)
    // but not an array: an untested new job may be an array whose tasks
    // the scheduler would all start before a pass caps its throttle.
    return admission == GP_ADMIT_QUOTA && f.submit && !f.array && f.untested;
}

const char *starting_reason() { return GP_HOLD_PREFIX "Starting"; }

bool cap_array(ArrayThrottle &t, uint32_t limit, bool lower_only) {
    const uint32_t old = t.max_run_tasks;
    uint32_t user = old;
    if (t.capped) {
        // Changed by its user or an admin since gpupool set it.
        if (old != t.our_max) t.user_max = old;
        user = t.user_max;
    }
    uint32_t want = limit;
    if (user && (!want || user < want)) want = user;
    if (t.capped && lower_only && t.our_max && (!want || t.our_max < want)) want = t.our_max;
    if (want == user) {
        // The user's own throttle is the tighter: no cap of gpupool's.
        t.capped = false;
        t.user_max = t.our_max = 0;
    } else {
        if (!t.capped) {
            t.capped = true;
            t.user_max = user;
        }
        t.our_max = want;
    }
    t.max_run_tasks = want;
    if (old == want) return false;
    return !want || (old && want > old);
}

}  // namespace gpupool

// How a plugin applies an engine result where it depends on what only
// Slurm knows: whether a job placed between passes waits for the next pass,
// and the throttle of a job array record.  Decided here, in the core, so
// the C shims only apply it; no rule of who runs or is preempted lives here.
#pragma once

#include <cstdint>

namespace gpupool {

// What the plugin knows of a job placed between passes (GP_PLACE_* bits).
struct PlaceFacts {
    bool submit = false;    // Slurm sets its first priority
    bool array = false;     // already a job array record
    bool untested = false;  // Slurm has not found it may start now
    bool no_room = false;   // admitted, but no partition Slurm may try has room
    bool throttle = false;  // an array record whose throttle is being changed
};

// Must a job admitted as `admission` (gp_admission_t) wait for the next pass?
bool waits_for_pass(int admission, const PlaceFacts &f);

// The text of that hold.
const char *starting_reason();

// A job array record's throttle, as gpupool caps it (gp_array_throttle_t).
struct ArrayThrottle {
    uint32_t max_run_tasks = 0;  // the record's throttle, 0 = none
    bool capped = false;         // the throttle is gpupool's cap
    uint32_t user_max = 0;       // the user's throttle while capped
    uint32_t our_max = 0;        // the cap gpupool set
};

// Cap `t` at `limit` running tasks (0: no cap of gpupool's, the user's
// throttle goes back); `lower_only`: never above the cap set before.
// Returns true if more tasks may start than before.
bool cap_array(ArrayThrottle &t, uint32_t limit, bool lower_only);

}  // namespace gpupool

// What preemption decides from facts only Slurm has: whether a job's tier
// lets it sort before another's in the job queue, how a victim is stopped
// (R7) and its grace time.  Decided here so the preempt shim only gives
// those facts and applies the answer.
#pragma once

#include <cstdint>

namespace gpupool {

// R4's tier rule alone: a higher tier may preempt a lower one, and only a
// preemptible one.  (The engine's verdict adds pools and quota.)
bool tier_preempts(uint32_t preemptor_priority, uint32_t preemptee_priority, bool preemptee_preemptible);

// R7: the GP_MODE_* that stops a victim of a tier that is `preemptible`
// with PreemptMode `tier_mode` (GP_MODE_DEFAULT: slurm.conf's,
// `site_mode`); a job that is not `requeueable` is cancelled instead of
// requeued.  Never preempted (NP tier, no mode): GP_MODE_OFF.
int preempt_mode(bool preemptible, int tier_mode, int site_mode, bool requeueable);

// A victim's grace time: the tier's GraceTime (`tier_grace` >= 0), else
// its QOS's.  grace_from_qos: whether the QOS's is needed at all.
bool grace_from_qos(int32_t tier_grace);
uint32_t grace_time(int32_t tier_grace, uint32_t qos_grace);

}  // namespace gpupool

#include "preemption.hpp"

#include "gpupool.h"

namespace gpupool {

bool tier_preempts(uint32_t preemptor_priority, uint32_t preemptee_priority, bool preemptee_preemptible) {
    // NP jobs are never preempted (R4), so no tier sorts before theirs for
    // preemption's sake: they keep their place by priority alone.
    return preemptee_preemptible && preemptor_priority > preemptee_priority;
}

namespace {
bool stops(int mode) { return mode == GP_MODE_REQUEUE || mode == GP_MODE_CANCEL || mode == GP_MODE_SUSPEND; }
}  // namespace

int preempt_mode(bool preemptible, int tier_mode, int site_mode, bool requeueable) {
    if (!preemptible) return GP_MODE_OFF;  // NP tiers are never preempted
    // R7: PreemptMode per tier, defaulting to slurm.conf's (which may be OFF).
    int mode = stops(tier_mode) ? tier_mode : site_mode;
    if (!stops(mode)) return GP_MODE_OFF;
    // R7: "sbatch --no-requeue opts a job out, and it is cancelled
    // instead" (also JobRequeue=0 and jobs that are not batch jobs).  Slurm
    // would kill it after the requeue failed; saying so avoids the attempt.
    if (mode == GP_MODE_REQUEUE && !requeueable) return GP_MODE_CANCEL;
    return mode;
}

bool grace_from_qos(int32_t tier_grace) { return tier_grace < 0; }

uint32_t grace_time(int32_t tier_grace, uint32_t qos_grace) {
    return grace_from_qos(tier_grace) ? qos_grace : static_cast<uint32_t>(tier_grace);
}

}  // namespace gpupool

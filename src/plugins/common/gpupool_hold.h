/*
 * gpupool_hold.h - gpupool's holds on pending jobs: is this one gpupool's,
 * hold it, release it.  priority/gpupool holds and releases, its snapshot
 * (also preempt/gpupool's) tells gpupool's holds from a user's or an
 * admin's, job_submit/gpupool hands a hold over to the user or admin who
 * asks for one.
 *
 * A job gpupool holds has priority 0, reason WAIT_HELD and a reason text
 * starting with GP_HOLD_PREFIX (gpupool.h), which squeue shows.  A hold by
 * its user or an admin sets direct_set_prio (scontrol hold) or
 * WAIT_HELD_USER, and gpupool never undoes it.
 *
 * Every function needs the slurmctld job lock (write to change a job).
 */
#ifndef GPUPOOL_HOLD_H
#define GPUPOOL_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "gpupool_compat.h"

#include "gpupool.h"

/*
 * Is this pending job held by gpupool, and by nobody else?  WAIT_HELD with
 * gpupool's reason text, or with none after "scontrol release" wiped it and
 * the scheduler put WAIT_HELD back (then only while this plugin remembers
 * holding it: after a restart holds are known by their text).
 */
extern bool gps_hold_is_ours(job_record_t *job_ptr);

/*
 * Hold the pending job with `reason` (GP_HOLD_PREFIX...): priority 0,
 * WAIT_HELD, the text.  Returns true if anything changed.
 */
extern bool gps_hold(job_record_t *job_ptr, const char *reason);

/*
 * Take gpupool's hold's reason off the job (its caller sets the priority).
 * A job whose begin time is still ahead says BeginTime at once (what Slurm
 * says when it next tests the job), not None: nobody may take a job that
 * cannot start yet for a runnable one.
 */
extern void gps_hold_release(job_record_t *job_ptr);

/*
 * Turn gpupool's hold on a pending job into a user's (WAIT_HELD_USER) or
 * an admin's (WAIT_HELD) hold, as Slurm's own hold leaves a job: priority
 * 0, direct_set_prio, no reason text.  gpupool never undoes such a hold.
 */
extern void gps_hold_give(job_record_t *job_ptr, uint32_t reason);

/* Set the job's priority (and any per-partition copies of it). */
extern void gps_set_priority(job_record_t *job_ptr, uint32_t prio);

/* Forget holds of jobs that are gone or no longer held (job write lock). */
extern void gps_hold_prune(void);

/* Free what is kept (fini). */
extern void gps_hold_fini(void);

#endif /* GPUPOOL_HOLD_H */

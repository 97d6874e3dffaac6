/*
 * job_digest.h - one number for what a pass of priority/gpupool reads of
 * slurmctld's job records, so that the agent can skip a pass that would
 * find nothing new.
 *
 * The agent runs a pass when last_job_update moves, since slurmctld calls
 * no priority hook for many job changes (a pending job cancelled, a held
 * job's partition, QOS or GRES updated, a user's hold).  But slurmctld's
 * scheduler also moves last_job_update at every cycle for the jobs of a
 * partition it finds full (job_scheduler.c, _failed_partition): with a
 * full cluster that meant a pass every 2-3 s instead of one per
 * RecalcInterval.  A pass woken only by last_job_update now first compares
 * this digest with the one the last pass left; equal means every job is
 * as that pass saw and wrote it (times going by are the RecalcInterval
 * pass's business, as before).
 *
 * Caller holds the slurmctld job lock (read is enough) and is not inside
 * an iteration of job_list.
 */
#ifndef GPUPOOL_JOB_DIGEST_H
#define GPUPOOL_JOB_DIGEST_H

#include <stdint.h>


/*
 * Per job: id, state, priority, admin-set priority, QOS id, partition
 * (name and record), submit and start time, restart count, the TRES it
 * asks (pending) or holds, its array record, and, for a held job, whether
 * the hold is gpupool's (gps_hold_is_ours).  Order of job_list included.
 */
extern uint64_t jobs_digest(void);

#endif

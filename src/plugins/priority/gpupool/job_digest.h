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
 * Caller holds the slurmctld job and partition locks (read is enough: a
 * pending job's size reads its partitions, gps_job_size) and is not
 * inside an iteration of job_list.
 */
#ifndef GPUPOOL_JOB_DIGEST_H
#define GPUPOOL_JOB_DIGEST_H

#include <stdint.h>

#include "gpupool_slurm.h"

/*
 * Per job: id, state, priority, admin-set priority, QOS id, partition
 * (name and record), submit time, start time (not pending), restart
 * count, the GPUs it holds as gps_job_gpus counts them with `tres`
 * (running) or its size as gps_job_size reads it (pending), its array
 * record, and, for a held job, whether the hold is
 * gpupool's (gps_hold_is_ours) and has its text.  Order of job_list
 * included.  QOS names not yet known are the agent's business (a pass
 * that met one leaves no digest).
 */
extern uint64_t jobs_digest(const gps_tres_t *tres);

#endif

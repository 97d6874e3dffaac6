/*
 * start_parts.h - where Slurm may start a pending job that lists several
 * partitions (`sbatch -p pool1,pool2`): only in those gpupool admits it to
 * (R2: a pool whose quota it fits, or a partition gpupool does not manage).
 *
 * Slurm 22.05 tries a multi-partition job in each partition of its
 * part_ptr_list (the scheduler's and backfill's job queues have one record
 * per partition) and has no hook to refuse one partition of a job, so
 * priority/gpupool narrows that list to the admitted partitions.  The
 * user's list is never lost: it stays in job_ptr->partition (what squeue,
 * scontrol, the state file and a reconfigure read) while the job pends.
 * Slurm rewrites that string from the list when the job starts; the user's
 * list is kept here until the job's list and string are given back.
 *
 * Every function needs the slurmctld job write lock.  Partitions are only
 * taken out of a job's list unless the caller also holds the partition
 * read lock (`part_locked`), which finding a partition by name needs.
 */
#ifndef GPUPOOL_START_PARTS_H
#define GPUPOOL_START_PARTS_H

#include <stdbool.h>

#include "gpupool_compat.h"

#include "gpupool.h"

/*
 * Narrow (or widen again) the pending job's partitions to those the
 * engine's result `r` (not held) admits it to.  Returns false when it may
 * start in none of the partitions it has now and none can be added without
 * the partition lock: the caller keeps it from starting until a pass.
 * *changed is set when the job changed.
 */
extern bool parts_apply(job_record_t *job_ptr, const gp_pending_result_t *r,
			bool part_locked, bool *changed);

/*
 * A job gpupool holds, or admits everywhere: give it back every partition
 * it lists (with the partition lock; without, it stays as it is).
 */
extern void parts_unrestrict(job_record_t *job_ptr, bool part_locked,
			     bool *changed);

/*
 * The job started, ended or was requeued: Slurm rewrote its partition
 * string from the narrowed list; put the user's list back (the running
 * partition first, as Slurm writes it), and with `part_locked` the list.
 */
extern void parts_left_queue(job_record_t *job_ptr, bool part_locked);

/*
 * After a pass (job write and partition read lock held): give back the
 * lists of jobs that left the queue, forget jobs that are gone.
 */
extern void parts_sync(void);

/*
 * Narrow again every job narrowed before, from the engine's results:
 * "scontrol reconfigure" rebuilds every job's list from its string.  Takes
 * the job write and partition read locks itself: call with none held.
 */
extern void parts_reapply(void);

/* Free what is kept (fini). */
extern void parts_fini(void);

#endif /* GPUPOOL_START_PARTS_H */

/*
 * job_end.c - a job ended, was cancelled or was requeued
 * (priority_p_job_end, under the job write lock): priority/basic's
 * accounting duty, then its GPUs go back to the engine, which redoes
 * admission at once, so a job held for quota may start in the very next
 * scheduling pass.
 */
#include "config.h"

#include <time.h>

#include "src/common/log.h"

#include "priority_gpupool.h"
#include "start_parts.h"

/* used -= unused, never below 0, for each TRES. */
static void _give_back(uint64_t *used, const uint64_t *unused)
{
	int i;

	for (i = 0; i < slurmctld_tres_cnt; i++)
		used[i] -= MIN(unused[i], used[i]);
}

/* priority/basic's accounting duty: give back the unused run seconds. */
static void _return_unused_run_secs(job_record_t *job_ptr)
{
	uint64_t time_limit_secs = (uint64_t) job_ptr->time_limit * 60;
	slurmdb_assoc_rec_t *assoc_ptr;
	uint64_t *unused;
	int i;
	assoc_mgr_lock_t locks = { .assoc = WRITE_LOCK, .qos = WRITE_LOCK };

	if (!job_ptr->tres_alloc_cnt || (slurmctld_tres_cnt <= 0))
		return;
	unused = xcalloc(slurmctld_tres_cnt, sizeof(uint64_t));
	for (i = 0; i < slurmctld_tres_cnt; i++) {
		if (job_ptr->tres_alloc_cnt[i] == NO_CONSUME_VAL64)
			continue;
		unused[i] = job_ptr->tres_alloc_cnt[i] * time_limit_secs;
	}

	assoc_mgr_lock(&locks);
	if (job_ptr->qos_ptr && job_ptr->qos_ptr->usage) {
		slurmdb_qos_rec_t *qos_ptr = job_ptr->qos_ptr;
		gps_qos_return_run_secs(job_ptr, qos_ptr, unused,
					slurmctld_tres_cnt);
		_give_back(qos_ptr->usage->grp_used_tres_run_secs, unused);
	}
	assoc_ptr = job_ptr->assoc_ptr;
	while (assoc_ptr && assoc_ptr->usage) {
		_give_back(assoc_ptr->usage->grp_used_tres_run_secs, unused);
		assoc_ptr = assoc_ptr->usage->parent_assoc_ptr;
	}
	assoc_mgr_unlock(&locks);
	xfree(unused);
}

/*
 * Slurm also ends a job's accounting (acct_policy_job_fini, which calls
 * this hook) where the job goes on or ended before:
 *  - before it resizes a running job (job_pre_resize_acctg; begun again
 *    after): JOB_RESIZING;
 *  - for a job that is pending: 26.05's test of a heterogeneous submit's
 *    limits (_het_job_val_rem_each), and 22.05's reconfigure, which ends
 *    every completing job again, a requeued one too
 *    (_sync_nodes_to_comp_job);
 *  - backfill's test of a pending heterogeneous job's limits
 *    (_het_job_limit_check begins and ends each component, with its state
 *    set to COMPLETE and end_time = start_time, then may start the job).
 * Such a job keeps its GPUs or its admission: were its end taken as one,
 * the quota it holds would go to the jobs behind it.  Only a job the
 * engine holds as pending can be one of these; but that also holds of a
 * job that started since the last pass, whose real end must free its
 * quota at once (else Slurm gives its GPUs to a lower tier's job, which is
 * then preempted back out).  A requeue reaches the hook as pending too, a
 * real end, of a job the engine holds as running.
 */
static bool _goes_on(job_record_t *job_ptr)
{
	gp_pending_result_t r;
	bool het_tested = job_ptr->het_job_id &&
			  (job_ptr->het_job_id != NO_VAL) &&
			  (job_ptr->end_time <= job_ptr->start_time);

	if (IS_JOB_RESIZING(job_ptr))
		return true;
	if (!IS_JOB_PENDING(job_ptr) && !het_tested)
		return false;
	return gp_engine_pending_result(gp_shared_engine(), job_ptr->job_id,
					&r) == GP_OK;
}

extern void gpp_job_end(job_record_t *job_ptr, bool in_ctld)
{
	time_t now = time(NULL);
	int rc, released;

	_return_unused_run_secs(job_ptr);
	if (!in_ctld)
		return;
	if (_goes_on(job_ptr)) {
		debug2("gpupool: JobId=%u: accounting ended, not the job: left to the next pass",
		       job_ptr->job_id);
		gpp_agent_wake();
		return;
	}

	parts_left_queue(job_ptr, false);
	rc = gp_engine_job_ended(gp_shared_engine(), job_ptr->job_id,
				 (int64_t) now);
	if (rc > 0) {
		released = gpp_results_apply_changed(now);
		if (released) {
			debug("gpupool: JobId=%u ended: %d of %d changed job(s) admitted",
			      job_ptr->job_id, released, rc);
			queue_job_scheduler();
		}
	} else if (rc < 0) {
		error("gpupool: JobId=%u end: %s", job_ptr->job_id,
		      gp_status_str(-rc));
	}
	gpp_agent_wake();
}

/*
 * results.c - engine results written back to pending jobs: priority,
 * gpupool's hold and its reason, the partitions a job may start in and the
 * throttle of an array record.  What to write is the core's; this file
 * only applies it, under the job write lock.
 */
#include "config.h"

#include <string.h>

#include "src/common/log.h"

#include "gpupool_hold.h"
#include "gpupool_slurm.h"
#include "priority_gpupool.h"
#include "start_parts.h"

/*
 * Who runs the next pass when a result cannot be applied until then: the
 * agent, which calls into this file and registers itself, so this file
 * needs nothing of the agent's.
 */
static void (*_want_pass)(void) = NULL;

extern void gpp_results_on_want_pass(void (*want_pass)(void))
{
	_want_pass = want_pass;
}

/*
 * The reason a held job shows: gpupool's, and the partition limit that
 * keeps it pending anyway (`GpuPoolQuota:pool1 1/2, PartitionTimeLimit`),
 * as backfill tests it, so that its user sees what to change.  Partitions
 * are read only under their lock; without it the text the last pass wrote
 * stays.
 */
static const char *_held_reason(job_record_t *job_ptr, const char *ours,
				bool part_locked, char *buf, size_t len)
{
	size_t n = strlen(ours);
	int why;

	if (!part_locked) {
		if (job_ptr->state_desc && !strncmp(job_ptr->state_desc, ours, n) &&
		    (job_ptr->state_desc[n] == ','))
			return job_ptr->state_desc;
		return ours;
	}
	if (!job_ptr->part_ptr || !job_ptr->details ||
	    gps_several_tries(job_ptr))
		return ours;
	why = job_limits_check(&job_ptr, true);
	if (why == WAIT_NO_REASON)
		return ours;
	snprintf(buf, len, "%s, %s", ours, gps_reason_string(why));
	return buf;
}

extern int gpp_results_apply(job_record_t *job_ptr,
			     const gp_pending_result_t *res, bool ours,
			     bool part_locked, bool *changed)
{
	gp_pending_result_t r = *res;
	uint32_t prio = MAX(r.priority, 1);
	int raised;

	if (r.admission == GP_HELD_QUOTA) {
		parts_unrestrict(job_ptr, part_locked, changed);
	} else if (!parts_apply(job_ptr, &r, part_locked, changed) &&
		   gp_hold_until_pass(&r, GP_PLACE_NO_ROOM)) {
		/* Admitted where its list no longer reaches: the next pass. */
		if (_want_pass)
			_want_pass();
	}
	if (r.admission == GP_HELD_QUOTA) {
		char text[sizeof(r.reason) + 32];
		const char *reason = _held_reason(job_ptr, r.reason,
						  part_locked, text,
						  sizeof(text));

		if (gps_hold(job_ptr, reason))
			*changed = true;
		if (!ours)
			debug("gpupool: hold JobId=%u: %s", job_ptr->job_id,
			      reason);
		return 0;
	}
	raised = gpp_throttle_apply(job_ptr, &r, false, changed);

	if (ours) {
		gps_hold_release(job_ptr);
		*changed = true;
	}
	if (job_ptr->priority != prio) {
		gps_set_priority(job_ptr, prio);
		*changed = true;
	}
	if (ours)
		debug("gpupool: release JobId=%u priority %u",
		      job_ptr->job_id, job_ptr->priority);
	return (ours || raised) ? 1 : 0;
}

extern bool gpp_results_writable(job_record_t *job_ptr, bool *ours)
{
	*ours = gps_hold_is_ours(job_ptr);
	if (!IS_JOB_PENDING(job_ptr) || IS_JOB_REVOKED(job_ptr))
		return false;
	if (*ours)
		return true;
	if (job_ptr->priority == 0)	/* held by its user, an admin, Slurm */
		return false;
	if (job_ptr->direct_set_prio)	/* priority set by an admin */
		return false;
	return true;
}

extern int gpp_results_apply_pass(time_t now, int *held)
{
	gp_engine_t *e = gp_shared_engine();
	list_itr_t *it;
	job_record_t *job_ptr;
	int released = 0;
	bool changed = false;

	*held = 0;
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		gp_pending_result_t r;
		bool ours;

		if (!gpp_results_writable(job_ptr, &ours))
			continue;
		if (gp_engine_pending_result(e, job_ptr->job_id, &r) != GP_OK)
			continue;	/* our hold, no result: not seen yet */
		released += gpp_results_apply(job_ptr, &r, ours, true,
					      &changed);
		if (r.admission == GP_HELD_QUOTA)
			(*held)++;
	}
	list_iterator_destroy(it);
	/* Jobs that left the queue get their partitions back. */
	parts_sync();
	gps_hold_prune();
	gpp_throttle_prune(&changed);
	if (changed)
		last_job_update = now;
	return released;
}

extern int gpp_results_apply_changed(time_t now)
{
	gp_engine_t *e = gp_shared_engine();
	size_t i, n = gp_engine_changed_count(e);
	int released = 0;
	bool changed = false;

	/* Only the jobs the job end changed: not the whole queue. */
	for (i = 0; i < n; i++) {
		gp_pending_result_t r;
		job_record_t *job_ptr;
		bool ours;

		if (gp_engine_changed_at(e, i, &r) != GP_OK)
			continue;
		if (!(job_ptr = find_job_record(r.job_id)))
			continue;
		if (!gpp_results_writable(job_ptr, &ours))
			continue;
		released += gpp_results_apply(job_ptr, &r, ours, false,
					      &changed);
	}
	if (changed)
		last_job_update = now;
	return released;
}

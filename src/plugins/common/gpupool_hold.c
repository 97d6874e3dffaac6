/*
 * gpupool_hold.c - gpupool's holds on pending jobs (see gpupool_hold.h).
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "src/common/xstring.h"

#include "gpupool_hold.h"
#include "gpupool_ids.h"
#include "gpupool_rules.h"

/*
 * Ids of pending jobs this plugin held, sorted; protected by the slurmctld
 * job lock (written only under the job write lock).  Only
 * priority/gpupool holds, so the other plugins' copies stay empty.
 */
static uint32_t *held_ids = NULL;
static size_t held_cnt = 0, held_cap = 0;

static size_t _held_find(uint32_t id, bool *found)
{
	return gps_ids_find(held_ids, held_cnt, sizeof(*held_ids), id, found);
}

static void _held_add(uint32_t id)
{
	bool found;
	size_t pos = _held_find(id, &found);

	if (!found)
		(void) gps_ids_insert((void **) &held_ids, &held_cnt, &held_cap,
				      sizeof(*held_ids), pos, id);
}

static void _held_del(uint32_t id)
{
	bool found;
	size_t pos = _held_find(id, &found);

	if (found)
		gps_ids_remove(held_ids, &held_cnt, sizeof(*held_ids), pos);
}

extern bool gps_hold_is_ours(job_record_t *job_ptr)
{
	bool found;

	if (!gpr_hold_may_be_ours(IS_JOB_PENDING(job_ptr), job_ptr->priority,
				  job_ptr->direct_set_prio,
				  job_ptr->state_reason))
		return false;
	(void) _held_find(job_ptr->job_id, &found);
	return found || gpr_hold_text_is_ours(job_ptr->state_desc);
}

extern void gps_set_priority(job_record_t *job_ptr, uint32_t prio)
{
	uint32_t *prio_array = gps_job_priority_array(job_ptr);

	job_ptr->priority = prio;
	/* Only multifactor builds priority_array; keep any left over equal. */
	if (prio_array) {
		size_t i, n = xsize(prio_array) / sizeof(*prio_array);
		for (i = 0; i < n; i++)
			prio_array[i] = prio;
	}
}

extern bool gps_hold(job_record_t *job_ptr, const char *reason)
{
	bool changed = false;

	if (job_ptr->priority != 0) {
		gps_set_priority(job_ptr, 0);
		changed = true;
	}
	if (job_ptr->state_reason != WAIT_HELD) {
		job_ptr->state_reason = WAIT_HELD;
		changed = true;
	}
	if (xstrcmp(job_ptr->state_desc, reason)) {
		xfree(job_ptr->state_desc);
		job_ptr->state_desc = xstrdup(reason);
		changed = true;
	}
	_held_add(job_ptr->job_id);
	return changed;
}

extern void gps_hold_release(job_record_t *job_ptr)
{
	if (job_ptr->details && (job_ptr->details->begin_time > time(NULL)))
		job_ptr->state_reason = WAIT_TIME;
	else
		job_ptr->state_reason = WAIT_NO_REASON;
	xfree(job_ptr->state_desc);
	_held_del(job_ptr->job_id);
}

extern void gps_hold_give(job_record_t *job_ptr, uint32_t reason)
{
	gps_set_priority(job_ptr, 0);
	job_ptr->direct_set_prio = 1;
	job_ptr->state_reason = reason;
	xfree(job_ptr->state_desc);
	_held_del(job_ptr->job_id);
}

extern void gps_hold_prune(void)
{
	size_t i, k = 0;

	for (i = 0; i < held_cnt; i++) {
		job_record_t *j = find_job_record(held_ids[i]);
		if (j && IS_JOB_PENDING(j) && (j->priority == 0))
			held_ids[k++] = held_ids[i];
	}
	held_cnt = k;
}

extern void gps_hold_fini(void)
{
	xfree(held_ids);
	held_cnt = held_cap = 0;
}

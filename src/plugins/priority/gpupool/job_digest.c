/*
 * job_digest.c - one number for what a pass reads of slurmctld's job
 * records (see job_digest.h).
 */
#include "config.h"

#include <stdint.h>

#include "slurm/slurm.h"

#include "gpupool_compat.h"
#include "gpupool_hold.h"
#include "job_digest.h"

/* Defined by slurmctld (or by the plugin outside it). */
extern list_t *job_list;
extern int slurmctld_tres_cnt;

typedef struct {
	uint64_t h;
} digest_t;

/*
 * FNV-1a over 64-bit words: each step is a bijection of the running value
 * for a given word, so any one changed word changes the result.
 */
static inline uint64_t _mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * UINT64_C(0x100000001b3);
}

static uint64_t _mix_str(uint64_t h, const char *s)
{
	uint64_t w = 0;
	int n = 0;

	if (!s)
		return _mix(h, UINT64_C(0xffffffffffffffff));
	for (; *s; s++) {
		w = (w << 8) | (unsigned char) *s;
		if (++n == 8) {
			h = _mix(h, w);
			w = 0;
			n = 0;
		}
	}
	return _mix(_mix(h, w), (uint64_t) n);
}

static int _digest_job(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	digest_t *d = arg;
	uint64_t h = d->h, *tres;
	int i;

	h = _mix(h, ((uint64_t) job_ptr->job_id << 32) | job_ptr->job_state);
	h = _mix(h, ((uint64_t) job_ptr->priority << 32) |
		    ((uint64_t) job_ptr->direct_set_prio << 16) |
		    job_ptr->restart_cnt);
	h = _mix(h, job_ptr->qos_id);
	h = _mix(h, (uint64_t) job_ptr->start_time);
	/*
	 * A pending job listing several partitions is read by its string:
	 * the scheduler moves its part_ptr from one to the next every cycle.
	 */
	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->part_ptr_list)
		h = _mix(h, (uint64_t) (uintptr_t) job_ptr->part_ptr);
	h = _mix_str(h, job_ptr->partition);
	if (job_ptr->details)
		h = _mix(h, (uint64_t) job_ptr->details->submit_time);
	tres = IS_JOB_PENDING(job_ptr) ? job_ptr->tres_req_cnt :
					 job_ptr->tres_alloc_cnt;
	for (i = 0; tres && (i < slurmctld_tres_cnt); i++)
		h = _mix(h, tres[i]);
	h = _mix(h, ((uint64_t) job_ptr->array_job_id << 32) |
		    job_ptr->array_task_id);
	if (job_ptr->array_recs)
		h = _mix(h, ((uint64_t) job_ptr->array_recs->task_cnt << 32) |
			    job_ptr->array_recs->max_run_tasks);
	if (IS_JOB_PENDING(job_ptr) && (job_ptr->priority == 0))
		h = _mix(h, gps_hold_is_ours(job_ptr) ? 1 : 2);
	d->h = h;
	return 0;
}

extern uint64_t jobs_digest(void)
{
	digest_t d = { .h = UINT64_C(0xcbf29ce484222325) };

	if (!job_list)
		return 0;
	/* list_for_each: it nests where an iterator may not (25.11). */
	(void) list_for_each(job_list, _digest_job, &d);
	return d.h;
}

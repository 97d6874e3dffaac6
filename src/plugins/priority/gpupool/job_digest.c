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

typedef struct {
	uint64_t h;
	const gps_tres_t *tres;
} digest_t;

/*
 * Each word goes through splitmix64's finaliser before it is folded in, so
 * that changes to several words (or to high bits only) do not cancel out;
 * the fold is a bijection of the running value for a given word.
 */
static inline uint64_t _mix(uint64_t h, uint64_t v)
{
	v ^= v >> 30;
	v *= UINT64_C(0xbf58476d1ce4e5b9);
	v ^= v >> 27;
	v *= UINT64_C(0x94d049bb133111eb);
	v ^= v >> 31;
	return (h ^ v) * UINT64_C(0x100000001b3) + UINT64_C(0x9e3779b97f4a7c15);
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
	uint64_t h = d->h;
	bool pending = IS_JOB_PENDING(job_ptr);

	h = _mix(h, ((uint64_t) job_ptr->job_id << 32) | job_ptr->job_state);
	h = _mix(h, ((uint64_t) job_ptr->priority << 32) |
		    ((uint64_t) job_ptr->direct_set_prio << 16) |
		    job_ptr->restart_cnt);
	h = _mix(h, job_ptr->qos_id);
	/*
	 * A pending job's start_time is backfill's expected start, moved
	 * every backfill cycle; passes read it of running jobs only.
	 */
	if (!pending)
		h = _mix(h, (uint64_t) job_ptr->start_time);
	/*
	 * A pending job listing several partitions is read by its string:
	 * the scheduler moves its part_ptr from one to the next every cycle.
	 */
	if (!pending || !job_ptr->part_ptr_list)
		h = _mix(h, (uint64_t) (uintptr_t) job_ptr->part_ptr);
	h = _mix_str(h, job_ptr->partition);
	if (job_ptr->details)
		h = _mix(h, (uint64_t) job_ptr->details->submit_time);
	/*
	 * What the pass reads of its size: a pending job's GPUs, nodes,
	 * whole-node flag and CPU and memory ask as gps_job_fill gives them
	 * (scontrol update NumNodes=, OverSubscribe=, a partition made
	 * exclusive change the GPUs it is admitted at); a running job's
	 * GPUs (the TRES arrays or the GRES lists).
	 */
	if (pending) {
		gp_job_t size;

		memset(&size, 0, sizeof(size));
		gps_job_size(job_ptr, GP_JOB_PENDING, d->tres, NULL, &size);
		/*
		 * Its dependency's job ended, or an update gave it one; its
		 * begin time came (read each look: the digest moves then).
		 */
		if (gps_job_dependent(job_ptr) ||
		    gps_job_begins_later(job_ptr))
			size.flags |= GP_JOB_DEPENDENT;
		h = _mix(h, ((uint64_t) size.gpus << 32) | size.nodes);
		h = _mix(h, ((uint64_t) size.flags << 32) | size.cpus);
		h = _mix(h, size.mem_mb);
		h = _mix(h, job_ptr->het_job_id);
		/* Its partition's and Slurm's limits read them (gpupool_limits.c). */
		h = _mix(h, ((uint64_t) job_ptr->time_limit << 32) |
			    job_ptr->time_min);
	} else {
		h = _mix(h, gps_job_gpus(job_ptr, d->tres, true));
	}
	h = _mix(h, ((uint64_t) job_ptr->array_job_id << 32) |
		    job_ptr->array_task_id);
	if (job_ptr->array_recs)
		h = _mix(h, ((uint64_t) job_ptr->array_recs->task_cnt << 32) |
			    job_ptr->array_recs->max_run_tasks);
	/*
	 * The account, and a running job's CPUs and memory, where the
	 * configuration counts them (scontrol update Account=).
	 */
	if (d->tres->needs & GP_NEEDS_ACCOUNTS)
		h = _mix_str(h, job_ptr->account);
	if (!pending && (d->tres->needs & (GP_NEEDS_CPU | GP_NEEDS_MEM)) &&
	    job_ptr->tres_alloc_cnt) {
		h = _mix(h, job_ptr->tres_alloc_cnt[TRES_ARRAY_CPU]);
		h = _mix(h, job_ptr->tres_alloc_cnt[TRES_ARRAY_MEM]);
	}
	/* Whose hold, and whether its text is still there to show. */
	if (pending && (job_ptr->priority == 0))
		h = _mix(h, (gps_hold_is_ours(job_ptr) ? 1 : 2) |
			    (job_ptr->state_desc ? 4 : 0));
	d->h = h;
	return 0;
}

extern uint64_t jobs_digest(const gps_tres_t *tres)
{
	digest_t d = { .h = UINT64_C(0xcbf29ce484222325), .tres = tres };

	if (!job_list)
		return 0;
	/* list_for_each: it nests where an iterator may not (25.11). */
	(void) list_for_each(job_list, _digest_job, &d);
	return d.h;
}

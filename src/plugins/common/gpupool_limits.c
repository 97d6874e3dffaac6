/*
 * gpupool_limits.c - which pending jobs Slurm's own limits hold back.
 *
 * A job over its association's or QOS's limits (MaxTRESPerUser, GrpTRES,
 * MaxJobs, GrpJobs...) cannot start, so it must set no quota aside ahead
 * of jobs that can: R1 orders it after them (GP_JOB_OVER_LIMIT).  Slurm
 * tests no limit of a job at priority 0, and gpupool's hold is priority 0,
 * so the reason Slurm shows is no guide: the plugins test the limits
 * themselves, as Slurm's scheduler does before it tries a job
 * (acct_policy_job_runnable_pre_select) and as slurmctld does for a hetjob
 * component before selection (its requested TRES into _post_select).
 * Those tests rewrite the job's state_reason and state_desc: what the job
 * showed is put back, so nothing one can see changes.
 *
 * Jobs alike in everything the tests read (user, association, QOS,
 * partition, time limit, requested TRES) get one test per pass: a queue
 * of many like jobs costs a few tests.
 *
 * Locks: the job write lock (the tests write the job record), then
 * assoc_mgr's association and TRES read and QOS write locks, as the tests
 * take them, once for the walk (Slurm's lock order).
 */
#include "config.h"

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/acct_policy.h"

#include "gpupool_slurm.h"

/* What the tests read of a job, and their answer. */
typedef struct {
	uint64_t tres_hash;
	void *assoc, *qos, *part;
	uint32_t user_id, time_limit;
	uint16_t time_set;
	bool used, over;
} like_t;

typedef struct {
	like_t *table;
	size_t mask;
	gps_over_limit_t *out;
} walk_t;

static uint64_t _mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static like_t _key(job_record_t *job_ptr)
{
	like_t k = { 0 };
	int i;

	for (i = 0; i < slurmctld_tres_cnt; i++)
		k.tres_hash = _mix(k.tres_hash ^ job_ptr->tres_req_cnt[i] ^
				   ((uint64_t) i << 56));
	k.assoc = job_ptr->assoc_ptr;
	k.qos = job_ptr->qos_ptr;
	k.part = job_ptr->part_ptr;
	k.user_id = job_ptr->user_id;
	k.time_limit = job_ptr->time_limit;
	k.time_set = job_ptr->limit_set.time;
	return k;
}

static size_t _slot(const like_t *k)
{
	uint64_t h = k->tres_hash ^ (uint64_t) (uintptr_t) k->assoc;

	h = _mix(h ^ ((uint64_t) (uintptr_t) k->qos << 1));
	h = _mix(h ^ (uint64_t) (uintptr_t) k->part ^
		 ((uint64_t) k->user_id << 32) ^ k->time_limit ^
		 ((uint64_t) k->time_set << 48));
	return (size_t) h;
}

static bool _same(const like_t *a, const like_t *b)
{
	return (a->tres_hash == b->tres_hash) && (a->assoc == b->assoc) &&
	       (a->qos == b->qos) && (a->part == b->part) &&
	       (a->user_id == b->user_id) &&
	       (a->time_limit == b->time_limit) &&
	       (a->time_set == b->time_set);
}

/* Slurm's two tests, with the requested TRES; the job looks unchanged. */
static bool _test(job_record_t *job_ptr)
{
	uint64_t tres[slurmctld_tres_cnt];
	uint32_t reason = job_ptr->state_reason;
	char *desc = job_ptr->state_desc;
	void *blocking = job_ptr->qos_blocking_ptr;
	bool runnable;

	job_ptr->state_desc = NULL;
	memcpy(tres, job_ptr->tres_req_cnt, sizeof(tres));
	if (!tres[TRES_ARRAY_CPU] && job_ptr->details)
		tres[TRES_ARRAY_CPU] = job_ptr->details->min_cpus;
	runnable = acct_policy_job_runnable_pre_select(job_ptr, true) &&
		   acct_policy_job_runnable_post_select(job_ptr, tres, true);
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = desc;
	job_ptr->state_reason = reason;
	job_ptr->qos_blocking_ptr = blocking;
	return !runnable;
}

static int _walk(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	walk_t *w = arg;
	like_t k;
	size_t i;

	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->part_ptr ||
	    !job_ptr->tres_req_cnt || !job_ptr->details)
		return 0;
	k = _key(job_ptr);
	for (i = _slot(&k) & w->mask; w->table[i].used;
	     i = (i + 1) & w->mask) {
		if (_same(&w->table[i], &k))
			break;
	}
	if (!w->table[i].used) {
		k.used = true;
		k.over = _test(job_ptr);
		w->table[i] = k;
	}
	if (w->table[i].over) {
		if (w->out->count == w->out->size) {
			w->out->size = w->out->size ? 2 * w->out->size : 64;
			xrecalloc(w->out->ids, w->out->size, sizeof(uint32_t));
		}
		w->out->ids[w->out->count++] = job_ptr->job_id;
	}
	return 0;
}

static int _cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

extern void gps_over_limit_collect(gps_over_limit_t *out)
{
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK, .qos = WRITE_LOCK,
				   .tres = READ_LOCK };
	walk_t w = { .out = out };
	size_t slots = 64, jobs;

	memset(out, 0, sizeof(*out));
	/* Slurm's tests answer yes at once where limits are not enforced. */
	if (!job_list || !(accounting_enforce & ACCOUNTING_ENFORCE_LIMITS) ||
	    (slurmctld_tres_cnt <= TRES_ARRAY_CPU))
		return;
	jobs = list_count(job_list);
	while (slots < 2 * jobs)
		slots *= 2;
	w.table = xcalloc(slots, sizeof(like_t));
	w.mask = slots - 1;
	assoc_mgr_lock(&locks);
	(void) list_for_each(job_list, _walk, &w);
	assoc_mgr_unlock(&locks);
	xfree(w.table);
	/* Job ids are unique: looked up by bsearch (gps_over_limit). */
	if (out->count > 1)
		qsort(out->ids, out->count, sizeof(uint32_t), _cmp_id);
}

extern bool gps_over_limit(const gps_over_limit_t *set, uint32_t job_id)
{
	return set && set->count &&
	       bsearch(&job_id, set->ids, set->count, sizeof(uint32_t),
		       _cmp_id);
}

extern void gps_over_limit_free(gps_over_limit_t *set)
{
	xfree(set->ids);
	set->count = set->size = 0;
}

/*
 * gpupool_limits.c - which pending jobs Slurm's own limits hold back.
 *
 * Their partition's first (job_limits_check: a time limit over MaxTime,
 * nodes outside MinNodes..MaxNodes, memory over MaxMemPer*, access, a
 * partition down or inactive): Slurm keeps such a job pending
 * (PartitionTimeLimit...) until the job or the partition changes.  Tested
 * as backfill does, with the job's --time-min where it has one, whether
 * or not accounting enforces limits.
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
 * of many like jobs costs a few tests.  A job with exemptions of its own
 * (an admin's limit_set.tres) or nodes it asked for (GrpTRES node counts
 * read them) is tested alone.
 *
 * A heterogeneous job starts whole, and Slurm's backfill, which starts it,
 * tests each component's limits with the components before it counted
 * (_het_job_limit_check): a job that each component alone fits may pass
 * a group limit (GrpTRES, MaxTRESPerUser, MaxTRESPerAccount) in sum.  Its
 * leader's walk tests the last component with the TRES of all, and
 * reads only a group limit's refusal (a per-job or per-node limit tested
 * on the sum says nothing).  Slurm's test stops at its first refusal, and
 * a per-job limit it tests first hides a group limit behind it: such a job
 * is ordered as any.  Components of other associations, QOSes or
 * partitions are tested alone; job and node counts are not summed.
 * Only on 22.05, where that holds live: 26.05 started such a job (a user
 * with GrpTRES=gres/gpu=2 ran 1 + 1 + 1 GPUs, its usage counted 2), and
 * gpupool must not put behind a job Slurm starts; 23.11 to 25.11 are
 * not measured and left as 26.05.
 *
 * Left untested (ordered as any job): a job Slurm may try in several
 * partitions or QOSes, whose limits may differ between them, and one whose
 * association pointer is no longer valid (Slurm's scheduler repairs or
 * fails it; the test would log an error and look it up again each pass).
 *
 * Locks: the job write and partition read locks (the tests write the job
 * record and read its partition); for the association and QOS tests
 * assoc_mgr's association and TRES read and QOS write locks, as the tests
 * take them, once for their walk (Slurm's lock order).  The partition test
 * walks first, without them: since 23.11 it takes their read locks itself.
 */
#include "config.h"

#include <string.h>

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/acct_policy.h"

#include "gpupool_compat.h"
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

/* The TRES Slurm's tests count before selection (cf. select_nodes()). */
static void _requested(job_record_t *job_ptr, uint64_t *tres)
{
	memcpy(tres, job_ptr->tres_req_cnt,
	       sizeof(uint64_t) * slurmctld_tres_cnt);
	tres[TRES_ARRAY_CPU] = job_ptr->total_cpus ? job_ptr->total_cpus :
						     job_ptr->details->min_cpus;
}

static like_t _key(job_record_t *job_ptr, const uint64_t *tres)
{
	like_t k = { 0 };
	int i;

	for (i = 0; i < slurmctld_tres_cnt; i++)
		k.tres_hash = gps_mix64(k.tres_hash ^ tres[i] ^
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

	h = gps_mix64(h ^ ((uint64_t) (uintptr_t) k->qos << 1));
	h = gps_mix64(h ^ (uint64_t) (uintptr_t) k->part ^
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

/*
 * Slurm's two tests, with the requested TRES; the reason they write is put
 * back (they may also note, as select_nodes() would, that the job's time
 * limit comes from its association: limit_set.time).
 */
static bool _test(job_record_t *job_ptr, uint64_t *tres)
{
	uint32_t reason = job_ptr->state_reason;
	char *desc = job_ptr->state_desc;
	void *blocking = job_ptr->qos_blocking_ptr;
	bool runnable;

	job_ptr->state_desc = NULL;
	runnable = acct_policy_job_runnable_pre_select(job_ptr, true) &&
		   acct_policy_job_runnable_post_select(job_ptr, tres, true);
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = desc;
	job_ptr->state_reason = reason;
	job_ptr->qos_blocking_ptr = blocking;
	return !runnable;
}

#if !GPS_SLURM_AT_LEAST(23, 11)
/*
 * Slurm's group limits on the requested TRES, as post-selection tests them:
 * the reason Slurm would give, or WAIT_NO_REASON where they pass.
 */
static uint32_t _post_select_reason(job_record_t *job_ptr, uint64_t *tres)
{
	uint32_t reason = job_ptr->state_reason, refused = WAIT_NO_REASON;
	char *desc = job_ptr->state_desc;
	void *blocking = job_ptr->qos_blocking_ptr;

	job_ptr->state_desc = NULL;
	if (!acct_policy_job_runnable_post_select(job_ptr, tres, true))
		refused = job_ptr->state_reason;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = desc;
	job_ptr->state_reason = reason;
	job_ptr->qos_blocking_ptr = blocking;
	return refused;
}

/* A limit on what several jobs use together ("AssocGrpGRES", "QOSMaxGRESPerUser"...). */
static bool _group_limit(uint32_t reason)
{
	const char *r = gps_reason_string(reason);

	return r && (strstr(r, "Grp") || strstr(r, "PerUser") ||
		     strstr(r, "PerAccount"));
}
#endif

static void _add(gps_over_limit_t *out, uint32_t job_id)
{
	if (out->count == out->size) {
		out->size = out->size ? 2 * out->size : 64;
		xrecalloc(out->ids, out->size, sizeof(uint32_t));
	}
	out->ids[out->count++] = job_id;
}

/*
 * Slurm may try it in several partitions or QOSes: not tested.  Its user's
 * list counts, not gpupool's narrowing of it (start_parts.h): it stays in
 * job_ptr->partition while the job pends.
 */
extern bool gps_several_tries(job_record_t *job_ptr)
{
	if (job_ptr->part_ptr_list && (list_count(job_ptr->part_ptr_list) > 1))
		return true;
	if (job_ptr->partition && strchr(job_ptr->partition, ','))
		return true;
#if GPS_SLURM_AT_LEAST(24, 11)
	if (job_ptr->qos_list && (list_count(job_ptr->qos_list) > 1))
		return true;
#endif
	return false;
}

/* Its own exemptions or nodes: its answer is its own. */
static bool _alone(job_record_t *job_ptr)
{
	int i;

	if (job_ptr->details->req_node_bitmap || job_ptr->job_resrcs)
		return true;
#if GPS_SLURM_AT_LEAST(24, 11)
	if (job_ptr->node_bitmap_preempt)
		return true;
#endif
	for (i = 0; job_ptr->limit_set.tres && (i < slurmctld_tres_cnt); i++)
		if (job_ptr->limit_set.tres[i])
			return true;
	return false;
}

/* Slurm's tests read this pending job (see _walk). */
static bool _testable(job_record_t *job_ptr)
{
	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->part_ptr ||
	    !job_ptr->tres_req_cnt || !job_ptr->details ||
	    gps_several_tries(job_ptr))
		return false;
	/*
	 * As _valid_job_assoc: left to Slurm's scheduler, which repairs or
	 * fails it (its test here would log and take assoc_mgr's lock again).
	 */
	return job_ptr->assoc_ptr &&
	       (job_ptr->assoc_ptr->id == job_ptr->assoc_id) &&
	       (job_ptr->assoc_ptr->uid == job_ptr->user_id);
}

#if !GPS_SLURM_AT_LEAST(23, 11)
/*
 * A heterogeneous job's leader: over a group limit with all its components
 * counted together?  (Each component alone is tested by the walk.)
 */
static bool _het_over_in_sum(job_record_t *leader)
{
	uint64_t sum[slurmctld_tres_cnt], tres[slurmctld_tres_cnt];
	job_record_t *job_ptr, *last = NULL;
	list_itr_t *it;
	bool alike = true;
	int i, count = 0;

	if (!leader->het_job_list || (list_count(leader->het_job_list) < 2))
		return false;
	memset(sum, 0, sizeof(sum));
	it = list_iterator_create(leader->het_job_list);
	while ((job_ptr = list_next(it))) {
		if (!_testable(job_ptr) ||
		    (job_ptr->assoc_ptr != leader->assoc_ptr) ||
		    (job_ptr->qos_ptr != leader->qos_ptr) ||
		    (job_ptr->part_ptr->qos_ptr != leader->part_ptr->qos_ptr)) {
			alike = false;
			break;
		}
		_requested(job_ptr, tres);
		for (i = 0; i < slurmctld_tres_cnt; i++)
			if (tres[i] != NO_CONSUME_VAL64)
				sum[i] += tres[i];
		last = job_ptr;
		count++;
	}
	list_iterator_destroy(it);
	if (!alike || (count < 2))
		return false;
	/* Node counts overlap between components: not summed. */
	_requested(last, tres);
	sum[TRES_ARRAY_NODE] = tres[TRES_ARRAY_NODE];
	return _group_limit(_post_select_reason(last, sum));
}
#endif

/*
 * The partition's limits and state, as backfill tests them (with the job's
 * --time-min).  With no assoc_mgr lock held: since 23.11 job_limits_check
 * takes their read locks itself.
 */
static int _part_walk(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	walk_t *w = arg;

	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->part_ptr ||
	    !job_ptr->details || gps_several_tries(job_ptr))
		return 0;
	if (job_limits_check(&job_ptr, true) != WAIT_NO_REASON)
		_add(w->out, job_ptr->job_id);
	return 0;
}

static int _walk(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	walk_t *w = arg;
	uint64_t tres[slurmctld_tres_cnt];
	like_t k;
	size_t i;

	if (!_testable(job_ptr))
		return 0;
#if !GPS_SLURM_AT_LEAST(23, 11)
	/* One component says it for the whole job (R1: all go behind). */
	if ((job_ptr->het_job_id == job_ptr->job_id) &&
	    _het_over_in_sum(job_ptr)) {
		_add(w->out, job_ptr->job_id);
		return 0;
	}
#endif
	_requested(job_ptr, tres);
	if (_alone(job_ptr)) {
		if (_test(job_ptr, tres))
			_add(w->out, job_ptr->job_id);
		return 0;
	}
	k = _key(job_ptr, tres);
	for (i = _slot(&k) & w->mask; w->table[i].used;
	     i = (i + 1) & w->mask) {
		if (_same(&w->table[i], &k))
			break;
	}
	if (!w->table[i].used) {
		k.used = true;
		k.over = _test(job_ptr, tres);
		w->table[i] = k;
	}
	if (w->table[i].over)
		_add(w->out, job_ptr->job_id);
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
	if (!job_list)
		return;
	(void) list_for_each(job_list, _part_walk, &w);
	/* Slurm's tests answer yes at once where limits are not enforced. */
	if ((accounting_enforce & ACCOUNTING_ENFORCE_LIMITS) &&
	    (slurmctld_tres_cnt > TRES_ARRAY_CPU)) {
		jobs = list_count(job_list);
		while (slots < 2 * jobs)
			slots *= 2;
		w.table = xcalloc(slots, sizeof(like_t));
		w.mask = slots - 1;
		assoc_mgr_lock(&locks);
		(void) list_for_each(job_list, _walk, &w);
		assoc_mgr_unlock(&locks);
		xfree(w.table);
	}
	/* Looked up by bsearch (gps_over_limit): sorted, each id once. */
	if (out->count > 1) {
		size_t i, n = 1;

		qsort(out->ids, out->count, sizeof(uint32_t), _cmp_id);
		for (i = 1; i < out->count; i++)
			if (out->ids[i] != out->ids[n - 1])
				out->ids[n++] = out->ids[i];
		out->count = n;
	}
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

/*
 * array_throttle.c - the throttle of pending job array records.
 *
 * Slurm starts task after task from one pending array meta record in a
 * single scheduling pass (job_scheduler.c: "goto next_task"; backfill
 * likewise); its only brake is the array throttle: no task starts while
 * array_recs->tot_run_tasks >= max_run_tasks (job_array_start_test, also
 * in backfill and job_independent), 0 meaning none.  The core computes
 * the throttle of an NP array record (gp_array_throttle: its running tasks
 * plus those admitted, never above the user's own --array=...%N or
 * ArrayTaskThrottle); this file keeps, per record gpupool capped, the
 * user's throttle to put back, and sets what the core says.  Slurm saves
 * the capped throttle in its job state as the record's own, so each cap
 * goes to the engine's state file too (gp_engine_note_array_cap), where a
 * restarted slurmctld finds it.
 *
 * Every function needs the slurmctld job write lock, which protects the
 * table.
 */
#include "config.h"

#include <string.h>

#include "src/common/log.h"

#include "gpupool_slurm.h"
#include "id_index.h"
#include "priority_gpupool.h"

typedef struct {
	uint32_t job_id;
	gp_array_throttle_t t;	/* capped: the record's entry is kept */
} array_cap_t;

static array_cap_t *caps = NULL;
static size_t cap_cnt = 0, cap_alloc = 0;
/* job id -> place in caps: asked for every pending job a pass writes. */
static gpp_id_index_t cap_index;
static bool cap_index_lost = false;	/* out of memory once: linear */
/* A record became capped or stopped being so: the agent saves soon. */
static bool caps_moved = false;
/* Every record was looked at for a saved cap since the start. */
static bool caps_restored = false;

/* Tell the engine (its state file) the record's cap now (t NULL: none). */
static void _cap_note(uint32_t id, const gp_array_throttle_t *t)
{
	if (gp_engine_note_array_cap(gp_shared_engine(), id, t) > 0)
		__atomic_store_n(&caps_moved, true, __ATOMIC_RELEASE);
}

static array_cap_t *_cap_find(uint32_t id)
{
	size_t i;
	long at;

	if (!cap_index_lost) {
		at = gpp_id_find(&cap_index, id);
		return (at >= 0) ? &caps[at] : NULL;
	}
	for (i = 0; i < cap_cnt; i++)
		if (caps[i].job_id == id)
			return &caps[i];
	return NULL;
}

static void _cap_index_put(uint32_t id, size_t pos)
{
	if (!cap_index_lost && !gpp_id_put(&cap_index, id, pos)) {
		error("gpupool: out of memory for the array cap index: searching it linearly");
		cap_index_lost = true;
		gpp_id_free(&cap_index);
	}
}

static void _cap_del(array_cap_t *c)
{
	size_t pos = (size_t) (c - caps);

	if (!cap_index_lost)
		gpp_id_del(&cap_index, c->job_id);
	_cap_note(c->job_id, NULL);
	*c = caps[--cap_cnt];
	if (pos < cap_cnt)	/* the last entry moved into its place */
		_cap_index_put(c->job_id, pos);
}

/*
 * After a start: the record's cap from the state file, if its throttle is
 * still one gpupool could have set; else a saved cap is dropped.
 */
static bool _restore(job_record_t *job_ptr, gp_array_throttle_t *t)
{
	if (gp_engine_restore_array_cap(gp_shared_engine(), job_ptr->job_id,
					job_ptr->array_recs->max_run_tasks, t))
		return true;
	_cap_note(job_ptr->job_id, NULL);
	return false;
}

static array_cap_t *_cap_add(uint32_t id)
{
	array_cap_t *c;

	if (cap_cnt == cap_alloc) {
		cap_alloc = cap_alloc ? cap_alloc * 2 : 16;
		xrecalloc(caps, cap_alloc, sizeof(*caps));
	}
	c = &caps[cap_cnt++];
	c->job_id = id;
	_cap_index_put(id, cap_cnt - 1);
	return c;
}

/*
 * Ask the core for the throttle of the record `job_ptr` (r NULL: no longer
 * a pending array), keep its entry while the cap is gpupool's, set it.
 * `c`: the record's entry or NULL.  Returns 1 if more tasks may start.
 */
static int _throttle(job_record_t *job_ptr, array_cap_t *c,
		     const gp_pending_result_t *r, bool lower_only,
		     bool *changed)
{
	job_array_struct_t *ar = job_ptr->array_recs;
	gp_array_throttle_t t;
	uint32_t old = ar->max_run_tasks;
	int raised;
	bool note, restored = false;

	if (c) {
		t = c->t;
	} else if (caps_restored || !(restored = _restore(job_ptr, &t))) {
		/* Not capped (a cap from before a start: restored). */
		memset(&t, 0, sizeof(t));
	}
	t.max_run_tasks = old;
	raised = gp_array_throttle(&t, r, gps_array_pending_tasks(job_ptr),
				   lower_only);
	note = t.capped && (!c || (c->t.our_max != t.our_max) ||
			    (c->t.user_max != t.user_max));
	if (t.capped && !c)
		c = _cap_add(job_ptr->job_id);
	if (note || (restored && !t.capped))
		_cap_note(job_ptr->job_id, &t);
	if (c)
		c->t = t;
	if (t.max_run_tasks != old) {
		ar->max_run_tasks = t.max_run_tasks;
		*changed = true;
		debug("gpupool: JobId=%u array throttle %u -> %u (user's %u)",
		      job_ptr->job_id, old, t.max_run_tasks,
		      t.capped ? t.user_max : t.max_run_tasks);
	}
	if (c && !t.capped)
		_cap_del(c);
	return raised;
}

extern int gpp_throttle_apply(job_record_t *job_ptr,
			      const gp_pending_result_t *r, bool lower_only,
			      bool *changed)
{
	array_cap_t *c = _cap_find(job_ptr->job_id);

	if (!job_ptr->array_recs) {
		if (c)
			_cap_del(c);
		return 0;
	}
	return _throttle(job_ptr, c, r, lower_only, changed);
}

extern uint32_t gpp_throttle_user_max(job_record_t *job_ptr)
{
	array_cap_t *c = _cap_find(job_ptr->job_id);

	uint32_t now = job_ptr->array_recs->max_run_tasks;

	/* A throttle changed since gpupool capped it is the user's (cap_array). */
	return (c && (now == c->t.our_max)) ? c->t.user_max : now;
}

extern void gpp_throttle_prune(bool *changed)
{
	size_t i = 0;

	while (i < cap_cnt) {
		uint32_t id = caps[i].job_id;
		job_record_t *j = find_job_record(id);
		if (j && (gps_array_pending_tasks(j) > 1)) {
			i++;
			continue;
		}
		if (j && j->array_recs)
			(void) _throttle(j, &caps[i], NULL, false, changed);
		/* Whatever _throttle did: this loop runs under the job write
		 * lock and must end, so the entry goes either way. */
		if ((i < cap_cnt) && (caps[i].job_id == id))
			_cap_del(&caps[i]);
	}
}

static int _restore_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	gp_array_throttle_t t;

	if (job_ptr->array_recs && IS_JOB_PENDING(job_ptr) &&
	    !_cap_find(job_ptr->job_id) && _restore(job_ptr, &t))
		_cap_add(job_ptr->job_id)->t = t;
	return 0;
}

extern void gpp_throttle_restore_all(void)
{
	if (caps_restored)
		return;
	/*
	 * Held records are not throttled until released: looked at now, a
	 * throttle their user sets later is told from the cap.
	 */
	(void) list_for_each(job_list, _restore_one, NULL);
	caps_restored = true;
}

extern bool gpp_throttle_caps_moved(void)
{
	return __atomic_exchange_n(&caps_moved, false, __ATOMIC_ACQ_REL);
}

/* The caps stay in the engine: fini saves them with its state. */
extern void gpp_throttle_fini(void)
{
	xfree(caps);
	cap_cnt = cap_alloc = 0;
	gpp_id_free(&cap_index);
	cap_index_lost = false;
	caps_restored = false;
}

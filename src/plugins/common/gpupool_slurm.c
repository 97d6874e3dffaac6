/*
 * gpupool_slurm.c - slurmctld records -> gpupool core snapshot (see .h).
 *
 * QOS names (issue 6): job_ptr->qos_ptr points into assoc_mgr's QOS list,
 * which "sacctmgr modify/delete qos" rewrites under assoc_mgr's QOS write
 * lock, so the name is never read through it.  A job's QOS is read as its
 * id (job_ptr->qos_id, job lock) and the name comes from our own id->name
 * copy, taken under assoc_mgr's QOS read lock (Slurm's lock order:
 * slurmctld locks first, then assoc_mgr locks; taking the QOS read lock
 * while this thread already holds any assoc_mgr lock would self-deadlock
 * against a waiting writer or trip Slurm's lock checks).  A QOS id keeps
 * its name (a QOS cannot be renamed; a new QOS gets a new id), so the copy
 * is only ever extended, on a miss.  Callers that may refresh it on a miss
 * (may_lock true) hold no assoc_mgr lock; checked in Slurm 22.05.8:
 *  - priority_p_set: set_job_prio() from job_mgr.c job_allocate,
 *    _release_job_rec, _update_job (its assoc_mgr_lock at the QOS update
 *    is released before set_job_prio), job_time_limit,
 *    kill_job_by_front_end_name, _job_suspend_op: slurmctld locks only.
 *  - priority_p_job_end: acct_policy.c _adjust_limit_usage calls
 *    priority_g_job_end() before taking its assoc/QOS write lock.  (It
 *    reads no QOS name; it takes the assoc+QOS write lock itself.)
 *  - priority/gpupool's agent pass: its own thread, slurmctld locks only.
 *  - preempt_p_preemptable: slurm_find_preemptable_jobs() from
 *    node_scheduler.c _get_req_features, job_scheduler.c job_start_data,
 *    backfill.c _try_sched: no assoc_mgr lock held (select_nodes releases
 *    its QOS read lock before _get_req_features).
 *  - preempt_p_job_preempt_check: sort_job_queue2() from
 *    job_scheduler.c _schedule and backfill.c _attempt_backfill, both
 *    after their assoc_mgr_unlock.
 *  - PREEMPT_DATA_ENABLED: _pick_best_nodes, slurm_find_preemptable_jobs,
 *    sort_job_queue2: no assoc_mgr lock.
 *  - PREEMPT_DATA_GRACE_TIME: slurm_job_get_grace_time() from
 *    _job_check_grace_internal (node_scheduler.c _preempt_jobs, after
 *    select_nodes' assoc_mgr_unlock): no assoc_mgr lock.
 * But PREEMPT_DATA_MODE is asked by job_mgr.c pack_job() (squeue,
 * scontrol show job) while it holds assoc_mgr's QOS read lock: the mode
 * path uses the copy only (may_lock false).
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"

#include "gpupool_slurm.h"

/*
 * Weak: a libgpupool older than ABI 4 has no gp_abi_version(); its address
 * is then NULL (resolved when the plugin is loaded, not at the call), and
 * the plugin says so instead of dying on an unresolved symbol.
 */
#pragma weak gp_abi_version

extern int gps_abi_check(const char *plugin_type)
{
	uint32_t lib;

	if (!gp_abi_version) {
		error("%s: the libgpupool loaded has no gp_abi_version(): it is older than C ABI %d, which this plugin was built for; install the libgpupool built with this plugin",
		      plugin_type, GP_ABI_VERSION);
		return SLURM_ERROR;
	}
	lib = gp_abi_version();
	if (lib != GP_ABI_VERSION) {
		error("%s: the libgpupool loaded has C ABI %u, this plugin was built for C ABI %d; install the libgpupool built with this plugin",
		      plugin_type, lib, GP_ABI_VERSION);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

static void _copy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

extern void gps_tres_init(gps_tres_t *t)
{
	char quota[160], *name, *colon;
	slurmdb_tres_rec_t rec;

	memset(t, 0, sizeof(*t));
	t->tres_pos = -1;
	gp_engine_quota_tres(gp_shared_engine(), quota, sizeof(quota));
	/* "gres/gpu" or "gres/gpu:TYPE" (the core's parser guarantees it) */
	name = strchr(quota, '/');
	name = name ? name + 1 : quota;
	if (!*name)
		name = "gpu";
	_copy(t->node_gres, sizeof(t->node_gres), name, strlen(name));
	if ((colon = strchr(name, ':'))) {
		_copy(t->gres_name, sizeof(t->gres_name), name, colon - name);
		_copy(t->gres_type, sizeof(t->gres_type), colon + 1,
		      strlen(colon + 1));
	} else {
		_copy(t->gres_name, sizeof(t->gres_name), name, strlen(name));
	}

	memset(&rec, 0, sizeof(rec));
	rec.type = "gres";
	rec.name = t->node_gres;
	/* Takes the assoc_mgr TRES read lock itself (locked == false). */
	t->tres_pos = assoc_mgr_find_tres_pos(&rec, false);
	t->tres_cnt = slurmctld_tres_cnt;
	if ((t->tres_pos >= t->tres_cnt) || (t->tres_cnt <= 0))
		t->tres_pos = -1;
}

/* Sum of the GRES counts of `gres_list` (job gres_state_t records). */
static uint64_t _gres_list_cnt(list_t *gres_list, const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	uint64_t cnt = 0;

	if (!gres_list)
		return 0;
	it = list_iterator_create(gres_list);
	while ((gs = list_next(it))) {
		if (!gs->gres_name || xstrcmp(gs->gres_name, t->gres_name))
			continue;
		if (!(js = gs->gres_data))
			continue;
		if (t->gres_type[0] && xstrcmp(js->type_name, t->gres_type))
			continue;
		if ((js->total_gres == NO_VAL64) ||
		    (js->total_gres == NO_CONSUME_VAL64))
			continue;
		cnt += js->total_gres;
	}
	list_iterator_destroy(it);
	return cnt;
}

extern uint32_t gps_job_gpus(job_record_t *job_ptr, const gps_tres_t *t,
			     bool allocated)
{
	uint64_t *arr = NULL, cnt = 0;

	if ((t->tres_pos >= 0) && (t->tres_cnt == slurmctld_tres_cnt)) {
		if (allocated && job_ptr->tres_alloc_cnt)
			arr = job_ptr->tres_alloc_cnt;
		else
			arr = job_ptr->tres_req_cnt;
	}
	if (arr) {
		cnt = arr[t->tres_pos];
		if ((cnt == NO_VAL64) || (cnt == NO_CONSUME_VAL64))
			cnt = 0;
	} else if (allocated && job_ptr->gres_list_alloc) {
		cnt = _gres_list_cnt(job_ptr->gres_list_alloc, t);
	} else {
		cnt = _gres_list_cnt(job_ptr->gres_list_req, t);
	}
	return (cnt > UINT32_MAX) ? UINT32_MAX : (uint32_t) cnt;
}

extern int gps_job_state(job_record_t *job_ptr)
{
	if (IS_JOB_REVOKED(job_ptr))
		return -1;
	if (IS_JOB_PENDING(job_ptr))
		return GP_JOB_PENDING;
	if (IS_JOB_RUNNING(job_ptr))
		return GP_JOB_RUNNING;
	if (IS_JOB_SUSPENDED(job_ptr))
		return GP_JOB_SUSPENDED;
	/*
	 * Ended but still completing: priority_p_job_end has already given
	 * its GPUs back to the engine (so a quota-held job is admitted at
	 * once); counting it again until its epilog ends would undo that.
	 * Slurm itself does not place jobs on its completing nodes.
	 */
	return -1;
}

static char *_job_partitions(job_record_t *job_ptr, int state,
			     part_record_t *use_part)
{
	char *buf = NULL;
	part_record_t *part_ptr;
	list_itr_t *it;

	if ((state != GP_JOB_PENDING) || use_part) {
		part_ptr = use_part ? use_part : job_ptr->part_ptr;
		if (part_ptr && part_ptr->name)
			return xstrdup(part_ptr->name);
		return xstrdup(job_ptr->partition);
	}
	/*
	 * A pending job's string is the list its user gave; part_ptr_list may
	 * be narrowed to where gpupool admits it (start_parts.h).
	 */
	if (job_ptr->part_ptr_list && job_ptr->partition)
		return xstrdup(job_ptr->partition);
	if (job_ptr->part_ptr_list) {
		it = list_iterator_create(job_ptr->part_ptr_list);
		while ((part_ptr = list_next(it)))
			if (part_ptr->name)
				xstrfmtcat(buf, "%s%s", buf ? "," : "",
					   part_ptr->name);
		list_iterator_destroy(it);
	}
	if (!buf) {
		if (job_ptr->part_ptr && job_ptr->part_ptr->name)
			buf = xstrdup(job_ptr->part_ptr->name);
		else
			buf = xstrdup(job_ptr->partition);
	}
	return buf;
}

/* QOS id -> name, copied from assoc_mgr (see the header comment). */
static pthread_mutex_t qos_mutex = PTHREAD_MUTEX_INITIALIZER;
static char **qos_names = NULL;		/* by id; NULL: no such QOS seen */
static uint32_t qos_names_cnt = 0;
static time_t qos_refreshed = 0;

/* Copy the name of QOS `id` into buf; false if not in our copy. */
static bool _qos_lookup(uint32_t id, char *buf, size_t len)
{
	bool found = false;

	slurm_mutex_lock(&qos_mutex);
	if ((id < qos_names_cnt) && qos_names[id]) {
		strlcpy(buf, qos_names[id], len);
		found = true;
	}
	slurm_mutex_unlock(&qos_mutex);
	return found;
}

extern void gps_qos_names_refresh(void)
{
	assoc_mgr_lock_t locks = { .qos = READ_LOCK };
	slurmdb_qos_rec_t *qos;
	list_itr_t *it;
	char **names = NULL, **old;
	uint32_t cnt = 0, old_cnt, i;

	assoc_mgr_lock(&locks);
	if (assoc_mgr_qos_list) {
		it = list_iterator_create(assoc_mgr_qos_list);
		while ((qos = list_next(it)))
			if (qos->name && (qos->id >= cnt))
				cnt = qos->id + 1;
		list_iterator_reset(it);
		names = xcalloc(cnt ? cnt : 1, sizeof(char *));
		while ((qos = list_next(it)))
			if (qos->name)
				names[qos->id] = xstrdup(qos->name);
		list_iterator_destroy(it);
	}
	assoc_mgr_unlock(&locks);

	slurm_mutex_lock(&qos_mutex);
	old = qos_names;
	old_cnt = qos_names_cnt;
	if (names) {
		qos_names = names;
		qos_names_cnt = cnt;
	} else {
		old = NULL;	/* no QOS list (yet): keep what we have */
	}
	qos_refreshed = time(NULL);
	slurm_mutex_unlock(&qos_mutex);
	for (i = 0; old && (i < old_cnt); i++)
		xfree(old[i]);
	xfree(old);
}

extern const char *gps_job_qos(job_record_t *job_ptr, bool may_lock,
			       char *buf, size_t len)
{
	uint32_t id = job_ptr->qos_id;
	bool stale;

	if (!id)
		return NULL;
	if (_qos_lookup(id, buf, len))
		return buf;
	if (!may_lock)
		return NULL;
	/* A QOS we have not seen: refresh, at most once a second. */
	slurm_mutex_lock(&qos_mutex);
	stale = (qos_refreshed != time(NULL));
	slurm_mutex_unlock(&qos_mutex);
	if (stale)
		gps_qos_names_refresh();
	return _qos_lookup(id, buf, len) ? buf : NULL;
}

extern void gps_job_fill(job_record_t *job_ptr, int state,
			 const gps_tres_t *t, part_record_t *use_part,
			 gp_job_t *out, char **part_buf,
			 char qos_buf[GPS_QOS_LEN])
{
	memset(out, 0, sizeof(*out));
	out->job_id = job_ptr->job_id;
	out->state = state;
	*part_buf = _job_partitions(job_ptr, state, use_part);
	out->partitions = *part_buf;
	out->qos = gps_job_qos(job_ptr, true, qos_buf, GPS_QOS_LEN);
	out->gpus = gps_job_gpus(job_ptr, t, state != GP_JOB_PENDING);
	out->submit_time = job_ptr->details ?
		(int64_t) job_ptr->details->submit_time : 0;
	if (out->submit_time <= 0)
		out->submit_time = (int64_t) time(NULL);
	out->start_time = (int64_t) job_ptr->start_time;
	out->user_held = 0;
	out->restart_cnt = job_ptr->restart_cnt;
	out->array_tasks = gps_array_pending_tasks(job_ptr);
	if ((job_ptr->array_task_id != NO_VAL) || job_ptr->array_recs)
		out->array_job_id = job_ptr->array_job_id;
}

extern uint32_t gps_array_pending_tasks(job_record_t *job_ptr)
{
	/*
	 * Slurm 22.05: the pending meta record of an array keeps the array's
	 * id and array_recs, with array_task_id NO_VAL while it stands for
	 * task_cnt > 1 tasks; the scheduler splits a task off it for each
	 * start (job_array_split) and, at task_cnt 1, gives the record the
	 * last task's id.
	 */
	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->array_recs ||
	    (job_ptr->array_task_id != NO_VAL) ||
	    (job_ptr->array_recs->task_cnt <= 1))
		return 0;
	return job_ptr->array_recs->task_cnt;
}

/* A node whose GPUs cannot be given to new jobs counts no capacity. */
static bool _node_unusable(node_record_t *node_ptr)
{
	return IS_NODE_DOWN(node_ptr) || IS_NODE_FUTURE(node_ptr) ||
	       IS_NODE_DRAINED(node_ptr);
}

typedef struct {
	gp_snapshot_t *snap;
	const gps_tres_t *t;
	bool running_only;
	gps_our_hold_f our_hold;
	uint32_t jobs;
} job_add_t;

static int _add_job(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	job_add_t *add = arg;
	gp_job_t job;
	char *parts = NULL, qos[GPS_QOS_LEN];
	int state = gps_job_state(job_ptr);

	if (state < 0)
		return 0;
	if (add->running_only && (state != GP_JOB_RUNNING))
		return 0;
	gps_job_fill(job_ptr, state, add->t, NULL, &job, &parts, qos);
	/*
	 * Priority 0 that is not our quota hold is a user's or admin's hold:
	 * never undone.  Jobs waiting for a begin time or a dependency are
	 * ordered and admitted like the rest, so that none can start over
	 * quota the moment it becomes eligible.
	 */
	if ((state == GP_JOB_PENDING) && (job_ptr->priority == 0) &&
	    !(add->our_hold && add->our_hold(job_ptr)))
		job.user_held = 1;
	if (gp_snapshot_add_job(add->snap, &job) == GP_OK)
		add->jobs++;
	xfree(parts);
	return 0;
}

extern gp_snapshot_t *gps_snapshot_build(const gps_tres_t *t,
					 bool running_only,
					 gps_our_hold_f our_hold, time_t now,
					 uint32_t *job_cnt)
{
	gp_snapshot_t *snap;
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	list_itr_t *it;
	int32_t *node_map = NULL, *idx = NULL;
	int i;
	uint32_t jobs = 0;

	if (!(snap = gp_snapshot_create()))
		return NULL;
	gp_snapshot_reserve(snap, running_only ? 0 : node_record_count,
			    job_list ? list_count(job_list) : 0);

	if (!running_only && (node_record_count > 0)) {
		node_map = xcalloc(node_record_count, sizeof(int32_t));
		idx = xcalloc(node_record_count, sizeof(int32_t));
		for (i = 0; i < node_record_count; i++)
			node_map[i] = -1;
		for (i = 0; (node_ptr = next_node(&i)); i++) {
			uint64_t gpus = 0;
			if (!_node_unusable(node_ptr))
				gpus = gres_node_config_cnt(
					node_ptr->gres_list,
					(char *) t->node_gres);
			if (gpus == NO_VAL64)
				gpus = 0;
			node_map[i] = gp_snapshot_add_node(
				snap, node_ptr->name,
				(gpus > UINT32_MAX) ? UINT32_MAX :
						      (uint32_t) gpus);
		}
		if (part_list) {
			it = list_iterator_create(part_list);
			while ((part_ptr = list_next(it))) {
				size_t n = 0;
				int bits;
				if (!part_ptr->name)
					continue;
				if (part_ptr->node_bitmap) {
					bits = bit_size(part_ptr->node_bitmap);
					if (bits > node_record_count)
						bits = node_record_count;
					for (i = 0; i < bits; i++)
						if (bit_test(part_ptr->node_bitmap,
							     i) &&
						    (node_map[i] >= 0))
							idx[n++] = node_map[i];
				}
				if (gp_snapshot_add_partition(
					    snap, part_ptr->name, idx, n) !=
				    GP_OK)
					error("gpupool: partition %s left out of the snapshot",
					      part_ptr->name);
			}
			list_iterator_destroy(it);
		}
	}

	if (job_list) {
		job_add_t add = { .snap = snap, .t = t,
				  .running_only = running_only,
				  .our_hold = our_hold };
		/*
		 * list_for_each, not an iterator: since Slurm 25.11
		 * preempt/gpupool refreshes from inside
		 * slurm_find_preemptable_jobs()'s list_for_each over job_list
		 * on the same thread, where only list_for_each may nest.
		 */
		(void) list_for_each(job_list, _add_job, &add);
		jobs = add.jobs;
	}
	xfree(node_map);
	xfree(idx);
	if (job_cnt)
		*job_cnt = jobs;
	return snap;
}

extern const char *gps_rule_name(int rule)
{
	switch (rule) {
	case GP_RULE_INPOOL:
		return "InPool";
	case GP_RULE_RECLAIM:
		return "Reclaim";
	default:
		return "None";
	}
}

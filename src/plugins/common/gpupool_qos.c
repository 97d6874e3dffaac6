/*
 * gpupool_qos.c - the name of a job's QOS, for its tier.
 *
 * QOS names, read safely: job_ptr->qos_ptr points into assoc_mgr's QOS list,
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

#include "src/common/xstring.h"

#include "gpupool_slurm.h"

/* QOS id -> name, copied from assoc_mgr (see the header comment). */
static pthread_mutex_t qos_mutex = PTHREAD_MUTEX_INITIALIZER;
static char **qos_names = NULL;		/* by id; NULL: no such QOS seen */
static uint32_t qos_names_cnt = 0;
static time_t qos_refreshed = 0;
static uint32_t qos_misses = 0;		/* ids still unknown after a refresh */

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
	if (_qos_lookup(id, buf, len))
		return buf;
	slurm_mutex_lock(&qos_mutex);
	qos_misses++;
	slurm_mutex_unlock(&qos_mutex);
	return NULL;
}

extern uint32_t gps_qos_miss_count(void)
{
	uint32_t n;

	slurm_mutex_lock(&qos_mutex);
	n = qos_misses;
	slurm_mutex_unlock(&qos_mutex);
	return n;
}

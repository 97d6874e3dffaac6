/*
 * preempt_gpupool.c - preempt/gpupool: who may preempt whom (R4 in-pool,
 * R5 reclaim), victim order (R6) and what preemption does (R7) of the
 * gpupool policy.
 *
 * A thin shim over libgpupool (src/common/gpupool.h); the engine is shared
 * with priority/gpupool (same process, same libgpupool), whose agent thread
 * keeps the engine's picture of the cluster current.
 *
 * Locks (Slurm 22.05.8): every caller of the functions below holds at
 * least the job write lock, except PREEMPT_DATA_MODE, which job packing
 * asks under the job read lock.  slurm_find_preemptable_jobs() calls
 * preempt_p_preemptable() from inside list_for_each(job_list): job_list's
 * own list lock is held there, so nothing here may iterate job_list while
 * answering preemptable().  The running-job refresh is done when
 * PREEMPT_DATA_ENABLED is asked (slurm_find_preemptable_jobs asks it just
 * before that list_for_each, with job write, node write, part read held).
 * QOS names come from gpupool_qos.c's copy (assoc_mgr lock facts there):
 * PREEMPT_DATA_MODE is asked by pack_job() under assoc_mgr's QOS read lock.
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"

#include "gpupool.h"
#include "gpupool_compat.h"
#include "gpupool_slurm.h"
#include "preempt_gpupool.h"

/* slurmctld's data and functions outside slurmctld: gpupool_ctld_syms.c */

const char plugin_name[] = "Preempt gpupool plugin (GPU pool reclaim)";
const char plugin_type[] = "preempt/gpupool";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static time_t last_refresh = (time_t) -1;
static time_t last_refresh_at = 0;	/* when that refresh ran */
static uint32_t last_preemptor = 0;	/* 25.11+: whose walk last asked */
static uint64_t last_fingerprint = 0;	/* running jobs at that refresh */
static uint64_t refresh_count = 0;	/* refreshes since load (logged) */
static bool qos_seeded = false;
/*
 * The preemptor whose candidates Slurm is collecting: it sorts them
 * (PREEMPT_DATA_PRIO) right after asking preemptable() about each, under
 * the same job write lock, so the order is this one's victim plan.
 */
static uint32_t asking_preemptor = 0;

extern int init(void)
{
	if (gps_abi_check(plugin_type) != SLURM_SUCCESS)
		return SLURM_ERROR;
	/*
	 * Every decision here reads the pass that priority/gpupool runs:
	 * without it each preemption check would fail, silently.  slurm_conf
	 * is read without its lock, as slurmctld itself does before its
	 * threads start (the other caller, a reconfigure, holds it).
	 */
	if (xstrcmp(slurm_conf.priority_type, "priority/gpupool")) {
		error("%s: PriorityType=%s, but %s decides from the passes of priority/gpupool: set PriorityType=priority/gpupool (or another PreemptType)",
		      plugin_type,
		      slurm_conf.priority_type ? slurm_conf.priority_type :
						 "(none)",
		      plugin_type);
		return SLURM_ERROR;
	}
	/*
	 * Slurm keeps a suspended job's GRES allocated: suspending a victim
	 * frees no GPU, so a reclaim would wait for ever (gpupool.conf refuses
	 * a tier's PreemptMode=suspend for the same reason).
	 */
	if (slurm_conf.preempt_mode & PREEMPT_MODE_SUSPEND) {
		error("%s: slurm.conf PreemptMode=SUSPEND: Slurm keeps a suspended job's GPUs allocated, so suspending a victim frees nothing for the job that preempts; set PreemptMode=REQUEUE or CANCEL (jobs that checkpoint: GraceTime with SlurmctldParameters=preempt_send_user_signal, then requeue)",
		      plugin_type);
		return SLURM_ERROR;
	}
	verbose("%s loaded", plugin_type);
	return SLURM_SUCCESS;
}

/*
 * The nodes the preemptor may use (gps_job_nodes_allowed), kept while the
 * same preemptor asks in the same partition with the same -w, -x, -C, GPU
 * type, whole-node flag, node count, GRES binding and reservation, and no
 * job, node or partition changed: preemptable() is asked once per running
 * job.  (The update times count whole seconds: an update in the second
 * the list was made leaves them equal, so what the job itself says is
 * compared too.)  allowed_mutex is held from the look-up through the
 * engine's answer (`names` is handed to it).
 */
static pthread_mutex_t allowed_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t job_id;
	part_record_t *part;
	time_t job_update, node_update, part_update;
	char *req_nodes, *exc_nodes, *features, *gpu_type, *resv;
	uint16_t whole_node;
	uint32_t min_nodes;
	bool bound;	/* --gres-flags=enforce-binding */
	int rc;
	char *names;
} allowed;

static void _allowed_clear(void)
{
	xfree(allowed.names);
	xfree(allowed.req_nodes);
	xfree(allowed.exc_nodes);
	xfree(allowed.features);
	xfree(allowed.gpu_type);
	xfree(allowed.resv);
	allowed.job_id = 0;
}

extern void fini(void)
{
	slurm_mutex_lock(&allowed_mutex);
	_allowed_clear();
	slurm_mutex_unlock(&allowed_mutex);
}

/*
 * Jobs started or ended since the engine's last look: refresh its pool
 * usage and victim order from the running jobs.  Caller holds job read,
 * part read locks and is not inside a job_list iteration.
 */
static void _refresh_running(uint32_t preemptor)
{
	gp_engine_t *e = gp_shared_engine();
	gp_snapshot_t *snap;
	gps_tres_t tres;
	time_t now, seen = last_node_update;
	uint64_t fingerprint;
	uint32_t jobs = 0;
	int rc;

	/*
	 * last_node_update counts seconds: a job that started later in the
	 * second of the last refresh leaves it unchanged.  Refresh again
	 * until that second is over (seen: a victim that had just started was
	 * ranked after every known one, ahead of its tier's order).
	 */
	if ((seen == last_refresh) && (last_refresh_at > seen))
		return;
	/*
	 * Since 25.11 this runs once per running job that a pending job's
	 * walk asks about (preempt_p_preemptable), all under one job write
	 * lock: nothing starts or ends during a walk, so one refresh per walk
	 * is exact.  Without this, every job start kept the second "open"
	 * and each call rebuilt the snapshot: running x tried pending walks
	 * of job_list per cycle.
	 */
	if (preemptor && (seen == last_refresh) &&
	    (preemptor == last_preemptor))
		return;
	last_preemptor = preemptor;
	/* Only after priority/gpupool's first full pass (pools known). */
	if (!job_list || (gp_engine_pool_count(e) == 0))
		return;
	now = time(NULL);
	/*
	 * Up to 24.11 each walk asks once, with no preemptor: while the
	 * second of the last refresh is still open, refresh only if the
	 * running jobs changed since (each start in a busy second otherwise
	 * cost a rebuild per walk).  The refresh after the second closes
	 * catches whatever the hash cannot see.
	 */
	fingerprint = gps_running_fingerprint();
	if ((seen == last_refresh) && (now == last_refresh_at) &&
	    (fingerprint == last_fingerprint))
		return;
	gps_tres_get(&tres);
	if (!(snap = gps_snapshot_build(&tres, true, now, &jobs)))
		return;
	rc = gp_engine_refresh_running(e, snap, (int64_t) now);
	gp_snapshot_destroy(snap);
	if (rc != GP_OK) {
		error("gpupool: refresh of running jobs failed: %s",
		      gp_status_str(rc));
		return;
	}
	last_refresh = seen;
	last_refresh_at = now;
	last_fingerprint = fingerprint;
	refresh_count++;
	/* DebugFlags=Priority: counted by scripts/preempt-bench.sh */
	log_flag(PRIO, "gpupool: refreshed %u running jobs (refresh %"PRIu64")",
		 jobs, refresh_count);
}

/*
 * Preemption is enabled and about to be looked at (PREEMPT_DATA_ENABLED
 * up to Slurm 24.11; the start of preempt_p_preemptable() since 25.11).
 * No assoc_mgr lock is held there: seed the QOS names, so that
 * PREEMPT_DATA_MODE (which may not look them up) knows them from the
 * first scheduling pass on.  All callers hold the job write lock and no
 * job_list iterator: the one safe place to look at running jobs.
 */
static void _preempt_prepare_for(uint32_t preemptor)
{
	if (!qos_seeded) {
		gps_qos_names_refresh();
		qos_seeded = true;
	}
	_refresh_running(preemptor);
}

/*
 * <= 24.11: asked once per walk, before it (PREEMPT_DATA_ENABLED); since
 * 25.11 GPS_DEFINE_PREEMPT_DATA_API has no use for it.
 */
__attribute__((unused)) static void _preempt_prepare(void)
{
	_preempt_prepare_for(0);
}

/* The job's QOS name (see gps_job_qos: may_lock false under pack_job). */
static const char *_qos(job_record_t *job_ptr, bool may_lock,
			char buf[GPS_QOS_LEN])
{
	return gps_job_qos(job_ptr, may_lock, buf, GPS_QOS_LEN);
}

/*
 * The tier of each QOS id, for preempt_p_job_preempt_check(): the job
 * queue's sort asks it twice per comparison (some 10^5 times a scheduling
 * cycle at 10,000 pending jobs), and looking the QOS name and its tier up
 * each time cost more than the rest of the sort.  One word per id: the
 * engine's configuration serial it was looked up under (other serials:
 * stale), a valid bit, preemptible, the tier's priority.  A QOS id keeps
 * its name (gpupool_qos.c), so the serial is all that can change it.
 */
#define QOS_TIER_IDS 1024
#define QOS_TIER_VALID (UINT64_C(1) << 31)
#define QOS_TIER_PREEMPTIBLE (UINT64_C(1) << 30)
#define QOS_TIER_PRIO ((UINT64_C(1) << 30) - 1)
static uint64_t qos_tier[QOS_TIER_IDS];

/* The job's tier, as far as gp_tier_preempts() reads it (no lock). */
static bool _qos_tier(job_record_t *job_ptr, gp_tier_info_t *tier)
{
	gp_engine_t *e = gp_shared_engine();
	uint32_t serial = (uint32_t) gp_engine_config_serial(e);
	uint32_t id = job_ptr->qos_id;
	bool cacheable = serial && (id < QOS_TIER_IDS);
	const char *name;
	char qos[GPS_QOS_LEN];
	uint64_t w;

	if (cacheable) {
		w = __atomic_load_n(&qos_tier[id], __ATOMIC_RELAXED);
		if (((uint32_t) (w >> 32) == serial) && (w & QOS_TIER_VALID)) {
			tier->priority = (uint32_t) (w & QOS_TIER_PRIO);
			tier->preemptible = (w & QOS_TIER_PREEMPTIBLE) != 0;
			return true;
		}
	}
	name = _qos(job_ptr, true, qos);
	if (gp_engine_tier_of_qos(e, name, tier) != GP_OK)
		return false;
	/* Not a QOS missing from the names (known later, maybe). */
	if (cacheable && name && (tier->priority <= QOS_TIER_PRIO) &&
	    (serial == (uint32_t) gp_engine_config_serial(e)))
		__atomic_store_n(&qos_tier[id],
				 ((uint64_t) serial << 32) | QOS_TIER_VALID |
				 (tier->preemptible ? QOS_TIER_PREEMPTIBLE : 0) |
				 tier->priority, __ATOMIC_RELAXED);
	return true;
}

/*
 * A preemptible job that preempted (ReclaimBy=all) is sorted at the
 * highest preemptible tier's priority until it starts (R1.1), as the core
 * orders it: a job of a higher preemptible tier would take the GPUs it
 * freed and be reclaimed again.
 */
static void _waiting_tier(job_record_t *job_ptr, gp_tier_info_t *tier)
{
	uint32_t waits_at;

	if (!tier->preemptible || !gpe_preemptor_waits(job_ptr))
		return;
	waits_at = gp_engine_waiting_preemptor_priority(gp_shared_engine());
	if (waits_at > tier->priority)
		tier->priority = waits_at;
}

/*
 * Return true if the first job sorts before the second (the job queue's
 * sort asks before it compares priorities): a tier that may preempt the
 * other's, or within one tier a job that preempted (R1.1).
 */
extern bool preempt_p_job_preempt_check(job_queue_rec_t *preemptor,
					job_queue_rec_t *preemptee)
{
	gp_tier_info_t a = { 0 }, b = { 0 };	/* a cache hit fills two fields */

	if (!preemptor || !preemptee || !preemptor->job_ptr ||
	    !preemptee->job_ptr)
		return false;
	if (!_qos_tier(preemptor->job_ptr, &a) ||
	    !_qos_tier(preemptee->job_ptr, &b))
		return false;
	_waiting_tier(preemptor->job_ptr, &a);
	_waiting_tier(preemptee->job_ptr, &b);
	if (gp_tier_preempts(&a, &b))
		return true;
	return (a.priority == b.priority) &&
	       gpe_preemptor_before(preemptor->job_ptr, preemptee->job_ptr);
}

/* Note the order of the arguments (as preempt/qos). */
static uint16_t _job_mode(job_record_t *job_ptr);

/* The preemptor's nodes into `pre` (allowed_mutex held). */
static void _allowed_nodes(job_record_t *job_ptr, const gps_tres_t *t,
			   gp_job_t *pre)
{
	__typeof__(job_ptr->details) d = job_ptr->details;
	const char *req = d ? d->req_nodes : NULL;
	const char *exc = d ? d->exc_nodes : NULL;
	const char *features = d ? d->features : NULL;
	const char *gpu_type = gps_job_gpu_type(job_ptr, t);
	uint16_t whole_node = d ? d->whole_node : 0;
	uint32_t min_nodes = d ? d->min_nodes : 0;
	bool bound = (job_ptr->bit_flags & GRES_ENFORCE_BIND) != 0;

	if ((allowed.job_id != job_ptr->job_id) ||
	    (allowed.part != job_ptr->part_ptr) ||
	    (allowed.job_update != last_job_update) ||
	    (allowed.node_update != last_node_update) ||
	    (allowed.part_update != last_part_update) ||
	    xstrcmp(allowed.req_nodes, req) ||
	    xstrcmp(allowed.exc_nodes, exc) ||
	    xstrcmp(allowed.features, features) ||
	    xstrcmp(allowed.gpu_type, gpu_type) ||
	    xstrcmp(allowed.resv, job_ptr->resv_name) ||
	    (allowed.whole_node != whole_node) ||
	    (allowed.min_nodes != min_nodes) || (allowed.bound != bound)) {
		_allowed_clear();
		allowed.rc = gps_job_nodes_allowed(job_ptr, job_ptr->part_ptr,
						   t, &allowed.names);
		allowed.job_id = job_ptr->job_id;
		allowed.part = job_ptr->part_ptr;
		allowed.job_update = last_job_update;
		allowed.node_update = last_node_update;
		allowed.part_update = last_part_update;
		allowed.req_nodes = xstrdup(req);
		allowed.exc_nodes = xstrdup(exc);
		allowed.features = xstrdup(features);
		allowed.gpu_type = xstrdup(gpu_type);
		allowed.resv = xstrdup(job_ptr->resv_name);
		allowed.whole_node = whole_node;
		allowed.min_nodes = min_nodes;
		allowed.bound = bound;
	}
	/* -x of a node outside the partition binds nothing. */
	if (allowed.rc == GPS_NODES_ANY)
		pre->flags &= ~GP_JOB_NODES_GIVEN;
	else
		pre->flags |= GP_JOB_NODES_GIVEN;
	pre->allowed_nodes = (allowed.rc == GPS_NODES_LISTED) ?
		allowed.names : NULL;
}

extern bool preempt_p_preemptable(job_record_t *preemptee,
				  job_record_t *preemptor)
{
	gp_job_t victim, pre;
	gp_verdict_t v;
	gps_tres_t tres;
	char *vparts = NULL, *pparts = NULL;
	char vqos[GPS_QOS_LEN], pqos[GPS_QOS_LEN];
	time_t now;
	int rc;

	if (!preemptee || !preemptor)
		return false;
	/* slurm_find_preemptable_jobs asks about every job in job_list */
	if (!IS_JOB_RUNNING(preemptee) || (preemptee == preemptor))
		return false;
	/*
	 * No PREEMPT_DATA_ENABLED question since Slurm 25.11: prepare here,
	 * inside slurm_find_preemptable_jobs()'s list_for_each over job_list
	 * (job write lock held), where the snapshot's list_for_each nests.
	 */
	if (GPS_PREEMPT_PREPARE_IN_PREEMPTABLE)
		_preempt_prepare_for(preemptor->job_id);

	asking_preemptor = preemptor->job_id;
	gps_tres_get(&tres);
	now = time(NULL);
	gps_job_fill(preemptee, GP_JOB_RUNNING, &tres, NULL, now, &victim,
		     &vparts, vqos);
	gps_job_fill(preemptor, GP_JOB_PENDING, &tres, preemptor->part_ptr,
		     now, &pre, &pparts, pqos);
	memset(&v, 0, sizeof(v));
	slurm_mutex_lock(&allowed_mutex);
	_allowed_nodes(preemptor, &tres, &pre);
	rc = gp_engine_preemptable(gp_shared_engine(), &victim, &pre,
				   (int64_t) now, &v);
	slurm_mutex_unlock(&allowed_mutex);
	if (rc != GP_OK) {
		debug("gpupool: preemptable(JobId=%u by JobId=%u): %s",
		      preemptee->job_id, preemptor->job_id,
		      gp_status_str(rc));
		v.allowed = 0;
	} else {
		debug2("gpupool: JobId=%u %s preempt JobId=%u (pool %s, %u/%u) rule %s: %s",
		       preemptor->job_id, v.allowed ? "may" : "may not",
		       preemptee->job_id, v.victim_pool, v.victim_pool_used,
		       v.victim_pool_quota, gp_rule_name(v.rule), v.why);
	}
	/* A move must not lose the job: only one Slurm requeues. */
	if (v.allowed && (v.rule == GP_RULE_CONSOLIDATE) &&
	    (_job_mode(preemptee) != PREEMPT_MODE_REQUEUE)) {
		debug2("gpupool: JobId=%u may not move JobId=%u: it would not be requeued (--no-requeue or PreemptMode)",
		       preemptor->job_id, preemptee->job_id);
		v.allowed = 0;
	}
	if (v.allowed)
		gpe_record_verdict(preemptee->job_id, preemptor->job_id,
				   victim.gpus, &v);
	xfree(vparts);
	xfree(pparts);
	return v.allowed ? true : false;
}

/* slurm.conf's PreemptMode as GP_MODE_* (gpupool_slurm.c). */
static int _site_mode(void)
{
	return gps_site_preempt_mode();
}

static uint16_t _job_mode(job_record_t *job_ptr)
{
	gp_tier_info_t t, *tier = NULL;
	char qos[GPS_QOS_LEN];
	bool requeueable;

	if (!job_ptr)
		return PREEMPT_MODE_OFF;
	/* pack_job asks under assoc_mgr's QOS read lock: no lookup here. */
	if (gp_engine_tier_of_qos(gp_shared_engine(),
				  _qos(job_ptr, false, qos), &t) == GP_OK)
		tier = &t;
	requeueable = job_ptr->details && job_ptr->details->requeue &&
		      job_ptr->batch_flag;
	switch (gp_preempt_mode(tier, _site_mode(), requeueable)) {
	case GP_MODE_REQUEUE:
		return PREEMPT_MODE_REQUEUE;
	case GP_MODE_CANCEL:
		return PREEMPT_MODE_CANCEL;
	case GP_MODE_SUSPEND:
		return PREEMPT_MODE_SUSPEND;
	default:
		return PREEMPT_MODE_OFF;
	}
}

/* Caller holds no assoc_mgr lock (slurm_job_get_grace_time). */
static uint32_t _grace_time(job_record_t *job_ptr)
{
	assoc_mgr_lock_t locks = { .qos = READ_LOCK };
	gp_tier_info_t t, *tier = NULL;
	uint32_t qos_grace = 0;
	char qos[GPS_QOS_LEN];

	if (!job_ptr)
		return 0;
	if (gp_engine_tier_of_qos(gp_shared_engine(),
				  _qos(job_ptr, true, qos), &t) == GP_OK)
		tier = &t;
	/* The QOS (slurmdbd's) only where the tier has no GraceTime. */
	if (gp_grace_time_from_qos(tier)) {
		assoc_mgr_lock(&locks);
		if (job_ptr->qos_ptr)
			qos_grace = job_ptr->qos_ptr->grace_time;
		assoc_mgr_unlock(&locks);
	}
	return gp_grace_time(tier, qos_grace);
}

/*
 * Slurm preempts in ascending order: the asking preemptor's planned
 * victims node group by node group (first = 1), the rest by R6.
 */
static uint32_t _victim_prio(job_record_t *job_ptr)
{
	if (!job_ptr)
		return 0;
	if (asking_preemptor)
		return gp_engine_plan_rank(gp_shared_engine(),
					   asking_preemptor, job_ptr->job_id);
	return gp_engine_victim_rank(gp_shared_engine(), job_ptr->job_id);
}

/* Slurm asks a victim's grace time once, when it really preempts it. */
static uint32_t _grace_and_log(job_record_t *job_ptr)
{
	uint32_t grace = _grace_time(job_ptr);

	if (job_ptr)
		gpe_record_preemption(job_ptr, _job_mode(job_ptr), grace);
	return grace;
}

GPS_DEFINE_PREEMPT_DATA_API(_job_mode, _victim_prio, _grace_and_log,
			    _preempt_prepare)

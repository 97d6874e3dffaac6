/*
 * priority_gpupool.c - priority/gpupool: job order (R1), quota admission
 * (R2) and time-decayed pool fairshare (R8) of the gpupool policy.
 *
 * A thin shim: the policy lives in libgpupool (src/common/gpupool.h).  This
 * file is the plugin API slurmctld calls (init, fini, priority_p_*); the
 * jobs behind it have a file each (priority_gpupool.h lists them).
 *
 * Locks (Slurm 22.05.8):
 *  - priority_p_set: caller holds the job write lock (set_job_prio) and no
 *    assoc_mgr lock (callers listed in gpupool_qos.c).
 *  - priority_p_job_end: caller holds the job write lock (deallocate_nodes
 *    -> acct_policy_job_fini); no assoc_mgr lock yet.
 *  - priority_p_get_priority_factors_list: no lock; we take job/node/part
 *    read as multifactor does (since 23.11 the caller holds them and
 *    assoc_mgr's QOS read lock: GPS_FACTORS_CALLER_LOCKS).
 *  - priority_p_reconfig: scontrol reconfigure (controller.c, proc_req.c)
 *    calls it with no slurmctld lock, setdebugflags and
 *    setfsdampeningfactor (proc_req.c) with the config write lock held: it
 *    only wakes the agent, which reloads gpupool.conf with no lock held.
 *  - agent thread: takes conf read, job write, node read, part read for a
 *    pass; conf read alone to copy StateSaveLocation and SlurmUser (which
 *    "scontrol reconfigure" frees and replaces under the config write
 *    lock); reads and writes files with no slurmctld lock held.
 *  - init: either before slurmctld's threads start, or from
 *    read_slurm_conf() with the config write lock held (a job found
 *    COMPLETING at start-up ends there and loads this plugin): it reads
 *    slurm_conf directly and takes no slurmctld lock.
 *  - fini: no slurmctld lock held (controller.c main thread at shutdown,
 *    before it joins the RPC threads); it takes conf read to copy the two
 *    settings for the last save, and job write to free the tables the
 *    hooks use.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/run_in_daemon.h"

#include "gpupool.h"
#include "gpupool_compat.h"
#include "gpupool_hold.h"
#include "gpupool_slurm.h"
#include "priority_gpupool.h"
#include "start_parts.h"

/* slurmctld's data and functions outside slurmctld: gpupool_ctld_syms.c */

const char plugin_name[] = "Priority gpupool plugin (GPU pool quotas)";
const char plugin_type[] = "priority/gpupool";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static bool in_ctld = false;

/* Where JobSubmitPlugins (comma-separated) lists gpupool: 0 first, -1 not. */
static int _job_submit_gpupool_at(const char *plugins)
{
	const char *p = plugins;
	int at = 0;

	while (p && *p) {
		size_t n = strcspn(p, ",");
		if (((n == 7) && !strncmp(p, "gpupool", 7)) ||
		    ((n == 18) && !strncmp(p, "job_submit/gpupool", 18)))
			return at;
		p += n;
		if (*p == ',')
			p++;
		at++;
	}
	return -1;
}

/*
 * Without job_submit/gpupool, `scontrol hold` on a job gpupool holds for
 * quota is ignored by Slurm (the job is at priority 0 already) and gpupool
 * later releases the job: the hold is lost; and an ArrayTaskThrottle
 * update may start an array's tasks over quota before the next pass.  A
 * plugin listed before it that refuses an update stops the list before it.
 * Say so loudly at every start.
 */
static void _warn_without_job_submit(void)
{
	const char *list = slurm_conf.job_submit_plugins ?
		slurm_conf.job_submit_plugins : "";
	int at = _job_submit_gpupool_at(list);

	if (at == 0)
		return;
	if (at > 0) {
		error("gpupool: JobSubmitPlugins lists gpupool after another plugin (it is \"%s\"): an update that one refuses never reaches gpupool, and an ArrayTaskThrottle in it can start an array's tasks over quota until the next pass; list gpupool first",
		      list);
		return;
	}
	error("gpupool: JobSubmitPlugins does not list gpupool (it is \"%s\"): `scontrol hold` and a user's hold on a job gpupool holds for quota are lost, and gpupool releases the job when quota frees; an ArrayTaskThrottle update can start an array's tasks over quota until the next pass; add JobSubmitPlugins=gpupool (first) to slurm.conf",
	      list);
}

extern int init(void)
{
	bool reconf = gps_init_by_reconfigure();

	if (gps_abi_check(plugin_type) != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (!running_in_slurmctld()) {
		debug("%s loaded (not in slurmctld: nothing to do)",
		      plugin_type);
		return SLURM_SUCCESS;
	}
	in_ctld = true;
	/* Which gpupool and for which Slurm: admin-guide.md, "Check the match". */
	info("%s: gpupool %s, built for Slurm %s", plugin_type, GPUPOOL_VERSION,
	     SLURM_VERSION_STRING);
	_warn_without_job_submit();

	gpp_conf_init(reconf);
	gpp_state_load();
	gps_array_user_throttle_from(gpp_throttle_user_max);

	if (GPS_PRIORITY_THREADS_IN_INIT)
		gpp_agent_start();
	verbose("%s loaded", plugin_type);
	return SLURM_SUCCESS;
}

/* Slurm >= 23.11: slurmctld is primary and has read its configuration. */
extern void priority_p_thread_start(void)
{
	if (in_ctld && !gpp_agent_running())
		gpp_agent_start();
}

/*
 * Slurm >= 23.11, after job state recovery: no boost (priority/basic's
 * use); the next pass sets every priority.
 */
extern uint32_t priority_p_recover(uint32_t prio_boost)
{
	gpp_agent_wake();
	return 0;
}

extern int fini(void)
{
	slurmctld_lock_t job_write = { .job = WRITE_LOCK };

	if (!in_ctld)
		return SLURM_SUCCESS;
	gpp_agent_stop();
	gpp_state_save(time(NULL));
	gpp_state_flush_events(time(NULL));
	/* What the next start falls back to (a reconfigure, since 23.11). */
	gpp_conf_save_copy_if_new();
	/*
	 * slurmctld calls this before it joins its RPC threads: one may
	 * still be in priority_p_set or priority_p_job_end, which use these
	 * tables under the job write lock.
	 */
	lock_slurmctld(job_write);
	gps_hold_fini();
	gps_exclusive_parts_fini();
	gpp_throttle_fini();
	parts_fini();
	in_ctld = false;
	unlock_slurmctld(job_write);
	return SLURM_SUCCESS;
}

/* The job's place in the last pass's order, from the core (job write lock). */
static int _provisional(job_record_t *job_ptr, time_t now,
			gp_pending_result_t *r)
{
	gp_engine_t *e = gp_shared_engine();
	gp_job_t job;
	gps_tres_t tres;
	char *parts = NULL, qos[GPS_QOS_LEN];
	int rc;

	gps_tres_get(&tres);
	gps_job_fill(job_ptr, GP_JOB_PENDING, &tres, NULL, now, &job, &parts,
		     qos);
	(void) gp_engine_note_job(e, job.job_id, job.submit_time,
				  job.restart_cnt, (int64_t) now);
	rc = gp_engine_provisional(e, &job, (int64_t) now, r);
	xfree(parts);
	return rc;
}

/*
 * What only Slurm knows of a job placed between passes (GP_PLACE_*).  At
 * submit job_allocate() calls us before _create_job_array(), and
 * job_independent() has set the begin time of an ordinary job that can
 * start now but skips arrays: the core decides whether the job waits for
 * the next pass, which admits an array's tasks and caps its throttle.  (A
 * job with a dependency waits for it anyway.)
 */
static uint32_t _place_facts(job_record_t *job_ptr)
{
	uint32_t facts = 0;

	if (job_ptr->priority == NO_VAL)
		facts |= GP_PLACE_SUBMIT;
	if (job_ptr->array_recs)
		facts |= GP_PLACE_ARRAY;
	if (job_ptr->details && !job_ptr->details->begin_time)
		facts |= GP_PLACE_UNTESTED;
	return facts;
}

/*
 * Submit, update, requeue, release: place the job in the last pass's
 * order (gp_engine_provisional), admitted or held against the quota left,
 * and wake the agent.
 */
extern uint32_t priority_p_set(uint32_t last_prio, job_record_t *job_ptr)
{
	gp_pending_result_t r;
	bool ours, changed = false;
	time_t now = time(NULL);
	uint32_t facts;
	int rc, waits;

	/*
	 * A priority set by an admin (scontrol update Priority=N, N >= 1)
	 * stays, and gpupool neither orders nor holds that job, as
	 * priority/multifactor leaves it: an admin's override of the quota.
	 * (Priority=1 used to fall through: held at 0 with direct_set_prio
	 * set, a hold gps_hold_is_ours() refuses, so held for ever.)
	 */
	if (job_ptr->direct_set_prio && (job_ptr->priority > 0))
		return job_ptr->priority;
	/* A hold by its user or an admin stays. */
	if (job_ptr->direct_set_prio && (job_ptr->priority == 0))
		return 0;

	/*
	 * Running or suspended (node-failure requeue in progress, resume of
	 * a manually suspended job): no admission for it now; the next pass
	 * orders it once it is pending.
	 */
	if (!IS_JOB_PENDING(job_ptr) || !in_ctld) {
		gpp_agent_wake();
		if (job_ptr->priority && (job_ptr->priority != NO_VAL) &&
		    (job_ptr->priority != INFINITE))
			return job_ptr->priority;
		return 1;
	}

	rc = _provisional(job_ptr, now, &r);
	if (rc != GP_OK) {
		gpp_agent_wake();
		error("gpupool: JobId=%u: no provisional priority: %s",
		      job_ptr->job_id, gp_status_str(rc));
		return 1;
	}

	ours = gps_hold_is_ours(job_ptr);
	facts = _place_facts(job_ptr);
	waits = gp_hold_until_pass(&r, facts);
	/* Listing several pools, it may start only where its quota fits. */
	if ((r.admission != GP_HELD_QUOTA) &&
	    !parts_apply(job_ptr, &r, false, &changed))
		waits |= gp_hold_until_pass(&r, GP_PLACE_NO_ROOM);
	/*
	 * A new job placed for good until the next pass (admitted, or held
	 * for quota): that pass may wait for a burst of submits to pause.
	 * One that waits for the pass to start, and any other change
	 * (update, release, requeue), wake it now.
	 */
	if ((facts & GP_PLACE_SUBMIT) && !waits)
		gpp_agent_note_submit();
	else
		gpp_agent_wake();
	if (r.admission == GP_HELD_QUOTA) {
		(void) gps_hold(job_ptr, r.reason);
		debug("gpupool: JobId=%u held at submit: %s", job_ptr->job_id,
		      r.reason);
		return 0;
	}
	if (ours) {
		gps_hold_release(job_ptr);
		changed = true;
	}
	/*
	 * An existing array record (update, release): cap it now; only a
	 * pass (or a job end) raises a cap, since the result may predate
	 * tasks that started since.
	 */
	if (gpp_throttle_apply(job_ptr, &r, true, &changed))
		queue_job_scheduler();
	if (changed)
		last_job_update = now;
	return MAX(r.priority, 1);
}

/*
 * scontrol reconfigure (assoc_clear true), setdebugflags and
 * setfsdampeningfactor (false; config write lock held): no file is read
 * here; the agent reloads gpupool.conf at once, if it changed, with no
 * slurmctld lock held, and runs a pass that applies it.
 */
extern void priority_p_reconfig(bool assoc_clear)
{
	if (!in_ctld)
		return;
	gpp_agent_reconfig(assoc_clear);
	/*
	 * A reconfigure (no slurmctld lock held here) rebuilt every job's
	 * partition list from its string: narrow again at once, before the
	 * scheduler that the reconfigure queues next.
	 */
	if (assoc_clear)
		parts_reapply();
	gps_site_factor_reconfig();
}

extern void priority_p_set_assoc_usage(slurmdb_assoc_rec_t *assoc)
{
	/* gpupool keeps its own usage per pool; associations have none. */
	return;
}

extern double priority_p_calc_fs_factor(long double usage_efctv,
					long double shares_norm)
{
	/* As priority/basic: only used by sshare against another cluster. */
	if ((shares_norm <= 0.0) || fuzzy_equal(shares_norm, NO_VAL))
		return 0.0;
	return pow(2.0, -(usage_efctv / shares_norm));
}

GPS_DEFINE_PRIORITY_FACTORS_LIST(gpp_factors_list)

extern void priority_p_job_end(job_record_t *job_ptr)
{
	gpp_job_end(job_ptr, in_ctld);
}

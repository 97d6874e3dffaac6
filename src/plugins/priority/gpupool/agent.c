/*
 * agent.c - priority/gpupool's agent thread: when a full pass runs, and the
 * pass itself (slurmctld's locks, the snapshot, the evaluation, writing the
 * results back).  Between passes it reloads gpupool.conf after a
 * reconfigure and writes files with no slurmctld lock held.
 *
 * Locks: a pass takes conf read, job write, node read, part read; the
 * node Weights it asks for (Placement=, node_weights.c) are set after it
 * under job, node and part write; the files take conf read alone to copy
 * StateSaveLocation and SlurmUser.
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#if HAVE_SYS_PRCTL_H
#include <sys/prctl.h>
#endif

#include "src/common/log.h"
#include "src/slurmctld/locks.h"

#include "agent_timing.h"
#include "gpupool_slurm.h"
#include "job_digest.h"
#include "priority_gpupool.h"

#define EVENT_MIN_GAP 1      /* seconds between event-driven passes */
#define SUBMIT_QUIET 2       /* seconds without a submit that end a burst */
#define SAVE_SOON_GAP 5      /* seconds between saves asked for by array caps */

static pthread_t agent_tid;
static bool running = false;
static pthread_mutex_t agent_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static bool stop = false;
static bool wake = false;
/* _mono_sec() of the last submit placed by priority_p_set (agent_mutex) */
static int64_t last_submit = INT64_MIN / 2;
/*
 * A submit was placed since the last pass (agent_mutex).  Its job may be
 * gone without a trace in the jobs' digest (sbatch --test-only, a failed
 * --immediate, a refused heterogeneous component: Slurm purges the record
 * and calls no hook), and its placement reserves quota until a pass.
 */
static bool placed_since_pass = false;
/* priority_p_reconfig asked for a reload (reconfig_full: by a reconfigure) */
static bool reconfig_pending = false;
static bool reconfig_full = false;
/* jobs_digest() as the last pass left the jobs (agent thread only). */
static uint64_t pass_digest = 0;
static bool pass_digest_valid = false;

/* Microseconds since *mark (monotonic clock); *mark moves to now. */
static uint64_t _usec_since(struct timespec *mark)
{
	struct timespec now;
	int64_t usec;

	clock_gettime(CLOCK_MONOTONIC, &now);
	usec = (int64_t) (now.tv_sec - mark->tv_sec) * 1000000 +
	       (now.tv_nsec - mark->tv_nsec) / 1000;
	*mark = now;
	return (usec > 0) ? (uint64_t) usec : 0;
}

/*
 * One full pass: snapshot, evaluate, write priorities and holds back.
 * `pt` gets the time of each part (gp_engine_note_pass).
 */
static void _pass(gp_pass_time_t *pt, time_t *seen_job_update)
{
	slurmctld_lock_t locks = { .conf = READ_LOCK, .job = WRITE_LOCK,
				   .node = READ_LOCK, .part = READ_LOCK };
	gp_snapshot_t *snap = NULL;
	gps_tres_t tres;
	uint32_t jobs = 0, qos_misses = gps_qos_miss_count();
	int rc = GP_OK, released = 0, held = 0;
	time_t now;
	struct timespec mark;
	DEF_TIMERS;

	memset(pt, 0, sizeof(*pt));
	clock_gettime(CLOCK_MONOTONIC, &mark);
	START_TIMER;
	lock_slurmctld(locks);
	/*
	 * Before the pass reads a job: a change after this (even in the
	 * window before the agent looks again) moves last_job_update past
	 * it and wakes the agent, or, within the same second, is found by
	 * the digest check once that second is over (_agent).  What the
	 * pass writes itself moves it too: the next look finds the jobs'
	 * digest unchanged and costs no pass.
	 */
	*seen_job_update = last_job_update;
	pt->lock_usec = _usec_since(&mark);
	if (!job_list) {
		unlock_slurmctld(locks);
		return;
	}
	now = time(NULL);
	gps_tres_get(&tres);
	gps_exclusive_parts_refresh();
	/* First: an array's size in the snapshot reads the user's throttle. */
	gpp_throttle_restore_all();
	snap = gps_snapshot_build(&tres, false, now, &jobs);
	pt->snapshot_usec = _usec_since(&mark);
	if (!snap)
		rc = GP_ERR_INTERNAL;
	else
		rc = gp_engine_evaluate(gp_shared_engine(), snap,
					(int64_t) now);
	pt->evaluate_usec = _usec_since(&mark);
	if (rc == GP_OK) {
		released = gpp_results_apply_pass(now, &held);
		gpp_weights_plan(gp_shared_engine());
	}
	pt->apply_usec = _usec_since(&mark);
	/*
	 * What this pass leaves, for _jobs_changed().  None after a job whose
	 * QOS name was not known yet: its qos_id will not change when the
	 * name comes, so only a pass can give it its tier.
	 */
	pass_digest = jobs_digest(&tres);
	pass_digest_valid = (rc == GP_OK) &&
			    (gps_qos_miss_count() == qos_misses);
	unlock_slurmctld(locks);
	END_TIMER;

	gp_snapshot_destroy(snap);
	if (rc != GP_OK) {
		error("gpupool: evaluation failed: %s", gp_status_str(rc));
		return;
	}
	if (released)
		queue_job_scheduler();
	debug2("gpupool: pass over %u jobs: %d held by quota, %d released, %s",
	      jobs, held, released, GPS_TIMER_STR);
	gpp_conf_log_warnings(false);
}

/*
 * Did any job change in what a pass reads since the last pass (see
 * job_digest.h)?  If not, *seen_job_update moves to the last_job_update
 * it read.  Takes the job and partition read locks.
 */
static bool _jobs_changed(time_t *seen_job_update)
{
	/* A pending job's size reads its partitions (gps_job_size). */
	slurmctld_lock_t locks = { .job = READ_LOCK, .part = READ_LOCK };
	gps_tres_t tres;
	uint64_t digest;
	time_t seen;

	if (!pass_digest_valid)
		return true;
	gps_tres_get(&tres);
	lock_slurmctld(locks);
	seen = last_job_update;
	digest = jobs_digest(&tres);
	unlock_slurmctld(locks);
	if (digest != pass_digest)
		return true;
	*seen_job_update = seen;
	return false;
}

/* Seconds of CLOCK_MONOTONIC: intervals, immune to wall clock steps. */
static int64_t _mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec;
}

/* What the agent saw of slurmctld at its last look (agent thread only). */
typedef struct {
	int64_t last_pass;	/* _mono_sec() when the last pass ended */
	/*
	 * Least gap between event-driven passes: a second, or 20 times what
	 * the last pass took, so that a busy queue (100k jobs: ~0.1 s a
	 * pass) costs slurmctld at most ~5% of its job lock.
	 */
	int64_t gap;
	time_t node_update, part_update, job_update;
	/* The wall second part_update was read in (gpp_stamp_unsettled). */
	time_t part_read_at;
	/* The last job_update whose second was over when checked. */
	time_t settled_job_update;
} agent_seen_t;

/* Why the agent goes on (_wait_for_pass). */
typedef struct {
	bool reload, full;	/* gpupool.conf to reload (by a reconfigure) */
	bool jobs_only;		/* only jobs moved: maybe nothing a pass reads */
	bool placed;		/* submits placed since the last pass */
	bool second_over;	/* job_update's second is over: look once */
	/* part_update was read in its own second, now over: a pass, once. */
	bool part_unsettled;
} agent_wake_t;

/*
 * Wait until a pass is due (gpp_pass_due) or the agent is told to stop
 * (false).  Takes agent_mutex.
 */
static bool _wait_for_pass(agent_seen_t *seen, agent_wake_t *w)
{
	bool run = false;
	struct timespec ts;

	memset(w, 0, sizeof(*w));
	slurm_mutex_lock(&agent_mutex);
	while (!stop && !run) {
		uint32_t interval =
			gp_engine_recalc_interval(gp_shared_engine());
		/*
		 * Jobs started, ended or changed (QOS, partition, hold,
		 * cancel of a pending job), or nodes changed: slurmctld
		 * calls no priority hook for most of these.
		 */
		bool ctld_moved;
		time_t now = time(NULL);
		int64_t mono;

		/*
		 * last_job_update counts whole seconds: a change in the
		 * second the last pass (or check) read it leaves it equal.
		 * Once that second is over, look at the jobs' digest once,
		 * so a change within that second is not missed.
		 */
		w->second_over = (last_job_update == seen->job_update) &&
				 (seen->job_update !=
				  seen->settled_job_update) &&
				 (now > seen->job_update);
		/*
		 * The same for partitions, which have no digest: an update in
		 * the second the last pass read them (rare) costs a pass.
		 */
		w->part_unsettled = gpp_stamp_unsettled(
			(int64_t) last_part_update,
			(int64_t) seen->part_update,
			(int64_t) seen->part_read_at, (int64_t) now);
		ctld_moved = (last_node_update != seen->node_update) ||
			     (last_part_update != seen->part_update) ||
			     w->part_unsettled ||
			     (last_job_update != seen->job_update) ||
			     w->second_over || placed_since_pass;
		mono = _mono_sec();
		run = gpp_pass_due(mono, seen->last_pass, seen->gap,
				   (int64_t) interval, reconfig_pending, wake,
				   ctld_moved);
		/*
		 * Jobs only added, in a burst of submits (each placed by
		 * priority_p_set already): wait for the burst to pause, at
		 * most RecalcInterval since the last pass.  Anything else
		 * that wakes the agent (a job end, a release, an update, a
		 * node or partition change, a reconfigure) still runs the
		 * pass after the least gap.
		 */
		if (run && !reconfig_pending && !wake &&
		    (last_node_update == seen->node_update) &&
		    (last_part_update == seen->part_update) &&
		    !w->part_unsettled &&
		    gpp_submit_burst(mono, last_submit, SUBMIT_QUIET) &&
		    !gpp_elapsed(mono, seen->last_pass, (int64_t) interval))
			run = false;
		/* Only job changes: maybe nothing a pass reads. */
		if (run && !reconfig_pending && !wake && ctld_moved &&
		    !gpp_elapsed(mono, seen->last_pass, (int64_t) interval))
			w->jobs_only =
				(last_node_update == seen->node_update) &&
				(last_part_update == seen->part_update) &&
				!w->part_unsettled;
		if (run)
			break;
		ts.tv_sec = now + 1;
		ts.tv_nsec = 0;
		slurm_cond_timedwait(&agent_cond, &agent_mutex, &ts);
	}
	wake = false;
	w->placed = placed_since_pass;
	placed_since_pass = false;
	w->reload = reconfig_pending;
	w->full = reconfig_full;
	reconfig_pending = reconfig_full = false;
	run = !stop;
	slurm_mutex_unlock(&agent_mutex);
	return run;
}

/* A pass, timed (gp_engine_note_pass), after reloading what was asked. */
static void _timed_pass(agent_seen_t *seen, const agent_wake_t *w)
{
	struct timeval t0, t1;
	struct timespec pass_start;
	gp_pass_time_t pt;
	long usec;

	if (w->reload)
		gpp_conf_reload(w->full);
	gpp_conf_save_copy_if_new();
	seen->node_update = last_node_update;
	seen->part_update = last_part_update;
	seen->part_read_at = time(NULL);
	gettimeofday(&t0, NULL);
	clock_gettime(CLOCK_MONOTONIC, &pass_start);
	_pass(&pt, &seen->job_update);
	gpp_weights_apply(&seen->node_update);
	pt.total_usec = _usec_since(&pass_start);
	gettimeofday(&t1, NULL);
	usec = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_usec - t0.tv_usec);
	seen->gap = MAX((int64_t) EVENT_MIN_GAP,
			(int64_t) (usec * 20 / 1000000));
	seen->last_pass = _mono_sec();
	(void) gp_engine_note_pass(gp_shared_engine(), &pt,
				   (int64_t) time(NULL));
}

static void *_agent(void *arg)
{
	agent_seen_t seen = { .last_pass = INT64_MIN / 2,
			      .gap = EVENT_MIN_GAP };
	agent_wake_t w;
	int64_t last_save = _mono_sec();
	bool save_soon = false;
	time_t checking, now;

#if HAVE_SYS_PRCTL_H
	(void) prctl(PR_SET_NAME, "gpupool", NULL, NULL, NULL);
#endif
	while (_wait_for_pass(&seen, &w)) {
		/*
		 * Woken by last_job_update alone: maybe nothing a pass reads
		 * changed.  The files below are still written on time.
		 */
		checking = seen.job_update;
		if (!w.jobs_only || w.placed || _jobs_changed(&seen.job_update))
			_timed_pass(&seen, &w);
		/* Looked at after its second: settled (a pass re-opens). */
		if (w.second_over)
			seen.settled_job_update = checking;
		/* No slurmctld lock is held here: slow storage stalls no one. */
		now = time(NULL);
		/*
		 * An array record capped or uncapped: saved soon, so that a
		 * slurmctld that dies before the next save knows the cap is
		 * gpupool's (array_throttle.c), not the user's; at most every
		 * SAVE_SOON_GAP, as each save copies the state under the
		 * engine's lock that the hooks take.
		 */
		save_soon |= gpp_throttle_caps_moved();
		if ((save_soon &&
		     gpp_elapsed(_mono_sec(), last_save, SAVE_SOON_GAP)) ||
		    gpp_elapsed(_mono_sec(), last_save,
				(int64_t) gp_engine_state_save_interval(
					gp_shared_engine()))) {
			gpp_state_save(now);
			last_save = _mono_sec();
			save_soon = false;
		}
		gpp_state_flush_events(now);
		gpp_state_save_stats(now);
	}
	return NULL;
}

/* Set `flag` (and `full` if given) and tell the agent. */
static void _tell(bool *flag, bool *full)
{
	if (!running)
		return;
	slurm_mutex_lock(&agent_mutex);
	*flag = true;
	if (full)
		*full = true;
	slurm_cond_broadcast(&agent_cond);
	slurm_mutex_unlock(&agent_mutex);
}

extern void gpp_agent_wake(void)
{
	_tell(&wake, NULL);
}

extern void gpp_agent_note_submit(void)
{
	int64_t now;

	if (!running)
		return;
	now = _mono_sec();
	slurm_mutex_lock(&agent_mutex);
	/* No signal: the agent looks every second (_wait_for_pass). */
	last_submit = now;
	placed_since_pass = true;
	slurm_mutex_unlock(&agent_mutex);
}

extern void gpp_agent_reconfig(bool full)
{
	_tell(&reconfig_pending, full ? &reconfig_full : NULL);
}

extern bool gpp_agent_running(void)
{
	return running;
}

extern void gpp_agent_start(void)
{
	stop = false;
	gpp_results_on_want_pass(gpp_agent_wake);
	gps_thread_create("gpupool", &agent_tid, _agent, NULL);
	running = true;
	gpp_agent_wake();	/* first pass right away */
}

extern void gpp_agent_stop(void)
{
	if (!running)
		return;
	_tell(&stop, NULL);
	gps_thread_join(agent_tid);
	running = false;
	gpp_weights_fini();
}

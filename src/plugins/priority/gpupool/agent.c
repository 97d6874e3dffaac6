/*
 * agent.c - priority/gpupool's agent thread: when a full pass runs, and the
 * pass itself (slurmctld's locks, the snapshot, the evaluation, writing the
 * results back).  Between passes it reloads gpupool.conf after a
 * reconfigure and writes files with no slurmctld lock held.
 *
 * Locks: a pass takes conf read, job write, node read, part read; the
 * files take conf read alone to copy StateSaveLocation and SlurmUser.
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

static pthread_t agent_tid;
static bool running = false;
static pthread_mutex_t agent_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static bool stop = false;
static bool wake = false;
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
	snap = gps_snapshot_build(&tres, false, now, &jobs);
	pt->snapshot_usec = _usec_since(&mark);
	if (!snap)
		rc = GP_ERR_INTERNAL;
	else
		rc = gp_engine_evaluate(gp_shared_engine(), snap,
					(int64_t) now);
	pt->evaluate_usec = _usec_since(&mark);
	if (rc == GP_OK)
		released = gpp_results_apply_pass(now, &held);
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
 * it read.  Takes the job read lock.
 */
static bool _jobs_changed(time_t *seen_job_update)
{
	slurmctld_lock_t job_read = { .job = READ_LOCK };
	gps_tres_t tres;
	uint64_t digest;
	time_t seen;

	if (!pass_digest_valid)
		return true;
	gps_tres_get(&tres);
	lock_slurmctld(job_read);
	seen = last_job_update;
	digest = jobs_digest(&tres);
	unlock_slurmctld(job_read);
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

static void *_agent(void *arg)
{
	int64_t last_pass = INT64_MIN / 2, last_save = _mono_sec(), mono;
	time_t seen_node_update = 0, seen_part_update = 0, seen_job_update = 0;
	/* The last seen_job_update whose second was over when checked. */
	time_t settled_job_update = 0;
	/*
	 * Least gap between event-driven passes: a second, or 20 times what
	 * the last pass took, so that a busy queue (100k jobs: ~0.1 s a
	 * pass) costs slurmctld at most ~5% of its job lock.
	 */
	int64_t gap = EVENT_MIN_GAP;
	struct timespec ts;

#if HAVE_SYS_PRCTL_H
	(void) prctl(PR_SET_NAME, "gpupool", NULL, NULL, NULL);
#endif
	while (true) {
		bool run = false, reload, full, jobs_only = false;
		bool second_over = false;
		time_t checking = 0;
		time_t now;
		struct timeval t0, t1;
		long usec;
		gp_pass_time_t pt;
		struct timespec pass_start;

		slurm_mutex_lock(&agent_mutex);
		while (!stop && !run) {
			uint32_t interval =
				gp_engine_recalc_interval(gp_shared_engine());
			/*
			 * Jobs started, ended or changed (QOS, partition,
			 * hold, cancel of a pending job), or nodes changed:
			 * slurmctld calls no priority hook for most of these.
			 */
			bool ctld_moved;

			now = time(NULL);
			/*
			 * last_job_update counts whole seconds: a change in
			 * the second the last pass (or check) read it leaves
			 * it equal.  Once that second is over, look at the
			 * jobs' digest once (issue 22, item 8).
			 */
			second_over = (last_job_update == seen_job_update) &&
				      (seen_job_update != settled_job_update) &&
				      (now > seen_job_update);
			ctld_moved = (last_node_update != seen_node_update) ||
				     (last_part_update != seen_part_update) ||
				     (last_job_update != seen_job_update) ||
				     second_over;
			mono = _mono_sec();
			run = gpp_pass_due(mono, last_pass, gap,
					   (int64_t) interval, reconfig_pending,
					   wake, ctld_moved);
			/* Only job changes: maybe nothing a pass reads. */
			if (run && !reconfig_pending && !wake &&
			    ctld_moved && !gpp_elapsed(mono, last_pass,
						       (int64_t) interval))
				jobs_only = (last_node_update ==
					     seen_node_update) &&
					    (last_part_update ==
					     seen_part_update);
			if (run)
				break;
			ts.tv_sec = now + 1;
			ts.tv_nsec = 0;
			slurm_cond_timedwait(&agent_cond, &agent_mutex, &ts);
		}
		wake = false;
		reload = reconfig_pending;
		full = reconfig_full;
		reconfig_pending = reconfig_full = false;
		if (stop) {
			slurm_mutex_unlock(&agent_mutex);
			break;
		}
		slurm_mutex_unlock(&agent_mutex);

		/*
		 * Woken by last_job_update alone: maybe nothing a pass reads
		 * changed.  The files below are still written on time.
		 */
		checking = seen_job_update;
		if (!jobs_only || _jobs_changed(&seen_job_update)) {
			if (reload)
				gpp_conf_reload(full);
			gpp_conf_save_copy_if_new();
			seen_node_update = last_node_update;
			seen_part_update = last_part_update;
			gettimeofday(&t0, NULL);
			clock_gettime(CLOCK_MONOTONIC, &pass_start);
			_pass(&pt, &seen_job_update);
			pt.total_usec = _usec_since(&pass_start);
			gettimeofday(&t1, NULL);
			usec = (t1.tv_sec - t0.tv_sec) * 1000000L +
			       (t1.tv_usec - t0.tv_usec);
			gap = MAX((int64_t) EVENT_MIN_GAP,
				  (int64_t) (usec * 20 / 1000000));
			last_pass = _mono_sec();
			(void) gp_engine_note_pass(gp_shared_engine(), &pt,
						   (int64_t) time(NULL));
		}
		/* Looked at after its second: settled (a pass re-opens). */
		if (second_over)
			settled_job_update = checking;
		/* No slurmctld lock is held here: slow storage stalls no one. */
		now = time(NULL);
		if (gpp_elapsed(_mono_sec(), last_save,
				(int64_t) gp_engine_state_save_interval(
					gp_shared_engine()))) {
			gpp_state_save(now);
			last_save = _mono_sec();
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
}

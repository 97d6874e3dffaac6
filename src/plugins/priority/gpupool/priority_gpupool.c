/*
 * priority_gpupool.c - priority/gpupool: job order (R1), quota admission
 * (R2) and time-decayed pool fairshare (R8) of the gpupool policy.
 *
 * A thin shim: the policy lives in libgpupool (src/common/gpupool.h).  This
 * file turns slurmctld's records into gpupool snapshots, runs the engine
 * from one agent thread and from slurmctld's priority hooks, and writes the
 * results back as job priorities and held reasons.
 *
 * Locks (Slurm 22.05.8):
 *  - priority_p_set: caller holds the job write lock (set_job_prio) and no
 *    assoc_mgr lock (callers listed in gpupool_slurm.c).
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
 *  - fini: no slurmctld lock held (controller.c main thread at shutdown);
 *    it takes conf read to copy the two settings for the last save.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#if HAVE_SYS_PRCTL_H
#include <sys/prctl.h>
#endif

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/parse_time.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "gpupool.h"
#include "gpupool_compat.h"
#include "gpupool_slurm.h"
#include "start_parts.h"

/*
 * sshare loads this plugin too (priority_g_calc_fs_factor); dlopen with
 * RTLD_LAZY defers functions only, so the slurmctld data we reference must
 * exist.  Inside slurmctld its own symbols take precedence over these.
 */
#if defined(__APPLE__)
extern void *acct_db_conn __attribute__((weak_import));
extern list_t *job_list __attribute__((weak_import));
extern list_t *part_list __attribute__((weak_import));
extern time_t last_job_update __attribute__((weak_import));
extern time_t last_node_update __attribute__((weak_import));
extern int slurmctld_tres_cnt __attribute__((weak_import));
#else
void *acct_db_conn = NULL;
list_t *job_list = NULL;
list_t *part_list = NULL;
time_t last_job_update = (time_t) 0;
time_t last_node_update = (time_t) 0;
int slurmctld_tres_cnt = 0;
#endif

const char plugin_name[] = "Priority gpupool plugin (GPU pool quotas)";
const char plugin_type[] = "priority/gpupool";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define GP_STARTING_REASON "GpuPoolStarting"
#define STATE_FILE "gpupool_state.json"
/* Preemption event log beside it: rotated at 8 MiB, 4 old files kept. */
#define EVENTS_FILE "gpupool_events.jsonl"
#define EVENTS_MAX_BYTES (8 * 1024 * 1024)
#define EVENTS_KEEP 4
/* The last gpupool.conf that loaded, beside the state file. */
#define CONF_COPY_FILE "gpupool.conf.last-good"
/* Pass durations for gpupool exporter and status, written every 10 s. */
#define STATS_FILE "gpupool_stats.json"
#define STATS_SAVE_INTERVAL 10
#define EVENT_MIN_GAP 1      /* seconds between event-driven passes */

static bool in_ctld = false;

static pthread_t agent_tid;
static bool agent_running = false;
static pthread_mutex_t agent_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static bool agent_stop = false;
static bool agent_wake = false;
/* priority_p_reconfig asked for a reload (reconfig_full: by a reconfigure) */
static bool reconfig_pending = false;
static bool reconfig_full = false;

/*
 * What gpupool.conf looked like at the last load attempt (agent thread
 * only after init): setdebugflags calls priority_p_reconfig too, and an
 * unchanged file is not loaded again.  chmod/chown change st_ctime.
 */
typedef struct {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	mode_t mode;
	uid_t uid;
	bool failed;	/* the last attempt was refused */
} conf_sig_t;
static conf_sig_t conf_sig;
/* A configuration loaded that the copy does not hold yet (agent only). */
static bool conf_copy_pending = false;

/*
 * Ids of pending jobs gpupool holds (priority 0, WAIT_HELD, our reason).
 * Sorted; protected by the slurmctld job lock (written only under the job
 * write lock).  After a restart our holds are recognised by their reason
 * text instead.
 */
static uint32_t *held_ids = NULL;
static size_t held_cnt = 0, held_cap = 0;

static void _wake(void);

/* ------------------------------------------------------------------ */
/* our holds                                                            */

static size_t _held_find(uint32_t id, bool *found)
{
	size_t lo = 0, hi = held_cnt;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (held_ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = (lo < held_cnt) && (held_ids[lo] == id);
	return lo;
}

static void _held_add(uint32_t id)
{
	bool found;
	size_t pos = _held_find(id, &found);

	if (found)
		return;
	if (held_cnt == held_cap) {
		held_cap = held_cap ? held_cap * 2 : 64;
		xrecalloc(held_ids, held_cap, sizeof(uint32_t));
	}
	memmove(&held_ids[pos + 1], &held_ids[pos],
		(held_cnt - pos) * sizeof(uint32_t));
	held_ids[pos] = id;
	held_cnt++;
}

static void _held_del(uint32_t id)
{
	bool found;
	size_t pos = _held_find(id, &found);

	if (!found)
		return;
	memmove(&held_ids[pos], &held_ids[pos + 1],
		(held_cnt - pos - 1) * sizeof(uint32_t));
	held_cnt--;
}

/* ------------------------------------------------------------------ */
/* job array throttles                                                  */

/*
 * Slurm starts task after task from one pending array meta record in a
 * single scheduling pass (job_scheduler.c: "goto next_task"; backfill
 * likewise); its only brake is the array throttle: no task starts while
 * array_recs->tot_run_tasks >= max_run_tasks (job_array_start_test, also
 * in backfill and job_independent), 0 meaning none.  So an NP array record
 * that the engine admits with k tasks gets max_run_tasks = its running
 * tasks (as the engine counts them) + k, never above the user's own
 * throttle (--array=...%N or scontrol update ArrayTaskThrottle), which is
 * remembered here and put back once gpupool no longer needs a cap.
 * Protected by the slurmctld job write lock, like held_ids.
 */
typedef struct {
	uint32_t job_id;
	uint32_t user_max;	/* the user's throttle, 0 = none */
	uint32_t our_max;	/* the cap gpupool last set */
} array_cap_t;

static array_cap_t *caps = NULL;
static size_t cap_cnt = 0, cap_alloc = 0;

static array_cap_t *_cap_find(uint32_t id)
{
	size_t i;

	for (i = 0; i < cap_cnt; i++)
		if (caps[i].job_id == id)
			return &caps[i];
	return NULL;
}

static void _cap_del(array_cap_t *c)
{
	*c = caps[--cap_cnt];
}

/*
 * Cap the array record `job_ptr` at `limit` running tasks; limit 0: no
 * gpupool cap (put the user's throttle back).  `lower_only`: never raise
 * a cap gpupool set before.  Returns 1 if the cap went up (more tasks may
 * start now), 0 otherwise; *changed tells whether anything changed.
 */
static int _array_cap(job_record_t *job_ptr, uint32_t limit, bool lower_only,
		      bool *changed)
{
	job_array_struct_t *ar = job_ptr->array_recs;
	array_cap_t *c = _cap_find(job_ptr->job_id);
	uint32_t user, want, old;

	if (!ar) {
		if (c)
			_cap_del(c);
		return 0;
	}
	old = ar->max_run_tasks;
	user = old;
	if (c) {
		/* changed by its user or an admin since we set it */
		if (old != c->our_max)
			c->user_max = old;
		user = c->user_max;
	}
	want = limit;
	if (user && (!want || (user < want)))
		want = user;
	if (c && lower_only && c->our_max && (!want || (c->our_max < want)))
		want = c->our_max;
	if (want == user) {
		/* the user's own throttle is the tighter: no cap of ours */
		if (c)
			_cap_del(c);
	} else {
		if (!c) {
			if (cap_cnt == cap_alloc) {
				cap_alloc = cap_alloc ? cap_alloc * 2 : 16;
				xrecalloc(caps, cap_alloc, sizeof(*caps));
			}
			c = &caps[cap_cnt++];
			c->job_id = job_ptr->job_id;
			c->user_max = user;
		}
		c->our_max = want;
	}
	if (old == want)
		return 0;
	ar->max_run_tasks = want;
	*changed = true;
	debug("gpupool: JobId=%u array throttle %u -> %u (user's %u)",
	      job_ptr->job_id, old, want, user);
	return (!want || (old && (want > old))) ? 1 : 0;
}

/*
 * The array part of one result: an NP array record admitted with k tasks
 * may run array_running + k at once; one held keeps its cap (priority 0
 * stops it); anything else needs no cap of ours.
 */
static int _apply_array(job_record_t *job_ptr, const gp_pending_result_t *r,
			bool lower_only, bool *changed)
{
	if (!job_ptr->array_recs)
		return 0;
	if (r->admission == GP_HELD_QUOTA)
		return 0;
	if ((r->admission == GP_ADMIT_QUOTA) &&
	    (gps_array_pending_tasks(job_ptr) > 1))
		return _array_cap(job_ptr,
				  MAX(r->array_running + r->admitted_tasks, 1),
				  lower_only, changed);
	if (!_cap_find(job_ptr->job_id))
		return 0;
	return _array_cap(job_ptr, 0, false, changed);
}

/* Put the user's throttle back on records no longer pending arrays. */
static void _caps_prune(bool *changed)
{
	size_t i = 0;

	while (i < cap_cnt) {
		job_record_t *j = find_job_record(caps[i].job_id);
		if (j && (gps_array_pending_tasks(j) > 1)) {
			i++;
			continue;
		}
		if (j && j->array_recs &&
		    (j->array_recs->max_run_tasks == caps[i].our_max)) {
			j->array_recs->max_run_tasks = caps[i].user_max;
			*changed = true;
		}
		_cap_del(&caps[i]);
	}
}

/*
 * Is this pending job held by gpupool (and by nobody else)?  A user/admin
 * hold sets direct_set_prio (scontrol hold) or WAIT_HELD_USER; ours is
 * WAIT_HELD with our reason text (or with none, after "scontrol release"
 * wiped it and the scheduler put WAIT_HELD back).
 */
static bool _is_our_hold(job_record_t *job_ptr)
{
	bool found;

	if (!IS_JOB_PENDING(job_ptr) || (job_ptr->priority != 0) ||
	    job_ptr->direct_set_prio)
		return false;
	if ((job_ptr->state_reason != WAIT_HELD) &&
	    (job_ptr->state_reason != WAIT_NO_REASON))
		return false;
	(void) _held_find(job_ptr->job_id, &found);
	if (found)
		return true;
	return job_ptr->state_desc &&
	       !xstrncmp(job_ptr->state_desc, GPS_HOLD_PREFIX,
			 strlen(GPS_HOLD_PREFIX));
}

/*
 * Undo our hold's reason.  A job whose begin time is still ahead says
 * BeginTime at once (what Slurm says when it next tests the job), not
 * None: nobody may take a job that cannot start yet for a runnable one.
 */
static void _release_reason(job_record_t *job_ptr)
{
	if (job_ptr->details && (job_ptr->details->begin_time > time(NULL)))
		job_ptr->state_reason = WAIT_TIME;
	else
		job_ptr->state_reason = WAIT_NO_REASON;
	xfree(job_ptr->state_desc);
	_held_del(job_ptr->job_id);
}

static void _set_prio(job_record_t *job_ptr, uint32_t prio)
{
	uint32_t *prio_array = gps_job_priority_array(job_ptr);

	job_ptr->priority = prio;
	/* Only multifactor builds priority_array; keep any left over equal. */
	if (prio_array) {
		size_t i, n = xsize(prio_array) / sizeof(*prio_array);
		for (i = 0; i < n; i++)
			prio_array[i] = prio;
	}
}

/*
 * Write one engine result back to a pending job.  Caller holds the job
 * write lock (and the partition read lock if `part_locked`) and has checked
 * the job is not held by its user or an admin and has no admin-set
 * priority.  Returns 1 if the job was released from our hold or may start
 * more array tasks, 0 otherwise; *changed tells whether anything changed.
 */
static int _apply(job_record_t *job_ptr, const gp_pending_result_t *r,
		  bool ours, bool part_locked, bool *changed)
{
	const char *hold = NULL;
	int raised;

	if (r->admission == GP_HELD_QUOTA) {
		hold = r->reason;
		parts_unrestrict(job_ptr, part_locked, changed);
	} else if (!parts_apply(job_ptr, r, part_locked, changed)) {
		/* Admitted where its list no longer reaches: the next pass. */
		hold = GP_STARTING_REASON;
		_wake();
	}
	if (hold) {
		if (job_ptr->priority != 0) {
			_set_prio(job_ptr, 0);
			*changed = true;
		}
		if (job_ptr->state_reason != WAIT_HELD) {
			job_ptr->state_reason = WAIT_HELD;
			*changed = true;
		}
		if (xstrcmp(job_ptr->state_desc, hold)) {
			xfree(job_ptr->state_desc);
			job_ptr->state_desc = xstrdup(hold);
			*changed = true;
		}
		if (!ours)
			debug("gpupool: hold JobId=%u: %s", job_ptr->job_id,
			      hold);
		_held_add(job_ptr->job_id);
		return 0;
	}
	raised = _apply_array(job_ptr, r, false, changed);

	if (ours) {
		_release_reason(job_ptr);
		*changed = true;
	}
	if (job_ptr->priority != MAX(r->priority, 1)) {
		_set_prio(job_ptr, MAX(r->priority, 1));
		*changed = true;
	}
	if (ours)
		debug("gpupool: release JobId=%u priority %u",
		      job_ptr->job_id, job_ptr->priority);
	return (ours || raised) ? 1 : 0;
}

/* May gpupool write this pending job's priority? */
static bool _writable(job_record_t *job_ptr, bool *ours)
{
	*ours = _is_our_hold(job_ptr);
	if (!IS_JOB_PENDING(job_ptr) || IS_JOB_REVOKED(job_ptr))
		return false;
	if (*ours)
		return true;
	if (job_ptr->priority == 0)	/* held by its user, an admin, Slurm */
		return false;
	if (job_ptr->direct_set_prio)	/* priority set by an admin */
		return false;
	return true;
}

/*
 * After gp_engine_job_ended() changed admissions: write the engine's
 * pending results back through the job hash (no job_list iteration: the
 * caller may be inside a list_for_each over job_list).  Job write lock
 * held.  Returns the count of released jobs.
 */
static int _apply_engine_pending(time_t now)
{
	gp_engine_t *e = gp_shared_engine();
	size_t i, n = gp_engine_pending_count(e);
	int released = 0;
	bool changed = false;

	for (i = 0; i < n; i++) {
		gp_pending_result_t r;
		job_record_t *job_ptr;
		bool ours;

		if (gp_engine_pending_at(e, i, &r) != GP_OK)
			continue;
		if (!(job_ptr = find_job_record(r.job_id)))
			continue;
		if (!_writable(job_ptr, &ours))
			continue;
		released += _apply(job_ptr, &r, ours, false, &changed);
	}
	if (changed)
		last_job_update = now;
	return released;
}

/* ------------------------------------------------------------------ */
/* agent thread                                                         */

/*
 * Copy StateSaveLocation and SlurmUser's uid under the config read lock:
 * "scontrol reconfigure" frees and replaces slurm_conf's strings under the
 * config write lock.  Caller holds no slurmctld lock.  xfree the result.
 */
static char *_conf_state_dir(uid_t *slurm_uid)
{
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	char *dir;

	lock_slurmctld(conf_read);
	dir = xstrdup(slurm_conf.state_save_location);
	*slurm_uid = slurm_conf.slurm_user_id;
	unlock_slurmctld(conf_read);
	return dir;
}

/*
 * May the state directory be trusted (owned by root or SlurmUser, not
 * writable by others)?  Refusals are logged when their text changes, so a
 * directory left open is reported once, not at every save.
 */
static bool _state_dir_trusted(const char *dir, uid_t slurm_uid)
{
	static char last[1024] = "";
	char err[1024] = "";

	if (gp_check_trusted_path(dir, "StateSaveLocation", slurm_uid, 1, err,
				  sizeof(err)) == GP_OK) {
		last[0] = '\0';
		return true;
	}
	if (strcmp(last, err)) {
		error("gpupool: %s; not saving gpupool state there", err);
		strlcpy(last, err, sizeof(last));
	}
	return false;
}

/*
 * Save the engine's state into StateSaveLocation.  Caller holds no
 * slurmctld lock: the write (fsync included) may take long on slow storage.
 */
static void _save_state(time_t now)
{
	char err[512] = "", *dir, *path;
	uid_t slurm_uid;
	int rc;

	if (!(dir = _conf_state_dir(&slurm_uid)))
		return;
	if (!_state_dir_trusted(dir, slurm_uid)) {
		xfree(dir);
		return;
	}
	path = xstrdup_printf("%s/%s", dir, STATE_FILE);
	debug("gpupool: saving state to %s", path);
	rc = gp_engine_save_state(gp_shared_engine(), path, (int64_t) now,
				  err, sizeof(err));
	if (rc != GP_OK)
		error("gpupool: saving %s: %s", path,
		      err[0] ? err : gp_status_str(rc));
	else
		debug("gpupool: state saved to %s", path);
	xfree(path);
	xfree(dir);
}

/*
 * Write the preemptions preempt/gpupool queued (under the job lock) to the
 * event log beside the state file.  Caller holds no slurmctld lock.  A
 * failure keeps them queued and is logged when its text changes.
 */
static void _flush_events(time_t now)
{
	static char last[512] = "";
	char err[512] = "", *dir, *path;
	uid_t slurm_uid;
	int rc;

	if (!gp_engine_queued_events(gp_shared_engine()))
		return;
	if (!(dir = _conf_state_dir(&slurm_uid)))
		return;
	if (!_state_dir_trusted(dir, slurm_uid)) {
		xfree(dir);
		return;
	}
	path = xstrdup_printf("%s/%s", dir, EVENTS_FILE);
	rc = gp_engine_flush_events(gp_shared_engine(), path,
				    EVENTS_MAX_BYTES, EVENTS_KEEP,
				    (int64_t) now, err, sizeof(err));
	if (rc == GP_OK) {
		last[0] = '\0';
	} else if (strcmp(last, err)) {
		error("gpupool: writing %s: %s (kept in memory, tried again after each pass)",
		      path, err[0] ? err : gp_status_str(rc));
		strlcpy(last, err, sizeof(last));
	}
	xfree(path);
	xfree(dir);
}

/*
 * Write the pass durations the core counted beside the state file, at most
 * every STATS_SAVE_INTERVAL seconds.  Caller holds no slurmctld lock.
 */
static void _save_stats(time_t now)
{
	static time_t last_save = 0;
	static char last[512] = "";
	char err[512] = "", *dir, *path;
	uid_t slurm_uid;
	int rc;

	if (now - last_save < STATS_SAVE_INTERVAL)
		return;
	last_save = now;
	if (!(dir = _conf_state_dir(&slurm_uid)))
		return;
	if (!_state_dir_trusted(dir, slurm_uid)) {
		xfree(dir);
		return;
	}
	path = xstrdup_printf("%s/%s", dir, STATS_FILE);
	rc = gp_engine_save_stats(gp_shared_engine(), path, (int64_t) now,
				  err, sizeof(err));
	if (rc == GP_OK) {
		last[0] = '\0';
	} else if (strcmp(last, err)) {
		error("gpupool: writing %s: %s", path,
		      err[0] ? err : gp_status_str(rc));
		strlcpy(last, err, sizeof(last));
	}
	xfree(path);
	xfree(dir);
}

/*
 * At init: a state directory others may write is fatal.  Reads slurm_conf
 * without taking the config lock: init() runs either before slurmctld's
 * threads start or from read_slurm_conf(), which already holds the config
 * write lock (a job found COMPLETING ends there and loads this plugin:
 * deallocate_nodes -> acct_policy_job_fini -> priority_g_job_end), so
 * taking the lock here would deadlock.
 */
static void _load_state(void)
{
	char err[1024] = "", *dir, *path, *bad;
	struct stat st;
	uid_t slurm_uid = slurm_conf.slurm_user_id;
	int rc;

	if (!(dir = xstrdup(slurm_conf.state_save_location)))
		return;
	if (gp_check_trusted_path(dir, "StateSaveLocation", slurm_uid, 1, err,
				  sizeof(err)) != GP_OK)
		fatal("gpupool: %s; refusing to start", err);
	path = xstrdup_printf("%s/%s", dir, STATE_FILE);
	xfree(dir);
	if (stat(path, &st) != 0) {
		info("gpupool: no state file %s yet", path);
		xfree(path);
		return;
	}
	rc = gp_engine_load_state(gp_shared_engine(), path, err, sizeof(err));
	if (rc == GP_OK) {
		info("gpupool: recovered state from %s", path);
	} else {
		bad = xstrdup_printf("%s.bad", path);
		error("gpupool: state file %s: %s; moving it to %s and starting without usage history",
		      path, err[0] ? err : gp_status_str(rc), bad);
		if (rename(path, bad) != 0)
			error("gpupool: rename %s to %s: %m", path, bad);
		xfree(bad);
	}
	xfree(path);
}

/* Log the engine's warnings when they change (agent thread, reconfig). */
static void _log_warnings(bool force)
{
	static pthread_mutex_t warn_mutex = PTHREAD_MUTEX_INITIALIZER;
	static char *last = NULL;
	char buf[4096] = "";
	char *line, *save = NULL;

	gp_engine_warnings(gp_shared_engine(), buf, sizeof(buf));
	slurm_mutex_lock(&warn_mutex);
	if (!force && !xstrcmp(last, buf)) {
		slurm_mutex_unlock(&warn_mutex);
		return;
	}
	xfree(last);
	last = xstrdup(buf);
	slurm_mutex_unlock(&warn_mutex);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		info("gpupool: warning: %s", line);
}

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
static void _pass(gp_pass_time_t *pt)
{
	slurmctld_lock_t locks = { .conf = READ_LOCK, .job = WRITE_LOCK,
				   .node = READ_LOCK, .part = READ_LOCK };
	gp_engine_t *e = gp_shared_engine();
	gp_snapshot_t *snap = NULL;
	gps_tres_t tres;
	list_itr_t *it;
	job_record_t *job_ptr;
	uint32_t jobs = 0;
	int rc = GP_OK, released = 0, held = 0;
	bool changed = false;
	time_t now;
	struct timespec mark;
	DEF_TIMERS;

	memset(pt, 0, sizeof(*pt));
	clock_gettime(CLOCK_MONOTONIC, &mark);
	START_TIMER;
	lock_slurmctld(locks);
	pt->lock_usec = _usec_since(&mark);
	if (!job_list) {
		unlock_slurmctld(locks);
		return;
	}
	now = time(NULL);
	gps_tres_init(&tres);
	snap = gps_snapshot_build(&tres, false, _is_our_hold, now, &jobs);
	pt->snapshot_usec = _usec_since(&mark);
	if (!snap)
		rc = GP_ERR_INTERNAL;
	else
		rc = gp_engine_evaluate(e, snap, (int64_t) now);
	pt->evaluate_usec = _usec_since(&mark);
	if (rc == GP_OK) {
		it = list_iterator_create(job_list);
		while ((job_ptr = list_next(it))) {
			gp_pending_result_t r;
			bool ours;

			if (!_writable(job_ptr, &ours))
				continue;
			if (gp_engine_pending_result(e, job_ptr->job_id, &r) !=
			    GP_OK) {
				/* Our hold but no result: not seen (yet). */
				continue;
			}
			released += _apply(job_ptr, &r, ours, true, &changed);
			if (r.admission == GP_HELD_QUOTA)
				held++;
		}
		list_iterator_destroy(it);
		/* Jobs that left the queue get their partitions back. */
		parts_sync();
		/* Forget holds of jobs that are gone or no longer ours. */
		if (held_cnt) {
			size_t i, k = 0;
			for (i = 0; i < held_cnt; i++) {
				job_record_t *j = find_job_record(held_ids[i]);
				if (j && IS_JOB_PENDING(j) &&
				    (j->priority == 0))
					held_ids[k++] = held_ids[i];
			}
			held_cnt = k;
		}
		_caps_prune(&changed);
		if (changed)
			last_job_update = now;
	}
	pt->apply_usec = _usec_since(&mark);
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
	_log_warnings(false);
}

/* ------------------------------------------------------------------ */
/* configuration                                                        */

static void _conf_sig_get(const char *path, conf_sig_t *sig)
{
	struct stat st;

	memset(sig, 0, sizeof(*sig));
	if (stat(path, &st) != 0)
		return;		/* all zero: the load reports the error */
	sig->dev = st.st_dev;
	sig->ino = st.st_ino;
	sig->size = st.st_size;
	sig->mtime = st.st_mtim;
	sig->ctime = st.st_ctim;
	sig->mode = st.st_mode;
	sig->uid = st.st_uid;
}

static bool _conf_sig_same(const conf_sig_t *a, const conf_sig_t *b)
{
	return (a->dev == b->dev) && (a->ino == b->ino) &&
	       (a->size == b->size) && (a->mode == b->mode) &&
	       (a->uid == b->uid) &&
	       (a->mtime.tv_sec == b->mtime.tv_sec) &&
	       (a->mtime.tv_nsec == b->mtime.tv_nsec) &&
	       (a->ctime.tv_sec == b->ctime.tv_sec) &&
	       (a->ctime.tv_nsec == b->ctime.tv_nsec);
}

/*
 * Check who may write gpupool.conf (root or slurm_uid only), then parse and
 * apply it (the engine keeps the previous configuration on any error).
 * Takes no slurmctld lock.  On failure err gets "PATH...: problem".
 */
static int _load_config(const char *path, uid_t slurm_uid, char *err,
			size_t err_len)
{
	int rc;

	rc = gp_check_trusted_path(path, "gpupool.conf", slurm_uid, 0, err,
				   err_len);
	if (rc == GP_OK)
		rc = gp_engine_load_config_file(gp_shared_engine(), path, err,
						err_len);
	if ((rc != GP_OK) && !err[0])
		snprintf(err, err_len, "%s: %s", path, gp_status_str(rc));
	return rc;
}

/*
 * Keep a copy of the gpupool.conf in force beside the state file (agent
 * thread, no slurmctld lock held).  init() starts from it when
 * gpupool.conf is bad: since Slurm 23.11 "scontrol reconfigure" restarts
 * slurmctld, and refusing to start would leave the cluster without one.
 */
static void _save_config_copy(void)
{
	char err[512] = "", *dir, *path;
	uid_t slurm_uid;

	if (!(dir = _conf_state_dir(&slurm_uid)))
		return;
	if (_state_dir_trusted(dir, slurm_uid)) {
		path = xstrdup_printf("%s/%s", dir, CONF_COPY_FILE);
		if (gp_engine_save_config_copy(gp_shared_engine(), path, err,
					       sizeof(err)) != GP_OK)
			error("gpupool: keeping a copy of the configuration in force: %s",
			      err);
		else
			conf_copy_pending = false;
		xfree(path);
	}
	xfree(dir);
}

/*
 * init() with a bad gpupool.conf (conf_err says why): load the last good
 * copy instead, loudly.  `reconf`: init() runs for "scontrol reconfigure"
 * (Slurm >= 23.11), which keeps the configuration in force, as in 22.05.
 * Reads slurm_conf without the config lock, as _load_state().  False if
 * there is no usable copy.
 */
static bool _load_config_copy(const char *conf_err, bool reconf)
{
	char err[1024] = "", when[64] = "", *path;
	uid_t slurm_uid = slurm_conf.slurm_user_id;
	struct stat st;
	bool ok;

	if (!slurm_conf.state_save_location)
		return false;
	path = xstrdup_printf("%s/%s", slurm_conf.state_save_location,
			      CONF_COPY_FILE);
	if (stat(path, &st) != 0) {
		error("gpupool: no copy of a good configuration at %s: %m",
		      path);
		xfree(path);
		return false;
	}
	ok = _load_config(path, slurm_uid, err, sizeof(err)) == GP_OK;
	if (ok) {
		slurm_make_time_str(&st.st_mtime, when, sizeof(when));
		if (reconf)
			error("gpupool: %s; keeping the previous configuration (the last good one, %s, saved %s)",
			      conf_err, path, when);
		else
			error("gpupool: %s; starting with the last good configuration, %s (saved %s), until gpupool.conf is fixed and \"scontrol reconfigure\" loads it",
			      conf_err, path, when);
	} else {
		error("gpupool: the last good configuration is no good either: %s",
		      err);
	}
	xfree(path);
	return ok;
}

/*
 * Agent thread, after priority_p_reconfig: load gpupool.conf again if it
 * changed since the last attempt (setdebugflags also calls reconfig), or
 * on a full reconfigure after a refused attempt, so the error is logged
 * again.  The pass that follows applies it.
 */
static void _reload_config(bool full)
{
	char err[1024] = "", *path = get_extra_conf_path("gpupool.conf");
	char *dir;
	conf_sig_t sig;
	uid_t slurm_uid;

	if (full) {
		/* A new StateSaveLocation (or a chmod of it): say so now. */
		dir = _conf_state_dir(&slurm_uid);
		if (dir)
			(void) _state_dir_trusted(dir, slurm_uid);
		xfree(dir);
	}
	_conf_sig_get(path, &sig);
	if (_conf_sig_same(&sig, &conf_sig) && !(full && conf_sig.failed)) {
		debug("gpupool: %s unchanged; configuration kept", path);
		xfree(path);
		return;
	}
	dir = _conf_state_dir(&slurm_uid);	/* SlurmUser under the lock */
	xfree(dir);
	if (_load_config(path, slurm_uid, err, sizeof(err)) != GP_OK) {
		error("gpupool: %s; keeping the previous configuration", err);
		sig.failed = true;
	} else {
		info("gpupool: configuration reloaded from %s", path);
		_log_warnings(true);
		conf_copy_pending = true;
	}
	conf_sig = sig;
	xfree(path);
}

/* ------------------------------------------------------------------ */
/* agent thread                                                         */

static void *_agent(void *arg)
{
	time_t last_pass = 0, last_save = time(NULL);
	time_t seen_node_update = 0, seen_job_update = 0;
	/*
	 * Least gap between event-driven passes: a second, or 20 times what
	 * the last pass took, so that a busy queue (100k jobs: ~0.1 s a
	 * pass) costs slurmctld at most ~5% of its job lock.
	 */
	time_t gap = EVENT_MIN_GAP;
	struct timespec ts;

#if HAVE_SYS_PRCTL_H
	(void) prctl(PR_SET_NAME, "gpupool", NULL, NULL, NULL);
#endif
	while (true) {
		bool run = false, reload, full;
		time_t now;
		struct timeval t0, t1;
		long usec;
		gp_pass_time_t pt;
		struct timespec pass_start;

		slurm_mutex_lock(&agent_mutex);
		while (!agent_stop && !run) {
			uint32_t interval =
				gp_engine_recalc_interval(gp_shared_engine());
			now = time(NULL);
			if (reconfig_pending)	/* apply it without delay */
				run = true;
			else if (agent_wake && (now - last_pass >= gap))
				run = true;
			else if (now - last_pass >= (time_t) interval)
				run = true;
			/*
			 * Jobs started, ended or changed (QOS, partition,
			 * hold, cancel of a pending job), or nodes changed:
			 * slurmctld calls no priority hook for most of these.
			 */
			else if (((last_node_update != seen_node_update) ||
				  (last_job_update != seen_job_update)) &&
				 (now - last_pass >= gap))
				run = true;
			if (run)
				break;
			ts.tv_sec = now + 1;
			ts.tv_nsec = 0;
			slurm_cond_timedwait(&agent_cond, &agent_mutex, &ts);
		}
		agent_wake = false;
		reload = reconfig_pending;
		full = reconfig_full;
		reconfig_pending = reconfig_full = false;
		if (agent_stop) {
			slurm_mutex_unlock(&agent_mutex);
			break;
		}
		slurm_mutex_unlock(&agent_mutex);

		if (reload)
			_reload_config(full);
		if (conf_copy_pending)
			_save_config_copy();
		seen_node_update = last_node_update;
		gettimeofday(&t0, NULL);
		clock_gettime(CLOCK_MONOTONIC, &pass_start);
		_pass(&pt);
		pt.total_usec = _usec_since(&pass_start);
		gettimeofday(&t1, NULL);
		/* What the pass itself changed is no news to the next one. */
		seen_job_update = last_job_update;
		usec = (t1.tv_sec - t0.tv_sec) * 1000000L +
		       (t1.tv_usec - t0.tv_usec);
		gap = MAX((time_t) EVENT_MIN_GAP, (time_t) (usec * 20 / 1000000));
		last_pass = time(NULL);
		(void) gp_engine_note_pass(gp_shared_engine(), &pt,
					   (int64_t) last_pass);
		/* No slurmctld lock is held here: slow storage stalls no one. */
		if (last_pass - last_save >=
		    (time_t) gp_engine_state_save_interval(gp_shared_engine())) {
			_save_state(last_pass);
			last_save = time(NULL);
		}
		_flush_events(last_pass);
		_save_stats(last_pass);
	}
	return NULL;
}

static void _wake(void)
{
	if (!agent_running)
		return;
	slurm_mutex_lock(&agent_mutex);
	agent_wake = true;
	slurm_cond_signal(&agent_cond);
	slurm_mutex_unlock(&agent_mutex);
}

/* ------------------------------------------------------------------ */
/* plugin life cycle                                                    */

static void _agent_start(void)
{
	agent_stop = false;
	gps_thread_create("gpupool", &agent_tid, _agent, NULL);
	agent_running = true;
	_wake();	/* first pass right away */
}

extern int init(void)
{
	char err[1024] = "", *path;
	bool reconf = gps_init_by_reconfigure();

	if (gps_abi_check(plugin_type) != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (!running_in_slurmctld()) {
		debug("%s loaded (not in slurmctld: nothing to do)",
		      plugin_type);
		return SLURM_SUCCESS;
	}
	in_ctld = true;

	path = get_extra_conf_path("gpupool.conf");
	_conf_sig_get(path, &conf_sig);
	/* No slurmctld lock here: see _load_state(). */
	if (_load_config(path, slurm_conf.slurm_user_id, err, sizeof(err)) ==
	    GP_OK) {
		info("gpupool: configuration %s from %s",
		     reconf ? "reloaded" : "loaded", path);
		conf_copy_pending = true;
	} else if (_load_config_copy(err, reconf)) {
		conf_sig.failed = true;	/* a reconfigure tries the file again */
	} else {
		fatal("gpupool: %s; refusing to start", err);
	}
	xfree(path);
	_log_warnings(true);
	_load_state();

	if (GPS_PRIORITY_THREADS_IN_INIT)
		_agent_start();
	verbose("%s loaded", plugin_type);
	return SLURM_SUCCESS;
}

/* Slurm >= 23.11: slurmctld is primary and has read its configuration. */
extern void priority_p_thread_start(void)
{
	if (in_ctld && !agent_running)
		_agent_start();
}

/*
 * Slurm >= 23.11, after job state recovery: no boost (priority/basic's
 * use); the next pass sets every priority.
 */
extern uint32_t priority_p_recover(uint32_t prio_boost)
{
	_wake();
	return 0;
}

extern int fini(void)
{
	if (!in_ctld)
		return SLURM_SUCCESS;
	if (agent_running) {
		slurm_mutex_lock(&agent_mutex);
		agent_stop = true;
		slurm_cond_broadcast(&agent_cond);
		slurm_mutex_unlock(&agent_mutex);
		gps_thread_join(agent_tid);
		agent_running = false;
	}
	_save_state(time(NULL));
	_flush_events(time(NULL));
	/* What the next start falls back to (a reconfigure, since 23.11). */
	if (conf_copy_pending)
		_save_config_copy();
	xfree(held_ids);
	held_cnt = held_cap = 0;
	xfree(caps);
	cap_cnt = cap_alloc = 0;
	parts_fini();
	in_ctld = false;
	return SLURM_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Slurm priority API                                                   */

extern uint32_t priority_p_set(uint32_t last_prio, job_record_t *job_ptr)
{
	gp_engine_t *e = gp_shared_engine();
	gp_pending_result_t r;
	gp_job_t job;
	gps_tres_t tres;
	char *parts = NULL, qos[GPS_QOS_LEN];
	bool ours, changed = false;
	time_t now = time(NULL);
	int rc;

	/* A priority set by an admin stays (as priority/basic does). */
	if (job_ptr->direct_set_prio && (job_ptr->priority > 1))
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
		_wake();
		if (job_ptr->priority && (job_ptr->priority != NO_VAL) &&
		    (job_ptr->priority != INFINITE))
			return job_ptr->priority;
		return 1;
	}

	gps_tres_init(&tres);
	gps_job_fill(job_ptr, GP_JOB_PENDING, &tres, NULL, &job, &parts, qos);
	(void) gp_engine_note_job(e, job.job_id, job.submit_time,
				  job.restart_cnt, (int64_t) now);
	rc = gp_engine_provisional(e, &job, (int64_t) now, &r);
	xfree(parts);
	_wake();
	if (rc != GP_OK) {
		error("gpupool: JobId=%u: no provisional priority: %s",
		      job_ptr->job_id, gp_status_str(rc));
		return 1;
	}

	ours = _is_our_hold(job_ptr);
	/*
	 * At submit job_allocate() calls us before _create_job_array(): an
	 * array record cannot be told from an ordinary job yet, and the
	 * scheduler may start all its tasks before the next pass sees them.
	 * job_independent() has set begin_time of every ordinary job that
	 * can start now, but is skipped for arrays: a job without one waits
	 * for the next pass (woken above), which admits its tasks and caps
	 * its throttle.  (A job with a dependency waits for it anyway.)
	 */
	if ((r.admission == GP_ADMIT_QUOTA) && (job_ptr->priority == NO_VAL) &&
	    !job_ptr->array_recs && job_ptr->details &&
	    !job_ptr->details->begin_time) {
		r.admission = GP_HELD_QUOTA;
		snprintf(r.reason, sizeof(r.reason), "%s", GP_STARTING_REASON);
	}
	/* Listing several pools, it may start only where its quota fits. */
	if ((r.admission != GP_HELD_QUOTA) &&
	    !parts_apply(job_ptr, &r, false, &changed)) {
		r.admission = GP_HELD_QUOTA;
		snprintf(r.reason, sizeof(r.reason), "%s", GP_STARTING_REASON);
	}
	if (r.admission == GP_HELD_QUOTA) {
		job_ptr->state_reason = WAIT_HELD;
		xfree(job_ptr->state_desc);
		job_ptr->state_desc = xstrdup(r.reason);
		_held_add(job_ptr->job_id);
		debug("gpupool: JobId=%u held at submit: %s", job_ptr->job_id,
		      r.reason);
		return 0;
	}
	if (ours) {
		_release_reason(job_ptr);
		changed = true;
	}
	/*
	 * An existing array record (update, release): cap it now; only a
	 * pass (or a job end) raises a cap, since the result may predate
	 * tasks that started since.
	 */
	if (_apply_array(job_ptr, &r, true, &changed))
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
	if (agent_running) {
		slurm_mutex_lock(&agent_mutex);
		reconfig_pending = true;
		if (assoc_clear)
			reconfig_full = true;
		slurm_cond_signal(&agent_cond);
		slurm_mutex_unlock(&agent_mutex);
	}
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

static bool _in_list_u32(list_t *l, uint32_t v)
{
	list_itr_t *it;
	uint32_t *p;
	bool found = false;

	it = list_iterator_create(l);
	while ((p = list_next(it))) {
		if (*p == v) {
			found = true;
			break;
		}
	}
	list_iterator_destroy(it);
	return found;
}

static int _same_ptr(void *x, void *key)
{
	return (x == key) ? 1 : 0;
}

static bool _part_wanted(list_t *part_filter, part_record_t *part_ptr)
{
	if (!part_filter)
		return true;
	return list_find_first(part_filter, _same_ptr, part_ptr) != NULL;
}

static void _add_factors(list_t *ret_list, job_record_t *job_ptr,
			 part_record_t *part_ptr, const gp_pending_result_t *r)
{
	char *partition = part_ptr ? part_ptr->name : job_ptr->partition;

	if (job_ptr->direct_set_prio && (job_ptr->priority > 0))
		gps_factors_append(ret_list, job_ptr, partition,
				   job_ptr->priority, 0, 0, 0);
	else if (r)
		/* tier -> QOS column, pool standing -> FAIRSHARE, order -> AGE */
		gps_factors_append(ret_list, job_ptr, partition, 0,
				   r->factor_tier, r->factor_fairshare,
				   r->factor_age);
	else
		gps_factors_append(ret_list, job_ptr, partition, 0, 0, 0, 0);
}

/* Caller holds job, node and partition read locks. */
static list_t *_factors_list(const gps_factors_filter_t *filter, uid_t uid)
{
	list_t *ret_list = NULL, *part_filter = NULL;
	list_itr_t *it, *pit;
	job_record_t *job_ptr;
	part_record_t *part_ptr;
	char *tmp, *tok, *save = NULL;
	time_t now = time(NULL);

	if (filter->partitions) {
		part_filter = list_create(NULL);
		tmp = xstrdup(filter->partitions);
		for (tok = strtok_r(tmp, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if ((part_ptr = find_part_record(tok)))
				list_append(part_filter, part_ptr);
		xfree(tmp);
	}

	if (job_list && list_count(job_list)) {
		ret_list = gps_factors_list_create();
		it = list_iterator_create(job_list);
		while ((job_ptr = list_next(it))) {
			gp_pending_result_t r, *rp = NULL;
			bool ours;

			if (!IS_JOB_PENDING(job_ptr) ||
			    IS_JOB_REVOKED(job_ptr))
				continue;
			ours = _is_our_hold(job_ptr);
			/* user/admin holds: nothing to show (as multifactor) */
			if ((job_ptr->priority == 0) && !ours)
				continue;
			if (job_ptr->details &&
			    (job_ptr->details->begin_time > now) && !ours)
				continue;
			if (filter->job_id_list &&
			    !_in_list_u32(filter->job_id_list,
					  job_ptr->job_id))
				continue;
			if (filter->uid_list &&
			    !_in_list_u32(filter->uid_list,
					  job_ptr->user_id))
				continue;
			if ((slurm_conf.private_data & PRIVATE_DATA_JOBS) &&
			    (job_ptr->user_id != uid) &&
			    !validate_operator(uid) &&
			    (((slurm_mcs_get_privatedata() == 0) &&
			      !gps_is_user_acct_coord(uid,
						      job_ptr->account)) ||
			     ((slurm_mcs_get_privatedata() == 1) &&
			      (mcs_g_check_mcs_label(uid, job_ptr->mcs_label,
						     false) != 0))))
				continue;
			if (gp_engine_pending_result(gp_shared_engine(),
						     job_ptr->job_id,
						     &r) == GP_OK)
				rp = &r;
			else if (!job_ptr->direct_set_prio)
				continue;	/* not evaluated yet */

			if (job_ptr->part_ptr_list) {
				pit = list_iterator_create(
					job_ptr->part_ptr_list);
				while ((part_ptr = list_next(pit)))
					if (_part_wanted(part_filter,
							 part_ptr))
						_add_factors(ret_list,
							     job_ptr,
							     part_ptr, rp);
				list_iterator_destroy(pit);
			} else if (job_ptr->part_ptr &&
				   _part_wanted(part_filter,
						job_ptr->part_ptr)) {
				_add_factors(ret_list, job_ptr,
					     job_ptr->part_ptr, rp);
			}
		}
		list_iterator_destroy(it);
		if (!list_count(ret_list))
			FREE_NULL_LIST(ret_list);
	}
	FREE_NULL_LIST(part_filter);
	return ret_list;
}

/* Takes the locks where the release's caller does not hold them. */
static list_t *_factors_list_locked(const gps_factors_filter_t *filter,
				    uid_t uid)
{
	slurmctld_lock_t locks = { .job = READ_LOCK, .node = READ_LOCK,
				   .part = READ_LOCK };
	list_t *ret_list;

	if (GPS_FACTORS_CALLER_LOCKS)
		return _factors_list(filter, uid);
	lock_slurmctld(locks);
	ret_list = _factors_list(filter, uid);
	unlock_slurmctld(locks);
	return ret_list;
}

GPS_DEFINE_PRIORITY_FACTORS_LIST(_factors_list_locked)

/* priority/basic's accounting duty: give back the unused run seconds. */
static void _return_unused_run_secs(job_record_t *job_ptr)
{
	uint64_t time_limit_secs = (uint64_t) job_ptr->time_limit * 60;
	slurmdb_assoc_rec_t *assoc_ptr;
	uint64_t *unused;
	int i;
	assoc_mgr_lock_t locks = { .assoc = WRITE_LOCK, .qos = WRITE_LOCK };

	if (!job_ptr->tres_alloc_cnt || (slurmctld_tres_cnt <= 0))
		return;
	unused = xcalloc(slurmctld_tres_cnt, sizeof(uint64_t));
	for (i = 0; i < slurmctld_tres_cnt; i++) {
		if (job_ptr->tres_alloc_cnt[i] == NO_CONSUME_VAL64)
			continue;
		unused[i] = job_ptr->tres_alloc_cnt[i] * time_limit_secs;
	}

	assoc_mgr_lock(&locks);
	if (job_ptr->qos_ptr && job_ptr->qos_ptr->usage) {
		slurmdb_qos_rec_t *qos_ptr = job_ptr->qos_ptr;
		gps_qos_return_run_secs(job_ptr, qos_ptr, unused,
					slurmctld_tres_cnt);
		for (i = 0; i < slurmctld_tres_cnt; i++) {
			if (unused[i] >
			    qos_ptr->usage->grp_used_tres_run_secs[i])
				qos_ptr->usage->grp_used_tres_run_secs[i] = 0;
			else
				qos_ptr->usage->grp_used_tres_run_secs[i] -=
					unused[i];
		}
	}
	assoc_ptr = job_ptr->assoc_ptr;
	while (assoc_ptr && assoc_ptr->usage) {
		for (i = 0; i < slurmctld_tres_cnt; i++) {
			if (unused[i] >
			    assoc_ptr->usage->grp_used_tres_run_secs[i])
				assoc_ptr->usage->grp_used_tres_run_secs[i] = 0;
			else
				assoc_ptr->usage->grp_used_tres_run_secs[i] -=
					unused[i];
		}
		assoc_ptr = assoc_ptr->usage->parent_assoc_ptr;
	}
	assoc_mgr_unlock(&locks);
	xfree(unused);
}

extern void priority_p_job_end(job_record_t *job_ptr)
{
	time_t now = time(NULL);
	int rc, released;

	_return_unused_run_secs(job_ptr);
	if (!in_ctld)
		return;

	parts_left_queue(job_ptr, false);
	rc = gp_engine_job_ended(gp_shared_engine(), job_ptr->job_id,
				 (int64_t) now);
	if (rc == 1) {
		released = _apply_engine_pending(now);
		if (released) {
			debug("gpupool: JobId=%u ended: %d job(s) admitted",
			      job_ptr->job_id, released);
			queue_job_scheduler();
		}
	} else if (rc < 0) {
		error("gpupool: JobId=%u end: %s", job_ptr->job_id,
		      gp_status_str(-rc));
	}
	_wake();
}

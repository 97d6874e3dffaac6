/*
 * state_files.c - priority/gpupool's files in StateSaveLocation: the state
 * file (usage history, original submit times), the preemption event log
 * and the pass durations.  Written by the agent thread and fini with no
 * slurmctld lock held: slow storage stalls no lock holder.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "priority_gpupool.h"

#define STATE_FILE "gpupool_state.json"
/* Preemption event log beside it: rotated at 8 MiB, 4 old files kept. */
#define EVENTS_FILE "gpupool_events.jsonl"
#define EVENTS_MAX_BYTES (8 * 1024 * 1024)
#define EVENTS_KEEP 4
/* Pass durations for gpupool exporter and status, written every 10 s. */
#define STATS_FILE "gpupool_stats.json"
#define STATS_SAVE_INTERVAL 10

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

extern char *gpp_state_file_path(const char *name, uid_t *slurm_uid)
{
	char *dir, *path = NULL;

	if (!(dir = _conf_state_dir(slurm_uid)))
		return NULL;
	if (_state_dir_trusted(dir, *slurm_uid))
		path = xstrdup_printf("%s/%s", dir, name);
	xfree(dir);
	return path;
}

/*
 * The state file was there at start but could not be looked at (EIO,
 * ESTALE on shared storage...): its usage history was not loaded, so no
 * save goes over it until it is gone (moved away by the admin).
 */
static bool state_unread = false;

/* Save the engine's state (the write, fsync included, may take long). */
extern void gpp_state_save(time_t now)
{
	static bool told = false;
	char err[512] = "", *path;
	struct stat st;
	uid_t slurm_uid;
	int rc;

	if (!(path = gpp_state_file_path(STATE_FILE, &slurm_uid)))
		return;
	if (state_unread) {
		if ((lstat(path, &st) != 0) && (errno == ENOENT)) {
			state_unread = false;
		} else {
			if (!told)
				error("gpupool: not saving state over %s, which could not be read at start: restart slurmctld to read it, or move it away to start a new one",
				      path);
			told = true;
			xfree(path);
			return;
		}
	}
	debug("gpupool: saving state to %s", path);
	rc = gp_engine_save_state(gp_shared_engine(), path, (int64_t) now,
				  err, sizeof(err));
	if (rc != GP_OK)
		error("gpupool: saving %s: %s", path,
		      err[0] ? err : gp_status_str(rc));
	else
		debug("gpupool: state saved to %s", path);
	xfree(path);
}

/*
 * Write the preemptions preempt/gpupool queued (under the job lock) to the
 * event log.  A failure keeps them queued and is logged when its text
 * changes.
 */
extern void gpp_state_flush_events(time_t now)
{
	static char last[512] = "";
	char err[512] = "", *path;
	uid_t slurm_uid;
	int rc;

	if (!gp_engine_queued_events(gp_shared_engine()))
		return;
	if (!(path = gpp_state_file_path(EVENTS_FILE, &slurm_uid)))
		return;
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
}

/* The pass durations the core counted, at most every STATS_SAVE_INTERVAL. */
extern void gpp_state_save_stats(time_t now)
{
	static time_t last_save = 0;
	static char last[512] = "";
	char err[512] = "", *path;
	uid_t slurm_uid;
	int rc;

	if (now - last_save < STATS_SAVE_INTERVAL)
		return;
	last_save = now;
	if (!(path = gpp_state_file_path(STATS_FILE, &slurm_uid)))
		return;
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
}

/*
 * A name for the state file put aside that no earlier one has
 * (PATH.bad.TIME, then .1, .2 ...): each copy keeps the usage history it
 * held, however often a start fails.
 */
static char *_aside_name(const char *path)
{
	struct stat st;
	long now = (long) time(NULL);
	char *name = xstrdup_printf("%s.bad.%ld", path, now);

	for (int i = 1; (lstat(name, &st) == 0) && (i < 1000); i++) {
		xfree(name);
		name = xstrdup_printf("%s.bad.%ld.%d", path, now, i);
	}
	return name;
}

/*
 * At init: a state directory others may write is fatal.  Reads slurm_conf
 * without taking the config lock: init() runs either before slurmctld's
 * threads start or from read_slurm_conf(), which already holds the config
 * write lock (a job found COMPLETING ends there and loads this plugin:
 * deallocate_nodes -> acct_policy_job_fini -> priority_g_job_end), so
 * taking the lock here would deadlock.
 */
extern void gpp_state_load(void)
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
		if (errno == ENOENT) {
			info("gpupool: no state file %s yet", path);
		} else {
			error("gpupool: state file %s: %m; starting without its usage history, and not saving over it",
			      path);
			state_unread = true;
		}
		xfree(path);
		return;
	}
	rc = gp_engine_load_state(gp_shared_engine(), path, err, sizeof(err));
	if (rc == GP_OK) {
		info("gpupool: recovered state from %s", path);
	} else {
		bad = _aside_name(path);
		/* The core's message starts with the path. */
		if (err[0])
			error("gpupool: state file %s; moving it to %s and starting without usage history",
			      err, bad);
		else
			error("gpupool: state file %s: %s; moving it to %s and starting without usage history",
			      path, gp_status_str(rc), bad);
		if (rename(path, bad) != 0) {
			error("gpupool: rename %s to %s: %m; not saving over it",
			      path, bad);
			state_unread = true;
		}
		xfree(bad);
	}
	xfree(path);
}

extern void gpp_state_dir_check(void)
{
	uid_t slurm_uid;
	char *path = gpp_state_file_path("", &slurm_uid);

	xfree(path);
}

extern uid_t gpp_state_slurm_uid(void)
{
	uid_t slurm_uid;
	char *dir = _conf_state_dir(&slurm_uid);

	xfree(dir);
	return slurm_uid;
}

/*
 * conf_files.c - gpupool.conf: loaded at init, reloaded by the agent after
 * a reconfigure when the file changed (no slurmctld lock held), and a copy
 * of the last one that loaded kept beside the state file to start from
 * when gpupool.conf is bad.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "src/common/log.h"
#include "src/common/parse_time.h"
#include "src/common/read_config.h"
#include "src/common/xstring.h"

#include "priority_gpupool.h"

/* The last gpupool.conf that loaded, beside the state file. */
#define CONF_COPY_FILE "gpupool.conf.last-good"

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
 * A reload applies at the next pass (the engine stages it): that pass
 * logs the new configuration's warnings, even if they read the same.
 */
static bool warn_after_pass = false;

extern void gpp_conf_log_warnings(bool force)
{
	static pthread_mutex_t warn_mutex = PTHREAD_MUTEX_INITIALIZER;
	static char *last = NULL;
	char buf[4096] = "";
	char *line, *save = NULL;

	if (__atomic_exchange_n(&warn_after_pass, false, __ATOMIC_ACQ_REL))
		force = true;
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

/*
 * Check who may write gpupool.conf (root or slurm_uid only), then parse and
 * apply it (the engine keeps the previous configuration on any error).
 * Takes no slurmctld lock.  On failure err gets "PATH...: problem".
 */
static int _load_config(const char *path, uid_t slurm_uid, char *err,
			size_t err_len)
{
	int rc;

	rc = gp_engine_load_trusted_config_file(gp_shared_engine(), path,
						slurm_uid, err, err_len);
	if ((rc != GP_OK) && !err[0])
		snprintf(err, err_len, "%s: %s", path, gp_status_str(rc));
	return rc;
}

/*
 * Keep a copy of the gpupool.conf in force beside the state file.  init()
 * starts from it when gpupool.conf is bad: since Slurm 23.11 "scontrol
 * reconfigure" restarts slurmctld, and refusing to start would leave the
 * cluster without one.
 */
extern void gpp_conf_save_copy_if_new(void)
{
	char err[512] = "", *path;
	uid_t slurm_uid;

	if (!conf_copy_pending)
		return;
	if (!(path = gpp_state_file_path(CONF_COPY_FILE, &slurm_uid)))
		return;
	if (gp_engine_save_config_copy(gp_shared_engine(), path, err,
				       sizeof(err)) != GP_OK)
		error("gpupool: keeping a copy of the configuration in force: %s",
		      err);
	else
		conf_copy_pending = false;
	xfree(path);
}

/*
 * init() with a bad gpupool.conf (conf_err says why): load the last good
 * copy instead, loudly.  False if there is no usable copy.
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

extern void gpp_conf_init(bool reconf)
{
	char err[1024] = "", *path = get_extra_conf_path("gpupool.conf");

	_conf_sig_get(path, &conf_sig);
	/* No slurmctld lock here: see gpp_state_load(). */
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
	gpp_conf_log_warnings(true);
}

/*
 * Agent thread, after priority_p_reconfig: load gpupool.conf again if it
 * changed since the last attempt (setdebugflags also calls reconfig), or
 * on a full reconfigure after a refused attempt, so the error is logged
 * again.  The pass that follows applies it.
 */
extern void gpp_conf_reload(bool full)
{
	char err[1024] = "", *path = get_extra_conf_path("gpupool.conf");
	conf_sig_t sig;

	if (full)	/* a new StateSaveLocation (or a chmod of it): say so */
		gpp_state_dir_check();
	_conf_sig_get(path, &sig);
	if (_conf_sig_same(&sig, &conf_sig) && !(full && conf_sig.failed)) {
		debug("gpupool: %s unchanged; configuration kept", path);
		xfree(path);
		return;
	}
	if (_load_config(path, gpp_state_slurm_uid(), err, sizeof(err)) !=
	    GP_OK) {
		error("gpupool: %s; keeping the previous configuration", err);
		sig.failed = true;
	} else {
		info("gpupool: configuration reloaded from %s", path);
		__atomic_store_n(&warn_after_pass, true, __ATOMIC_RELEASE);
		conf_copy_pending = true;
	}
	conf_sig = sig;
	xfree(path);
}

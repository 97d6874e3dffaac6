/*
 * priority_gpupool.h - what the files of priority/gpupool give each other.
 *
 *   priority_gpupool.c  the plugin API: init/fini and the priority_p_*
 *                       entry points slurmctld calls
 *   agent.c             the agent thread: when to run a pass, the pass
 *                       (locks, snapshot, evaluation)
 *   results.c           engine results written back to pending jobs:
 *                       priorities, holds, reasons
 *   array_throttle.c    job array records' throttles, as the core caps them
 *   start_parts.c       where a multi-partition job may start
 *   factors.c           sprio's factors
 *   job_end.c           a job's end: unused run seconds, quota given back
 *   conf_files.c        gpupool.conf: load, reload, the last good copy
 *   state_files.c       files beside the state: state, event log, stats
 *
 * Each function says which slurmctld locks its caller holds.
 */
#ifndef PRIORITY_GPUPOOL_H
#define PRIORITY_GPUPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "gpupool_compat.h"

#include "gpupool.h"

/* ------------------------------------------------------------------ */
/* agent.c                                                              */

/* Start the agent thread; its first pass runs at once. */
extern void gpp_agent_start(void);

/* Stop and join it (no slurmctld lock held). */
extern void gpp_agent_stop(void);

extern bool gpp_agent_running(void);

/* Run a pass soon (at most once per the least gap between passes). */
extern void gpp_agent_wake(void);

/*
 * priority_p_set placed a new job (gp_engine_provisional): the next pass
 * may wait until the submits pause (agent_timing.h, gpp_submit_burst), at
 * most RecalcInterval.  Any locks held: it only notes the time.
 */
extern void gpp_agent_note_submit(void);

/*
 * Reload gpupool.conf, if it changed, and run a pass at once; `full`: by
 * "scontrol reconfigure".  Any locks held: it only signals the agent.
 */
extern void gpp_agent_reconfig(bool full);

/* ------------------------------------------------------------------ */
/* results.c                                                            */

/*
 * May gpupool write this pending job's priority?  *ours: the job is held
 * by gpupool.  Job read lock held.
 */
extern bool gpp_results_writable(job_record_t *job_ptr, bool *ours);

/*
 * Called when a result must wait for the next pass (the agent registers
 * gpp_agent_wake when it starts; before that, nothing is called).
 */
extern void gpp_results_on_want_pass(void (*want_pass)(void));

/*
 * Write one engine result back to a pending job that gpp_results_writable()
 * allows.  Job write lock held (and partition read lock if
 * `part_locked`).  Returns 1 if the job was released from gpupool's hold
 * or may start more array tasks, 0 otherwise; *changed tells whether
 * anything changed.
 */
extern int gpp_results_apply(job_record_t *job_ptr,
			     const gp_pending_result_t *r, bool ours,
			     bool part_locked, bool *changed);

/*
 * Write the results of a full pass back to every pending job.  Job write
 * and partition read lock held.  Returns the count of released jobs;
 * *held counts those held for quota.
 */
extern int gpp_results_apply_pass(time_t now, int *held);

/*
 * After gp_engine_job_ended() changed results: write those jobs' results
 * (gp_engine_changed_at), and only those, back through the job hash (no
 * job_list iteration: the caller may be inside one).  Job write lock held.
 * Returns the count of released jobs.
 */
extern int gpp_results_apply_changed(time_t now);

/* ------------------------------------------------------------------ */
/* array_throttle.c (job write lock held)                               */

/*
 * The array part of one result: the record's throttle as the core caps it
 * (gp_array_throttle).  Returns 1 if more tasks may start now.
 */
extern int gpp_throttle_apply(job_record_t *job_ptr,
			      const gp_pending_result_t *r, bool lower_only,
			      bool *changed);

/* Put the user's throttle back on records no longer pending arrays. */
extern void gpp_throttle_prune(bool *changed);
/* The user's throttle of an array record (gpupool's cap undone). */
extern uint32_t gpp_throttle_user_max(job_record_t *job_ptr);

/*
 * Once, at the first pass after a start (every job loaded): take back the
 * caps of the state file for the pending array records whose throttle is
 * still one gpupool could have set.  Job write lock.
 */
extern void gpp_throttle_restore_all(void);
/* Did a record become capped or stop being so since the last call? */
extern bool gpp_throttle_caps_moved(void);
extern void gpp_throttle_fini(void);

/* ------------------------------------------------------------------ */
/* factors.c                                                            */

/* sprio's rows; takes job, node and partition read locks where needed. */
extern list_t *gpp_factors_list(const gps_factors_filter_t *filter, uid_t uid);

/* ------------------------------------------------------------------ */
/* job_end.c                                                            */

/* A job ended, was cancelled or requeued (job write lock held). */
extern void gpp_job_end(job_record_t *job_ptr, bool in_ctld);

/*
 * Placement= (node_weights.c): gpp_weights_plan() inside a pass (node
 * read lock held) asks the core for node Weights; gpp_weights_apply()
 * after it, with no lock held, sets them.  Agent thread only.
 */
extern void gpp_weights_plan(gp_engine_t *engine);
extern void gpp_weights_apply(time_t *seen_node_update);
extern void gpp_weights_fini(void);

/* ------------------------------------------------------------------ */
/* conf_files.c (no slurmctld lock held unless said)                    */

/*
 * init(): load gpupool.conf, or else the last good copy; fatal without
 * one.  `reconf`: init() runs for "scontrol reconfigure" (Slurm >= 23.11).
 * Reads slurm_conf without its lock (see gpp_state_load()).
 */
extern void gpp_conf_init(bool reconf);

/* Agent: load gpupool.conf again if it changed (`full`: a reconfigure). */
extern void gpp_conf_reload(bool full);

/* Agent and fini: keep a copy of a configuration that loaded, if new. */
extern void gpp_conf_save_copy_if_new(void);

/* Log the engine's warnings when they change (`force`: anyway). */
extern void gpp_conf_log_warnings(bool force);

/* ------------------------------------------------------------------ */
/* state_files.c (no slurmctld lock held unless said)                   */

/*
 * StateSaveLocation/`name`, xmalloc'd, if the directory may be trusted
 * (refusals are logged when their text changes); NULL otherwise.  Takes
 * the config read lock.  *slurm_uid gets SlurmUser's uid.
 */
extern char *gpp_state_file_path(const char *name, uid_t *slurm_uid);

/* Log now if the state directory may not be trusted (a reconfigure). */
extern void gpp_state_dir_check(void);

/* SlurmUser's uid, read under the config read lock. */
extern uid_t gpp_state_slurm_uid(void);

/* init(): a state directory others may write is fatal; load the state. */
extern void gpp_state_load(void);

extern void gpp_state_save(time_t now);
extern void gpp_state_flush_events(time_t now);
extern void gpp_state_save_stats(time_t now);

#endif /* PRIORITY_GPUPOOL_H */

/*
 * gpupool_rules.h - how Slurm's job and node records become the core's
 * snapshot, each rule once, over plain fields (state bits, counts,
 * strings).  Two readers of Slurm's records call them: the plugins, over
 * slurmctld's own job_record_t/node_record_t (gpupool_slurm.c,
 * gpupool_hold.c), and the gpupool command, over the job_info_t/node_info_t
 * slurmctld sends its clients (src/cli/slurm_view.cpp).  Both compile
 * gpupool_rules.c against the same Slurm release's slurm/slurm.h: the
 * state bits and reason codes are the ones slurmctld keeps and sends.
 *
 * Nothing here reads a Slurm record, takes a lock or decides policy.
 */
#ifndef GPUPOOL_RULES_H
#define GPUPOOL_RULES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A node whose GPUs cannot be given to new jobs counts no capacity: DOWN,
 * FUTURE, or DRAINED (drain set and nothing allocated: a draining node
 * still counts, its jobs hold its GPUs).  `node_state`: NODE_STATE_* bits.
 */
extern bool gpr_node_unusable(uint32_t node_state);

/*
 * A node on which Slurm starts no job now (its capacity may still count):
 * draining or drained, failing, not responding, powering down.  Its free
 * GPUs serve no pending job, and no victim is planned there
 * (GP_NODE_CLOSED; so too a node a reservation holds whole, which the
 * plugins find in slurmctld's reservations).
 */
extern bool gpr_node_closed(uint32_t node_state);

/*
 * gpupool's state of a job (GP_JOB_* of gpupool.h) from Slurm's job_state
 * bits; -1 for jobs that hold and want nothing: revoked (a federation
 * sibling), ended, or ended and still completing.
 */
extern int gpr_job_state(uint32_t job_state);

/* Where a job's count of the tracked resource (QuotaTRES) comes from. */
typedef enum {
	GPR_GPUS_TRES_ALLOC,	/* the TRES it was allocated */
	GPR_GPUS_TRES_REQ,	/* the TRES it requested */
	GPR_GPUS_GRES_ALLOC,	/* the GRES it was allocated */
	GPR_GPUS_GRES_REQ,	/* the GRES it requested */
} gpr_gpus_from_t;

/*
 * Allocated for a job that holds resources (`allocated`: not pending),
 * requested for the rest; from the TRES counts where the job has the
 * tracked resource among them (an accounted TRES), else from its GRES.
 * The flags say which counts the job has: `tres_alloc` and `tres_req` its
 * allocated and requested TRES counts of the resource, `gres_alloc` its
 * allocated GRES (the requested GRES are the last resort).
 */
extern gpr_gpus_from_t gpr_gpus_from(bool allocated, bool tres_alloc,
				     bool tres_req, bool gres_alloc);

/*
 * One count of the tracked resource as the snapshot takes it: no value
 * (NO_VAL64, NO_CONSUME_VAL64) is none.
 */
extern uint64_t gpr_gpus_value(uint64_t cnt);

/* The snapshot's 32-bit count: more than UINT32_MAX is UINT32_MAX. */
extern uint32_t gpr_gpus_clamp(uint64_t cnt);

/*
 * Pending tasks a job array's pending meta record stands for, when more
 * than one (0 otherwise: an ordinary job, a task split off to start, the
 * last task, which Slurm gives its task id).  `array_task_id`: NO_VAL for
 * the meta record.  `tasks`: the task ids the meta record still holds, as
 * Slurm keeps them in array_recs->task_id_bitmap and counts them in
 * array_recs->task_cnt (0 when the record has none).
 *
 * One definition, two ways to read it: slurmctld keeps task_cnt equal to
 * the bits set in task_id_bitmap (set to bit_set_count() at submit and at
 * state load, decremented as job_array_split() clears a task's bit, set
 * again when tasks are cancelled), on 22.05 to 26.05.  The plugins read
 * task_cnt (no walk of the bitmap under the job lock); clients are not
 * sent task_cnt but the bitmap itself (pack_job() sends task_id_bitmap as
 * a hex mask, which libslurm unpacks into job_info_t.array_bitmap), so the
 * gpupool command counts its bits.
 */
extern uint32_t gpr_array_pending_tasks(bool pending, uint32_t array_task_id,
					int64_t tasks);

/*
 * Of a pending array record's `pending` tasks (gpr_array_pending_tasks),
 * those it stands for in admission: Slurm starts none past the user's
 * throttle (`user_max` running at once, 0: none), so at most the throttle's
 * free slots (`user_max` less `running`) and, like any pending job, at
 * least the one that starts next.  Otherwise quota would be set aside for
 * tasks that cannot start, and other jobs within the quota held.
 */
extern uint32_t gpr_array_startable_tasks(uint32_t pending, uint32_t user_max,
					  uint32_t running);

/* A job's submit time, `now` where Slurm has none yet. */
extern int64_t gpr_submit_time(int64_t submit_time, int64_t now);

/*
 * How long Slurm counts a pending job to run, in seconds, when it checks
 * reservations (job_test_resv's _get_job_duration): its time limit in
 * minutes, else (NO_VAL) its partition's MaxTime; a year for INFINITE
 * (or NO_VAL: none known).  Under gang scheduling a job shares its time
 * with `time_slices` others (the partition's OverSubscribe count), so a
 * limit (not a year) is multiplied by them; pass 1 otherwise.
 */
extern int64_t gpr_run_limit(uint32_t time_limit, uint32_t part_max_time,
			     uint32_t time_slices);

/*
 * Could this job's hold be gpupool's?  Pending, priority 0 that no one set
 * by hand (`direct_set_prio`: scontrol hold or an admin's priority), and
 * WAIT_HELD (or no reason, after "scontrol release" wiped it and before the
 * scheduler put WAIT_HELD back).  Then it is, where gpupool remembers
 * holding it or its reason text is gpupool's (gpr_hold_text_is_ours).
 */
extern bool gpr_hold_may_be_ours(bool pending, uint32_t priority,
				 bool direct_set_prio, uint32_t state_reason);

/* Does the job's reason text start with gpupool's (GP_HOLD_PREFIX)? */
extern bool gpr_hold_text_is_ours(const char *state_desc);

/*
 * Held by its user or an admin: pending with priority 0 that is not
 * gpupool's hold (`ours`).  gpupool never undoes such a hold.  Jobs
 * waiting for a begin time or a dependency are not held: they are ordered
 * and admitted like the rest, so that none can start over quota the
 * moment it becomes eligible.
 */
extern bool gpr_user_held(bool pending, uint32_t priority, bool ours);

/*
 * A pending job that Slurm would not start yet whatever gpupool says
 * (`state_reason`: a dependency, a begin time, its partition down or
 * inactive): the gpupool command shows these apart.
 */
extern bool gpr_not_eligible(uint32_t state_reason);

/*
 * Does a node offer what a job's --constraint asks (`constraint`, the
 * job's features as slurmctld keeps them; `node_features`, the node's
 * active features, comma-separated)?  1 yes, 0 no, -1 not read here.
 * Read: feature names joined by '&' (',' is Slurm's spelling of it too)
 * and '|', taken left to right with no precedence, as Slurm's
 * valid_feature_counts() combines them; for a job on one node "a|b" is
 * any node with either.  Not read: node counts (a*2), brackets (matching
 * OR: every node the same) and parentheses.  An empty constraint: 1.
 * `node_features` NULL: the node has none.
 */
extern int gpr_node_has_features(const char *constraint,
				 const char *node_features);

/*
 * Is `name` one of the comma-separated `names` (a job's partitions as its
 * user gave them)?  Whole names only; NULL or empty lists name nothing.
 */
extern bool gpr_name_listed(const char *names, const char *name);

/* Does any name of comma-separated `some` appear in `names`? */
extern bool gpr_lists_share(const char *some, const char *names);

#ifdef __cplusplus
}
#endif

#endif /* GPUPOOL_RULES_H */

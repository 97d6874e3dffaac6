/*
 * gpupool.h - the C ABI of the gpupool policy core.
 *
 * One engine decides order (R1), quota admission (R2), borrowing (R3),
 * preemption inside a pool (R4), reclaim across pools (R5), victim order (R6)
 * and time-decayed fairshare (R8) of doc/policy.md.  The Slurm plugins (C)
 * drive the core through this header only; the admin command, the exporter,
 * the simulator and the tests are C++ and use the same core through its C++
 * headers (engine.hpp, explain.hpp), with no policy of their own.  What
 * changed in which ABI version: doc/abi-changelog.md.  The core never reads
 * the clock: every call that needs time takes
 * `now` (seconds since the epoch).  No C++ exception crosses this boundary:
 * failures come back as a status code and, where a buffer is given, a
 * message.
 *
 * Thread safety: every call on one engine is serialised by a mutex inside it.
 */
#ifndef GPUPOOL_H
#define GPUPOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Version of this C ABI: raised on every change of a struct, an enum value,
 * a function or what one means.  A plugin checks at load that the library
 * it got has the version it was built for (gp_abi_version()): the two are
 * built from one source tree and installed together, so any difference is
 * a mismatch.  The library's libtool -version-info follows it (Makefile.am).
 */
#define GP_ABI_VERSION 28

/*
 * Room for a tier, QOS, pool or account name: gpupool.conf takes names of
 * up to 255 bytes, as slurmdbd keeps them.
 */
#define GP_NAME_LEN 256

typedef enum {
	GP_OK = 0,
	GP_ERR_CONFIG = 1,   /* gpupool.conf is invalid; message names file:line */
	GP_ERR_STATE = 2,    /* state file unreadable or invalid; nothing loaded */
	GP_ERR_ARG = 3,      /* bad argument (NULL, unknown index, ...) */
	GP_ERR_IO = 4,       /* file could not be read or written */
	GP_ERR_INTERNAL = 5, /* unexpected failure inside the core */
	GP_ERR_NOCONFIG = 6, /* no configuration loaded yet */
} gp_status_t;

typedef struct gp_engine gp_engine_t;
typedef struct gp_snapshot gp_snapshot_t;

/* GP_ABI_VERSION as the library was built. */
uint32_t gp_abi_version(void);

/*
 * Every reason text gpupool gives a job it holds starts with this
 * ("GpuPoolQuota:pool1 2/2", "GpuPoolStarting"), so that the plugins and
 * the gpupool command tell its holds from a user's or an admin's.
 */
#define GP_HOLD_PREFIX "GpuPool"

/* ------------------------------------------------------------------ */
/* Engine life cycle and configuration                                 */

gp_engine_t *gp_engine_create(void);
void gp_engine_destroy(gp_engine_t *engine);

/*
 * The process-wide engine shared by priority/gpupool and preempt/gpupool:
 * both plugins link libgpupool, so both see this one engine and its state.
 */
gp_engine_t *gp_shared_engine(void);

/*
 * Parse and apply a gpupool.conf.  On any error the previous configuration
 * stays in force and `err` receives "FILE:LINE: problem".  Once a pass has
 * run, a new configuration takes effect at the start of the next
 * gp_engine_evaluate(); until then decisions (provisional, job end,
 * preemption, tier_of_qos) use the previous one and the last pass, while
 * recalc_interval, state_save_interval and quota_tres already return the
 * new one's values, for the pass that applies it.  Warnings (for
 * example quotas adding up to more than the shared nodes hold, which are
 * only known once nodes are seen) are reported by gp_engine_warnings().
 */
int gp_engine_load_config_file(gp_engine_t *engine, const char *path,
			       char *err, size_t err_len);
int gp_engine_load_config_text(gp_engine_t *engine, const char *text,
			       const char *source_name, char *err,
			       size_t err_len);
int gp_engine_has_config(gp_engine_t *engine);

/*
 * Write the text the configuration in force was parsed from to `path`, as
 * gp_engine_save_state writes its file (mode 0600).  slurmctld keeps this
 * copy of the last good gpupool.conf beside its state, to start from when
 * gpupool.conf is bad: since Slurm 23.11 `scontrol reconfigure` restarts
 * slurmctld, and refusing to start would take the controller down.
 * GP_ERR_NOCONFIG if none is loaded.
 */
int gp_engine_save_config_copy(gp_engine_t *engine, const char *path,
			       char *err, size_t err_len);

/* Newline-separated warnings of the last config load and evaluation. */
size_t gp_engine_warnings(gp_engine_t *engine, char *buf, size_t buf_len);

/* Seconds between periodic passes (RecalcInterval=). */
uint32_t gp_engine_recalc_interval(gp_engine_t *engine);

/* Seconds between state file saves (StateSaveInterval=, default 60). */
uint32_t gp_engine_state_save_interval(gp_engine_t *engine);

/*
 * May slurmctld trust `path` (gpupool.conf, `is_dir` 0, or the state
 * directory, `is_dir` 1)?  GP_OK if it and every directory above it are
 * owned by root or `slurm_uid` and writable by neither group nor others
 * (a directory above with the sticky bit may be writable by all), and so
 * is each symbolic link on the way, with every directory above the link.
 * Otherwise GP_ERR_CONFIG (GP_ERR_IO: it could not be examined) and `err`
 * names the path, its owner or mode and `what` it is, e.g. "/etc/slurm/
 * gpupool.conf: writable by group (mode 0664); gpupool.conf must be
 * writable only by root or SlurmUser slurm".
 */
int gp_check_trusted_path(const char *path, const char *what,
			  uint32_t slurm_uid, int is_dir, char *err,
			  size_t err_len);

/*
 * gp_check_trusted_path and gp_engine_load_config_file in one, with no
 * window between them: the file is opened once (each directory on the way
 * from "/" without following symlinks), checked by fstat of what was
 * opened, and parsed from that descriptor, so a file put in its place
 * after the check is never the one read.  Errors as the two functions'.
 */
int gp_engine_load_trusted_config_file(gp_engine_t *engine, const char *path,
				       uint32_t slurm_uid, char *err,
				       size_t err_len);

/*
 * The tracked resource (QuotaTRES=) as configured: "gres/gpu" or
 * "gres/gpu:TYPE" ("gres/gpu" when no configuration is loaded).  Copies it
 * into `buf` and returns its length.  The plugins count a job's GPUs by it.
 */
size_t gp_engine_quota_tres(gp_engine_t *engine, char *buf, size_t buf_len);

/* ------------------------------------------------------------------ */
/* Tiers, as the preempt plugin needs them                              */

#define GP_MODE_DEFAULT 0 /* use slurm.conf's PreemptMode */
#define GP_MODE_REQUEUE 1
#define GP_MODE_CANCEL 2
#define GP_MODE_SUSPEND 3
#define GP_MODE_OFF 4     /* never preempted (gp_preempt_mode) */

typedef struct {
	char name[GP_NAME_LEN];
	uint32_t priority;
	int preemptible;         /* 1 = P tier, 0 = NP tier */
	int preempt_mode;        /* GP_MODE_* */
	int32_t grace_time;      /* seconds; -1 = the QOS's */
} gp_tier_info_t;

/* Tier of a QOS name (NULL or "" or unknown: DefaultTier).  */
int gp_engine_tier_of_qos(gp_engine_t *engine, const char *qos,
			  gp_tier_info_t *out);

/*
 * Changes whenever another configuration takes effect (a load
 * before the first pass, or the pass that applies a staged one); answers
 * of gp_engine_tier_of_qos() cached under one value stay right until it
 * changes.  Lock-free: cheap enough to ask at every call of a hot path.
 */
uint64_t gp_engine_config_serial(gp_engine_t *engine);

/*
 * The job queue's order for preemption (preempt_p_job_preempt_check):
 * 1 if a job of tier `preemptor` sorts before one of tier `preemptee`
 * because it may preempt it, by tier alone (R4: a higher priority over a
 * preemptible tier); else 0, also for NULL.  Reads only `priority` and
 * `preemptible`, takes no lock: a shim may rebuild both from its cache.
 */
int gp_tier_preempts(const gp_tier_info_t *preemptor,
		     const gp_tier_info_t *preemptee);

/*
 * The tier priority a job of a preemptible tier is ordered at while it
 * waits for the GPUs its preemption freed (R1.1): the highest preemptible
 * tier's, so that no job of a higher preemptible tier takes them and is
 * reclaimed again; 0 where it keeps its own (no configuration, preemptible
 * jobs do not reclaim: neither ReclaimBy=all nor ReclaimTo=fairshare, or an
 * NP tier below a preemptible one).  Lock-free, as
 * gp_engine_config_serial(), and read apart from it: during a reload one
 * caller may see the new value with the old serial, for one sort.
 */
uint32_t gp_engine_waiting_preemptor_priority(gp_engine_t *engine);

/*
 * How a victim of tier `t` is stopped (R7), as a GP_MODE_*:
 * GP_MODE_OFF for an NP tier (or `t` NULL: no tier known); else the tier's
 * PreemptMode, or with GP_MODE_DEFAULT `site_mode` (slurm.conf's
 * PreemptMode as GP_MODE_REQUEUE, _CANCEL, _SUSPEND or _OFF); a REQUEUE
 * becomes GP_MODE_CANCEL for a job that is not `requeueable` (--no-requeue,
 * JobRequeue=0, not a batch job).  No lock.
 */
int gp_preempt_mode(const gp_tier_info_t *t, int site_mode, int requeueable);

/*
 * A victim's grace time: its tier's GraceTime, else its QOS's
 * (`qos_grace_time`, seconds).  gp_grace_time_from_qos() says whether the
 * QOS's is used (1: the tier has none, or `t` is NULL), so that a shim
 * reads it, under its lock, only then.  No lock.
 */
int gp_grace_time_from_qos(const gp_tier_info_t *t);
uint32_t gp_grace_time(const gp_tier_info_t *t, uint32_t qos_grace_time);

/* ------------------------------------------------------------------ */
/* Cluster snapshot: nodes, partitions, jobs                           */

typedef enum {
	GP_JOB_PENDING = 0,
	GP_JOB_RUNNING = 1,   /* running or completing: holds its GPUs */
	/*
	 * Since ABI 17: holds its GPUs (Slurm keeps a suspended job's GRES)
	 * against its pool's quota, is not ordered and is never a victim.
	 */
	GP_JOB_SUSPENDED = 2,
} gp_job_state_t;

typedef struct {
	uint32_t job_id;
	int state;               /* gp_job_state_t */
	/*
	 * Running: the one partition the job runs in.  Pending: the
	 * comma-separated partitions it may run in.
	 */
	const char *partitions;
	const char *qos;         /* NULL or "": DefaultTier */
	uint32_t gpus;           /* tracked resource (QuotaTRES) in all */
	int64_t submit_time;     /* as Slurm has it now (reset on requeue) */
	int64_t start_time;      /* running jobs */
	/*
	 * Pending job held by its user or an admin: remembered (submit
	 * time) but neither ordered nor admitted.  gpupool never undoes it.
	 */
	int user_held;
	/*
	 * Pending job array meta record: the count of still-pending
	 * tasks it stands for (Slurm may start several of them from the one
	 * record in a single scheduling pass; the plugins give those its
	 * user's throttle lets start, and at least one); 0 or 1: an ordinary
	 * job.
	 */
	uint32_t array_tasks;
	/* Running task of a job array: the array's id; 0 otherwise. */
	uint32_t array_job_id;
	/*
	 * Times Slurm requeued the job (job_record restart_cnt).  0:
	 * submit_time is the original one, also for an id used again after
	 * a clean start (slurmctld -c).
	 */
	uint32_t restart_cnt;
	/*
	 * Since ABI 11, for account queues: the job's Slurm account (NULL or "": none), and
	 * the CPUs and memory (MiB) it holds (running) or asks for (pending),
	 * counted as `gpus` is: the whole job, one task's for a job array
	 * record.  Read for quotas only where gp_engine_snapshot_needs() says
	 * so; since ABI 19 a pending job's are also what its victim plan
	 * frees room for where nodes have CPUs and memory
	 * (gp_snapshot_set_node_room).
	 */
	const char *account;
	uint32_t cpus;
	uint64_t mem_mb;
	/*
	 * Since ABI 12, pending jobs: the nodes the job asks for (Slurm's
	 * minimum node count; 0: one).  Running jobs give their nodes with
	 * gp_snapshot_set_job_nodes().
	 */
	uint32_t nodes;
	/*
	 * Since ABI 14: GP_JOB_* flags (GP_JOB_STAYS for running jobs,
	 * GP_JOB_NODES_GIVEN for pending ones).
	 */
	uint32_t flags;
	/*
	 * Since ABI 18, pending jobs with GP_JOB_NODES_GIVEN: the nodes of
	 * its partitions it may use, by name, comma-separated (NULL or "":
	 * not known).  Its victim plan looks only there.
	 */
	const char *allowed_nodes;
	/*
	 * Since ABI 21: how long Slurm counts the job to run, in seconds
	 * (its time limit, else its partition's; a year where there is
	 * none).  A reservation that starts before it would end keeps its
	 * nodes or cores from it (gp_snapshot_add_node_reserved_ahead):
	 * for a pending job (a preemptor), and for a running one if it were
	 * moved and started again (consolidation).  0: not known; such
	 * reservations are not read for it.
	 */
	int64_t run_limit;
	/*
	 * Since ABI 28, pending jobs: the heterogeneous job it is a
	 * component of (Slurm's het_job_id, its leader's job id); 0: none.
	 * Slurm starts the components together or not at all, so a pass
	 * admits them together, where the first of them comes in R1, or
	 * holds them all; one Slurm holds back (GP_JOB_DEPENDENT,
	 * GP_JOB_OVER_LIMIT) puts them all after the jobs it does not.
	 */
	uint32_t het_job_id;
} gp_job_t;

/*
 * The job would not start again elsewhere at once if preempted: it would not
 * be requeued (--no-requeue, not a batch job), or it asks for given nodes
 * (-w), excludes nodes (-x), asks for features (-C) or whole nodes
 * (--exclusive).  Consolidation does not move it.
 */
#define GP_JOB_STAYS 1u
/*
 * Since ABI 17, pending jobs: the job may use only some nodes of its
 * partitions (a GPU model not on every node, -w, -x, -C, --reservation) or
 * only whole ones (--exclusive=user or mcs; plain --exclusive before ABI
 * 23, GP_JOB_WHOLE_NODE since).  Since ABI 18 `allowed_nodes` may name
 * them: its victim plan then looks only there.  Where it does not, the job
 * gets no victim plan: its victims are judged by the rules alone and Slurm
 * picks its node among them, as before ABI 12.
 */
#define GP_JOB_NODES_GIVEN 2u
/*
 * Since ABI 23, pending jobs: the job gets whole nodes (--exclusive, or a
 * partition of OverSubscribe=EXCLUSIVE), and with them every GPU there,
 * whatever it asked: admission counts it at the most GPUs a node of its
 * partitions has, times its nodes.  Its victim plan frees every job on
 * each node it plans, those without GPUs too (a node's CPUs from
 * gp_snapshot_set_node_room(); where a node of its partitions has none
 * given, it gets no plan).  Before ABI 23 such a job counted what it asked,
 * and the plugins gave it GP_JOB_NODES_GIVEN without nodes: no plan.
 */
#define GP_JOB_WHOLE_NODE 4u
/*
 * Since ABI 24, pending jobs: QuotaTRES counts one type of GPU
 * (gres/gpu:TYPE) and `gpus` counts GPUs the job asks for without a type
 * (--gres=gpu:2), those of that type too.  Slurm may give it GPUs of that
 * type wherever its partitions have them, and its requested TRES count
 * none of them until it runs.  Admission counts them where every pool
 * partition it lists has GPUs of that type, and none where one does not
 * (there it costs that quota nothing).  Before ABI 24 such a job usually
 * counted none (with gres/gpu accounted): never held.
 */
#define GP_JOB_GPUS_UNTYPED 8u
/*
 * Since ABI 26, pending jobs: the job waits for another job (--dependency
 * on a job not started or not ended yet, or one Slurm found can never be
 * satisfied), or for a later time its user or an admin set (--begin,
 * StartTime=; not a requeue's delay).  R1 orders it after every job that does not, so that it sets
 * no quota aside ahead of them: ahead of the job it depends on, it would
 * hold that job, and so itself, for good.
 */
#define GP_JOB_DEPENDENT 16u
/*
 * Since ABI 27, pending jobs: Slurm's own limits hold the job back now (an
 * association's or QOS's limit, as AccountingStorageEnforce=limits tests
 * it).  R1 orders it after every job they do not, as GP_JOB_DEPENDENT:
 * ahead of them it would set quota aside that it cannot use.
 */
#define GP_JOB_OVER_LIMIT 32u

gp_snapshot_t *gp_snapshot_create(void);
void gp_snapshot_destroy(gp_snapshot_t *snap);
void gp_snapshot_reserve(gp_snapshot_t *snap, size_t nodes, size_t jobs);
/* Returns the node's index (0, 1, ... in order of addition) or -1. */
int32_t gp_snapshot_add_node(gp_snapshot_t *snap, const char *name,
			     uint32_t gpus);
/* node_index: indices returned by gp_snapshot_add_node. */
int gp_snapshot_add_partition(gp_snapshot_t *snap, const char *name,
			      const int32_t *node_index, size_t node_count);
int gp_snapshot_add_job(gp_snapshot_t *snap, const gp_job_t *job);

/*
 * What the configuration (the staged one after a reload, as
 * gp_engine_quota_tres) reads beyond GPUs, as GP_NEEDS_* bits: 0 for a
 * configuration with no Account= entry that counts GPUs only, whose
 * snapshots need none of the calls below nor gp_job_t's account, cpus and
 * mem_mb.  Takes the engine's mutex.
 */
#define GP_NEEDS_ACCOUNTS 0x1 /* jobs' accounts and the account tree */
#define GP_NEEDS_CPU 0x2      /* jobs' and nodes' CPUs */
#define GP_NEEDS_MEM 0x4      /* jobs' and nodes' memory */
uint32_t gp_engine_snapshot_needs(gp_engine_t *engine);

/*
 * A node's CPUs and memory (MiB), for the pools' CPU and memory capacity
 * (0: unknown).  `node_index` as gp_snapshot_add_node returned it.
 */
int gp_snapshot_set_node_resources(gp_snapshot_t *snap, int32_t node_index,
				   uint32_t cpus, uint64_t mem_mb);

/*
 * Since ABI 26: the node's GPUs go to a job only as it asks for them, not
 * with the whole node (gres.conf Flags=explicit, Slurm 23.11 and later), so
 * a job of whole nodes (GP_JOB_WHOLE_NODE) counts there what it asked.  Not
 * called: a whole-node job counts every GPU of its nodes, as before.
 */
int gp_snapshot_set_node_gpus_explicit(gp_snapshot_t *snap,
				       int32_t node_index);

/*
 * Since ABI 12: where GPUs are, for the victim plan (a preemptor's victims
 * on one node, chosen by the core).  A node's GPUs no job holds now and
 * GP_NODE_* flags: Slurm is still ending jobs on it (GP_NODE_COMPLETING),
 * or it takes no new job now (GP_NODE_CLOSED, since ABI 17: draining,
 * failing, not responding, held whole by a reservation).  Calling it for
 * any node says the snapshot has node usage: every node's free GPUs (0
 * where not called) and every running job's nodes.  Without any call preemption is
 * judged on pools' GPU counts alone, as before ABI 12.
 */
#define GP_NODE_COMPLETING 1u
#define GP_NODE_CLOSED 2u
int gp_snapshot_set_node_usage(gp_snapshot_t *snap, int32_t node_index,
			       uint32_t free_gpus, uint32_t flags);

/*
 * The nodes of the job added last (gp_snapshot_add_job, a running job) and
 * its GPUs on each: `count` entries of `node_index` (as
 * gp_snapshot_add_node returned them) and `gpus`.
 */
int gp_snapshot_set_job_nodes(gp_snapshot_t *snap, const int32_t *node_index,
			      const uint32_t *gpus, size_t count);

/*
 * Since ABI 19, with node usage: the CPUs and memory (MiB) Slurm gives jobs
 * on the node: its CPUs less specialized ones, its memory less
 * MemSpecLimit; 0 where gpupool cannot count it (memory without
 * CR_MEMORY, CPUs that jobs may share: OverSubscribe=YES:N or FORCE:N with
 * N > 1) or where unknown.  The node's free CPUs and memory are these less
 * what running jobs hold there (gp_snapshot_set_job_node_resources), and a
 * preemptor fits the node only where its free GPUs, CPUs and memory all
 * fit it (its gp_job_t cpus and mem_mb, divided by its nodes; an ask past
 * the node's room is not checked: the job may span nodes).  Not called:
 * GPUs alone decide, as before ABI 19.
 */
int gp_snapshot_set_node_room(gp_snapshot_t *snap, int32_t node_index,
			      uint32_t cpus, uint64_t mem_mb);

/*
 * Since ABI 20, with node usage: the node's CPUs that reservations of some
 * cores hold and no job of theirs uses (Slurm gives them to no job outside
 * the reservation): not free.  Its room (gp_snapshot_set_node_room) stays
 * the node's.  Reserved GPUs come off the free GPUs of
 * gp_snapshot_set_node_usage.
 */
int gp_snapshot_set_node_reserved(gp_snapshot_t *snap, int32_t node_index,
				  uint32_t cpus);

/*
 * Since ABI 21, with node usage: a reservation that has not started yet.
 * Slurm keeps a reservation's nodes (or cores, GPUs) from a job outside
 * it that would still run when it starts, so for a preemptor whose
 * run_limit reaches past `from`, from `from` on the node is held whole
 * (`whole`), or `cpus` CPUs and `gpus` GPUs more than now are reserved.
 * Give a node's entries cumulatively: each one counts every reservation
 * on the node starting by its `from` (the latest one before the
 * preemptor's end applies).  GP_ERR_ARG: no such node.
 */
int gp_snapshot_add_node_reserved_ahead(gp_snapshot_t *snap,
					int32_t node_index, int64_t from,
					int whole, uint32_t cpus,
					uint32_t gpus);

/*
 * Since ABI 22, with node usage: of the running job added last, on node
 * `node_index` (one of its nodes), the CPUs and GPUs it holds that
 * reservations in force by `from` reserve (0: those in force now).  A
 * victim's reserved cores and GPUs go back to the reservation, not to a
 * preemptor outside it that would run past `from`, so its plan counts
 * them as not freed.  Give a job's entries per node cumulatively, as
 * gp_snapshot_add_node_reserved_ahead.  Not called: a victim frees all it
 * holds, as in ABI 21.  GP_ERR_ARG: no running job
 * added yet, or no such node.
 */
int gp_snapshot_add_job_reserved(gp_snapshot_t *snap, int32_t node_index,
				 int64_t from, uint32_t cpus, uint32_t gpus);

/*
 * Since ABI 19: the CPUs and memory (MiB) the job added last holds on each
 * of its nodes, in the order of its gp_snapshot_set_job_nodes() call,
 * made just before with the same `count`.  Either array may be NULL (none
 * held: a suspended job's CPUs, memory Slurm does not allocate).
 */
int gp_snapshot_set_job_node_resources(gp_snapshot_t *snap,
				       const uint32_t *cpus,
				       const uint64_t *mem_mb, size_t count);

/*
 * Since ABI 13: the partition added last (gp_snapshot_add_partition) has
 * LLN=YES, or SelectTypeParameters has CR_LLN: Slurm puts each of its
 * jobs on the least loaded node of the lowest Weight (Placement=).
 */
int gp_snapshot_set_partition_lln(gp_snapshot_t *snap);

/*
 * Since ABI 15: this Slurm places a job capped at one node by node Weight
 * alone, first fit, without LLN (Slurm 26.05's one-node path in
 * select/cons_tres, _get_one_res).  Placement=spread is then carried by
 * Weights (gp_engine_node_weights) as well as LLN.
 */
int gp_snapshot_set_one_node_by_weight(gp_snapshot_t *snap);

/*
 * Since ABI 13, Placement= (placement.hpp): the Weight each node of the
 * last evaluated snapshot with node usage should have, given its Weight
 * now.  `current` and `want` have `count` entries in the snapshot's node
 * order; `want` equals `current` where nothing is to change.  Returns how
 * many differ (0 where the last snapshot had no node usage, or another
 * count of nodes).  Its warnings join gp_engine_warnings().
 */
size_t gp_engine_node_weights(gp_engine_t *engine, const uint32_t *current,
			      uint32_t *want, size_t count);

/*
 * One account of Slurm's association tree and its parent account (NULL,
 * "" or "root": a top-level account).  An account added twice keeps the
 * last parent.
 */
int gp_snapshot_add_account(gp_snapshot_t *snap, const char *account,
			    const char *parent);

/* ------------------------------------------------------------------ */
/* Evaluation: order, admission, victim order                          */

/*
 * Remember a job's original submit time (R1.3): for a job never requeued
 * (restart_cnt 0) it is its submit time; a requeued job keeps the earliest
 * one seen, since Slurm resets submit_time on requeue.  Returns the
 * original submit time.
 */
int64_t gp_engine_note_job(gp_engine_t *engine, uint32_t job_id,
			   int64_t submit_time, uint32_t restart_cnt,
			   int64_t now);

/*
 * One pass: accounts decayed usage since the previous pass, computes
 * fairshare, orders the pending jobs, admits or holds non-preemptible
 * jobs, and ranks running jobs as victims.  Results stay in the engine
 * until the next pass.
 */
int gp_engine_evaluate(gp_engine_t *engine, const gp_snapshot_t *snap,
		       int64_t now);

/*
 * Cheaper pass for the preempt plugin when jobs started or ended since the
 * last pass: refreshes pool usage and the victim order from the running
 * jobs in `snap` (its pending jobs are ignored); order and admission stay.
 */
int gp_engine_refresh_running(gp_engine_t *engine, const gp_snapshot_t *snap,
			      int64_t now);

typedef enum {
	GP_ADMIT_FREE = 0,  /* not subject to quota: P tier, no GPUs, or
			       no gpupool pool */
	GP_ADMIT_QUOTA = 1, /* NP job admitted within quota */
	GP_HELD_QUOTA = 2,  /* NP job held: over its pool's quota */
} gp_admission_t;

typedef struct {
	uint32_t job_id;
	uint32_t position;     /* 0-based place in R1 order */
	uint32_t priority;     /* Slurm priority; 0 when held */
	int admission;         /* gp_admission_t */
	/* The factors behind `priority`; they add up to it when not held. */
	uint32_t factor_tier;
	uint32_t factor_fairshare;
	uint32_t factor_age;
	int64_t orig_submit_time;
	char reason[96];       /* e.g. "GpuPoolQuota:pool1 2/2" when held */
	/*
	 * Tasks of the record that may start now: an NP job array
	 * record admitted within quota: k >= 1 (those that fit every pool);
	 * an ordinary admitted job: 1; held: 0; GP_ADMIT_FREE: array_tasks
	 * or 1.
	 */
	uint32_t admitted_tasks;
	/*
	 * Job array record: its tasks that the engine counts as
	 * running (by array_job_id of running jobs).  At most
	 * array_running + admitted_tasks tasks of the array may run at once.
	 */
	uint32_t array_running;
	/*
	 * Listed pools whose quota the job does not fit (R2).  Held:
	 * all of them.  Admitted (a job listing several pools): Slurm must
	 * not start it in these, only where gp_engine_start_partitions()
	 * says.  0: it may start in any partition it lists.
	 */
	uint32_t refused_pools;
} gp_pending_result_t;

/* Result for a pending job of the last pass; GP_ERR_ARG if unknown. */
int gp_engine_pending_result(gp_engine_t *engine, uint32_t job_id,
			     gp_pending_result_t *out);
size_t gp_engine_pending_count(gp_engine_t *engine);
/*
 * i-th pending job of the last pass in R1 order.  Jobs placed since
 * (gp_engine_provisional) are not listed, also after a job end.
 */
int gp_engine_pending_at(gp_engine_t *engine, size_t i,
			 gp_pending_result_t *out);

/*
 * Of `partitions` (a pending job's comma-separated partitions, as
 * its user listed them), those Slurm may start `job_id` in now, in the same
 * order: every partition that is not a gpupool pool and every pool whose
 * quota admitted it; none for a held job.  `buf` needs at most
 * strlen(partitions) + 1 bytes.  GP_ERR_ARG if the job has no result (no
 * pass or provisional placement has seen it).
 */
int gp_engine_start_partitions(gp_engine_t *engine, uint32_t job_id,
			       const char *partitions, char *buf,
			       size_t buf_len);

/*
 * Priority for a job that arrived after the last pass (priority_p_set at
 * submit), from the last pass's order without re-ranking anything: the job
 * goes after every pending job of its tier and pool.  The next pass gives
 * it its exact place.  Held is reported as for pass results.
 */
int gp_engine_provisional(gp_engine_t *engine, const gp_job_t *job,
			  int64_t now, gp_pending_result_t *out);

/*
 * What only Slurm knows about a job placed by
 * gp_engine_provisional() (priority_p_set), for gp_hold_until_pass().
 */
#define GP_PLACE_SUBMIT 0x1     /* its first priority: Slurm is submitting it */
#define GP_PLACE_ARRAY 0x2      /* Slurm already made it a job array record */
#define GP_PLACE_UNTESTED 0x4   /* Slurm has not found that it may start now
				   (details without a begin time) */
#define GP_PLACE_NO_ROOM 0x8    /* admitted, but in none of the partitions
				   Slurm may try it in now */
#define GP_PLACE_THROTTLE 0x10  /* a job array record whose
				   ArrayTaskThrottle a user or an admin is
				   changing (job_submit's job_modify) */

/*
 * Must the job of result `r` wait for the next pass instead of
 * starting now?  An admitted job (GP_ADMIT_QUOTA) that Slurm is submitting
 * and has not tested (GP_PLACE_SUBMIT | GP_PLACE_UNTESTED, not
 * GP_PLACE_ARRAY) may be a job array record Slurm has not made yet, whose
 * tasks the scheduler could all start before a pass caps its throttle; a
 * job that is not held (GP_ADMIT_*) with GP_PLACE_NO_ROOM can start only
 * once a pass gives it its partitions; an admitted record whose throttle
 * is being changed (GP_PLACE_THROTTLE) has lost gpupool's cap, which only
 * a pass puts back (Slurm sets the throttle before anything that may
 * refuse the rest of the update, and calls no priority hook then).  If so `r` becomes that hold
 * (GP_HELD_QUOTA, priority 0, reason GP_HOLD_PREFIX "Starting") and 1 is
 * returned; else 0 and `r` is unchanged.
 */
int gp_hold_until_pass(gp_pending_result_t *r, uint32_t facts);

/*
 * The throttle (ArrayTaskThrottle) gpupool puts on a pending job
 * array record of a non-preemptible tier: Slurm starts task after task from
 * one record in a scheduling pass and only the throttle stops it.  The
 * plugin keeps one of these per record it capped.
 */
typedef struct {
	uint32_t max_run_tasks; /* in: the record's throttle now (0 = none);
				   out: the throttle to set */
	int capped;             /* in/out: 1 while the throttle is gpupool's */
	uint32_t user_max;      /* in/out while capped: the user's own
				   throttle, put back when the cap goes */
	uint32_t our_max;       /* in/out while capped: the cap gpupool set */
} gp_array_throttle_t;

/*
 * Cap the record's throttle for its result `r`: admitted within
 * quota with `pending_tasks` > 1, at most its running tasks plus the
 * admitted ones (array_running + admitted_tasks, at least 1), never above
 * the user's throttle (a throttle changed since gpupool set it is the
 * user's); with `lower_only`, never above the cap set before either (a
 * result older than the tasks started since).  Held: nothing changes.
 * Otherwise, or `r` NULL (no longer a pending array), the user's throttle
 * goes back.  Returns 1 if more tasks may start than before (the throttle
 * went up or went away), 0 otherwise.
 */
int gp_array_throttle(gp_array_throttle_t *t, const gp_pending_result_t *r,
		      uint32_t pending_tasks, int lower_only);

/*
 * Keep the record's cap `t` in the engine's state file (t NULL or not
 * capped: none), so that a restarted slurmctld, which saved the capped
 * throttle as the record's own, can put the user's back.  Returns 1 when a
 * record became capped or stopped being capped or its user's throttle
 * moved (worth a save soon), 0 when only the cap moved or nothing changed,
 * <0 on error.
 */
int gp_engine_note_array_cap(gp_engine_t *engine, uint32_t job_id,
			     const gp_array_throttle_t *t);

/*
 * A record gpupool has no cap for in memory (after a restart): if the state
 * names a cap for it and its throttle now, `max_run_tasks`, is one gpupool
 * could have set (set, and at most the user's), *out is that cap (capped,
 * the user's throttle, our_max = max_run_tasks) and 1 is returned.
 * Otherwise 0: the throttle is the user's (the caller drops a saved cap
 * with gp_engine_note_array_cap).  The plugins ask once per record, at the
 * first pass after a start: a throttle changed later is told from the cap
 * as ever (gp_array_throttle).
 */
int gp_engine_restore_array_cap(gp_engine_t *engine, uint32_t job_id,
				uint32_t max_run_tasks,
				gp_array_throttle_t *out);

/*
 * A job ended, was cancelled or was requeued (priority_p_job_end): what it
 * held or reserved is given back and admission is redone at once in the
 * last pass's order.  Returns how many pending jobs' results it
 * changed (0: none; <0 on error), which gp_engine_changed_at() gives; its
 * cost follows those jobs, not the length of the queue.  A changed result
 * differs in priority, admission, admitted_tasks, refused_pools or
 * array_running; a job that stays held keeps the counts of its reason
 * ("2/4") until the next gp_engine_evaluate().  The job that ended is never
 * among them.
 */
int gp_engine_job_ended(gp_engine_t *engine, uint32_t job_id, int64_t now);

/*
 * The jobs whose results the last gp_engine_job_ended() changed:
 * their count, and the i-th one's result as it is now (GP_ERR_ARG if `i`
 * is out of range or the job has no result any more).
 */
size_t gp_engine_changed_count(gp_engine_t *engine);
int gp_engine_changed_at(gp_engine_t *engine, size_t i,
			 gp_pending_result_t *out);

/* ------------------------------------------------------------------ */
/* Preemption                                                           */

typedef enum {
	GP_RULE_NONE = 0,
	GP_RULE_INPOOL = 1,  /* R4: lower preemptible tier of the same pool */
	GP_RULE_RECLAIM = 2, /* R5: borrowed excess of another pool */
	GP_RULE_CONSOLIDATE = 3, /* moved: it can start again elsewhere */
} gp_rule_t;

typedef struct {
	int allowed;          /* 1: victim may be preempted for preemptor */
	int rule;             /* gp_rule_t */
	char victim_pool[GP_NAME_LEN];
	char preemptor_pool[GP_NAME_LEN];
	uint32_t victim_pool_used;   /* used(victim pool) now */
	uint32_t victim_pool_quota;
	char why[128];        /* short reason, also when not allowed */
} gp_verdict_t;

/* Name of a rule for logs and records: "InPool", "Reclaim", "Consolidation", "None". */
const char *gp_rule_name(int rule);

/*
 * May `victim` (running) be preempted so that `preemptor` (pending) can
 * run?  Uses the pool usage of the last pass; jobs not in that pass are
 * taken from the structs given.
 */
int gp_engine_preemptable(gp_engine_t *engine, const gp_job_t *victim,
			  const gp_job_t *preemptor, int64_t now,
			  gp_verdict_t *out);

/*
 * R6 victim order of a running job: lower goes first.  Jobs unknown to the
 * last pass rank after all known ones.
 */
uint32_t gp_engine_victim_rank(gp_engine_t *engine, uint32_t job_id);

/*
 * Since ABI 12: the order to offer `victim_id` in for `preemptor_id` (lower
 * goes first): where the snapshot had node usage, gp_engine_preemptable()
 * allows only the preemptor's planned victims (its victim plan: the
 * cheapest set on one node, then up to two fallback nodes' sets), and
 * these come node group by node group, 1 first; any other job ranks after
 * them in R6 order.  Slurm removes candidates in this order until the job
 * fits on some node (cons_tres), so it tries the planned node first.
 */
uint32_t gp_engine_plan_rank(gp_engine_t *engine, uint32_t preemptor_id,
			     uint32_t victim_id);

/* ------------------------------------------------------------------ */
/* Preemption records                                                 */

/*
 * One preemption slurmctld carried out (preempt/gpupool notes it when
 * Slurm asks the victim's grace time).  Strings are copied; NULL is "".
 * victim_name is the user's job name: any bytes, only ever written as a
 * JSON string value, never into a format or the SystemComment.
 */
typedef struct {
	int64_t time;
	uint32_t victim_job_id;
	const char *victim_name;
	uint32_t victim_user_id;
	const char *victim_pool;
	const char *victim_tier;
	uint32_t victim_gpus;
	int64_t victim_start_time;   /* start of the run preempted */
	uint32_t victim_pool_used;   /* of the verdict (gp_verdict_t) */
	uint32_t victim_pool_quota;
	uint32_t preemptor_job_id;
	const char *preemptor_pool;
	const char *preemptor_tier;
	int rule;                    /* gp_rule_t */
	int mode;                    /* GP_MODE_REQUEUE, _CANCEL, _SUSPEND */
	uint32_t grace_time;
	const char *why;             /* gp_verdict_t.why */
} gp_preemption_t;

/*
 * Queue one line of the event log in memory (no I/O: callers hold
 * slurmctld's job write lock).  Since ABI 12 it also tells the engine
 * that the preemptor's victim plan was carried out: it then waits for the
 * GPUs it freed (no second round of victims) and goes first in its tier
 * until it starts.  At most 4096 lines wait; beyond that the
 * oldest are dropped and the next flush writes how many.
 */
int gp_engine_note_preemption(gp_engine_t *engine, const gp_preemption_t *p);

/* Lines waiting to be flushed. */
size_t gp_engine_queued_events(gp_engine_t *engine);

/*
 * Append the queued lines to `path` (StateSaveLocation/gpupool_events.jsonl:
 * created 0600, never through a symbolic link), rotating it before it
 * would pass `max_bytes`: path.(keep-1) -> path.keep, ..., path -> path.1.
 * Call with no slurmctld lock held.  On an error the lines not written
 * stay queued for the next flush (still bounded) and `err` says why.
 */
int gp_engine_flush_events(gp_engine_t *engine, const char *path,
			   uint64_t max_bytes, uint32_t keep, int64_t now,
			   char *err, size_t err_len);

/* Longest SystemComment gp_preemption_comment() makes. */
#define GP_SYSTEM_COMMENT_MAX 1024

/*
 * The job's SystemComment with this preemption appended: `old` (NULL: none)
 * + "; " + "gpupool: preempted by JobId=N (pool P) rule R at
 * 2026-11-22T15:00:00, lost G GPU-s" (local time), at most
 * GP_SYSTEM_COMMENT_MAX bytes (the oldest text goes first).  `buf` needs
 * GP_SYSTEM_COMMENT_MAX + 1 bytes.
 */
int gp_preemption_comment(const char *old, const gp_preemption_t *p,
			  char *buf, size_t buf_len);

/* ------------------------------------------------------------------ */
/* Pools, reports, state                                                */

typedef struct {
	char name[GP_NAME_LEN];
	uint32_t capacity;     /* GPUs on the pool's nodes */
	uint32_t quota;
	uint32_t np_used;
	uint32_t p_used;
	uint32_t used;         /* np_used + p_used */
	uint32_t borrowed;     /* max(0, used - quota) */
	uint32_t lent;         /* own idle quota that other pools are using */
	uint32_t fairshare;
	uint32_t weight;
	double decayed_usage;  /* decayed GPU-seconds */
	double usage_share;    /* decayed usage / decayed capacity of its nodes */
	uint32_t pending_jobs;
	uint32_t pending_gpus;
	uint32_t held_jobs;    /* NP jobs held by quota */
} gp_pool_report_t;

size_t gp_engine_pool_count(gp_engine_t *engine);
int gp_engine_pool_report(gp_engine_t *engine, size_t i,
			  gp_pool_report_t *out);

/*
 * Whole picture of the last pass as JSON (pools, tiers, pending jobs in
 * order with reasons, running jobs with victim rank and class).  Returns a
 * malloc'd string to free with gp_free, or NULL.
 */
char *gp_engine_report_json(gp_engine_t *engine);
void gp_free(void *p);

/*
 * State that must survive a slurmctld restart: decayed usage history and
 * original submit times.  Saving copies the state under the engine's lock,
 * then, with the lock released (other gp_engine_* calls go on), writes
 * `path`.new (a new file, never through a symbolic link), fsyncs it,
 * renames it over `path` and fsyncs the directory.  Loading a bad file
 * changes nothing and says why.
 */
int gp_engine_save_state(gp_engine_t *engine, const char *path, int64_t now,
			 char *err, size_t err_len);
int gp_engine_load_state(gp_engine_t *engine, const char *path, char *err,
			 size_t err_len);

/* ------------------------------------------------------------------ */
/* Pass durations                                                     */

/*
 * One scheduling pass of priority/gpupool, in microseconds, as the plugin
 * measured it (the core has no clock).  The parts are measured in turn.
 */
typedef struct {
	uint64_t total_usec;    /* the whole pass, waiting for locks included */
	uint64_t lock_usec;     /* waiting for slurmctld's locks */
	uint64_t snapshot_usec; /* nodes, partitions and jobs copied */
	uint64_t evaluate_usec; /* gp_engine_evaluate() */
	uint64_t apply_usec;    /* priorities and holds written back */
} gp_pass_time_t;

/*
 * Count a pass that ended at `now`: passes, each part's last, longest and
 * sum, and a histogram of total_usec (1 ms .. 10 s).  No I/O.
 */
int gp_engine_note_pass(gp_engine_t *engine, const gp_pass_time_t *t,
			int64_t now);

/*
 * Write the counters to `path` (StateSaveLocation/gpupool_stats.json, read
 * by `gpupool exporter` and `gpupool status`) as gp_engine_save_state
 * writes its file: atomically, mode 0600.  Call with no slurmctld lock
 * held.
 */
int gp_engine_save_stats(gp_engine_t *engine, const char *path, int64_t now,
			 char *err, size_t err_len);

/* Short text for a status code. */
const char *gp_status_str(int status);

#ifdef __cplusplus
}
#endif

#endif /* GPUPOOL_H */

/*
 * gpupool_slurm.h - translation between slurmctld's records and the
 * gpupool core's C ABI (src/common/gpupool.h), shared by priority/gpupool
 * and preempt/gpupool (compiled into both plugins).
 *
 * Nothing here takes a slurmctld lock: every function documents the locks
 * its caller must hold (assoc_mgr's TRES and QOS read locks are taken
 * here, where said).  Nothing here decides policy.
 */
#ifndef GPUPOOL_SLURM_H
#define GPUPOOL_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "gpupool_compat.h"

#include "gpupool.h"

/* How a job's tracked resource (gpupool.conf QuotaTRES=) is counted. */
typedef struct {
	int tres_pos;          /* index in tres_req_cnt/tres_alloc_cnt, -1 */
	int tres_cnt;          /* slurmctld_tres_cnt when tres_pos was found */
	char gres_name[64];    /* "gpu" */
	/* Room for the longest TYPE gpupool.conf takes (251 bytes: "gpu:TYPE"
	 * in Slurm's 255), so that a long one is never cut and left unmatched. */
	char gres_type[256];   /* "" or the TYPE of gres/gpu:TYPE */
	char node_gres[260];   /* "gpu" or "gpu:TYPE" for node counts */
	/*
	 * gp_engine_snapshot_needs(): what to read beyond GPUs (jobs'
	 * accounts, CPUs, memory, the account tree); 0 for a flat
	 * configuration, which then reads nothing more.
	 */
	uint32_t needs;
} gps_tres_t;

/*
 * How to count QuotaTRES (the shared engine's, the staged one after a
 * reload) now: the one lookup of the tracked resource, which every caller
 * uses.  Looks it up again when QuotaTRES or slurmctld's TRES change, under
 * the assoc_mgr TRES read lock, which it takes itself: callers may hold
 * slurmctld locks (they come before assoc_mgr locks), no assoc_mgr lock.
 */
extern void gps_tres_get(gps_tres_t *t);

/*
 * The job's count of the tracked resource: allocated for a job that holds
 * resources, requested otherwise.  Caller holds the job read lock.
 */
extern uint32_t gps_job_gpus(job_record_t *job_ptr, const gps_tres_t *t,
			     bool allocated);

/*
 * Room for a QOS name: gpupool.conf takes names of up to 255 bytes, as
 * slurmdbd keeps them, and a name cut here would match no tier and get
 * DefaultTier's (a preemptible tier's job held for quota, or the reverse).
 */
#define GPS_QOS_LEN 256

/*
 * Add Slurm's account tree (each account and its parent, from assoc_mgr)
 * to `snap` (gpupool_accounts.c).  Takes and releases assoc_mgr's
 * association read lock; caller holds no assoc_mgr lock.
 */
extern void gps_account_tree_add(gp_snapshot_t *snap);

/*
 * Copy assoc_mgr's QOS names (takes and releases assoc_mgr's QOS read
 * lock).  Caller holds no assoc_mgr lock.
 */
extern void gps_qos_names_refresh(void);

/*
 * Name of the job's QOS, copied into buf (NULL: the job has none, or it is
 * unknown).  `may_lock`: the caller holds no assoc_mgr lock, so a QOS not
 * seen yet may be looked up (gps_qos_names_refresh); false when the caller
 * may hold one (pack_job holds the QOS read lock).  Job read lock held.
 */
extern const char *gps_job_qos(job_record_t *job_ptr, bool may_lock,
			       char *buf, size_t len);

/*
 * How many times gps_job_qos (may_lock true) met a QOS id whose name it
 * still did not know after a refresh, since the plugin loaded (per .so).
 */
extern uint32_t gps_qos_miss_count(void);

/*
 * Note which partitions are OverSubscribe=EXCLUSIVE (a job listing one
 * gets whole nodes there): each pass, under the job write and partition
 * read locks.  _fini frees the list (plugin fini).
 */
extern void gps_exclusive_parts_refresh(void);
extern void gps_exclusive_parts_fini(void);

/*
 * What a job holds (running, suspended) or asks (pending), into `out`
 * (zeroed by the caller): GPUs, and for a pending job its node count, the
 * whole-node flag (use_part as gps_job_fill's) and, where quotas or nodes
 * are read, CPUs and memory as cons_tres will count them.  gps_job_fill
 * and the pass's digest both read a job's size here, so that a change of
 * any of it (scontrol update NumNodes=, OverSubscribe=, a partition made
 * OverSubscribe=EXCLUSIVE) is a change the pass sees.  Locks: as
 * gps_job_fill.
 */
extern void gps_job_size(job_record_t *job_ptr, int state,
			 const gps_tres_t *t, part_record_t *use_part,
			 gp_job_t *out);

/*
 * Fill `out` for `job_ptr` in gpupool's state `state` (GP_JOB_*).  The
 * partition string is the job record's own (valid under the job lock) or,
 * when made from its list, xmalloc'd into *part_buf (caller xfree's it,
 * NULL otherwise); the QOS name is copied into qos_buf (`out` points there).
 * Running jobs: their one partition; pending jobs: `use_part` if given
 * (the partition the scheduler is trying), else every partition their user
 * listed (the job's partition string: gpupool may have narrowed its list).
 * A job with no submit time yet gets `now`.  Where t->needs says, its
 * account (the job record's string) and its CPUs and memory: allocated
 * (running), else requested, from its TRES counts.
 * Caller holds job read + partition read locks and no assoc_mgr lock (an
 * unknown QOS is looked up under assoc_mgr's QOS read lock).
 */
extern void gps_job_fill(job_record_t *job_ptr, int state,
			 const gps_tres_t *t, part_record_t *use_part,
			 time_t now, gp_job_t *out, char **part_buf,
			 char qos_buf[GPS_QOS_LEN]);

/*
 * Pending tasks a pending job array meta record stands for, when more than
 * one (0 otherwise: an ordinary job, a split-off task, the last task).
 * Caller holds the job read lock.
 */
extern uint32_t gps_array_pending_tasks(job_record_t *job_ptr);
/*
 * An array record's own throttle, the user's (--array=...%N or
 * ArrayTaskThrottle; 0: none): `fn`'s answer where set
 * (gps_array_user_throttle_from: the priority plugin, which may have
 * capped max_run_tasks), else max_run_tasks.  Job read lock.
 */
extern uint32_t gps_array_user_throttle(job_record_t *job_ptr);
/*
 * The pending job waits for another job (GP_JOB_DEPENDENT): a dependency
 * not met (with `?`, none met), or one Slurm found can never be.  Job read
 * lock.
 */
extern bool gps_job_dependent(job_record_t *job_ptr);
/*
 * Slurm may try the pending job in several partitions (its user's list,
 * whatever gpupool narrowed it to) or, since 24.11, several QOSes: Slurm's
 * limit tests of one say nothing of the others (gpupool_limits.c).
 */
extern bool gps_several_tries(job_record_t *job_ptr);
/*
 * The pending job may not start before a later time its user, an admin or
 * scrontab set (--begin, scontrol update StartTime=, the next run):
 * GP_JOB_DEPENDENT too.  Not a requeued job's delay (cred_expire + 1 s):
 * it keeps its place (R1.3), and backfill keeps its GPUs for it.  Job read
 * lock.
 */
extern bool gps_job_begins_later(job_record_t *job_ptr);

/* splitmix64's finaliser: spreads every input bit over the word (hashes). */
static inline uint64_t gps_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/*
 * The pending jobs Slurm's own limits hold back (GP_JOB_OVER_LIMIT): an
 * association's or QOS's limit keeps each from starting now, as Slurm's
 * scheduler would test it (gpupool_limits.c).  Sorted ids; empty where
 * AccountingStorageEnforce has no "limits".  Caller holds the job write
 * lock and no assoc_mgr lock; gps_over_limit_free() frees it.
 */
typedef struct {
	uint32_t *ids;
	size_t count, size;
} gps_over_limit_t;
extern void gps_over_limit_collect(gps_over_limit_t *out);
extern bool gps_over_limit(const gps_over_limit_t *set, uint32_t job_id);
extern void gps_over_limit_free(gps_over_limit_t *set);
extern void gps_array_user_throttle_from(uint32_t (*fn)(job_record_t *));

/* gpupool state of a job record; -1 for jobs that hold and want nothing. */
extern int gps_job_state(job_record_t *job_ptr);

/*
 * Snapshot of the cluster: nodes with their configured count of the
 * tracked GRES (and, where t->needs says, their CPUs and memory),
 * partitions, the account tree (t->needs: GP_NEEDS_ACCOUNTS), and every
 * unfinished job.  `running_only`
 * leaves out nodes, partitions and pending jobs (for
 * gp_engine_refresh_running).  A priority-0 pending job that is not
 * gpupool's hold (gps_hold_is_ours) is its user's or an admin's.
 * Caller holds job read, node read and partition read locks and no
 * assoc_mgr lock (see gps_job_fill, gps_account_tree_add), and for a full
 * pass (not `running_only`) the job write lock: which pending jobs are over
 * Slurm's limits is tested on their records (gps_over_limit_collect).
 * NULL on allocation failure.
 */
extern gp_snapshot_t *gps_snapshot_build(const gps_tres_t *t,
					 bool running_only, time_t now,
					 uint32_t *job_cnt);

/*
 * A hash of what a running-only snapshot reads of each running job (id,
 * start, QOS, partition, restarts, CPUs): equal values mean a refresh
 * would see the same jobs.  A walk of job_list with no allocation, far
 * cheaper than building the snapshot; list_for_each, so it may nest in
 * slurm_find_preemptable_jobs()'s walk.  Caller holds the job read lock.
 */
extern uint64_t gps_running_fingerprint(void);

/*
 * Where GPUs are (gpupool_nodes.c), for the core's victim plan.  Caller
 * holds the job read and node read locks.  Read only where
 * gps_nodes_readable(): the tracked resource is a GRES (gres/gpu).
 */
extern bool gps_nodes_readable(const gps_tres_t *t);
/*
 * What reservations keep from jobs outside them (gpupool_resv.c), per
 * node index: active ones, held whole, and of reservations of some cores
 * or GPUs the CPUs and GPUs no job of theirs uses; and `ahead`, what
 * those not started yet hold more from their start on, each node's
 * entries cumulative (gp_snapshot_add_node_reserved_ahead).  All NULL: no
 * reservation.  Caller holds the job read and node read locks.
 */
typedef struct {
	int n;           /* node index */
	time_t from;
	bool whole;
	uint32_t cpus;   /* more than active ones reserve */
	uint32_t gpus;
} gps_resv_ahead_t;
typedef struct gps_resv_layer gps_resv_layer_t;
typedef struct {
	bool *whole;
	uint32_t *cpus;
	uint32_t *gpus;
	gps_resv_ahead_t *ahead;
	int ahead_cnt;
	/* Reserved cores and GPUs now and by each start ahead (partial ones). */
	gps_resv_layer_t *layers;
	int layer_cnt;
} gps_resv_held_t;
extern bool gps_resv_held(time_t now, const gps_tres_t *t,
			  gps_resv_held_t *h);
/*
 * Of the running job just added to `snap` (its nodes set), the reserved
 * cores (as CPUs) and GPUs it holds per node, now and by each start ahead
 * (gp_snapshot_add_job_reserved).  Nothing where no reservation of some
 * cores or GPUs is in force or ahead.
 */
extern void gps_resv_job_held(gp_snapshot_t *snap, job_record_t *job_ptr,
			      const int32_t *node_map, const gps_tres_t *t,
			      const gps_resv_held_t *h);
/* Of the GPUs the job holds on its i-th node, those set in `bits`. */
extern uint32_t gps_job_node_gpus_in(job_record_t *job_ptr, int i,
				     const gps_tres_t *t, bitstr_t *bits);
extern void gps_resv_held_free(gps_resv_held_t *h);
/* A reservation's GPUs on node index `n`, ORed into *acc (gpupool_nodes.c). */
extern void gps_node_resv_gpu_bits(node_record_t *node_ptr, int n,
				   const gps_tres_t *t, list_t *resv_gres,
				   bitstr_t **acc);
/* Of reserved GPUs `bits` on the node, those no job holds. */
extern uint32_t gps_node_resv_gpus_unheld(node_record_t *node_ptr,
					  const gps_tres_t *t, bitstr_t *bits);
/*
 * The node's free GPUs (of `gpus` configured), whether it is completing,
 * and whether it takes no job now (closed: gpr_node_closed, or held whole
 * by an active reservation); the CPUs and memory Slurm gives jobs there.
 * `h` (may be NULL): reservations, node index `n`.
 */
extern void gps_node_usage(gp_snapshot_t *snap, int32_t node,
			   node_record_t *node_ptr, uint64_t gpus,
			   const gps_tres_t *t, const gps_resv_held_t *h,
			   int n);
/* Scratch of node_record_count entries each, for gps_job_nodes(). */
typedef struct {
	int32_t *idx;
	uint32_t *gpus;
	uint32_t *cpus;
	uint64_t *mem;
} gps_node_scratch_t;
extern void gps_node_scratch_alloc(gps_node_scratch_t *s);
extern void gps_node_scratch_free(gps_node_scratch_t *s);
/*
 * The running job's nodes (snapshot indexes through `node_map`) and its
 * GPUs, CPUs and memory on each, for the job added last.
 */
extern void gps_job_nodes(gp_snapshot_t *snap, job_record_t *job_ptr,
			  const int32_t *node_map, gps_node_scratch_t *s,
			  const gps_tres_t *t);

/*
 * The CPUs and memory (MiB) per GPU of the tracked GRES a job asks for:
 * --cpus-per-gpu and --mem-per-gpu, else the DefCpuPerGPU and DefMemPerGPU
 * cons_tres set on it when it last tested the job (0: none).  Job read
 * lock.
 */
extern void gps_job_per_gpu(job_record_t *job_ptr, const gps_tres_t *t,
			    uint32_t *cpus, uint64_t *mem_mb);
/*
 * The GPU type a job asks for (of the tracked GRES where QuotaTRES names
 * no type): "" for none, NULL for more than one.  Job read lock.
 */
extern const char *gps_job_gpu_type(job_record_t *job_ptr,
				    const gps_tres_t *t);
/*
 * The one type of the tracked GRES's GPUs on a node: "" where it has none,
 * NULL where some are untyped or they are of more than one type.  Node
 * read lock.
 */
extern const char *gps_node_gpu_type(node_record_t *node_ptr,
				     const gps_tres_t *t);

/*
 * The node's GPUs of the tracked GRES go to a job only as it asks for them,
 * not with the whole node (gres.conf Flags=explicit: Slurm 23.11 and later;
 * always false before).  Node read lock.
 */
extern bool gps_node_gpus_explicit(node_record_t *node_ptr,
				   const gps_tres_t *t);

/*
 * Which nodes of `part` a pending job may use, for its victim plan, which
 * counts GPUs of any model on any node of the partition:
 * GPS_NODES_ANY: all of them (the plan as usual);
 * GPS_NODES_LISTED: only *names (comma-separated, xfree() them): those
 *   in -w's list, not in -x's, with its GPU model alone, whose active
 *   features meet its -C (gpr_node_has_features);
 * GPS_NODES_UNKNOWN: some, which gpupool cannot tell (-C with counts,
 *   brackets or parentheses, --exclusive=user or mcs, a reservation,
 *   several models,
 *   a node of mixed or untyped GPUs, -w naming fewer nodes than the job
 *   needs): no plan, the rules alone.
 * Caller holds the job read and node read locks.
 */
#define GPS_NODES_ANY 0
#define GPS_NODES_LISTED 1
#define GPS_NODES_UNKNOWN 2
extern int gps_job_nodes_allowed(job_record_t *job_ptr,
				 part_record_t *part, const gps_tres_t *t,
				 char **names);

/*
 * Refuse a libgpupool built for another C ABI than this plugin (init() of
 * each plugin that links it, before any other libgpupool call): logs why
 * and returns SLURM_ERROR, so that slurmctld does not start with it.
 */
extern int gps_abi_check(const char *plugin_type);

/* slurm.conf's PreemptMode as GP_MODE_* (GANG, WITHIN, PRIORITY: flags). */
extern int gps_site_preempt_mode(void);

#endif /* GPUPOOL_SLURM_H */

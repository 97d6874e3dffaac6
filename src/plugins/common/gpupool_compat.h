/*
 * gpupool_compat.h - the one place where the Slurm releases gpupool builds
 * against differ (22.05, 23.11, 24.11, 25.11, 26.05), keyed on
 * SLURM_VERSION_NUMBER from the configured tree's slurm/slurm_version.h.
 * The shims call only what this header (and gpupool_compat.c, its
 * functions too long to inline) gives them and contain no #if on the Slurm
 * version.  doc/slurm-releases.md says where each difference
 * lives in Slurm's sources.
 *
 * Releases in between (23.02, 24.05, 25.05) are not supported: each
 * switch names the first of the five releases that has the change.
 */
#ifndef GPUPOOL_COMPAT_H
#define GPUPOOL_COMPAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "slurm/slurm.h"
#include "slurm/slurm_version.h"

#define GPS_SLURM_AT_LEAST(maj, min) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(maj, min, 0))

#if !GPS_SLURM_AT_LEAST(22, 5) || GPS_SLURM_AT_LEAST(26, 6)
#error "gpupool supports Slurm 22.05, 23.11, 24.11, 25.11 and 26.05"
#endif

/* SelectTypeParameters' memory bit: CR_MEMORY, SELECT_MEMORY since it was renamed */
#ifdef CR_MEMORY
#define GPS_SELECT_MEMORY CR_MEMORY
#else
#define GPS_SELECT_MEMORY SELECT_MEMORY
#endif

/* ------------------------------------------------------------------ */
/* headers: the plugin interfaces moved from src/common and src/slurmctld
 * to src/interfaces */

#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/macros.h"
#include "src/common/timers.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/slurmctld.h"

#if GPS_SLURM_AT_LEAST(23, 11)
#include "src/interfaces/accounting_storage.h"
#include "src/interfaces/gres.h"
#include "src/interfaces/mcs.h"
#include "src/interfaces/preempt.h"
#include "src/interfaces/priority.h"
#include "src/interfaces/site_factor.h"
#else
#include "src/common/gres.h"
#include "src/common/slurm_accounting_storage.h"
#include "src/common/site_factor.h"
#include "src/common/slurm_mcs.h"
#include "src/common/slurm_priority.h"
#include "src/slurmctld/preempt.h"
#endif

/*
 * The GPU node record's partner of shared GRES (gres/shard, gres/mps over
 * the same devices), where Slurm gives a GPU with shards or MPS in use to
 * no job asking for whole GPUs: since 23.11.5 (NEWS: "Fix issue where you
 * could have a gpu allocated as well as a shard on that gpu allocated at
 * the same time"), by a gres_state_t's alt_gres.  Before (22.05), both
 * may hold the same GPU: NULL, such GPUs count as free.  (23.11 and 24.11
 * leave alt_gres out of the copy of node GRES their will-run and
 * preemption tests use, so there Slurm may preempt fewer jobs than a plan
 * names and start the job a pass later; 25.11 copies it.)
 */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 5)
#define GPS_SHARED_GRES_NS(ns) \
	((ns)->alt_gres ? (gres_node_state_t *) (ns)->alt_gres->gres_data : NULL)
#else
#define GPS_SHARED_GRES_NS(ns) ((void) (ns), (gres_node_state_t *) NULL)
#endif

/* A reservation's GPUs (GRES in reservations, 23.02): its GRES list, or NULL. */
#if GPS_SLURM_AT_LEAST(23, 11)
#define GPS_RESV_GRES(resv) ((resv)->gres_list_alloc)
#else
#define GPS_RESV_GRES(resv) ((void) (resv), (list_t *) NULL)
#endif

#if GPS_SLURM_AT_LEAST(24, 11)
#include "src/slurmctld/acct_policy.h"
#endif
#if GPS_SLURM_AT_LEAST(26, 5)
#include "src/common/threadpool.h"
#endif

/* A job state reason's name, as squeue shows it (renamed in 24.11). */
#if GPS_SLURM_AT_LEAST(24, 11)
#include "src/common/job_state_reason.h"
#define gps_reason_string(r) job_state_reason_string(r)
#else
#define gps_reason_string(r) job_reason_string(r)
#endif

/* ------------------------------------------------------------------ */
/* lists: list_t / list_itr_t since 23.11; List / ListIterator gone in 24.11 */

#if !GPS_SLURM_AT_LEAST(23, 11)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
#endif

/*
 * A list_for_each() inside a list_for_each() over the same list on the
 * same thread: re-entrant since 25.11 (list.c LIST_THREAD_LOCK), a
 * self-deadlock before.
 */
#define GPS_LIST_FOR_EACH_REENTRANT GPS_SLURM_AT_LEAST(25, 11)

/* SelectTypeParameters=CR_LLN: CR_LLN, a macro, up to 23.x; SELECT_LLN since. */
#ifdef CR_LLN
#define GPS_SELECT_LLN CR_LLN
#else
#define GPS_SELECT_LLN SELECT_LLN
#endif

/* ------------------------------------------------------------------ */
/* threads and timers */

#if GPS_SLURM_AT_LEAST(26, 5)
/* threadpool.h: named threads, joined through the pool */
#define gps_thread_create(name, id, func, arg) \
	slurm_thread_create(name, id, func, arg)
#define gps_thread_join(id) slurm_thread_join(id)
#define GPS_TIMER_STR TIMER_STR()
#else
#define gps_thread_create(name, id, func, arg) \
	slurm_thread_create(id, func, arg)
#define gps_thread_join(id) pthread_join(id, NULL)
#define GPS_TIMER_STR TIME_STR
#endif

/* ------------------------------------------------------------------ */
/* job records */

/*
 * Per-partition (since 23.11 per partition and QOS) priorities that only
 * priority/multifactor fills: job_record.priority_array, since 24.11 in
 * job_record.prio_mult (priority_mult_t).  NULL when there are none.
 */
static inline uint32_t *gps_job_priority_array(job_record_t *job_ptr)
{
#if GPS_SLURM_AT_LEAST(24, 11)
	return job_ptr->prio_mult ? job_ptr->prio_mult->priority_array : NULL;
#else
	return job_ptr->priority_array;
#endif
}

/* Drop them (their index no longer matches the job's partitions). */
static inline void gps_job_priority_array_free(job_record_t *job_ptr)
{
#if GPS_SLURM_AT_LEAST(24, 11)
	if (job_ptr->prio_mult) {
		xfree(job_ptr->prio_mult->priority_array);
		xfree(job_ptr->prio_mult->priority_array_names);
	}
#else
	xfree(job_ptr->priority_array);
#endif
}

/*
 * Multiple QOS per job (23.11: job_ptr->qos_list, "--qos=a,b"): Slurm
 * keeps job_ptr->qos_id/qos_ptr on the QOS the job is tried with (the
 * first, or the one it runs with), and gpupool's tier is that QOS's.
 */

/* ------------------------------------------------------------------ */
/* priority plugin API (src/interfaces/priority.c syms[]) */

/*
 * 23.11: priority_p_thread_start() starts plugin threads once slurmctld
 * is primary (init() also runs in a backup and in sshare);
 * priority_p_recover() after job state recovery.  22.05 has neither:
 * threads start in init().
 */
#define GPS_PRIORITY_THREADS_IN_INIT (!GPS_SLURM_AT_LEAST(23, 11))

/*
 * Is init() running because of "scontrol reconfigure"?  Since 23.11 a
 * reconfigure execs a new slurmctld (SLURMCTLD_RECONF=1 in its
 * environment, src/slurmctld/controller.c _try_to_reconfig) that loads
 * every plugin anew; 22.05 reconfigures in place (priority_p_reconfig).
 */
static inline bool gps_init_by_reconfigure(void)
{
#if GPS_SLURM_AT_LEAST(23, 11)
	return getenv("SLURMCTLD_RECONF") != NULL;
#else
	return false;
#endif
}

/*
 * Keep a site_factor plugin's configuration current, as multifactor does.
 * 22.05 initialises the plugin on first use; since 23.11
 * site_factor_g_reconfig() needs site_factor_g_init() first (it calls
 * through a NULL ops pointer otherwise: "scontrol setdebugflags" killed
 * slurmctld), and 24.11 dropped it, since a reconfigure re-inits every
 * plugin.  gpupool sets no site factor, so since 23.11 there is nothing to
 * do.
 */
static inline void gps_site_factor_reconfig(void)
{
#if !GPS_SLURM_AT_LEAST(23, 11)
	site_factor_g_reconfig();
#endif
}

/* assoc_mgr_is_user_acct_coord() has `is_locked` since 23.11 */
static inline bool gps_is_user_acct_coord(uint32_t uid, char *acct)
{
#if GPS_SLURM_AT_LEAST(23, 11)
	return assoc_mgr_is_user_acct_coord(acct_db_conn, uid, acct, false);
#else
	return assoc_mgr_is_user_acct_coord(acct_db_conn, uid, acct);
#endif
}

/*
 * sprio's filters: sent to slurmctld up to 23.11
 * (priority_factors_request_msg_t), applied by sprio itself since 24.11.
 */
typedef struct {
	char *partitions;	/* "a,b" or NULL */
	list_t *job_id_list;	/* of uint32_t, or NULL */
	list_t *uid_list;	/* of uint32_t, or NULL */
} gps_factors_filter_t;

/*
 * Who holds the locks for priority_p_get_priority_factors_list: the
 * plugin itself in 22.05; since 23.11 _slurm_rpc_get_priority_factors
 * holds job, node, part read and the assoc_mgr QOS read lock (taking the
 * slurmctld locks again could deadlock behind a waiting writer).
 */
#define GPS_FACTORS_CALLER_LOCKS GPS_SLURM_AT_LEAST(23, 11)

/*
 * Defines the exported priority_p_get_priority_factors_list() with this
 * release's signature around `impl`:
 *   list_t *impl(const gps_factors_filter_t *filter, uid_t uid)
 */
#if GPS_SLURM_AT_LEAST(24, 11)
#define GPS_DEFINE_PRIORITY_FACTORS_LIST(impl)                            \
	extern list_t *priority_p_get_priority_factors_list(uid_t uid)    \
	{                                                                 \
		gps_factors_filter_t filter = { 0 };                      \
		return impl(&filter, uid);                                \
	}
#else
#define GPS_DEFINE_PRIORITY_FACTORS_LIST(impl)                            \
	extern list_t *priority_p_get_priority_factors_list(              \
		priority_factors_request_msg_t *req_msg, uid_t uid)       \
	{                                                                 \
		gps_factors_filter_t filter = { 0 };                      \
		if (req_msg) {                                            \
			filter.partitions = req_msg->partitions;          \
			filter.job_id_list = req_msg->job_id_list;        \
			filter.uid_list = req_msg->uid_list;              \
		}                                                         \
		return impl(&filter, uid);                                \
	}
#endif

/* A list for sprio's rows (priority_factors_object_t, this release's). */
extern list_t *gps_factors_list_create(void);

/*
 * One sprio row.  direct_prio > 0: an admin-set priority (no factors).
 * Otherwise the factors; sprio adds (site - NICE_OFFSET) and subtracts
 * (nice - NICE_OFFSET), so both are NICE_OFFSET.
 */
extern void gps_factors_append(list_t *ret_list, job_record_t *job_ptr,
			       char *partition, double direct_prio,
			       double qos, double fairshare, double age);

/*
 * priority/basic's job end duty (the run seconds a job did not use go
 * back).  Since 24.11 also the QOS's per-account and per-user usage
 * (acct_policy_get_{acct,user}_used_limits).  Caller holds the
 * assoc_mgr assoc and QOS write locks.
 */
extern void gps_qos_return_run_secs(job_record_t *job_ptr,
				    slurmdb_qos_rec_t *qos_ptr,
				    const uint64_t *unused, int cnt);

/* ------------------------------------------------------------------ */
/* preempt plugin API (src/interfaces/preempt.c syms[]) */

/*
 * Up to 24.11 one preempt_p_get_data(job, PREEMPT_DATA_*, data), and
 * slurm_find_preemptable_jobs() asks PREEMPT_DATA_ENABLED (job write
 * lock, outside any job_list iteration) right before it walks job_list.
 * 25.11 has preempt_p_get_mode/_get_prio/_get_grace_time instead and
 * never asks the plugin whether preemption is enabled.
 */
#define GPS_PREEMPT_ASKS_ENABLED (!GPS_SLURM_AT_LEAST(25, 11))

/*
 * Without that question, what the shim did there is done at the start of
 * preempt_p_preemptable(), which slurm_find_preemptable_jobs() calls from
 * inside a list_for_each() over job_list: only safe where a nested
 * list_for_each() over job_list does not deadlock.
 */
#define GPS_PREEMPT_PREPARE_IN_PREEMPTABLE (!GPS_PREEMPT_ASKS_ENABLED)
#if GPS_PREEMPT_PREPARE_IN_PREEMPTABLE && !GPS_LIST_FOR_EACH_REENTRANT
#error "preempt/gpupool needs the PREEMPT_DATA_ENABLED question or a re-entrant list_for_each"
#endif

/*
 * Defines the exported preempt data functions around
 *   uint16_t mode_fn(job_record_t *)     PreemptMode to stop the job
 *   uint32_t prio_fn(job_record_t *)     victim order (ascending)
 *   uint32_t grace_fn(job_record_t *)    grace time, asked once when
 *                                        the job is really preempted
 *   void enabled_fn(void)                preemption is enabled and about
 *                                        to be looked at (<= 24.11 only)
 */
#if GPS_SLURM_AT_LEAST(25, 11)
#define GPS_DEFINE_PREEMPT_DATA_API(mode_fn, prio_fn, grace_fn, enabled_fn) \
	extern uint16_t preempt_p_get_mode(job_record_t *job_ptr)          \
	{                                                                  \
		return mode_fn(job_ptr);                                   \
	}                                                                  \
	extern uint32_t preempt_p_get_prio(job_record_t *job_ptr)          \
	{                                                                  \
		return prio_fn(job_ptr);                                   \
	}                                                                  \
	extern uint32_t preempt_p_get_grace_time(job_record_t *job_ptr)    \
	{                                                                  \
		return grace_fn(job_ptr);                                  \
	}
#else
#define GPS_DEFINE_PREEMPT_DATA_API(mode_fn, prio_fn, grace_fn, enabled_fn) \
	extern int preempt_p_get_data(job_record_t *job_ptr,               \
				      slurm_preempt_data_type_t data_type, \
				      void *data)                          \
	{                                                                  \
		switch (data_type) {                                       \
		case PREEMPT_DATA_ENABLED:                                 \
			*(bool *) data = (slurm_conf.preempt_mode !=       \
					  PREEMPT_MODE_OFF);               \
			if (*(bool *) data)                                \
				enabled_fn();                              \
			return SLURM_SUCCESS;                              \
		case PREEMPT_DATA_MODE:                                    \
			*(uint16_t *) data = mode_fn(job_ptr);             \
			return SLURM_SUCCESS;                              \
		case PREEMPT_DATA_PRIO:                                    \
			*(uint32_t *) data = prio_fn(job_ptr);             \
			return SLURM_SUCCESS;                              \
		case PREEMPT_DATA_GRACE_TIME:                              \
			*(uint32_t *) data = grace_fn(job_ptr);            \
			return SLURM_SUCCESS;                              \
		}                                                          \
		error("%s: unknown enum %d", __func__, data_type);         \
		return SLURM_ERROR;                                        \
	}
#endif

/* ------------------------------------------------------------------ */
/* job_submit plugin API: job_modify() has `char **err_msg` since 23.11 */

#if GPS_SLURM_AT_LEAST(23, 11)
#define GPS_JOB_MODIFY_EXTRA_PARAMS , char **err_msg
#else
#define GPS_JOB_MODIFY_EXTRA_PARAMS
#endif

/*
 * Is `uid` a coordinator of `acct` (no assoc_mgr lock held)?  Since 23.11
 * assoc_mgr_is_user_acct_coord() says whether the caller holds its locks.
 */
#if GPS_SLURM_AT_LEAST(23, 11)
#define GPS_IS_ACCT_COORD(uid, acct) \
	assoc_mgr_is_user_acct_coord(acct_db_conn, (uid), (acct), false)
#else
#define GPS_IS_ACCT_COORD(uid, acct) \
	assoc_mgr_is_user_acct_coord(acct_db_conn, (uid), (acct))
#endif

#endif /* GPUPOOL_COMPAT_H */

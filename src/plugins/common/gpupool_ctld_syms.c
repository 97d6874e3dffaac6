/*
 * gpupool_ctld_syms.c - weak fallbacks for every symbol the plugins take
 * from slurmctld itself (not from libslurm).
 *
 * Slurm commands load these plugins outside slurmctld: sshare and sprio
 * call priority_g_init() (23.11+), and a plugin opened by anything with
 * RTLD_NOW (or any data reference, even with RTLD_LAZY) must resolve every
 * symbol at dlopen, or the command dies with "undefined symbol".  Inside
 * slurmctld the executable comes first in the global lookup scope, so its
 * definitions win over these; outside it, init() sees it is not in
 * slurmctld and never calls the functions below.
 *
 * The list is what `nm -D --undefined-only` shows on the built .so files
 * less what libslurm exports; tests/unit/plugin_load_test.c dlopens each
 * plugin with RTLD_NOW to keep it complete.
 */
#include "config.h"

#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/acct_policy.h"
#include "src/slurmctld/locks.h"

#include "gpupool_compat.h"

#define GPS_WEAK __attribute__((weak))

GPS_WEAK void *acct_db_conn = NULL;
GPS_WEAK list_t *job_list = NULL;
GPS_WEAK list_t *part_list = NULL;
GPS_WEAK list_t *resv_list = NULL;
GPS_WEAK time_t last_job_update = (time_t) 0;
GPS_WEAK time_t last_node_update = (time_t) 0;
GPS_WEAK time_t last_part_update = (time_t) 0;
GPS_WEAK int slurmctld_tres_cnt = 0;
GPS_WEAK uint16_t accounting_enforce = 0;

GPS_WEAK job_record_t *find_job_record(uint32_t job_id)
{
	return NULL;
}

GPS_WEAK job_record_t *find_job_array_rec(uint32_t array_job_id,
					  uint32_t array_task_id)
{
	return NULL;
}

GPS_WEAK bool test_job_array_completed(uint32_t array_job_id)
{
	return true;
}

GPS_WEAK bool test_job_array_pending(uint32_t array_job_id)
{
	return false;
}

GPS_WEAK part_record_t *find_part_record(char *name)
{
	return NULL;
}

GPS_WEAK void lock_slurmctld(slurmctld_lock_t lock_levels)
{
}

GPS_WEAK void unlock_slurmctld(slurmctld_lock_t lock_levels)
{
}

GPS_WEAK void queue_job_scheduler(void)
{
}

#if GPS_SLURM_AT_LEAST(23, 11)
GPS_WEAK void consolidate_config_list(bool is_locked, bool force)
{
}
#endif

GPS_WEAK int update_node(update_node_msg_t *update_node_msg, uid_t auth_uid)
{
	return SLURM_ERROR;
}

GPS_WEAK bool validate_operator(uid_t uid)
{
	return false;
}

GPS_WEAK void acct_policy_remove_accrue_time(job_record_t *job_ptr,
					     bool assoc_mgr_locked)
{
}

/* gps_over_limit_collect() (gpupool_limits.c) */
GPS_WEAK bool acct_policy_job_runnable_pre_select(job_record_t *job_ptr,
						  bool assoc_mgr_locked)
{
	return true;
}

GPS_WEAK bool acct_policy_job_runnable_post_select(job_record_t *job_ptr,
						   uint64_t *tres_req_cnt,
						   bool assoc_mgr_locked)
{
	return true;
}

GPS_WEAK int job_limits_check(job_record_t **job_pptr, bool check_min_time)
{
	return WAIT_NO_REASON;
}

#if GPS_SLURM_AT_LEAST(24, 11)
/* gps_qos_return_run_secs() (gpupool_compat.c), 24.11+ */
GPS_WEAK slurmdb_used_limits_t *acct_policy_get_acct_used_limits(
	list_t **acct_limit_list, char *acct)
{
	return NULL;
}

GPS_WEAK slurmdb_used_limits_t *acct_policy_get_user_used_limits(
	list_t **user_limit_list, uint32_t user_id)
{
	return NULL;
}
#endif

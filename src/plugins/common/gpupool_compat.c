/*
 * gpupool_compat.c - the compatibility unit's functions (see
 * gpupool_compat.h): what the releases differ in that is too long to
 * inline, the rows of sprio and the run seconds given back at a job's end.
 */
#include "config.h"

#include "src/common/log.h"

#include "gpupool_compat.h"

#if GPS_SLURM_AT_LEAST(23, 11)
/*
 * Since 23.11 the factors are in obj->prio_factors, and
 * slurm_destroy_priority_factors_object() frees partition, account and
 * qos: like priority/multifactor, borrow the strings and free only what
 * we allocate (the RPC frees the list after packing it).
 */
static void _gps_factors_obj_free(void *x)
{
	priority_factors_object_t *obj = x;

	if (!obj)
		return;
	slurm_destroy_priority_factors(obj->prio_factors);
	xfree(obj);
}
#endif

extern list_t *gps_factors_list_create(void)
{
#if GPS_SLURM_AT_LEAST(23, 11)
	return list_create(_gps_factors_obj_free);
#else
	return list_create(slurm_destroy_priority_factors_object);
#endif
}

/*
 * One sprio row.  direct_prio > 0: an admin-set priority (no factors).
 * Otherwise the factors; sprio adds (site - NICE_OFFSET) and subtracts
 * (nice - NICE_OFFSET), so both are NICE_OFFSET.
 */
extern void gps_factors_append(list_t *ret_list, job_record_t *job_ptr,
			       char *partition, double direct_prio,
			       double qos, double fairshare, double age)
{
	priority_factors_object_t *obj = xmalloc(sizeof(*obj));

#if GPS_SLURM_AT_LEAST(26, 5)
	obj->step_id = job_ptr->step_id;	/* job id and sluid */
#else
	obj->job_id = job_ptr->job_id;
#endif
	obj->partition = partition;
	obj->user_id = job_ptr->user_id;
#if GPS_SLURM_AT_LEAST(23, 11)
	obj->account = job_ptr->account;
	obj->qos = job_ptr->qos_ptr ? job_ptr->qos_ptr->name : NULL;
	if (direct_prio > 0) {
		obj->direct_prio = direct_prio;
	} else {
		obj->prio_factors = xmalloc(sizeof(*obj->prio_factors));
		obj->prio_factors->priority_site = NICE_OFFSET;
		obj->prio_factors->nice = NICE_OFFSET;
		obj->prio_factors->priority_qos = qos;
		obj->prio_factors->priority_fs = fairshare;
		obj->prio_factors->priority_age = age;
	}
#else
	obj->priority_site = NICE_OFFSET;
	obj->nice = NICE_OFFSET;
	if (direct_prio > 0) {
		obj->direct_prio = direct_prio;
	} else {
		obj->priority_qos = qos;
		obj->priority_fs = fairshare;
		obj->priority_age = age;
	}
#endif
	list_append(ret_list, obj);
}

/*
 * priority/basic's job end duty (the run seconds a job did not use go
 * back).  Since 24.11 also the QOS's per-account and per-user usage
 * (acct_policy_get_{acct,user}_used_limits).  Caller holds the
 * assoc_mgr assoc and QOS write locks.
 */
extern void gps_qos_return_run_secs(job_record_t *job_ptr,
				    slurmdb_qos_rec_t *qos_ptr,
				    const uint64_t *unused, int cnt)
{
#if GPS_SLURM_AT_LEAST(24, 11)
	slurmdb_used_limits_t *acct = NULL, *user;
	int i;

	if (job_ptr->assoc_ptr)
		acct = acct_policy_get_acct_used_limits(
			&qos_ptr->usage->acct_limit_list,
			job_ptr->assoc_ptr->acct);
	user = acct_policy_get_user_used_limits(
		&qos_ptr->usage->user_limit_list, job_ptr->user_id);
	for (i = 0; i < cnt; i++) {
		if (acct)
			acct->tres_run_secs[i] -=
				MIN(unused[i], acct->tres_run_secs[i]);
		if (user)
			user->tres_run_secs[i] -=
				MIN(unused[i], user->tres_run_secs[i]);
	}
#endif
}

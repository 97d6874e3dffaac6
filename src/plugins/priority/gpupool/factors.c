/*
 * factors.c - sprio's view of priority/gpupool: a job's priority split into
 * three factors that add up to it: the tier (QOS column), the pool's
 * fairshare standing (FAIRSHARE) and the order within tier and pool (AGE).
 * A job gpupool holds shows the factors it will have; a job held by its
 * user or an admin, or waiting for its begin time, shows nothing, as with
 * priority/multifactor.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "gpupool_hold.h"
#include "priority_gpupool.h"

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

/*
 * PrivateData=jobs: is `job_ptr` hidden from `uid` (not its owner, an
 * operator, its account's coordinator or, with MCS, of its label)?  As
 * priority/multifactor, so sprio shows no more than squeue would.
 */
static bool _private_from(job_record_t *job_ptr, uid_t uid)
{
	if (!(slurm_conf.private_data & PRIVATE_DATA_JOBS) ||
	    (job_ptr->user_id == uid) || validate_operator(uid))
		return false;
	if (slurm_mcs_get_privatedata() == 0)
		return !gps_is_user_acct_coord(uid, job_ptr->account);
	if (slurm_mcs_get_privatedata() == 1)
		return mcs_g_check_mcs_label(uid, job_ptr->mcs_label, false) !=
		       0;
	return false;
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
			ours = gps_hold_is_ours(job_ptr);
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
			if (_private_from(job_ptr, uid))
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
extern list_t *gpp_factors_list(const gps_factors_filter_t *filter, uid_t uid)
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

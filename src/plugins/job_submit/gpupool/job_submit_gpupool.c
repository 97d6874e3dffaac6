/*
 * job_submit/gpupool - keeps a user's or admin's hold on a job that
 * priority/gpupool holds for quota.
 *
 * gpupool holds a job by giving it priority 0.  Slurm ignores `scontrol
 * hold` (and a user's own hold) on a job whose priority is already 0, so
 * without help the request would leave no trace and gpupool would release
 * the job once quota frees.  This plugin sees the request first
 * (job_modify runs before _update_job applies it) and makes gpupool's hold
 * the user's or the admin's (direct_set_prio, WAIT_HELD_USER/WAIT_HELD),
 * which gpupool never undoes; _update_job then finds the job already at
 * the priority asked.  The job never leaves priority 0 on the way: were
 * the rest of the update refused after this (a later job_submit plugin,
 * bad features, a field too long), a runnable job could start over quota
 * before the next pass; instead it stays held, as the request asked.
 *
 * It also keeps gpupool's cap on a job array record's throttle: Slurm sets
 * ArrayTaskThrottle from the request before it calls this plugin and, if
 * a later check refuses the rest of the update, returns with no priority
 * hook, so the scheduler could start every task that fits before a pass
 * caps the throttle again.  Such a record waits for that pass instead.
 *
 * JobSubmitPlugins=gpupool in slurm.conf; priority/gpupool warns at start
 * without it.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "gpupool_compat.h"
#include "src/slurmctld/acct_policy.h"
#include "gpupool.h"
#include "gpupool_hold.h"

const char plugin_name[] = "gpupool job submit: user and admin holds";
const char plugin_type[] = "job_submit/gpupool";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

extern int init(void)
{
	return SLURM_SUCCESS;
}

extern void fini(void)
{
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
		      char **err_msg)
{
	return SLURM_SUCCESS;
}

/*
 * A throttle change of an array record gpupool caps (the core says whether
 * it is one): hold it until the next pass, which the changed
 * last_job_update brings at once.  The pass finds the throttle changed
 * since gpupool set it, keeps it as the user's and caps it again.
 */
static void _keep_array_cap(job_desc_msg_t *job_desc, job_record_t *job_ptr)
{
	gp_pending_result_t r;

	if (!job_desc->array_inx || !job_ptr->array_recs ||
	    !IS_JOB_PENDING(job_ptr) || (job_ptr->priority == 0))
		return;
	if (gp_engine_pending_result(gp_shared_engine(), job_ptr->job_id,
				     &r) != GP_OK)
		return;	/* not gpupool's (or no pass yet: held already) */
	if (!gp_hold_until_pass(&r, GP_PLACE_THROTTLE))
		return;
	info("gpupool: JobId=%u ArrayTaskThrottle set to %u: the array waits for gpupool's next pass to cap it again",
	     job_ptr->job_id, job_ptr->array_recs->max_run_tasks);
	gps_hold_prune();	/* this plugin's list of holds stays short */
	(void) gps_hold(job_ptr, r.reason);
	last_job_update = time(NULL);
}

extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
		      uint32_t submit_uid GPS_JOB_MODIFY_EXTRA_PARAMS)
{
	bool operator, admin;

	if (job_ptr)
		_keep_array_cap(job_desc, job_ptr);
	/* A hold request is priority 0 (scontrol hold/uhold, sbatch -H). */
	if (!job_ptr || (job_desc->priority != 0) || !gps_hold_is_ours(job_ptr))
		return SLURM_SUCCESS;
	/*
	 * _update_job checks who may update the job only after this plugin:
	 * anyone else is left to it to refuse, with the job as it is.
	 */
	operator = validate_operator(submit_uid);
	if ((job_ptr->user_id != submit_uid) && !operator &&
	    !GPS_IS_ACCT_COORD(submit_uid, job_ptr->account))
		return SLURM_SUCCESS;
	/* Slurm's rule (_update_job): an operator's hold is an admin's. */
	admin = operator && (job_desc->alloc_sid != ALLOC_SID_USER_HOLD);
	info("gpupool: hold requested by uid %u on JobId=%u, which gpupool holds for quota (%s): the hold is %s now",
	     submit_uid, job_ptr->job_id, job_ptr->state_desc,
	     admin ? "the admin's" : "the user's");
	gps_hold_give(job_ptr, admin ? WAIT_HELD : WAIT_HELD_USER);
	/* As Slurm's _hold_job_rec: no accrue time while held. */
	if (job_ptr->details && (job_ptr->details->begin_time < time(NULL)))
		job_ptr->details->begin_time = 0;
	acct_policy_remove_accrue_time(job_ptr, false);
	return SLURM_SUCCESS;
}

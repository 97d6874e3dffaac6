/*
 * job_submit/gpupool - keeps a user's or admin's hold on a job that
 * priority/gpupool holds for quota.
 *
 * gpupool holds a job by giving it priority 0.  Slurm 22.05 ignores
 * `scontrol hold` (and a user's own hold) on a job whose priority is
 * already 0, so without help the request would leave no trace and gpupool
 * would release the job once quota frees.  This plugin sees the request
 * first (job_modify runs before _update_job applies it): it lifts gpupool's
 * hold, so that Slurm's own hold code then holds the job as the user's or
 * the admin's (direct_set_prio, WAIT_HELD/WAIT_HELD_USER), which gpupool
 * never undoes.  Optional: JobSubmitPlugins=gpupool in slurm.conf.
 */
#include "config.h"

#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "gpupool_compat.h"
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

extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
		      uint32_t submit_uid GPS_JOB_MODIFY_EXTRA_PARAMS)
{
	/* A hold request is priority 0 (scontrol hold/uhold, sbatch -H). */
	if (!job_ptr || (job_desc->priority != 0) || !gps_hold_is_ours(job_ptr))
		return SLURM_SUCCESS;
	info("gpupool: hold requested by uid %u on JobId=%u, which gpupool holds for quota (%s): the hold is theirs now",
	     submit_uid, job_ptr->job_id, job_ptr->state_desc);
	gps_hold_release(job_ptr);
	/* Any priority above the requested 0 lets _update_job hold it. */
	job_ptr->priority = 1;
	return SLURM_SUCCESS;
}

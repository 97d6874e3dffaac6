/*
 * preempt_record.c - records of the preemptions preempt/gpupool carries
 * out, which outlive slurmctld's log: the verdict behind each (kept when
 * preempt_p_preemptable allows it), a line in slurmctld's log, a line of
 * gpupool's event log and the job's SystemComment.
 *
 * Locks: the callers hold the job write lock and no assoc_mgr lock.
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "src/common/log.h"
#include "src/common/xstring.h"

#include "gpupool_slurm.h"
#include "preempt_gpupool.h"

/*
 * Last allowed verdict per victim, so the preemption that follows can be
 * logged with its preemptor and rule (Slurm asks the victim's grace time
 * exactly once, when it really preempts it).
 */
#define VCACHE_SIZE 4096
typedef struct {
	uint32_t victim_id;
	uint32_t preemptor_id;
	uint32_t victim_gpus;
	gp_verdict_t verdict;
} vcache_t;
static vcache_t vcache[VCACHE_SIZE];
static pthread_mutex_t vcache_mutex = PTHREAD_MUTEX_INITIALIZER;

extern void gpe_record_verdict(uint32_t victim_id, uint32_t preemptor_id,
			       uint32_t victim_gpus, const gp_verdict_t *v)
{
	vcache_t *c = &vcache[victim_id % VCACHE_SIZE];

	slurm_mutex_lock(&vcache_mutex);
	c->victim_id = victim_id;
	c->preemptor_id = preemptor_id;
	c->victim_gpus = victim_gpus;
	c->verdict = *v;
	slurm_mutex_unlock(&vcache_mutex);
}

/*
 * Send the job's SystemComment to slurmdbd, for the job's newest record:
 * the run being preempted.  As Slurm's burst buffer plugins do
 * (bb_update_system_comment): JOBCOND_FLAG_NO_WAIT queues it for
 * slurmctld's slurmdbd agent, so the job write lock never waits on
 * slurmdbd, and the agent sends it before the end record of the run.
 * Slurm 22.05 sends no SystemComment with that end record (nor with the
 * next run's start), which therefore leaves this one in place.
 */
static void _store_system_comment(job_record_t *job_ptr)
{
	slurmdb_job_cond_t job_cond;
	slurmdb_job_rec_t job_rec;
	slurm_selected_step_t step;
	list_t *ret_list;

	if (!job_ptr->details || !slurm_conf.cluster_name)
		return;
	memset(&job_cond, 0, sizeof(job_cond));
	memset(&job_rec, 0, sizeof(job_rec));
	memset(&step, 0, sizeof(step));
	step.array_task_id = NO_VAL;
	step.het_job_offset = NO_VAL;
	step.step_id.job_id = job_ptr->job_id;
	step.step_id.step_id = NO_VAL;
	step.step_id.step_het_comp = NO_VAL;
	job_cond.step_list = list_create(NULL);
	list_append(job_cond.step_list, &step);
	job_cond.cluster_list = list_create(NULL);
	list_append(job_cond.cluster_list, slurm_conf.cluster_name);
	job_cond.flags = JOBCOND_FLAG_NO_WAIT | JOBCOND_FLAG_NO_DEFAULT_USAGE;
	/* Any scheduling flags: 0 would match only records with none. */
	job_cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;
	job_cond.usage_start = job_ptr->details->submit_time;
	job_rec.derived_ec = NO_VAL;	/* change nothing but the comment */
	job_rec.system_comment = job_ptr->system_comment;
	ret_list = acct_storage_g_modify_job(acct_db_conn,
					     slurm_conf.slurm_user_id,
					     &job_cond, &job_rec);
	FREE_NULL_LIST(ret_list);
	FREE_NULL_LIST(job_cond.step_list);
	FREE_NULL_LIST(job_cond.cluster_list);
}

/*
 * Records that outlive slurmctld's log: a line of gpupool's event log,
 * queued in memory (priority/gpupool's agent writes it with no lock held),
 * and the job's SystemComment, which slurmdbd keeps with the record of the
 * run preempted (sacct -D -o SystemComment).  The job's name goes only
 * into the JSON line, as a string value.  Caller holds the job write lock
 * and no assoc_mgr lock.
 */
static void _record(job_record_t *job_ptr, const vcache_t *c, uint16_t mode,
		    uint32_t grace)
{
	gp_engine_t *e = gp_shared_engine();
	job_record_t *preemptor = find_job_record(c->preemptor_id);
	gp_preemption_t p;
	gp_tier_info_t vt, pt;
	char vqos[GPS_QOS_LEN], pqos[GPS_QOS_LEN];
	char comment[GP_SYSTEM_COMMENT_MAX + 1];
	int rc;

	memset(&p, 0, sizeof(p));
	p.time = (int64_t) time(NULL);
	p.victim_job_id = job_ptr->job_id;
	p.victim_name = job_ptr->name;
	p.victim_user_id = job_ptr->user_id;
	p.victim_pool = c->verdict.victim_pool;
	if (gp_engine_tier_of_qos(e, gps_job_qos(job_ptr, true, vqos, GPS_QOS_LEN), &vt) == GP_OK)
		p.victim_tier = vt.name;
	p.victim_gpus = c->victim_gpus;
	p.victim_start_time = (int64_t) job_ptr->start_time;
	p.victim_pool_used = c->verdict.victim_pool_used;
	p.victim_pool_quota = c->verdict.victim_pool_quota;
	p.preemptor_job_id = c->preemptor_id;
	p.preemptor_pool = c->verdict.preemptor_pool;
	if (preemptor &&
	    (gp_engine_tier_of_qos(e, gps_job_qos(preemptor, true, pqos, GPS_QOS_LEN), &pt) ==
	     GP_OK))
		p.preemptor_tier = pt.name;
	p.rule = c->verdict.rule;
	p.mode = (mode == PREEMPT_MODE_REQUEUE) ? GP_MODE_REQUEUE :
		 (mode == PREEMPT_MODE_CANCEL)  ? GP_MODE_CANCEL :
		 (mode == PREEMPT_MODE_SUSPEND) ? GP_MODE_SUSPEND :
						  GP_MODE_DEFAULT;
	p.grace_time = grace;
	p.why = c->verdict.why;

	if ((rc = gp_engine_note_preemption(e, &p)) != GP_OK)
		error("gpupool: JobId=%u: preemption not queued for the event log: %s",
		      job_ptr->job_id, gp_status_str(rc));
	gpe_preemptor_note(preemptor, job_ptr);
	rc = gp_preemption_comment(job_ptr->system_comment, &p, comment,
				   sizeof(comment));
	if (rc != GP_OK) {
		error("gpupool: JobId=%u: no SystemComment: %s",
		      job_ptr->job_id, gp_status_str(rc));
		return;
	}
	xfree(job_ptr->system_comment);
	job_ptr->system_comment = xstrdup(comment);
	_store_system_comment(job_ptr);
}

extern void gpe_record_preemption(job_record_t *job_ptr, uint16_t mode,
				  uint32_t grace)
{
	vcache_t c;
	const char *what = (mode == PREEMPT_MODE_REQUEUE) ? "requeue" :
			   (mode == PREEMPT_MODE_CANCEL)  ? "cancel" :
			   (mode == PREEMPT_MODE_SUSPEND) ? "suspend" :
							    "preempt";

	slurm_mutex_lock(&vcache_mutex);
	c = vcache[job_ptr->job_id % VCACHE_SIZE];
	slurm_mutex_unlock(&vcache_mutex);
	if (c.victim_id != job_ptr->job_id) {
		info("gpupool: preempt victim JobId=%u (%s, grace %us): no verdict on record",
		     job_ptr->job_id, what, grace);
		return;
	}
	info("gpupool: preempt victim JobId=%u (pool %s, used %u/%u -> %u) for JobId=%u (pool %s) rule %s: %s [%s, grace %us]",
	     job_ptr->job_id, c.verdict.victim_pool,
	     c.verdict.victim_pool_used, c.verdict.victim_pool_quota,
	     (c.verdict.victim_pool_used > c.victim_gpus) ?
		     c.verdict.victim_pool_used - c.victim_gpus : 0,
	     c.preemptor_id, c.verdict.preemptor_pool,
	     gp_rule_name(c.verdict.rule), c.verdict.why, what, grace);
	_record(job_ptr, &c, mode, grace);
}

/*
 * preempt_gpupool.h - what the files of preempt/gpupool give each other:
 * preempt_gpupool.c is the plugin API (who may preempt whom, victim order,
 * how), preempt_record.c records the preemptions carried out,
 * preemptor_order.c puts a job that preempted first in its tier at once.
 */
#ifndef PREEMPT_GPUPOOL_H
#define PREEMPT_GPUPOOL_H

#include <stdint.h>

#include "gpupool_compat.h"

#include "gpupool.h"

/*
 * Keep the verdict that allowed preempting `victim_id` for
 * `preemptor_id`, so that its preemption can be recorded (Slurm asks the
 * victim's grace time exactly once, when it really preempts it).
 */
extern void gpe_record_verdict(uint32_t victim_id, uint32_t preemptor_id,
			       uint32_t victim_gpus, const gp_verdict_t *v);

/*
 * The job is being preempted (`mode`: PREEMPT_MODE_*, after `grace`
 * seconds): log it with its verdict, queue a line of the event log, append
 * its SystemComment and send that to slurmdbd.  Job write lock held, no
 * assoc_mgr lock.
 */
extern void gpe_record_preemption(job_record_t *job_ptr, uint16_t mode,
				  uint32_t grace);

/*
 * `preemptor` preempted `victim`: until it starts (or is requeued) it sorts
 * before the jobs of its tier that did not, by the first node its victims
 * free.  Job write lock held.
 */
extern void gpe_preemptor_note(job_record_t *preemptor, job_record_t *victim);

/*
 * Whether pending job `a` sorts before `b` of the same tier because it
 * preempted (R1.1).  Job read or write lock held.
 */
extern bool gpe_preemptor_before(job_record_t *a, job_record_t *b);

/* Whether the pending job preempted and waits to start (R1.1).  Same locks. */
extern bool gpe_preemptor_waits(job_record_t *job_ptr);

#endif /* PREEMPT_GPUPOOL_H */

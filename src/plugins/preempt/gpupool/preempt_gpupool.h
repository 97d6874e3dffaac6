/*
 * preempt_gpupool.h - what the files of preempt/gpupool give each other:
 * preempt_gpupool.c is the plugin API (who may preempt whom, victim order,
 * how), preempt_record.c records the preemptions carried out.
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

#endif /* PREEMPT_GPUPOOL_H */

/*
 * preemptor_order.c - a job that preempted goes first in its tier at once
 * (R1.1), in the job queue's sort, not from gpupool's next pass on.
 *
 * Slurm sorts its job queue (sort_job_queue2, main scheduler and backfill)
 * by preempt_p_job_preempt_check() before priorities.  Between a
 * preemption and the next pass the preemptor's priority is still its old
 * one, so a job ahead of it could take the GPUs it freed (seen on 26.05,
 * where backfill preempts and the main scheduler runs 0.2 s later).  So
 * preempt/gpupool notes each preemptor and the first node its victims free,
 * and the sort puts it before the jobs of its tier that did not preempt,
 * and preemptors among themselves by the second they first preempted, then
 * by that node: Slurm gives a one-node job the first node with room, so
 * the preemptors of one cycle each land on the node they freed, and a
 * later cycle's preemptors cannot take the GPUs an earlier one freed (the
 * node alone let them: 4-GPU preemptors of the first cycle waited 8 s on
 * 22.05 for GPUs the second cycle's took).
 *
 * Locks: notes are written with the job write lock held and read under the
 * job read or write lock, so no reader runs during a write.
 */
#include "config.h"

#include "src/common/bitstring.h"

#include "preempt_gpupool.h"

/* A preemptor's note is kept until a later one falls on its slot. */
#define PREEMPTOR_SLOTS 4096
typedef struct {
	uint32_t job_id;	/* 0: free */
	uint32_t restart_cnt;	/* the run it preempted for (a requeue ends it) */
	uint32_t node;		/* the first node its victims free */
	time_t when;		/* the second it first preempted (this run) */
} preemptor_note_t;
static preemptor_note_t notes[PREEMPTOR_SLOTS];

extern void gpe_preemptor_note(job_record_t *preemptor, job_record_t *victim)
{
	preemptor_note_t *n;
	int64_t first;

	if (!preemptor || !victim || !victim->node_bitmap)
		return;
	first = bit_ffs(victim->node_bitmap);
	if (first < 0)
		return;
	n = &notes[preemptor->job_id % PREEMPTOR_SLOTS];
	if ((n->job_id == preemptor->job_id) &&
	    (n->restart_cnt == preemptor->restart_cnt)) {
		if ((uint32_t) first < n->node)
			n->node = (uint32_t) first;	/* several victims */
		return;
	}
	n->job_id = preemptor->job_id;
	n->restart_cnt = preemptor->restart_cnt;
	n->node = (uint32_t) first;
	n->when = time(NULL);
}

/* The pending job's note; NULL: it did not preempt (for this run). */
static const preemptor_note_t *_note_of(job_record_t *job_ptr)
{
	const preemptor_note_t *n = &notes[job_ptr->job_id % PREEMPTOR_SLOTS];

	if ((n->job_id != job_ptr->job_id) ||
	    (n->restart_cnt != job_ptr->restart_cnt) ||
	    !IS_JOB_PENDING(job_ptr))
		return NULL;
	return n;
}

extern bool gpe_preemptor_waits(job_record_t *job_ptr)
{
	return _note_of(job_ptr) != NULL;
}

extern bool gpe_preemptor_before(job_record_t *a, job_record_t *b)
{
	const preemptor_note_t *na = _note_of(a), *nb;

	if (!na)
		return false;
	nb = _note_of(b);
	if (!nb)
		return true;
	if (na->when != nb->when)
		return na->when < nb->when;
	return na->node < nb->node;
}

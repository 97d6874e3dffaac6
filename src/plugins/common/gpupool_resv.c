/*
 * gpupool_resv.c - what active reservations keep from jobs outside them,
 * for the core's free GPUs and CPUs per node:
 * - nodes a reservation holds whole (RESV_CTLD_FULL_NODE): Slurm starts no
 *   outside job there (job_test_resv);
 * - of a reservation of some cores (CoreCnt=, TRES=cpu=) or, from 23.11,
 *   some GPUs (TRES=gres/gpu=), those no running job holds: cons_tres takes
 *   every reserved core and GPU off an outside job's choice (exc_cores,
 *   gres_list_exc), so counting them free made a job within its quota
 *   wait on a node it could not have, and preempt nothing.
 * Reservations may overlap (Flags=OVERLAP): cores and GPUs are ORed, as
 * Slurm does, and counted once.  A reservation with Flags=TIME_FLOAT
 * never starts (its start is always the same offset from now).  One that
 * starts before a job would end also keeps its nodes from it in Slurm;
 * gpupool reads only active ones (a known gap).  A job inside a
 * reservation is bound (its nodes are given), planned for by no one.
 * Caller holds the job read and node read locks.
 */
#include "config.h"

#include <string.h>

#include "src/common/bitstring.h"
#include "src/common/job_resources.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"

#include "gpupool_slurm.h"

static bool _active(slurmctld_resv_t *resv, time_t now)
{
	return resv->node_bitmap && !(resv->flags & RESERVE_FLAG_TIME_FLOAT) &&
	       (now >= resv->start_time) && (now < resv->end_time);
}

static bool _partial(slurmctld_resv_t *resv)
{
	return !(resv->ctld_flags & RESV_CTLD_FULL_NODE);
}

static void _alloc(gps_resv_held_t *h)
{
	if (h->whole)
		return;
	h->whole = xcalloc(node_record_count, sizeof(bool));
	h->cpus = xcalloc(node_record_count, sizeof(uint32_t));
	h->gpus = xcalloc(node_record_count, sizeof(uint32_t));
}

/*
 * Clear a running job's cores from the cluster's core bitmap `cores`: its
 * core bitmap lists its nodes' cores one node after another
 * (get_job_resources_offset), the cluster's by cr_get_coremap_offset().
 * (list_for_each: it nests where an iterator may not, 25.11.)
 */
static int _clear_job_cores(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	bitstr_t *cores = arg;
	job_resources_t *res = job_ptr->job_resrcs;
	int n, first, last, i = 0;
	int32_t size = bit_size(cores);

	/* A completing job holds its cores until its epilog is done. */
	if (!(IS_JOB_RUNNING(job_ptr) || IS_JOB_COMPLETING(job_ptr)) || !res ||
	    !res->node_bitmap || !res->core_bitmap ||
	    !res->sock_core_rep_count ||
	    ((first = bit_ffs(res->node_bitmap)) < 0))
		return 0;
	last = MIN(bit_fls(res->node_bitmap), node_record_count - 1);
	for (n = first; n <= last; n++) {
		uint32_t from, to, c;
		int off, next, job_bits = bit_size(res->core_bitmap);
		if (!bit_test(res->node_bitmap, n))
			continue;
		off = get_job_resources_offset(res, i, 0, 0);
		/* The job's cores there: up to its next node's first. */
		next = (i + 1 < (int) res->nhosts) ?
			get_job_resources_offset(res, i + 1, 0, 0) : job_bits;
		i++;
		if ((off < 0) || (next < off))
			continue;
		from = cr_get_coremap_offset(n);
		to = MIN(cr_get_coremap_offset(n + 1), (uint32_t) size);
		for (c = 0; (from + c < to) && (off + (int) c < MIN(next, job_bits));
		     c++)
			if (bit_test(res->core_bitmap, off + c))
				bit_clear(cores, from + c);
	}
	return 0;
}

/* The reserved cores left in `cores`, as CPUs, on each node. */
static void _count_cpus(bitstr_t *cores, gps_resv_held_t *h)
{
	int32_t size = bit_size(cores);
	node_record_t *node_ptr;
	int n;

	for (n = 0; (node_ptr = next_node(&n)); n++) {
		uint32_t from = cr_get_coremap_offset(n);
		uint32_t to = MIN(cr_get_coremap_offset(n + 1), (uint32_t) size);
		if (from < to)
			h->cpus[n] = (uint32_t) bit_set_count_range(cores, from,
								    to) *
				     MAX(node_ptr->tpc, 1);
	}
}

extern bool gps_resv_held(time_t now, const gps_tres_t *t,
			  gps_resv_held_t *h)
{
	list_itr_t *it;
	slurmctld_resv_t *resv;
	bitstr_t *cores = NULL, **gpus = NULL;
	int n, bits;

	memset(h, 0, sizeof(*h));
	if (!resv_list || !list_count(resv_list) || (node_record_count < 1))
		return false;
	it = list_iterator_create(resv_list);
	while ((resv = list_next(it))) {
		if (!_active(resv, now))
			continue;
		_alloc(h);
		bits = MIN(bit_size(resv->node_bitmap), node_record_count);
		if (!_partial(resv)) {
			for (n = 0; n < bits; n++)
				if (bit_test(resv->node_bitmap, n))
					h->whole[n] = true;
			continue;
		}
		if (resv->core_bitmap &&
		    (cr_get_coremap_offset(node_record_count) > 0)) {
			if (!cores)
				cores = bit_alloc(cr_get_coremap_offset(
					node_record_count));
			if (bit_size(cores) == bit_size(resv->core_bitmap))
				bit_or(cores, resv->core_bitmap);
		}
		/* Its GPUs (none before 23.11). */
		if (!GPS_RESV_GRES(resv))
			continue;
		if (!gpus)
			gpus = xcalloc(node_record_count, sizeof(bitstr_t *));
		for (n = 0; n < bits; n++) {
			node_record_t *node_ptr = node_record_table_ptr[n];
			if (node_ptr && bit_test(resv->node_bitmap, n))
				gps_node_resv_gpu_bits(node_ptr, n, t,
						       GPS_RESV_GRES(resv),
						       &gpus[n]);
		}
	}
	list_iterator_destroy(it);
	if (cores) {
		/* Reserved cores a job holds (its own, FLEX, IGNORE_JOBS)
		 * are held, not reserved and free. */
		if (job_list)
			(void) list_for_each(job_list, _clear_job_cores, cores);
		_count_cpus(cores, h);
		FREE_NULL_BITMAP(cores);
	}
	if (gpus) {
		for (n = 0; n < node_record_count; n++) {
			if (!gpus[n])
				continue;
			if (node_record_table_ptr[n])
				h->gpus[n] = gps_node_resv_gpus_unheld(
					node_record_table_ptr[n], t, gpus[n]);
			FREE_NULL_BITMAP(gpus[n]);
		}
		xfree(gpus);
	}
	return h->whole != NULL;
}

extern void gps_resv_held_free(gps_resv_held_t *h)
{
	xfree(h->whole);
	xfree(h->cpus);
	xfree(h->gpus);
}

/*
 * gpupool_resv.c - what active reservations keep from jobs outside them,
 * for the core's free GPUs and CPUs per node:
 * - nodes a reservation holds whole (RESV_CTLD_FULL_NODE): Slurm starts no
 *   outside job there (job_test_resv);
 * - of a reservation of some cores (CoreCnt=, TRES=cpu=) or, from 23.11,
 *   some GPUs (TRES=gres/gpu=), those no job of it uses: cons_tres takes
 *   every reserved core and GPU off an outside job's choice (exc_cores,
 *   gres_list_exc), so counting them free made a job within its quota
 *   wait on a node it could not have, and preempt nothing.
 * A job inside a reservation is bound (its nodes are given), planned for
 * by no one.  Caller holds the job read and node read locks.
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
	return resv->node_bitmap && (now >= resv->start_time) &&
	       (now < resv->end_time);
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

static uint32_t _add(uint32_t a, uint64_t b)
{
	return ((uint64_t) a + b > UINT32_MAX) ? UINT32_MAX :
						   (uint32_t) (a + b);
}

/*
 * The reservation's cores, as CPUs, on each of its nodes: its core bitmap
 * is the cluster's, each node's cores from cr_get_coremap_offset() (its
 * core_resrcs may be built only at the next state save, 22.05).
 */
static void _reserved_cpus(slurmctld_resv_t *resv, gps_resv_held_t *h)
{
	int n, bits;
	int32_t size;

	if (!resv->core_bitmap)
		return;
	size = bit_size(resv->core_bitmap);
	bits = MIN(bit_size(resv->node_bitmap), node_record_count);
	for (n = 0; n < bits; n++) {
		node_record_t *node_ptr = node_record_table_ptr[n];
		uint32_t from, to;
		if (!node_ptr || !bit_test(resv->node_bitmap, n))
			continue;
		from = cr_get_coremap_offset(n);
		to = MIN(cr_get_coremap_offset(n + 1), (uint32_t) size);
		if (from >= to)
			continue;
		h->cpus[n] = _add(h->cpus[n],
				  (uint64_t) bit_set_count_range(
					  resv->core_bitmap, from, to) *
				  MAX(node_ptr->tpc, 1));
	}
}

/*
 * A running job of a partial reservation runs on its cores: those are
 * reserved, not free, once.  (list_for_each: it nests where an iterator
 * may not, 25.11.)
 */
static int _used_cpus(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	gps_resv_held_t *h = arg;
	job_resources_t *res = job_ptr->job_resrcs;
	int n, bits, i = 0;

	if (!IS_JOB_RUNNING(job_ptr) || !job_ptr->resv_ptr ||
	    !_partial(job_ptr->resv_ptr) || !res || !res->cpus ||
	    !res->node_bitmap)
		return 0;
	bits = MIN(bit_size(res->node_bitmap), node_record_count);
	for (n = 0; (n < bits) && (i < (int) res->nhosts); n++) {
		if (!bit_test(res->node_bitmap, n))
			continue;
		h->cpus[n] -= MIN(h->cpus[n], res->cpus[i]);
		i++;
	}
	return 0;
}

extern bool gps_resv_held(time_t now, const gps_tres_t *t,
			  gps_resv_held_t *h)
{
	list_itr_t *it;
	slurmctld_resv_t *resv;
	bool partial = false;
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
		partial = true;
		_reserved_cpus(resv, h);
		/* Its GPUs no job holds (none before 23.11). */
		if (!GPS_RESV_GRES(resv))
			continue;
		for (n = 0; n < bits; n++) {
			node_record_t *node_ptr = node_record_table_ptr[n];
			if (node_ptr && bit_test(resv->node_bitmap, n))
				h->gpus[n] = _add(h->gpus[n],
						  gps_node_resv_gpus(
							  node_ptr, n, t,
							  GPS_RESV_GRES(resv)));
		}
	}
	list_iterator_destroy(it);
	if (partial && job_list)
		(void) list_for_each(job_list, _used_cpus, h);
	return h->whole != NULL;
}

extern void gps_resv_held_free(gps_resv_held_t *h)
{
	xfree(h->whole);
	xfree(h->cpus);
	xfree(h->gpus);
}

/*
 * gpupool_resv.c - what reservations keep from jobs outside them, for the
 * core's free GPUs and CPUs per node, as Slurm's job_test_resv takes them
 * for such a job: every reservation that has started, or starts before
 * the job would end (its time limit: gp_job_t's run_limit), is in force:
 * - nodes a reservation holds whole (RESV_CTLD_FULL_NODE): Slurm starts no
 *   outside job there;
 * - of a reservation of some cores (CoreCnt=, TRES=cpu=) or, from 23.11,
 *   some GPUs (TRES=gres/gpu=), those no running job holds: cons_tres takes
 *   every reserved core and GPU off an outside job's choice (exc_cores,
 *   gres_list_exc), so counting them free made a job within its quota
 *   wait on a node it could not have, and preempt nothing.
 * Active ones go to the node's usage; those not started yet (the nearest
 * GPS_RESV_AHEAD start times, within a year: no job runs longer) to the
 * core as what they hold more from their start on
 * (gp_snapshot_add_node_reserved_ahead), so that a preemptor that would
 * run past a maintenance window's start is not planned onto its nodes.
 * Reserved cores and GPUs a running job holds (its reservation's own job,
 * or FLEX, IGNORE_JOBS, or a job on cores reserved from a later start) go
 * back to the reservation when it is preempted, not to a preemptor
 * outside it: each job's are given per node and start time
 * (gps_resv_job_held, gp_snapshot_add_job_reserved), so that the plan
 * does not count them freed (before, it took such a job, the preemptor
 * still did not fit, and the job was lost for nothing).
 * Reservations may overlap (Flags=OVERLAP): cores and GPUs are ORed, as
 * Slurm does, and counted once.  A reservation with Flags=TIME_FLOAT
 * starts its offset from now, always.  A job inside a reservation is
 * bound (its nodes are given), planned for by no one.
 * Caller holds the job read and node read locks.
 */
#include "config.h"

#include <string.h>

#include "src/common/bitstring.h"
#include "src/common/job_resources.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"

#ifndef YEAR_SECONDS
#define YEAR_SECONDS (365 * 24 * 60 * 60)
#endif

#include "gpupool_slurm.h"

/* Start times of reservations not started yet read, nearest first. */
#define GPS_RESV_AHEAD 16

typedef struct {
	slurmctld_resv_t *resv;
	time_t start;  /* now for one that has started */
} resv_at_t;

/* Reservations in force by some time, ORed. */
typedef struct {
	bool *whole;
	bitstr_t *cores;  /* the cluster's core bitmap */
	bitstr_t **gpus;  /* per node index (23.11 and later) */
} resv_union_t;

/* The reserved cores and GPUs of the union in force by `from` (0: now). */
struct gps_resv_layer {
	time_t from;
	bitstr_t *cores;
	bitstr_t **gpus;
};

/*
 * Its start and end as job_test_resv takes them for a job outside it
 * (_get_rel_start_end): a floating one starts its offset from now; others
 * at start_time_first (a recurring one's current occurrence; slurmctld
 * moves one that ended to its next, gpupool skips it until then).
 * Slurm adds a reservation's boot_time to a job that needs a reboot (node
 * features plugins): not read.
 */
static void _start_end(slurmctld_resv_t *resv, time_t now, time_t *start,
		       time_t *end)
{
	if (resv->flags & RESERVE_FLAG_TIME_FLOAT) {
		*start = resv->start_time + now;
		if (resv->duration == INFINITE)
			*end = *start + YEAR_SECONDS;
		else if (resv->duration && (resv->duration != NO_VAL))
			*end = *start + (time_t) resv->duration * 60;
		else {
			*end = resv->end_time;
			if (*start > *end)
				*start = *end;
		}
	} else {
		*start = resv->start_time_first ? resv->start_time_first :
						  resv->start_time;
		*end = resv->end_time;
	}
}

static int _by_start(const void *a, const void *b)
{
	time_t x = ((const resv_at_t *) a)->start;
	time_t y = ((const resv_at_t *) b)->start;
	return (x < y) ? -1 : (x > y);
}

/* Its cores can be read per node (job_resrcs). */
static bool _job_cores_readable(job_resources_t *res)
{
	return res && res->node_bitmap && res->core_bitmap &&
	       res->sock_core_rep_count && (bit_ffs(res->node_bitmap) >= 0);
}

/*
 * The job's i-th node (node index n): its core bitmap lists its nodes'
 * cores one node after another (get_job_resources_offset), the cluster's
 * by cr_get_coremap_offset().  Its cores there start at *off, the node's
 * at *from in the cluster's (of `size` bits), *cnt of them side by side.
 * False where they cannot be read.
 */
static bool _job_node_span(job_resources_t *res, int i, int n, int32_t size,
			   int *off, uint32_t *from, uint32_t *cnt)
{
	int next, job_bits = bit_size(res->core_bitmap);
	uint32_t to;

	*off = get_job_resources_offset(res, i, 0, 0);
	/* The job's cores there: up to its next node's first. */
	next = (i + 1 < (int) res->nhosts) ?
		get_job_resources_offset(res, i + 1, 0, 0) : job_bits;
	if ((*off < 0) || (next < *off))
		return false;
	next = MIN(next, job_bits);
	*from = cr_get_coremap_offset(n);
	to = MIN(cr_get_coremap_offset(n + 1), (uint32_t) size);
	*cnt = (to > *from) ? MIN(to - *from, (uint32_t) (next - *off)) : 0;
	return true;
}

/*
 * Set a running job's cores in the cluster's core bitmap `held`.
 * (list_for_each: it nests where an iterator may not, 25.11.)
 */
static int _held_job_cores(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	bitstr_t *held = arg;
	job_resources_t *res = job_ptr->job_resrcs;
	int n, last, i = 0, off;
	uint32_t from, cnt, c;

	/* A completing job holds its cores until its epilog is done. */
	if (!(IS_JOB_RUNNING(job_ptr) || IS_JOB_COMPLETING(job_ptr)) ||
	    !_job_cores_readable(res))
		return 0;
	last = MIN(bit_fls(res->node_bitmap), node_record_count - 1);
	for (n = bit_ffs(res->node_bitmap); n <= last; n++) {
		if (!bit_test(res->node_bitmap, n))
			continue;
		if (!_job_node_span(res, i++, n, bit_size(held), &off, &from,
				    &cnt))
			continue;
		for (c = 0; c < cnt; c++)
			if (bit_test(res->core_bitmap, off + c))
				bit_set(held, from + c);
	}
	return 0;
}

/* Add `resv` to the union `u`. */
static void _add(resv_union_t *u, slurmctld_resv_t *resv, const gps_tres_t *t)
{
	int n, bits = MIN(bit_size(resv->node_bitmap), node_record_count);

	if (resv->ctld_flags & RESV_CTLD_FULL_NODE) {
		for (n = 0; n < bits; n++)
			if (bit_test(resv->node_bitmap, n))
				u->whole[n] = true;
		return;
	}
	if (resv->core_bitmap && (cr_get_coremap_offset(node_record_count) > 0)) {
		if (!u->cores)
			u->cores = bit_alloc(
				cr_get_coremap_offset(node_record_count));
		if (bit_size(u->cores) == bit_size(resv->core_bitmap))
			bit_or(u->cores, resv->core_bitmap);
	}
	/* Its GPUs (none before 23.11). */
	if (!GPS_RESV_GRES(resv))
		return;
	if (!u->gpus)
		u->gpus = xcalloc(node_record_count, sizeof(bitstr_t *));
	for (n = 0; n < bits; n++) {
		node_record_t *node_ptr = node_record_table_ptr[n];
		if (node_ptr && bit_test(resv->node_bitmap, n))
			gps_node_resv_gpu_bits(node_ptr, n, t,
					       GPS_RESV_GRES(resv), &u->gpus[n]);
	}
}

/*
 * What the union holds per node: whole, and the reserved cores (as CPUs)
 * and GPUs no running job holds (its own, FLEX, IGNORE_JOBS: held, not
 * reserved and free).  `*held` (the cores jobs hold) is made once.
 */
static void _count(const resv_union_t *u, const gps_tres_t *t,
		   bitstr_t **held, bool *whole, uint32_t *cpus,
		   uint32_t *gpus)
{
	node_record_t *node_ptr;
	bitstr_t *cores = NULL;
	int n;

	memcpy(whole, u->whole, node_record_count * sizeof(bool));
	memset(cpus, 0, node_record_count * sizeof(uint32_t));
	memset(gpus, 0, node_record_count * sizeof(uint32_t));
	if (u->cores) {
		if (!*held) {
			*held = bit_alloc(bit_size(u->cores));
			if (job_list)
				(void) list_for_each(job_list, _held_job_cores,
						     *held);
		}
		cores = bit_copy(u->cores);
		bit_and_not(cores, *held);
	}
	for (n = 0; (node_ptr = next_node(&n)); n++) {
		if (cores) {
			int32_t size = bit_size(cores);
			uint32_t from = cr_get_coremap_offset(n);
			uint32_t to = MIN(cr_get_coremap_offset(n + 1),
					  (uint32_t) size);
			if (from < to)
				cpus[n] = (uint32_t) bit_set_count_range(
						  cores, from, to) *
					  MAX(node_ptr->tpc, 1);
		}
		if (u->gpus && u->gpus[n])
			gpus[n] = gps_node_resv_gpus_unheld(node_ptr, t,
							    u->gpus[n]);
	}
	FREE_NULL_BITMAP(cores);
}

/* Node n's entry from `from` on, where it holds more than now. */
static void _note_ahead(gps_resv_held_t *h, int n, time_t from, bool whole,
			uint32_t cpus, uint32_t gpus, int *room)
{
	gps_resv_ahead_t *a;

	if (h->whole[n] || (!(whole) && (cpus <= h->cpus[n]) &&
			    (gpus <= h->gpus[n])))
		return;
	if (h->ahead_cnt >= *room) {
		*room = *room ? *room * 2 : 64;
		xrecalloc(h->ahead, *room, sizeof(*h->ahead));
	}
	a = &h->ahead[h->ahead_cnt++];
	a->n = n;
	a->from = from;
	a->whole = whole;
	a->cpus = (cpus > h->cpus[n]) ? cpus - h->cpus[n] : 0;
	a->gpus = (gpus > h->gpus[n]) ? gpus - h->gpus[n] : 0;
}

/*
 * Keep the union's reserved cores and GPUs as they are by `from`, for the
 * jobs that hold some of them (gps_resv_job_held).
 */
static void _note_layer(gps_resv_held_t *h, const resv_union_t *u,
			time_t from)
{
	gps_resv_layer_t *l;
	int n;

	if (!u->cores && !u->gpus)
		return;
	xrecalloc(h->layers, h->layer_cnt + 1, sizeof(*h->layers));
	l = &h->layers[h->layer_cnt++];
	l->from = from;
	l->cores = u->cores ? bit_copy(u->cores) : NULL;
	if (u->gpus) {
		l->gpus = xcalloc(node_record_count, sizeof(bitstr_t *));
		for (n = 0; n < node_record_count; n++)
			if (u->gpus[n])
				l->gpus[n] = bit_copy(u->gpus[n]);
	}
}

extern bool gps_resv_held(time_t now, const gps_tres_t *t,
			  gps_resv_held_t *h)
{
	list_itr_t *it;
	slurmctld_resv_t *resv;
	resv_at_t *at;
	resv_union_t u = { 0 };
	bitstr_t *held = NULL;
	bool *w = NULL;
	uint32_t *c = NULL, *g = NULL;
	int cnt = 0, i, n, steps = 0, room = 0;

	memset(h, 0, sizeof(*h));
	if (!resv_list || !list_count(resv_list) || (node_record_count < 1))
		return false;
	at = xcalloc(list_count(resv_list), sizeof(*at));
	it = list_iterator_create(resv_list);
	while ((resv = list_next(it))) {
		time_t start, end;
		if (!resv->node_bitmap)
			continue;
		_start_end(resv, now, &start, &end);
		/* Ended, or past any job's end (a year: no time limit). */
		if ((end <= now) || (start >= now + YEAR_SECONDS))
			continue;
		at[cnt].resv = resv;
		at[cnt++].start = MAX(start, now);
	}
	list_iterator_destroy(it);
	if (!cnt) {
		xfree(at);
		return false;
	}
	qsort(at, cnt, sizeof(*at), _by_start);
	h->whole = xcalloc(node_record_count, sizeof(bool));
	h->cpus = xcalloc(node_record_count, sizeof(uint32_t));
	h->gpus = xcalloc(node_record_count, sizeof(uint32_t));
	u.whole = xcalloc(node_record_count, sizeof(bool));
	/* Those in force now. */
	for (i = 0; (i < cnt) && (at[i].start <= now); i++)
		_add(&u, at[i].resv, t);
	_count(&u, t, &held, h->whole, h->cpus, h->gpus);
	_note_layer(h, &u, 0);
	/* Then each start time ahead, with all before it. */
	if (i < cnt) {
		w = xcalloc(node_record_count, sizeof(bool));
		c = xcalloc(node_record_count, sizeof(uint32_t));
		g = xcalloc(node_record_count, sizeof(uint32_t));
	}
	while ((i < cnt) && (steps++ < GPS_RESV_AHEAD)) {
		time_t from = at[i].start;
		for (; (i < cnt) && (at[i].start == from); i++)
			_add(&u, at[i].resv, t);
		_count(&u, t, &held, w, c, g);
		for (n = 0; n < node_record_count; n++)
			_note_ahead(h, n, from, w[n], c[n], g[n], &room);
		_note_layer(h, &u, from);
	}
	xfree(w);
	xfree(c);
	xfree(g);
	if (u.gpus) {
		for (n = 0; n < node_record_count; n++)
			FREE_NULL_BITMAP(u.gpus[n]);
		xfree(u.gpus);
	}
	FREE_NULL_BITMAP(u.cores);
	FREE_NULL_BITMAP(held);
	xfree(u.whole);
	xfree(at);
	return true;
}

/* Some of node index n's cores are in the layer. */
static bool _node_reserved(const gps_resv_layer_t *l, int n)
{
	int32_t size, from, to;

	if (!l->cores)
		return false;
	size = bit_size(l->cores);
	from = (int32_t) cr_get_coremap_offset(n);
	to = MIN((int32_t) cr_get_coremap_offset(n + 1), size);
	return (from < to) && (bit_set_count_range(l->cores, from, to) > 0);
}

extern void gps_resv_job_held(gp_snapshot_t *snap, job_record_t *job_ptr,
			      const int32_t *node_map, const gps_tres_t *t,
			      const gps_resv_held_t *h)
{
	job_resources_t *res = job_ptr->job_resrcs;
	const gps_resv_layer_t *all;
	node_record_t *node_ptr;
	int n, last, i = 0, k, off = 0;

	if (!h->layer_cnt || !node_map || !_job_cores_readable(res))
		return;
	all = &h->layers[h->layer_cnt - 1];
	last = MIN(bit_fls(res->node_bitmap), node_record_count - 1);
	for (n = bit_ffs(res->node_bitmap); n <= last; n++) {
		uint32_t from = 0, cnt = 0, c, cpus = 0, gpus = 0;
		bool cores;
		int here;
		if (!bit_test(res->node_bitmap, n))
			continue;
		here = i++;
		if ((node_map[n] < 0) || !(node_ptr = node_record_table_ptr[n]))
			continue;
		/*
		 * The last layer holds every earlier one's: nothing reserved
		 * on the node there, nothing held (most nodes: no look at the
		 * job's cores).
		 */
		cores = _node_reserved(all, n);
		if (!cores && !(all->gpus && all->gpus[n]))
			continue;
		cores = cores && _job_node_span(res, here, n,
						bit_size(all->cores), &off,
						&from, &cnt);
		/* Layers are cumulative: an entry where the count grows. */
		for (k = 0; k < h->layer_cnt; k++) {
			const gps_resv_layer_t *l = &h->layers[k];
			uint32_t lc = 0, lg = 0;
			if (cores && l->cores)
				for (c = 0; c < cnt; c++)
					if (bit_test(res->core_bitmap, off + c) &&
					    bit_test(l->cores, from + c))
						lc += MAX(node_ptr->tpc, 1);
			if (l->gpus && l->gpus[n])
				lg = gps_job_node_gpus_in(job_ptr, here, t,
							  l->gpus[n]);
			if ((lc <= cpus) && (lg <= gpus))
				continue;
			cpus = MAX(cpus, lc);
			gpus = MAX(gpus, lg);
			(void) gp_snapshot_add_job_reserved(
				snap, node_map[n], (int64_t) l->from, cpus,
				gpus);
		}
	}
}

extern void gps_resv_held_free(gps_resv_held_t *h)
{
	int k, n;

	for (k = 0; k < h->layer_cnt; k++) {
		FREE_NULL_BITMAP(h->layers[k].cores);
		if (h->layers[k].gpus) {
			for (n = 0; n < node_record_count; n++)
				FREE_NULL_BITMAP(h->layers[k].gpus[n]);
			xfree(h->layers[k].gpus);
		}
	}
	xfree(h->layers);
	h->layer_cnt = 0;
	xfree(h->whole);
	xfree(h->cpus);
	xfree(h->gpus);
	xfree(h->ahead);
	h->ahead_cnt = 0;
}

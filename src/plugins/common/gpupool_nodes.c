/*
 * gpupool_nodes.c - where GPUs are, for the core's victim plan: each
 * node's free GPUs of the tracked GRES and whether it is completing, and
 * each running job's GPUs per node, read from slurmctld's GRES records.
 * The structs read here (gres_state_t, gres_node_state_t,
 * gres_job_state_t: gres_cnt_alloc, type_cnt/type_name/type_cnt_alloc,
 * node_cnt/gres_cnt_node_alloc, gres_bit_alloc, topo_*) have the same fields
 * from 22.05 to 26.05; the shared GRES's partner pointer differs
 * (GPS_SHARED_GRES_NS).
 * Caller holds the job read and node read locks.
 */
#include "config.h"

#include <string.h>

#include "src/common/bitstring.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"

#include "gpupool_rules.h"
#include "gpupool_slurm.h"

/* The gres record of the tracked resource's name, or NULL. */
static void *_tracked(gres_state_t *gs, const gps_tres_t *t)
{
	if (!gs || !gs->gres_name || xstrcmp(gs->gres_name, t->gres_name))
		return NULL;
	return gs->gres_data;
}

extern const char *gps_node_gpu_type(node_record_t *node_ptr,
				     const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_node_state_t *ns;
	const char *type = "";
	uint64_t avail = 0, typed = 0;
	bool mixed = false;
	int i;

	if (!node_ptr->gres_list)
		return "";
	it = list_iterator_create(node_ptr->gres_list);
	while (!mixed && (gs = list_next(it))) {
		if (!(ns = _tracked(gs, t)))
			continue;
		avail += ns->gres_cnt_avail;
		for (i = 0; !mixed && (i < ns->type_cnt); i++) {
			if (!ns->type_cnt_avail || !ns->type_cnt_avail[i])
				continue;
			if (!ns->type_name || !ns->type_name[i] ||
			    (type[0] && xstrcmp(type, ns->type_name[i])))
				mixed = true;
			else
				type = ns->type_name[i];
			typed += ns->type_cnt_avail[i];
		}
	}
	list_iterator_destroy(it);
	return (mixed || (typed < avail)) ? NULL : type;
}

extern bool gps_node_gpus_explicit(node_record_t *node_ptr,
				   const gps_tres_t *t)
{
#ifdef GRES_CONF_EXPLICIT
	list_itr_t *it;
	gres_state_t *gs;
	bool explicit = false;

	if (!node_ptr->gres_list)
		return false;
	/* As _handle_exclusive_gres reads it: the node's record's flags. */
	it = list_iterator_create(node_ptr->gres_list);
	while (!explicit && (gs = list_next(it)))
		explicit = _tracked(gs, t) &&
			   (gs->config_flags & GRES_CONF_EXPLICIT);
	list_iterator_destroy(it);
	return explicit;
#else
	(void) node_ptr;
	(void) t;
	return false;
#endif
}

extern const char *gps_job_gpu_type(job_record_t *job_ptr,
				    const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	const char *type = "";

	/* A typed QuotaTRES counts only that type's GPUs on every node. */
	if (!gps_nodes_readable(t) || t->gres_type[0] ||
	    !job_ptr->gres_list_req)
		return "";
	it = list_iterator_create(job_ptr->gres_list_req);
	while (type && (gs = list_next(it))) {
		if (!(js = _tracked(gs, t)) || !js->type_name ||
		    !js->type_name[0])
			continue;
		type = (type[0] && xstrcmp(type, js->type_name)) ?
			NULL : js->type_name;
	}
	list_iterator_destroy(it);
	return type;
}

extern void gps_job_per_gpu(job_record_t *job_ptr, const gps_tres_t *t,
			    uint32_t *cpus, uint64_t *mem_mb)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;

	*cpus = 0;
	*mem_mb = 0;
	if (!gps_nodes_readable(t) || !job_ptr->gres_list_req)
		return;
	it = list_iterator_create(job_ptr->gres_list_req);
	while ((gs = list_next(it))) {
		if (!(js = _tracked(gs, t)))
			continue;
		*cpus = MAX(*cpus, js->cpus_per_gres ? js->cpus_per_gres :
						       js->def_cpus_per_gres);
		*mem_mb = MAX(*mem_mb, js->mem_per_gres ? js->mem_per_gres :
							  js->def_mem_per_gres);
	}
	list_iterator_destroy(it);
}

/*
 * GPUs with shards or MPS in use (the shared GRES's allocation, one bit per
 * GPU) that no job holds as a GPU, among `only`: cons_tres
 * gives none of them to a job asking for whole GPUs (26.05
 * gres_sock_list.c: "filter out resources already allocated to the other
 * GRES type"; 22.05 may, GPS_SHARED_GRES_NS).
 */
static uint64_t _shared_in_use(gres_node_state_t *ns, bitstr_t *only)
{
	gres_node_state_t *alt = GPS_SHARED_GRES_NS(ns);
	bitstr_t *shared = alt ? alt->gres_bit_alloc : NULL;
	int64_t i, bits;
	uint64_t cnt = 0;

	if (!shared)
		return 0;
	bits = bit_size(shared);
	for (i = 0; i < bits; i++) {
		if (!bit_test(shared, i))
			continue;
		if ((i >= bit_size(only)) || !bit_test(only, i))
			continue;
		if (ns->gres_bit_alloc && (i < bit_size(ns->gres_bit_alloc)) &&
		    bit_test(ns->gres_bit_alloc, i))
			continue;
		cnt++;
	}
	return cnt;
}

/*
 * The node's GPUs of type `type` (NULL: all) by its topology entries,
 * through which alone cons_tres keeps shared GRES off whole-GPU jobs;
 * NULL: none.
 */
static bitstr_t *_topo_bits(gres_node_state_t *ns, const char *type)
{
	bitstr_t *bits = NULL;
	int i;

	for (i = 0; i < ns->topo_cnt; i++) {
		if (!ns->topo_gres_bitmap || !ns->topo_gres_bitmap[i])
			continue;
		if (type && (!ns->topo_type_name ||
			     xstrcmp(ns->topo_type_name[i], type)))
			continue;
		if (!bits)
			bits = bit_copy(ns->topo_gres_bitmap[i]);
		else if (bit_size(bits) == bit_size(ns->topo_gres_bitmap[i]))
			bit_or(bits, ns->topo_gres_bitmap[i]);
	}
	return bits;
}

/*
 * GPUs of the tracked GRES that jobs hold on the node, or that shards or
 * MPS hold (no whole-GPU job gets those).
 */
static uint64_t _node_alloc(node_record_t *node_ptr, const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_node_state_t *ns;
	bitstr_t *topo;
	uint64_t alloc = 0;
	int i;

	if (!node_ptr->gres_list)
		return 0;
	it = list_iterator_create(node_ptr->gres_list);
	while ((gs = list_next(it))) {
		if (!(ns = _tracked(gs, t)))
			continue;
		if (!t->gres_type[0]) {
			alloc += ns->gres_cnt_alloc;
		} else {
			for (i = 0; i < ns->type_cnt; i++)
				if (ns->type_name &&
				    !xstrcmp(ns->type_name[i], t->gres_type))
					alloc += ns->type_cnt_alloc[i];
		}
		if (GPS_SHARED_GRES_NS(ns) &&
		    (topo = _topo_bits(ns, t->gres_type[0] ? t->gres_type :
							      NULL))) {
			alloc += _shared_in_use(ns, topo);
			FREE_NULL_BITMAP(topo);
		}
	}
	list_iterator_destroy(it);
	return alloc;
}

/* The node's GRES record of the tracked resource, or NULL. */
static gres_node_state_t *_node_tracked(node_record_t *node_ptr,
					const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_node_state_t *ns = NULL;

	if (!node_ptr->gres_list)
		return NULL;
	it = list_iterator_create(node_ptr->gres_list);
	while (!ns && (gs = list_next(it)))
		ns = _tracked(gs, t);
	list_iterator_destroy(it);
	return ns;
}

/*
 * The GPUs (of QuotaTRES's type) a reservation's GRES list holds on node
 * index `n` (23.11 gres_sched.c, 26.05 gres_sock_list.c: one bitmap per
 * node by the node's index), ORed into *acc: reservations may overlap.
 */
extern void gps_node_resv_gpu_bits(node_record_t *node_ptr, int n,
				   const gps_tres_t *t, list_t *resv_gres,
				   bitstr_t **acc)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	gres_node_state_t *ns;

	if (!resv_gres || !(ns = _node_tracked(node_ptr, t)))
		return;
	it = list_iterator_create(resv_gres);
	while ((gs = list_next(it))) {
		bitstr_t *bits, *topo;
		if (!(js = _tracked(gs, t)) || !js->gres_bit_alloc ||
		    (n >= (int) js->node_cnt) || !(bits = js->gres_bit_alloc[n]))
			continue;
		if (*acc && (bit_size(*acc) != bit_size(bits)))
			continue;
		bits = bit_copy(bits);
		if (t->gres_type[0]) {
			topo = _topo_bits(ns, t->gres_type);
			if (topo && (bit_size(topo) == bit_size(bits)))
				bit_and(bits, topo);
			else if (xstrcmp(js->type_name, t->gres_type))
				bit_clear_all(bits);
			FREE_NULL_BITMAP(topo);
		}
		if (!*acc)
			*acc = bits;
		else {
			bit_or(*acc, bits);
			FREE_NULL_BITMAP(bits);
		}
	}
	list_iterator_destroy(it);
}

/*
 * Of the reserved GPUs `bits`, those no job holds on the node: cons_tres
 * gives none of them to a job outside the reservation (it counts reserved
 * bits only where not allocated, as here).
 */
extern uint32_t gps_node_resv_gpus_unheld(node_record_t *node_ptr,
					  const gps_tres_t *t, bitstr_t *bits)
{
	gres_node_state_t *ns = _node_tracked(node_ptr, t);
	bitstr_t *left;
	int32_t cnt;

	if (!bits || !ns)
		return 0;
	left = bit_copy(bits);
	if (ns->gres_bit_alloc && (bit_size(ns->gres_bit_alloc) == bit_size(left)))
		bit_and_not(left, ns->gres_bit_alloc);
	cnt = bit_set_count(left);
	FREE_NULL_BITMAP(left);
	return (cnt > 0) ? (uint32_t) cnt : 0;
}

extern bool gps_nodes_readable(const gps_tres_t *t)
{
	return t->gres_name[0] != '\0';
}

/*
 * Slurm allocates memory (SelectTypeParameters with memory): jobs' memory
 * per node is checked.
 */
static bool _memory_checked(void)
{
	return (slurm_conf.select_type_param & GPS_SELECT_MEMORY) != 0;
}

static uint64_t _node_memory(node_record_t *node_ptr)
{
	return (node_ptr->real_memory > node_ptr->mem_spec_limit) ?
		node_ptr->real_memory - node_ptr->mem_spec_limit : 0;
}

/*
 * A node's CPUs are checked where no partition over it shares them
 * (OverSubscribe=YES:N or FORCE:N with N > 1 lets jobs hold the same
 * CPUs: free CPUs cannot be counted there).
 */
static bool _cpus_checked(node_record_t *node_ptr)
{
	int i;

	for (i = 0; i < node_ptr->part_cnt; i++) {
		part_record_t *part = node_ptr->part_pptr[i];
		if (part && ((part->max_share & ~SHARED_FORCE) > 1))
			return false;
	}
	return true;
}

extern void gps_node_usage(gp_snapshot_t *snap, int32_t node,
			   node_record_t *node_ptr, uint64_t gpus,
			   const gps_tres_t *t, const gps_resv_held_t *h,
			   int n)
{
	uint64_t alloc;
	uint32_t cpus;
	bool whole = h && h->whole && h->whole[n];

	if (node < 0)
		return;
	alloc = gpr_node_unusable(node_ptr->node_state) ? gpus :
		_node_alloc(node_ptr, t);
	if (h && h->gpus)
		alloc += h->gpus[n];
	(void) gp_snapshot_set_node_usage(
		snap, node, (alloc >= gpus) ? 0 : (uint32_t) (gpus - alloc),
		(IS_NODE_COMPLETING(node_ptr) ? GP_NODE_COMPLETING : 0) |
		((whole || gpr_node_closed(node_ptr->node_state)) ?
			 GP_NODE_CLOSED : 0));
	if (gpr_node_unusable(node_ptr->node_state))
		return;
	cpus = _cpus_checked(node_ptr) ? node_ptr->cpus_efctv : 0;
	(void) gp_snapshot_set_node_room(snap, node, cpus,
					 _memory_checked() ?
					 _node_memory(node_ptr) : 0);
	if (cpus && h && h->cpus && h->cpus[n])
		(void) gp_snapshot_set_node_reserved(snap, node, h->cpus[n]);
}

/* The job's GPUs on its i-th node (job_resrcs order). */
static uint32_t _job_node_gpus(job_record_t *job_ptr, int i,
			       const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	uint64_t cnt = 0;

	if (!job_ptr->gres_list_alloc)
		return 0;
	it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		if (!(js = _tracked(gs, t)))
			continue;
		if (t->gres_type[0] && xstrcmp(js->type_name, t->gres_type))
			continue;
		if (js->gres_cnt_node_alloc && (i < (int) js->node_cnt))
			cnt += js->gres_cnt_node_alloc[i];
	}
	list_iterator_destroy(it);
	return (cnt > UINT32_MAX) ? UINT32_MAX : (uint32_t) cnt;
}

/*
 * Of the GPUs the job holds on its i-th node (job_resrcs order), those set
 * in `bits` (a reservation's GPUs there, by the node's GPU index).
 */
extern uint32_t gps_job_node_gpus_in(job_record_t *job_ptr, int i,
				     const gps_tres_t *t, bitstr_t *bits)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	uint32_t cnt = 0;

	if (!bits || !job_ptr->gres_list_alloc)
		return 0;
	it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		bitstr_t *mine;
		if (!(js = _tracked(gs, t)) || !js->gres_bit_alloc ||
		    (i >= (int) js->node_cnt) ||
		    !(mine = js->gres_bit_alloc[i]) ||
		    (bit_size(mine) != bit_size(bits)))
			continue;
		if (t->gres_type[0] && xstrcmp(js->type_name, t->gres_type))
			continue;
		mine = bit_copy(mine);
		bit_and(mine, bits);
		cnt += (uint32_t) bit_set_count(mine);
		FREE_NULL_BITMAP(mine);
	}
	list_iterator_destroy(it);
	return cnt;
}

extern void gps_node_scratch_alloc(gps_node_scratch_t *s)
{
	s->idx = xcalloc(node_record_count, sizeof(int32_t));
	s->gpus = xcalloc(node_record_count, sizeof(uint32_t));
	s->cpus = xcalloc(node_record_count, sizeof(uint32_t));
	s->mem = xcalloc(node_record_count, sizeof(uint64_t));
}

extern void gps_node_scratch_free(gps_node_scratch_t *s)
{
	xfree(s->idx);
	xfree(s->gpus);
	xfree(s->cpus);
	xfree(s->mem);
}

extern void gps_job_nodes(gp_snapshot_t *snap, job_record_t *job_ptr,
			  const int32_t *node_map, gps_node_scratch_t *s,
			  const gps_tres_t *t)
{
	job_resources_t *res = job_ptr->job_resrcs;
	bitstr_t *alloc = res ? res->node_bitmap : NULL;
	/* A suspended job keeps its memory and GRES, not its CPUs (cons_tres). */
	bool cpus = res && res->cpus && !IS_JOB_SUSPENDED(job_ptr);
	bool mem = res && res->memory_allocated && _memory_checked();
	int bits, n, i = 0;
	size_t cnt = 0;

	if (!alloc)
		alloc = job_ptr->node_bitmap;
	if (!alloc || !node_map)
		return;
	bits = bit_size(alloc);
	if (bits > node_record_count)
		bits = node_record_count;
	for (n = 0; n < bits; n++) {
		if (!bit_test(alloc, n))
			continue;
		/* A completing job's nodes that are done hold nothing. */
		if (job_ptr->node_bitmap && (n < bit_size(job_ptr->node_bitmap))
		    && bit_test(job_ptr->node_bitmap, n) &&
		    (node_map[n] >= 0)) {
			s->idx[cnt] = node_map[n];
			s->cpus[cnt] = (cpus && (i < (int) res->nhosts)) ?
				res->cpus[i] : 0;
			s->mem[cnt] = (mem && (i < (int) res->nhosts)) ?
				res->memory_allocated[i] : 0;
			s->gpus[cnt++] = _job_node_gpus(job_ptr, i, t);
		}
		i++;
	}
	if (gp_snapshot_set_job_nodes(snap, s->idx, s->gpus, cnt) == GP_OK)
		(void) gp_snapshot_set_job_node_resources(snap, s->cpus, s->mem,
							  cnt);
}

/*
 * gpupool_slurm.c - slurmctld records -> gpupool core snapshot (see .h).
 *
 * Nothing here takes a slurmctld lock; QOS names come from gpupool_qos.c
 * (its header comment says which callers may look one up).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"

#include "gpupool_hold.h"
#include "gpupool_rules.h"
#include "gpupool_slurm.h"

/*
 * Weak: a libgpupool older than ABI 4 has no gp_abi_version(); its address
 * is then NULL (resolved when the plugin is loaded, not at the call), and
 * the plugin says so instead of dying on an unresolved symbol.
 */
#pragma weak gp_abi_version

extern int gps_abi_check(const char *plugin_type)
{
	uint32_t lib;

	if (!gp_abi_version) {
		error("%s: the libgpupool loaded has no gp_abi_version(): it is older than C ABI %d, which this plugin was built for; install the libgpupool built with this plugin",
		      plugin_type, GP_ABI_VERSION);
		return SLURM_ERROR;
	}
	lib = gp_abi_version();
	if (lib != GP_ABI_VERSION) {
		error("%s: the libgpupool loaded has C ABI %u, this plugin was built for C ABI %d; install the libgpupool built with this plugin",
		      plugin_type, lib, GP_ABI_VERSION);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

static void _copy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Find QuotaTRES `quota` ("gres/gpu[:TYPE]") in the TRES arrays. */
static void _tres_find(const char *quota, gps_tres_t *t)
{
	const char *name, *colon;
	slurmdb_tres_rec_t rec;

	memset(t, 0, sizeof(*t));
	t->tres_pos = -1;
	/* "gres/gpu" or "gres/gpu:TYPE" (the core's parser guarantees it) */
	name = strchr(quota, '/');
	name = name ? name + 1 : quota;
	if (!*name)
		name = "gpu";
	_copy(t->node_gres, sizeof(t->node_gres), name, strlen(name));
	if ((colon = strchr(name, ':'))) {
		_copy(t->gres_name, sizeof(t->gres_name), name, colon - name);
		_copy(t->gres_type, sizeof(t->gres_type), colon + 1,
		      strlen(colon + 1));
	} else {
		_copy(t->gres_name, sizeof(t->gres_name), name, strlen(name));
	}

	memset(&rec, 0, sizeof(rec));
	rec.type = "gres";
	rec.name = t->node_gres;
	/* Takes the assoc_mgr TRES read lock itself (locked == false). */
	t->tres_pos = assoc_mgr_find_tres_pos(&rec, false);
	t->tres_cnt = slurmctld_tres_cnt;
	if ((t->tres_pos >= t->tres_cnt) || (t->tres_cnt <= 0))
		t->tres_pos = -1;
}

/*
 * The last lookup, kept while QuotaTRES, slurmctld's TRES count and
 * assoc_mgr's TRES array stay: a new static TRES can move others
 * (assoc_mgr_post_tres_list sorts by id), and every update of the list
 * puts a new array in place (read without the TRES lock: a stale pointer
 * only costs a lookup).
 */
static pthread_mutex_t tres_mutex = PTHREAD_MUTEX_INITIALIZER;
static gps_tres_t tres_found;
static char tres_found_quota[320] = "";  /* QuotaTRES: gres/gpu:TYPE,cpu,mem */
static const void *tres_found_array = NULL;

extern void gps_tres_get(gps_tres_t *t)
{
	char quota[sizeof(tres_found_quota)];

	gp_engine_quota_tres(gp_shared_engine(), quota, sizeof(quota));
	slurm_mutex_lock(&tres_mutex);
	if (strcmp(quota, tres_found_quota) || (tres_found.tres_pos < 0) ||
	    (tres_found.tres_cnt != slurmctld_tres_cnt) ||
	    (tres_found_array != (const void *) assoc_mgr_tres_array)) {
		tres_found_array = (const void *) assoc_mgr_tres_array;
		_tres_find(quota, &tres_found);
		strlcpy(tres_found_quota, quota, sizeof(tres_found_quota));
	}
	*t = tres_found;
	slurm_mutex_unlock(&tres_mutex);
	t->needs = gp_engine_snapshot_needs(gp_shared_engine());
}

/* Sum of the GRES counts of `gres_list` (job gres_state_t records). */
static uint64_t _gres_list_cnt(list_t *gres_list, const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	uint64_t cnt = 0;

	if (!gres_list)
		return 0;
	it = list_iterator_create(gres_list);
	while ((gs = list_next(it))) {
		if (!gs->gres_name || xstrcmp(gs->gres_name, t->gres_name))
			continue;
		if (!(js = gs->gres_data))
			continue;
		if (t->gres_type[0] && xstrcmp(js->type_name, t->gres_type))
			continue;
		cnt += gpr_gpus_value(js->total_gres);
	}
	list_iterator_destroy(it);
	return cnt;
}

extern uint32_t gps_job_gpus(job_record_t *job_ptr, const gps_tres_t *t,
			     bool allocated)
{
	bool accounted = (t->tres_pos >= 0) &&
			 (t->tres_cnt == slurmctld_tres_cnt);
	uint64_t cnt = 0;

	switch (gpr_gpus_from(allocated,
			      accounted && job_ptr->tres_alloc_cnt,
			      accounted && job_ptr->tres_req_cnt,
			      job_ptr->gres_list_alloc != NULL)) {
	case GPR_GPUS_TRES_ALLOC:
		cnt = gpr_gpus_value(job_ptr->tres_alloc_cnt[t->tres_pos]);
		break;
	case GPR_GPUS_TRES_REQ:
		cnt = gpr_gpus_value(job_ptr->tres_req_cnt[t->tres_pos]);
		break;
	case GPR_GPUS_GRES_ALLOC:
		cnt = _gres_list_cnt(job_ptr->gres_list_alloc, t);
		break;
	case GPR_GPUS_GRES_REQ:
		cnt = _gres_list_cnt(job_ptr->gres_list_req, t);
		break;
	}
	return gpr_gpus_clamp(cnt);
}

/*
 * GPUs of no type in a pending job's request (--gres=gpu:2), where
 * QuotaTRES counts one type: its requested TRES count none of them under
 * that type (_set_type_tres_cnt), though Slurm may give it that type.
 */
static uint64_t _untyped_gpus(job_record_t *job_ptr, const gps_tres_t *t)
{
	list_itr_t *it;
	gres_state_t *gs;
	gres_job_state_t *js;
	uint64_t cnt = 0;

	if (!t->gres_type[0] || !job_ptr->gres_list_req)
		return 0;
	it = list_iterator_create(job_ptr->gres_list_req);
	while ((gs = list_next(it))) {
		if (!gs->gres_name || xstrcmp(gs->gres_name, t->gres_name) ||
		    !(js = gs->gres_data))
			continue;
		if (!js->type_name || !js->type_name[0])
			cnt += gpr_gpus_value(js->total_gres);
	}
	list_iterator_destroy(it);
	return cnt;
}

/*
 * The job's CPUs and memory (MiB) from its TRES counts (both always
 * accounted): allocated for a job that holds resources, else requested;
 * gpr_gpus_value's "no value is none" for each count.
 */
static void _job_cpus_mem(job_record_t *job_ptr, bool allocated,
			  uint32_t needs, gp_job_t *out)
{
	uint64_t *cnt = job_ptr->tres_req_cnt;

	if (allocated && job_ptr->tres_alloc_cnt)
		cnt = job_ptr->tres_alloc_cnt;
	if (!cnt)
		return;
	if (needs & GP_NEEDS_CPU)
		out->cpus = gpr_gpus_clamp(gpr_gpus_value(cnt[TRES_ARRAY_CPU]));
	if (needs & GP_NEEDS_MEM)
		out->mem_mb = gpr_gpus_value(cnt[TRES_ARRAY_MEM]);
}

extern int gps_job_state(job_record_t *job_ptr)
{
	return gpr_job_state(job_ptr->job_state);
}

/*
 * The job's partitions, comma-separated: the job record's own string where
 * there is one (no copy: this runs for every job of a pass and at every
 * submit and preemption check, under the job lock), else a list made into
 * *buf (the caller xfree()s it).
 */
static const char *_job_partitions(job_record_t *job_ptr, int state,
				   part_record_t *use_part, char **buf)
{
	part_record_t *part_ptr;
	list_itr_t *it;

	*buf = NULL;
	if ((state != GP_JOB_PENDING) || use_part) {
		part_ptr = use_part ? use_part : job_ptr->part_ptr;
		if (part_ptr && part_ptr->name)
			return part_ptr->name;
		return job_ptr->partition;
	}
	/*
	 * A pending job's string is the list its user gave; part_ptr_list may
	 * be narrowed to where gpupool admits it (start_parts.h).
	 */
	if (job_ptr->part_ptr_list && job_ptr->partition)
		return job_ptr->partition;
	if (job_ptr->part_ptr_list) {
		it = list_iterator_create(job_ptr->part_ptr_list);
		while ((part_ptr = list_next(it)))
			if (part_ptr->name)
				xstrfmtcat(*buf, "%s%s", *buf ? "," : "",
					   part_ptr->name);
		list_iterator_destroy(it);
		if (*buf)
			return *buf;
	}
	if (job_ptr->part_ptr && job_ptr->part_ptr->name)
		return job_ptr->part_ptr->name;
	return job_ptr->partition;
}

extern int gps_site_preempt_mode(void)
{
	switch (slurm_conf.preempt_mode & (PREEMPT_MODE_SUSPEND |
					   PREEMPT_MODE_REQUEUE |
					   PREEMPT_MODE_CANCEL)) {
	case PREEMPT_MODE_REQUEUE:
		return GP_MODE_REQUEUE;
	case PREEMPT_MODE_CANCEL:
		return GP_MODE_CANCEL;
	case PREEMPT_MODE_SUSPEND:
		return GP_MODE_SUSPEND;
	default:
		return GP_MODE_OFF;
	}
}

static bool _given(const char *s)
{
	return s && *s;
}

/*
 * --exclusive alone: no other job on its nodes (GP_JOB_WHOLE_NODE).
 * (whole_node's values differ: 22.05 and 23.11 count 1, 2, 3 for
 * required, user and mcs; later releases set bits 1, 2, 4 and 8 for
 * topo.  Plain --exclusive is 1 on all of them.)
 */
static bool _whole_node(job_record_t *job_ptr)
{
	return job_ptr->details &&
	       (job_ptr->details->whole_node == WHOLE_NODE_REQUIRED);
}

/*
 * The OverSubscribe=EXCLUSIVE partitions' names, comma-separated (NULL:
 * none), as the last pass found them (gps_exclusive_parts_refresh): a
 * pending job's size asks about every partition its user listed, and the
 * digest asks for every pending job, under the job lock.  The pass writes
 * it holding the job lock for writing; readers hold the job lock.
 */
static char *exclusive_parts = NULL;
static bool exclusive_parts_known = false;

extern void gps_exclusive_parts_refresh(void)
{
	list_itr_t *it;
	part_record_t *p;

	xfree(exclusive_parts);
	exclusive_parts_known = false;
	if (!part_list)
		return;
	it = list_iterator_create(part_list);
	while ((p = list_next(it)))
		if (!p->max_share && p->name)
			xstrfmtcat(exclusive_parts, "%s%s",
				   exclusive_parts ? "," : "", p->name);
	list_iterator_destroy(it);
	exclusive_parts_known = true;
}

extern void gps_exclusive_parts_fini(void)
{
	xfree(exclusive_parts);
	exclusive_parts_known = false;
}

/*
 * Slurm gives the job whole nodes and every GRES on them, whatever it asked
 * (_handle_exclusive_gres): whole_node has WHOLE_NODE_REQUIRED (22.05 and
 * 23.11: is it; later releases: has the bit, with user or topo too), or a
 * partition it may run in gives whole nodes (OverSubscribe=EXCLUSIVE:
 * max_share 0; Slurm sets whole_node when it tries the job there).  `part`:
 * the one partition asked about, NULL for all of the job's.
 */
static bool _gets_whole_nodes(job_record_t *job_ptr, part_record_t *part)
{
	list_itr_t *it;
	part_record_t *p;
	bool whole = false;

#if WHOLE_NODE_MCS == 0x03
	if (job_ptr->details && (job_ptr->details->whole_node == WHOLE_NODE_REQUIRED))
		return true;
#else
	if (job_ptr->details &&
	    (job_ptr->details->whole_node & WHOLE_NODE_REQUIRED))
		return true;
#endif
	if (part || !job_ptr->part_ptr_list)
		return (part ? part : job_ptr->part_ptr) &&
		       !(part ? part : job_ptr->part_ptr)->max_share;
	/*
	 * Every partition its user listed: gpupool may have narrowed
	 * part_ptr_list to where it admits the job (start_parts.h), and a job
	 * counted by its narrowed list would be admitted to an exclusive
	 * partition at the GPUs it asked for, then get the whole node there.
	 * (Before the first pass, the list as it is.)
	 */
	if (job_ptr->partition && exclusive_parts_known)
		return gpr_lists_share(exclusive_parts, job_ptr->partition);
	it = list_iterator_create(job_ptr->part_ptr_list);
	while (!whole && (p = list_next(it)))
		whole = !p->max_share;
	list_iterator_destroy(it);
	return whole;
}

/*
 * The job may use some nodes (or CPUs of them) that gpupool does not work
 * out: nodes shared only with the user's or the MCS label's jobs
 * (--exclusive=user, mcs; 24.11's topo), a reservation, GPUs bound to the
 * CPUs of their socket (--gres-flags=enforce-binding).  (Features:
 * gps_job_nodes_allowed reads the plain ones.)
 */
static bool _bound_unknown(job_record_t *job_ptr)
{
	return !job_ptr->details ||
	       (job_ptr->details->whole_node && !_whole_node(job_ptr)) ||
	       _given(job_ptr->resv_name) ||
	       (job_ptr->bit_flags & GRES_ENFORCE_BIND);
}

/*
 * The job may use only some nodes of its partitions (-w, -x, -C, and the
 * above): a victim plan over every node of them cannot serve it
 * (GP_JOB_NODES_GIVEN).
 */
static bool _nodes_given(job_record_t *job_ptr)
{
	return _bound_unknown(job_ptr) || _given(job_ptr->details->req_nodes) ||
	       _given(job_ptr->details->exc_nodes) ||
	       _given(job_ptr->details->features);
}

/*
 * The partition gives whole nodes (OverSubscribe=EXCLUSIVE: 26.05 sets the
 * job's whole_node only after asking preemptable()) or caps its jobs' CPUs
 * per node (MaxCPUsPerNode counts only its own jobs' CPUs).
 */
static bool _part_bound_unknown(part_record_t *part)
{
	return (part->max_share == 0) ||
	       ((part->max_cpus_per_node != INFINITE) &&
		(part->max_cpus_per_node != NO_VAL) &&
		(part->max_cpus_per_node != 0));
}

/*
 * -w's or -x's nodes as node-table flags into *flags (NULL: no list), read
 * from the list the user gave: select_nodes() sets
 * details->req_node_bitmap to NULL while it tries feature sets, which is
 * when Slurm asks preemptable().  False where the list cannot be read.
 * (hostlist_create returns a pointer on every release; its typedef changed
 * in 23.11.  find_node_record2: no error logged for a name since gone.)
 */
static bool _node_flags(char *list, bool **flags)
{
	__typeof__(hostlist_create(NULL)) hl;
	node_record_t *node_ptr;
	char *name;

	*flags = NULL;
	if (!_given(list))
		return true;
	if (!(hl = hostlist_create(list)))
		return false;
	*flags = xcalloc(node_record_count, sizeof(bool));
	while ((name = hostlist_shift(hl))) {
		if ((node_ptr = find_node_record2(name)) &&
		    (node_ptr->index < (uint32_t) node_record_count))
			(*flags)[node_ptr->index] = true;
		free(name);
	}
	hostlist_destroy(hl);
	return true;
}

extern int gps_job_nodes_allowed(job_record_t *job_ptr,
				 part_record_t *part, const gps_tres_t *t,
				 char **names)
{
	/* (the details' type is named differently across releases) */
	__typeof__(job_ptr->details) d = job_ptr->details;
	const char *type = gps_job_gpu_type(job_ptr, t), *has;
	node_record_t *node_ptr;
	bool *req = NULL, *exc = NULL, bound = false;
	char *pos = NULL;
	int rc = GPS_NODES_UNKNOWN, i, listed = 0;

	*names = NULL;
	if (!d || !part || !part->node_bitmap || !type ||
	    _bound_unknown(job_ptr) || _part_bound_unknown(part))
		return GPS_NODES_UNKNOWN;
	if (!type[0] && !_given(d->req_nodes) && !_given(d->exc_nodes) &&
	    !_given(d->features))
		return GPS_NODES_ANY;
	if (!_node_flags(d->req_nodes, &req) ||
	    !_node_flags(d->exc_nodes, &exc))
		goto out;
	for (i = 0; (node_ptr = next_node(&i)); i++) {
		if ((i >= bit_size(part->node_bitmap)) ||
		    !bit_test(part->node_bitmap, i))
			continue;
		if ((req && !req[i]) || (exc && exc[i])) {
			bound = true;
			continue;
		}
		/*
		 * Active features (none listed: its available ones, as Slurm
		 * reads them): a node would need a reboot for the rest.
		 */
		switch (gpr_node_has_features(d->features,
					      node_ptr->features_act ?
						node_ptr->features_act :
						node_ptr->features)) {
		case 0:
			bound = true;
			continue;
		case -1:
			goto out;
		}
		if (type[0]) {
			/* Slurm may match a model gpupool cannot read there. */
			if (!(has = gps_node_gpu_type(node_ptr, t)))
				goto out;
			if (has[0] && xstrcmp(has, type)) {
				bound = true;
				continue;
			}
		}
		xstrfmtcatat(*names, &pos, "%s%s", listed++ ? "," : "",
			     node_ptr->name);
	}
	/*
	 * -w names nodes the job must include: Slurm adds others up to -N
	 * where it names fewer; where it names more, the job needs them all
	 * (22.05, or after scontrol update ReqNodeList) or any -N of them
	 * (26.05 at submit).  A plan of -N nodes among them serves only the
	 * job that needs exactly those.
	 */
	if (req && (listed != (int) MAX(d->min_nodes, 1)))
		goto out;
	rc = !bound ? GPS_NODES_ANY : listed ? GPS_NODES_LISTED :
					       GPS_NODES_UNKNOWN;
out:
	if (rc != GPS_NODES_LISTED)
		xfree(*names);
	xfree(req);
	xfree(exc);
	return rc;
}

/*
 * Would the job, preempted, be requeued and free to start again on another
 * node of its partition (consolidation moves only such jobs)?  Not if its
 * tier or slurm.conf cancels it, --no-requeue, not a batch job, given or
 * excluded nodes, features, --exclusive (a whole node), a reservation, a
 * HetJob.
 */
static bool _stays(job_record_t *job_ptr, const char *qos)
{
	gp_tier_info_t t;
	bool found = gp_engine_tier_of_qos(gp_shared_engine(), qos, &t) ==
		     GP_OK;
	/* (the details' type is named differently across releases) */
	bool requeueable = job_ptr->details && job_ptr->details->requeue &&
			   job_ptr->batch_flag;

	if (gp_preempt_mode(found ? &t : NULL, gps_site_preempt_mode(),
			    requeueable) != GP_MODE_REQUEUE)
		return true;
	return _nodes_given(job_ptr) || _whole_node(job_ptr) ||
	       (job_ptr->het_job_id && (job_ptr->het_job_id != NO_VAL));
}

/*
 * What a pending job needs on its nodes that its minimum does not say,
 * raised into out->cpus and mem_mb (cons_tres adds these at selection):
 * CPUs per GPU (--cpus-per-gpu: NumCPUs=1 for 2 GPUs at 3 each) and
 * MaxMemPerCPU's CPUs (pn_min_cpus); memory per CPU over those CPUs
 * (DefMemPerCPU, --mem-per-cpu) and, without --mem, DefMemPerGPU (22.05
 * leaves it out of the job's memory count).
 */
static void _pending_ask(job_record_t *job_ptr, const gps_tres_t *t,
			 gp_job_t *out)
{
	__typeof__(job_ptr->details) d = job_ptr->details;
	uint32_t cpus_per_gpu = 0;
	uint64_t mem_per_gpu = 0, cpus = out->cpus, mem = out->mem_mb;

	if (!d)
		return;
	if (out->gpus)
		gps_job_per_gpu(job_ptr, t, &cpus_per_gpu, &mem_per_gpu);
	cpus = MAX(cpus, (uint64_t) out->gpus * cpus_per_gpu);
	if ((d->pn_min_cpus != NO_VAL16) && d->pn_min_cpus)
		cpus = MAX(cpus, (uint64_t) d->pn_min_cpus * MAX(d->min_nodes, 1));
	if ((d->pn_min_memory != NO_VAL64) && (d->pn_min_memory & MEM_PER_CPU))
		mem = MAX(mem, (d->pn_min_memory & ~MEM_PER_CPU) * cpus);
	if (!(job_ptr->bit_flags & JOB_MEM_SET))
		mem = MAX(mem, (uint64_t) out->gpus * mem_per_gpu);
	out->cpus = gpr_gpus_clamp(cpus);
	out->mem_mb = mem;
}

extern void gps_job_size(job_record_t *job_ptr, int state,
			 const gps_tres_t *t, part_record_t *use_part,
			 gp_job_t *out)
{
	bool pending = (state == GP_JOB_PENDING);
	uint64_t untyped = pending ? _untyped_gpus(job_ptr, t) : 0;

	out->gpus = gps_job_gpus(job_ptr, t, !pending);
	/*
	 * Those of its type from its request itself (with gres/gpu not
	 * accounted, Slurm puts the untyped ones under some type's TRES).
	 */
	if (untyped) {
		out->gpus = gpr_gpus_clamp(
			_gres_list_cnt(job_ptr->gres_list_req, t) + untyped);
		out->flags |= GP_JOB_GPUS_UNTYPED;
	}
	if (pending && job_ptr->details)
		out->nodes = job_ptr->details->min_nodes;
	/*
	 * Whole nodes, and with them all their GPUs: admission counts those;
	 * the victim plan frees whole nodes where it can tell (plain
	 * --exclusive; otherwise no plan: _bound_unknown, _part_bound_unknown).
	 */
	if (pending && _gets_whole_nodes(job_ptr, use_part))
		out->flags |= GP_JOB_WHOLE_NODE;
	/* Quotas that count them; and a victim plan frees room for them. */
	if (!(t->needs & (GP_NEEDS_CPU | GP_NEEDS_MEM)) && !gps_nodes_readable(t))
		return;
	_job_cpus_mem(job_ptr, !pending, GP_NEEDS_CPU | GP_NEEDS_MEM, out);
	if (pending)
		_pending_ask(job_ptr, t, out);
}

/* What one dependency of a pending job says of its start. */
typedef enum {
	GPS_DEP_FREE,	/* met, or its job can no longer hold it back */
	GPS_DEP_WAITS,	/* its job has not started, or not ended */
	GPS_DEP_NEVER,	/* Slurm found it can never be met */
} gps_dep_t;

/*
 * The records test_job_dependency() reads, read without changing them:
 * Slurm tests the dependencies of a job gpupool holds only in its purge
 * cycle, about once a minute (job_independent stops at WAIT_HELD).  An
 * entry waits while its job (every task, for "_*") has not started (for
 * `after+MIN`, those minutes after its start), or for every kind but
 * `after` has not completed; singleton and remote entries wait until Slurm
 * says otherwise.  How a completed job ended (afterok, afternotok) is left
 * to Slurm, which marks an entry it fails at its next test.
 */
static gps_dep_t _dependency(depend_spec_t *dep)
{
	job_record_t *dj;
	bool after = (dep->depend_type == SLURM_DEPEND_AFTER);
	time_t now = time(NULL);

	if (dep->depend_state == DEPEND_FULFILLED)
		return GPS_DEP_FREE;
	if (dep->depend_state != DEPEND_NOT_FULFILLED)
		return GPS_DEP_NEVER;
	if ((dep->depend_flags & SLURM_FLAGS_REMOTE) ||
	    (dep->depend_type == SLURM_DEPEND_SINGLETON))
		return GPS_DEP_WAITS;
	if (dep->array_task_id == INFINITE) {	/* the whole array */
		if (test_job_array_pending(dep->job_id) ||
		    (!after && !test_job_array_completed(dep->job_id)))
			return GPS_DEP_WAITS;
		return GPS_DEP_FREE;
	}
	dj = find_job_array_rec(dep->job_id, dep->array_task_id);
	if (!dj)
		return GPS_DEP_FREE;	/* gone: Slurm lifts it */
	if (IS_JOB_PENDING(dj) || (!after && !IS_JOB_COMPLETED(dj)))
		return GPS_DEP_WAITS;
	/* depend_time: seconds after its start (Slurm's "+MIN"). */
	if (after && dep->depend_time &&
	    (!dj->start_time || ((now - dj->start_time) < dep->depend_time)))
		return GPS_DEP_WAITS;
	return GPS_DEP_FREE;
}

extern bool gps_job_dependent(job_record_t *job_ptr)
{
	list_itr_t *it;
	depend_spec_t *dep;
	bool or_flag = false, held_back = false, one_free = false;
	gps_dep_t d;

	if (job_ptr->state_reason == WAIT_DEP_INVALID)
		return true;
	/* Slurm empties the list once the dependency is met. */
	if (!job_ptr->details || !job_ptr->details->depend_list ||
	    !list_count(job_ptr->details->depend_list))
		return false;
	it = list_iterator_create(job_ptr->details->depend_list);
	while ((dep = list_next(it))) {
		d = _dependency(dep);
		or_flag |= (dep->depend_flags & SLURM_FLAGS_OR) != 0;
		held_back |= (d != GPS_DEP_FREE);
		one_free |= (d == GPS_DEP_FREE);
	}
	list_iterator_destroy(it);
	/* `?`: any one met frees it; `,`: each must be. */
	return or_flag ? !one_free : held_back;
}

/*
 * The delay Slurm gives a requeued job: cred_expire + 1 s (121 s by
 * default; 1201 s is slurmctld's own fallback, batch_requeue_fini).
 */
#define GPS_REQUEUE_DELAY_MAX 1201

extern bool gps_job_begins_later(job_record_t *job_ptr)
{
	/*
	 * Now, not a pass's start: Slurm stamps a job eligible at submit
	 * (begin_time = its submit second), which may be after that start.
	 * And later than its submit: a stamp is never, a time to come is.
	 */
	if (!job_ptr->details ||
	    (job_ptr->details->begin_time <= time(NULL)) ||
	    (job_ptr->details->begin_time <= job_ptr->details->submit_time))
		return false;
	/*
	 * A requeue sets a new submit_time and the begin time just after
	 * (batch_requeue_fini); scrontab's requeue, its next run, and an
	 * admin's StartTime= lie further.
	 */
	return !job_ptr->restart_cnt ||
	       (job_ptr->details->begin_time >
		job_ptr->details->submit_time + GPS_REQUEUE_DELAY_MAX);
}

extern void gps_job_fill(job_record_t *job_ptr, int state,
			 const gps_tres_t *t, part_record_t *use_part,
			 time_t now, gp_job_t *out, char **part_buf,
			 char qos_buf[GPS_QOS_LEN])
{
	memset(out, 0, sizeof(*out));
	out->job_id = job_ptr->job_id;
	out->state = state;
	out->partitions = _job_partitions(job_ptr, state, use_part, part_buf);
	out->qos = gps_job_qos(job_ptr, true, qos_buf, GPS_QOS_LEN);
	gps_job_size(job_ptr, state, t, use_part, out);
	out->submit_time = gpr_submit_time(
		job_ptr->details ? (int64_t) job_ptr->details->submit_time : 0,
		(int64_t) now);
	out->start_time = (int64_t) job_ptr->start_time;
	out->user_held = 0;
	out->restart_cnt = job_ptr->restart_cnt;
	out->array_tasks = gps_array_pending_tasks(job_ptr);
	if (out->array_tasks > 1)
		out->array_tasks = gpr_array_startable_tasks(
			out->array_tasks, gps_array_user_throttle(job_ptr),
			job_ptr->array_recs->tot_run_tasks);
	if ((job_ptr->array_task_id != NO_VAL) || job_ptr->array_recs)
		out->array_job_id = job_ptr->array_job_id;
	if ((state == GP_JOB_PENDING) && _nodes_given(job_ptr))
		out->flags |= GP_JOB_NODES_GIVEN;
	if ((state == GP_JOB_PENDING) &&
	    (gps_job_dependent(job_ptr) || gps_job_begins_later(job_ptr)))
		out->flags |= GP_JOB_DEPENDENT;
	/* (0 at priority_p_set: slurmctld sets it after job_allocate) */
	if ((state == GP_JOB_PENDING) && job_ptr->het_job_id &&
	    (job_ptr->het_job_id != NO_VAL))
		out->het_job_id = job_ptr->het_job_id;
	{
		/* Pending: where it is tried; running: its own partition. */
		part_record_t *part = use_part ? use_part : job_ptr->part_ptr;
		uint32_t slices = 1;

		if (part && (slurm_conf.preempt_mode & PREEMPT_MODE_GANG))
			slices = part->max_share & ~SHARED_FORCE;
		out->run_limit = gpr_run_limit(job_ptr->time_limit,
					       part ? part->max_time : NO_VAL,
					       slices);
	}
	if ((state == GP_JOB_RUNNING) && _stays(job_ptr, out->qos))
		out->flags |= GP_JOB_STAYS;
	if (t->needs & GP_NEEDS_ACCOUNTS)
		out->account = job_ptr->account;
}

/* The priority plugin knows the user's throttle where gpupool capped it. */
static uint32_t (*user_throttle)(job_record_t *job_ptr) = NULL;

extern void gps_array_user_throttle_from(uint32_t (*fn)(job_record_t *))
{
	user_throttle = fn;
}

extern uint32_t gps_array_user_throttle(job_record_t *job_ptr)
{
	if (!job_ptr->array_recs)
		return 0;
	return user_throttle ? user_throttle(job_ptr) :
			       job_ptr->array_recs->max_run_tasks;
}

extern uint32_t gps_array_pending_tasks(job_record_t *job_ptr)
{
	/* Slurm's own count of the meta record's task ids (gpupool_rules.h) */
	return gpr_array_pending_tasks(
		IS_JOB_PENDING(job_ptr), job_ptr->array_task_id,
		job_ptr->array_recs ? job_ptr->array_recs->task_cnt : 0);
}

typedef struct {
	gp_snapshot_t *snap;
	const gps_tres_t *t;
	time_t now;
	bool running_only;
	uint32_t jobs;
	/* Where GPUs are read: node record -> snapshot index, scratch. */
	const int32_t *node_map;
	gps_node_scratch_t *scratch;
	const gps_resv_held_t *held;  /* reservations of some cores or GPUs */
	const gps_over_limit_t *over_limit;
} job_add_t;

static int _add_job(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	job_add_t *add = arg;
	gp_job_t job;
	char *parts = NULL, qos[GPS_QOS_LEN];
	int state = gps_job_state(job_ptr);

	if (state < 0)
		return 0;
	/* Jobs that hold GPUs: running and suspended ones */
	if (add->running_only && (state == GP_JOB_PENDING))
		return 0;
	gps_job_fill(job_ptr, state, add->t, NULL, add->now, &job, &parts,
		     qos);
	if ((state == GP_JOB_PENDING) &&
	    gps_over_limit(add->over_limit, job_ptr->job_id))
		job.flags |= GP_JOB_OVER_LIMIT;
	/* Whose hold it is matters at priority 0 only: no look-up for the rest */
	job.user_held = gpr_user_held(state == GP_JOB_PENDING,
				      job_ptr->priority,
				      (job_ptr->priority == 0) &&
					      gps_hold_is_ours(job_ptr));
	if (gp_snapshot_add_job(add->snap, &job) == GP_OK) {
		add->jobs++;
		if (add->node_map && (state != GP_JOB_PENDING)) {
			gps_job_nodes(add->snap, job_ptr, add->node_map,
				      add->scratch, add->t);
			gps_resv_job_held(add->snap, job_ptr, add->node_map,
					  add->t, add->held);
		}
	}
	xfree(parts);
	return 0;
}

/* A node's CPUs and memory, none where its GPUs count none. */
static void _node_cpus_mem(gp_snapshot_t *snap, int32_t node,
			   node_record_t *node_ptr)
{
	if ((node < 0) || gpr_node_unusable(node_ptr->node_state))
		return;
	(void) gp_snapshot_set_node_resources(snap, node, node_ptr->cpus,
					      node_ptr->real_memory);
}

/*
 * Slurm 26.05's select/cons_tres places a job capped at one node by Weight
 * and node order alone (_get_one_res never reaches LLN); sbatch caps
 * -N1-4 -n1 at one node too (opt.c: max_nodes = ntasks).  LLN alone does
 * not spread those jobs; Placement=spread does, by Weights.  Said once
 * per slurmctld.
 */
static void _lln_one_node_note(const char *part)
{
#if GPS_SLURM_AT_LEAST(26, 5)
	static bool said = false;

	if (said)
		return;
	said = true;
	info("gpupool: partition %s has LLN: Slurm 26.05 places a job capped at one node (-N1, or -n1 with -N1-4) by Weight and node order alone, without LLN; gpupool spreads such jobs by node Weights only for pools with Placement=spread, refreshed every pass (gpupool admin guide, Placement)",
	     part);
#else
	(void) part;
#endif
}

/*
 * Every partition with its nodes as snapshot indexes (`node_map`: a node
 * record's index, -1 for none); `idx` is scratch of node_record_count.
 */
static void _add_partitions(gp_snapshot_t *snap, const int32_t *node_map,
			    int32_t *idx)
{
	part_record_t *part_ptr;
	list_itr_t *it = list_iterator_create(part_list);
	int i;

	while ((part_ptr = list_next(it))) {
		size_t n = 0;
		int bits;
		if (!part_ptr->name)
			continue;
		if (part_ptr->node_bitmap) {
			bits = bit_size(part_ptr->node_bitmap);
			if (bits > node_record_count)
				bits = node_record_count;
			for (i = 0; i < bits; i++)
				if (bit_test(part_ptr->node_bitmap, i) &&
				    (node_map[i] >= 0))
					idx[n++] = node_map[i];
		}
		if (gp_snapshot_add_partition(snap, part_ptr->name, idx, n) !=
		    GP_OK)
			error("gpupool: partition %s left out of the snapshot",
			      part_ptr->name);
		else if ((part_ptr->flags & PART_FLAG_LLN) ||
			 (slurm_conf.select_type_param & GPS_SELECT_LLN)) {
			(void) gp_snapshot_set_partition_lln(snap);
			_lln_one_node_note(part_ptr->name);
		}
	}
	list_iterator_destroy(it);
}

/*
 * Every node with its GPUs (and where t->needs says, CPUs and memory);
 * with `usage`, its free GPUs and completing state too.  `node_map`
 * (node_record_count entries) gets each record's snapshot index.
 */
static void _add_nodes(gp_snapshot_t *snap, const gps_tres_t *t, time_t now,
		       bool usage, int32_t *node_map, gps_resv_held_t *held)
{
	node_record_t *node_ptr;
	bool resv = usage && gps_resv_held(now, t, held);
	int i;

	for (i = 0; i < node_record_count; i++)
		node_map[i] = -1;
	for (i = 0; (node_ptr = next_node(&i)); i++) {
		uint64_t gpus = 0;
		if (!gpr_node_unusable(node_ptr->node_state))
			gpus = gres_node_config_cnt(node_ptr->gres_list,
						    (char *) t->node_gres);
		if (gpus == NO_VAL64)
			gpus = 0;
		if (gpus > UINT32_MAX)
			gpus = UINT32_MAX;
		node_map[i] = gp_snapshot_add_node(snap, node_ptr->name,
						   (uint32_t) gpus);
		if (gpus && gps_node_gpus_explicit(node_ptr, t))
			(void) gp_snapshot_set_node_gpus_explicit(snap,
								  node_map[i]);
		if (t->needs & (GP_NEEDS_CPU | GP_NEEDS_MEM))
			_node_cpus_mem(snap, node_map[i], node_ptr);
		if (usage)
			gps_node_usage(snap, node_map[i], node_ptr, gpus, t,
				       resv ? held : NULL, i);
	}
	for (i = 0; resv && (i < held->ahead_cnt); i++) {
		const gps_resv_ahead_t *a = &held->ahead[i];
		if (node_map[a->n] >= 0)
			(void) gp_snapshot_add_node_reserved_ahead(
				snap, node_map[a->n], (int64_t) a->from,
				a->whole, a->cpus, a->gpus);
	}
}

extern gp_snapshot_t *gps_snapshot_build(const gps_tres_t *t,
					 bool running_only, time_t now,
					 uint32_t *job_cnt)
{
	gp_snapshot_t *snap;
	int32_t *node_map = NULL;
	gps_node_scratch_t scratch = { 0 };
	gps_resv_held_t held = { 0 };
	gps_over_limit_t over_limit = { 0 };
	bool usage = gps_nodes_readable(t);
	uint32_t jobs = 0;

	if (!(snap = gp_snapshot_create()))
		return NULL;
	/*
	 * Room for every job at once for a pass; a refresh's few running jobs
	 * grow their array (it is mapped and unmapped whole, per snapshot).
	 */
	gp_snapshot_reserve(snap, node_record_count,
			    (job_list && !running_only) ?
			    list_count(job_list) : 0);

	/* A refresh of running jobs reads nodes only for where GPUs are. */
	if ((!running_only || usage) && (node_record_count > 0)) {
		node_map = xcalloc(node_record_count, sizeof(int32_t));
		gps_node_scratch_alloc(&scratch);
		_add_nodes(snap, t, now, usage, node_map, &held);
		if (!running_only && part_list) {
			_add_partitions(snap, node_map, scratch.idx);
#if GPS_SLURM_AT_LEAST(26, 5)
			/* cons_tres _get_one_res: Weight alone, no LLN. */
			(void) gp_snapshot_set_one_node_by_weight(snap);
#endif
		}
	}
	if (!running_only && (t->needs & GP_NEEDS_ACCOUNTS))
		gps_account_tree_add(snap);

	if (job_list) {
		job_add_t add = { .snap = snap, .t = t, .now = now,
				  .running_only = running_only,
				  .node_map = usage ? node_map : NULL,
				  .scratch = &scratch, .held = &held,
				  .over_limit = &over_limit };

		/* Before the walk: it takes assoc_mgr locks, gps_job_fill too. */
		if (!running_only)
			gps_over_limit_collect(&over_limit);
		/*
		 * list_for_each, not an iterator: since Slurm 25.11
		 * preempt/gpupool refreshes from inside
		 * slurm_find_preemptable_jobs()'s list_for_each over job_list
		 * on the same thread, where only list_for_each may nest.
		 */
		(void) list_for_each(job_list, _add_job, &add);
		jobs = add.jobs;
	}
	xfree(node_map);
	gps_over_limit_free(&over_limit);
	gps_node_scratch_free(&scratch);
	gps_resv_held_free(&held);
	if (job_cnt)
		*job_cnt = jobs;
	return snap;
}


static int _fingerprint_job(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	uint64_t *sum = arg, h;

	if (gps_job_state(job_ptr) != GP_JOB_RUNNING)
		return 0;
	h = gps_mix64(job_ptr->job_id ^
		      ((uint64_t) job_ptr->restart_cnt << 32));
	h = gps_mix64(h ^ (uint64_t) job_ptr->start_time);
	h = gps_mix64(h ^ job_ptr->qos_id ^
		      ((uint64_t) job_ptr->total_cpus << 32));
	h = gps_mix64(h ^ (uint64_t) (uintptr_t) job_ptr->part_ptr);
	*sum += h;	/* a sum: the list's order does not matter */
	return 0;
}

extern uint64_t gps_running_fingerprint(void)
{
	uint64_t sum = 0;

	if (job_list)
		(void) list_for_each(job_list, _fingerprint_job, &sum);
	return sum;
}

/*
 * node_weights.c - Placement= (placement.hpp): after each pass, give nodes
 * the Weights the core asks for, as `scontrol update NodeName= Weight=`
 * would, so that cons_tres tries the fullest node that fits first (pack).
 *
 * Locks: gpp_weights_plan() runs inside the pass (node read lock held);
 * gpp_weights_apply() runs after it with no lock held and takes what
 * slurmctld's node update RPC takes: job, node and partition write, fed
 * read.  Nothing here touches disk or network.
 */
#include "config.h"

#include <string.h>

#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "gpupool_compat.h"
#include "gpupool_slurm.h"
#include "priority_gpupool.h"

/* Weights to set, by the agent thread only: names[i] gets weights[i]. */
static char **names = NULL;
static uint32_t *weights = NULL;
static int count = 0, room = 0;

static void _clear(void)
{
	int i;

	for (i = 0; i < count; i++)
		xfree(names[i]);
	count = 0;
}

/* Node records in the snapshot's order (gps_snapshot_build: next_node). */
extern void gpp_weights_plan(gp_engine_t *engine)
{
	node_record_t *node_ptr;
	uint32_t *current, *want;
	int i, n = 0;

	_clear();
	if (node_record_count <= 0)
		return;
	current = xcalloc(node_record_count, sizeof(uint32_t));
	want = xcalloc(node_record_count, sizeof(uint32_t));
	/*
	 * What scheduling and scontrol read: update_node() sets the config
	 * record's Weight (node_ptr->weight follows only at a reconfigure).
	 */
	for (i = 0; (node_ptr = next_node(&i)); i++)
		current[n++] = node_ptr->config_ptr ?
			node_ptr->config_ptr->weight : node_ptr->weight;
	if (gp_engine_node_weights(engine, current, want, (size_t) n)) {
		n = 0;
		for (i = 0; (node_ptr = next_node(&i)); i++, n++) {
			if (want[n] == current[n])
				continue;
			if (count == room) {
				room = room ? room * 2 : 16;
				xrecalloc(names, room, sizeof(char *));
				xrecalloc(weights, room, sizeof(uint32_t));
			}
			names[count] = xstrdup(node_ptr->name);
			weights[count++] = want[n];
		}
	}
	xfree(current);
	xfree(want);
}

#if !GPS_SLURM_AT_LEAST(23, 11)
/*
 * Slurm 22.05's update_node() splits a node's config record when the
 * Weight of some but not all of its nodes changes, and nothing merges
 * records back, so after enough passes every node of a packing pool has
 * its own record; slurmctld walks every record for every job it tests (a
 * bitmap copy each, and a node_set array of 16 entries per record).  Slurm
 * 23.11 and later merge records that are alike in all but their nodes
 * (node_mgr.c, consolidate_config_list: every minute, and at once when
 * gpp_weights_apply() asks); on 22.05 this does the same, with 23.11's
 * test of alike (22.05 has the same fields).  Node, job and partition
 * write locks held.  Returns how many records went.
 */
static bool _config_alike(config_record_t *c1, config_record_t *c2)
{
	return (c1 != c2) &&
	       (c1->boards == c2->boards) &&
	       (c1->core_spec_cnt == c2->core_spec_cnt) &&
	       (c1->cores == c2->cores) &&
	       (c1->cpu_bind == c2->cpu_bind) &&
	       !xstrcmp(c1->cpu_spec_list, c2->cpu_spec_list) &&
	       (c1->cpus == c2->cpus) &&
	       !xstrcmp(c1->feature, c2->feature) &&
	       !xstrcmp(c1->gres, c2->gres) &&
	       (c1->mem_spec_limit == c2->mem_spec_limit) &&
	       (c1->real_memory == c2->real_memory) &&
	       (c1->threads == c2->threads) &&
	       (c1->tmp_disk == c2->tmp_disk) &&
	       (c1->tot_sockets == c2->tot_sockets) &&
	       !xstrcmp(c1->tres_weights_str, c2->tres_weights_str) &&
	       (c1->weight == c2->weight);
}

static int _merge_alike_configs(void)
{
	ListIterator outer, inner;
	config_record_t *cur, *other;
	node_record_t *node_ptr;
	int i, gone = 0;

	outer = list_iterator_create(config_list);
	while ((cur = list_next(outer))) {
		bool grew = false;

		inner = list_iterator_create(config_list);
		while ((other = list_next(inner))) {
			if (!_config_alike(cur, other))
				continue;
			bit_or(cur->node_bitmap, other->node_bitmap);
			list_delete_item(inner);	/* frees `other` */
			grew = true;
			gone++;
		}
		list_iterator_destroy(inner);
		if (!grew)
			continue;
		xfree(cur->nodes);
		cur->nodes = bitmap2node_name(cur->node_bitmap);
		for (i = 0; (node_ptr = next_node(&i)); i++)
			if (bit_test(cur->node_bitmap, i))
				node_ptr->config_ptr = cur;
	}
	list_iterator_destroy(outer);
	return gone;
}
#endif

/*
 * Set what gpp_weights_plan() found, one update per Weight value (nodes of
 * one Weight go in one list).  `seen_node_update` moves past the change
 * this makes, so it wakes no pass of its own, unless another change came
 * since the pass (then the agent still sees that one).
 */
extern void gpp_weights_apply(time_t *seen_node_update)
{
	slurmctld_lock_t locks = { .job = WRITE_LOCK, .node = WRITE_LOCK,
				   .part = WRITE_LOCK, .fed = READ_LOCK };
	update_node_msg_t msg;
	int i, j, done = 0, merged = 0;
	bool *sent, unchanged;

	if (!count)
		return;
	sent = xcalloc(count, sizeof(bool));
	lock_slurmctld(locks);
	unchanged = (last_node_update == *seen_node_update);
	for (i = 0; i < count; i++) {
		if (sent[i])
			continue;
		slurm_init_update_node_msg(&msg);
		msg.node_names = xstrdup(names[i]);
		for (j = i + 1; j < count; j++)
			if (!sent[j] && (weights[j] == weights[i])) {
				xstrfmtcat(msg.node_names, ",%s", names[j]);
				sent[j] = true;
			}
		msg.weight = weights[i];
		if (update_node(&msg, slurm_conf.slurm_user_id) != SLURM_SUCCESS)
			debug("gpupool: Weight=%u not set on %s",
			      weights[i], msg.node_names);
		else
			done++;
		xfree(msg.node_names);
	}
#if !GPS_SLURM_AT_LEAST(23, 11)
	merged = _merge_alike_configs();
#else
	/* Slurm's own merge, now rather than at its next minute's tick. */
	merged = list_count(config_list);
	consolidate_config_list(true, true);
	merged -= list_count(config_list);
#endif
	if (unchanged)
		*seen_node_update = last_node_update;
	unlock_slurmctld(locks);
	xfree(sent);
	debug2("gpupool: Placement: %d node Weight(s) set in %d update(s), %d alike config record(s) merged",
	       count, done, merged);
	_clear();
}

extern void gpp_weights_fini(void)
{
	_clear();
	xfree(names);
	xfree(weights);
	room = 0;
}

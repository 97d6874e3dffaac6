/*
 * gpupool_accounts.c - Slurm's account tree for the snapshot: the account
 * queues' tree is Slurm's, read afresh each pass.
 *
 * A job's queue is its account, and departments are parent accounts: the
 * tree is assoc_mgr's, each account association (no user) with its parent
 * account, so that "sacctmgr modify account X set parent=Y" counts from
 * the next pass with no reconfigure.  Read under assoc_mgr's association
 * read lock, in Slurm's lock order as gpupool_qos.c: slurmctld locks
 * first, then assoc_mgr's; callers hold no assoc_mgr lock.
 *
 * Read again at each full pass (not the preempt plugin's running-only
 * refreshes, whose pass keeps its tree): assoc_mgr keeps no count of its
 * updates that a plugin could compare, and the walk is one pass over the
 * association list, users' associations skipped, plus one copy per
 * account: far below the pass's walk of job_list.  Only a configuration
 * with Account= entries asks for it (GP_NEEDS_ACCOUNTS).
 */
#include "config.h"

#include "gpupool_slurm.h"

extern void gps_account_tree_add(gp_snapshot_t *snap)
{
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK };
	slurmdb_assoc_rec_t *assoc;
	list_itr_t *it;
	uint32_t failed = 0;

	assoc_mgr_lock(&locks);
	if (assoc_mgr_assoc_list) {
		it = list_iterator_create(assoc_mgr_assoc_list);
		while ((assoc = list_next(it))) {
			if (assoc->user || !assoc->acct)
				continue;
			if (gp_snapshot_add_account(snap, assoc->acct,
						    assoc->parent_acct) != GP_OK)
				failed++;
		}
		list_iterator_destroy(it);
	}
	assoc_mgr_unlock(&locks);
	if (failed)
		error("gpupool: %u accounts left out of the account tree",
		      failed);
}

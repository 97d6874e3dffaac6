// Account levels in the pass: each pool's queue tree (the pool, then
// the accounts with an entry for it, parented by Slurm's account tree),
// the queue each job draws on, the queues' NP use that R2 checks with
// quota_block, and the fairshare divided down each tree.  Without Account=
// entries nothing here runs: no tree is built and no job looks anything up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "config.hpp"
#include "pass.hpp"
#include "queue_tree.hpp"
#include "snapshot.hpp"

namespace gpupool {

// Numbers the accounts (ev.account_ids) and builds each pool's tree
// (ev.pools[i].queues, sized, figures zero).  Pools no entry applies to
// get none.
void build_queue_trees(const Config &cfg, const Snapshot &snap, Evaluation &ev);

// An account's id for this pass; -1: no tree knows it (its jobs draw on
// the pool).
int32_t account_id(const Evaluation &ev, const std::string &account);

// The queue a job of `account` draws on in pool `ps` (0: the pool).
inline int32_t queue_in(const PoolState &ps, int32_t account) {
    if (!ps.queues.tree || account < 0) return 0;
    return ps.queues.tree->queue_of[static_cast<size_t>(account)];
}

// What one task of a job counts against quotas: its GPUs, and its CPUs and
// memory where the configuration counts them (zero otherwise).
Amounts task_amounts(const Config &cfg, uint32_t gpus, uint32_t cpus, uint64_t mem_mb);
// A job's account id and counted CPUs and memory into its pass record
// (PendingResult or RunningInfo).
template <typename Record>
void note_account(const Config &cfg, const Evaluation &ev, Record &r, const std::string &account, uint32_t cpus,
                  uint64_t mem_mb) {
    r.account = account_id(ev, account);
    const Amounts one = task_amounts(cfg, 0, cpus, mem_mb);
    r.cpus = static_cast<uint32_t>(one[kCpu]);
    r.mem_mb = static_cast<uint32_t>(std::min<uint64_t>(one[kMem], UINT32_MAX));
}
// The same from a pending result (its cpus and mem_mb are set only where counted).
inline Amounts task_amounts(const PendingResult &r) { return Amounts{r.gpus, r.cpus, r.mem_mb}; }

// `amount` times `count` added to (sign > 0) or taken from the NP figures
// of every queue from `queue` up to the root, the pool's own row (a pool
// without queues: only that row).  `running`: np_running too.
void add_np_path(PoolQueues &pq, int32_t queue, const Amounts &amount, uint64_t count, int sign, bool running);
// One row's NP figure in one resource moved by `n`.
inline void move_np(PoolQueues &pq, size_t q, size_t r, uint64_t n, int sign, bool running) {
    uint64_t &held = pq.np_running[q][r], &taken = pq.np_taken[q][r];
    if (sign > 0) {
        taken += n;
        if (running) held += n;
    } else if (running) {
        taken -= std::min(taken, n);
        held -= std::min(held, n);
    } else {
        // A reservation given back never takes what running jobs hold.
        taken = std::max(held, taken - std::min(taken, n));
    }
}
inline void add_np(PoolQueues &pq, int32_t queue, const Amounts &amount, uint64_t count, int sign, bool running) {
    // A pool without queues is its one row, read only for GPUs: the pass
    // moves it for every admitted and every running job.
    if (!pq.tree)
        move_np(pq, 0, kGpu, amount[kGpu] * count, sign, running);
    else
        add_np_path(pq, queue, amount, count, sign, running);
}
// A running job's amounts in every queue's `allocated` from its own to the root.
void add_allocated(PoolQueues &pq, int32_t queue, const Amounts &amount, int sign);

// What an admitted job of any tier takes ahead of the jobs after it in
// `ahead` of every queue from `queue` to the root (only where a queue of
// the tree has a Limit or LendingLimit: nothing reads it otherwise).
void add_ahead(PoolQueues &pq, int32_t queue, const Amounts &amount, uint64_t count, int sign);

// Running figures back to zero (refresh_running counts them again).
void clear_running(PoolQueues &pq);
// Reservations dropped: np_taken is np_running again, nothing ahead.
void clear_reserved(PoolQueues &pq);

// R2 with levels in one pool whose GPU quota takes `fit` tasks of the job
// (fit >= 1): how many of those every queue on the job's path takes too
// (quota_block decides each); 0 when not one, with `block` saying which
// queue, resource, use and quota.
uint64_t tasks_fitting_queues(const PendingResult &r, const PoolState &ps, uint64_t fit, QuotaBlock &block);

// Each queue's own part of a per-subtree figure (allocated, fairshare):
// its row less its children's rows.
std::vector<Amounts> own_part(const QueueTree &tree, const std::vector<Amounts> &subtree);
// Limit and LendingLimit (queue_tree.hpp's limit_block and
// lending_block) in one pool for `fit` tasks of a job of any tier (fit >=
// 1): how many fit both; 0 when not one, with `block` and `by` (Hold::Limit
// or Hold::LendingLimit) saying which queue refused, in what.
uint64_t tasks_within_limits(const PendingResult &r, const PoolState &ps, uint64_t fit, QuotaBlock &block, Hold &by);

// R1.2 with levels: pools by their standing, and within a pool its queues
// by allocated/fairshare (the most used counted resource), compared level
// by level from the top (a department's before its projects'), as Run:ai
// and KAI order queues.  Sets PoolQueues::standing and ev.standings; a pool
// without a tree is one standing.  After compute_fairshare, in a full pass.
void rank_queues(Evaluation &ev);
// R1.2: the standing of the job's most starved pool (with levels, of its
// queue there); ev.standings for a job in no pool.
uint32_t job_standing(const Evaluation &ev, const PendingResult &r);
// The checks tasks_fitting_queues makes of one task of the job, each
// queue's and resource's (QuotaLine::checks, for why).
std::vector<QueueCheck> queue_checks(const PendingResult &r, const PoolState &ps);

// R8 with levels: each tree's division (divide_among_queues) with the
// pool's GPU fairshare and its CPUs and memory as the root's share, and
// each queue's own pending demand.  After compute_fairshare.
void divide_queues(const Config &cfg, Evaluation &ev);

}  // namespace gpupool

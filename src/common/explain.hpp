// What the last pass means, pool by pool and job by job: the figures the
// `gpupool` command shows (status, queue, why).  Read-only over an
// evaluated Engine: nothing here decides; it explains what the engine's
// order, admission and victim walk (engine.cpp) decided, with the same
// rules.  Plain C++17, no Slurm, `now` passed in.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine.hpp"
#include "snapshot.hpp"

namespace gpupool {

// GPUs of one pool given to or taken from another.  `pool` -1: GPUs in
// nobody's quota (a node set's capacity beyond the sum of its quotas).
// A set of nodes shared by pools (design.md: "domain").
struct NodeSetExplain {
    int id = 0;                  // index in Explanation::node_sets
    std::vector<int> pools;      // config order
    uint32_t capacity = 0;       // GPUs of the union of their nodes
    uint32_t quota = 0;          // sum of the pools' quotas
    uint32_t used = 0;           // GPUs held by running jobs of the pools
    uint32_t free_gpus = 0;      // capacity - used (not below 0)
    uint32_t unassigned = 0;     // capacity beyond the quotas
};

struct PoolExplain {
    int node_set = -1;           // -1: the partition has no usable nodes
    bool shared = false;         // another pool shares its nodes
    uint32_t p_in_quota = 0;     // preemptible GPUs used inside quota
    uint32_t free_quota = 0;     // quota - NP used - NP reserved
    uint32_t free_gpus = 0;      // node set's free GPUs, at most capacity
    // GPUs over its quota its jobs could hold now: those of its nodes
    // that the other pools of its node set do not use, less its quota.
    uint32_t borrowable = 0;
    std::vector<PoolGpus> borrowed_from;  // sums to borrowed (see below)
    std::vector<PoolGpus> lent_to;        // sums to lent
    // Lent GPUs held by borrowers' jobs past their pool's MinRuntime:
    // what an entitled job of this pool could take back now.
    uint32_t reclaimable = 0;
    std::vector<uint32_t> pending_jobs_by_tier;  // tier index
    std::vector<uint32_t> pending_gpus_by_tier;
};

// Why a pending job waits: a small fixed set (doc/gpupool.1).
enum class WaitReason {
    Starting,          // nothing of gpupool's stops it: Slurm starts it
    QuotaFull,         // NP job: the pool's quota is taken
    QuotaTooSmall,     // NP job: needs more GPUs than the quota
    OverLimit,         // any tier: a queue on its path is at its Limit
    LendingLimit,      // any tier: what a LendingLimit keeps for its queue's own jobs
    WaitingForGpus,    // no free GPUs; nothing it may preempt
    BehindHigherTier,  // free GPUs go to jobs of a higher tier ahead
    WaitingForReclaim, // it may preempt enough to start (R4/R5)
    MinRuntime,        // it could preempt, but MinRuntime protects the jobs
    Held,              // held by its user or an admin
    NotEligible,       // Slurm: dependency, begin time, ...
    NotManaged,        // in no gpupool pool: only ordered
    NoOneNode,         // free GPUs enough in its pool, on no one node that fits it (nodes known)
};
const char *wait_reason_code(WaitReason r);   // "quota_full", ...
const char *wait_reason_text(WaitReason r);   // "quota full", ...

// A job that holds a pool's quota: running NP job or admitted NP job.
struct QuotaUser {
    uint32_t job_id = 0;
    uint32_t gpus = 0;
    bool running = false;      // false: admitted, pending
};

// A running job another may preempt for it, and the rule.
struct VictimRef {
    uint32_t job_id = 0;
    Rule rule = Rule::None;
    int64_t protected_until = 0;  // 0: past MinRuntime
    // The engine's verdict: its text, and the level that decided a reclaim.
    std::string why;
    Decider decided;
};

struct PendingExplain {
    uint32_t job_id = 0;
    int64_t position = -1;               // 0-based in R1 order; -1: not ordered (held)
    std::vector<std::pair<int, uint32_t>> pool_position;  // 0-based among the pool's pending jobs
    int tier = -1;
    std::vector<int> pools;
    uint32_t gpus = 0;                   // per task
    uint32_t tasks = 1;                  // an array record's pending tasks
    WaitReason reason = WaitReason::Starting;
    int reason_pool = -1;                // the pool the reason is about
    uint32_t held_with = 0;              // held for this component of its heterogeneous job
    int64_t protected_until = 0;         // MinRuntime: when enough victims are free
    std::vector<QuotaLine> quota;        // NP jobs with GPUs: one per pool
    std::vector<QuotaUser> quota_users;  // of reason_pool (quota reasons)
    std::vector<uint32_t> ahead;         // pending jobs ahead sharing a pool, in order
    std::vector<VictimRef> victims;      // WaitingForReclaim / MinRuntime
    // WaitingForGpus where preemption cannot free enough, in reason_pool's
    // node set: the jobs it may take, the GPUs free there plus theirs
    // (short of `gpus`), and the other preemptible jobs there that are not
    // its to take with the engine's reason (the first job of each reason).
    std::vector<VictimRef> may_take;
    uint64_t can_free = 0;
    std::vector<std::pair<uint32_t, std::string>> not_takeable;
    // NoOneNode: the free GPUs over reason_pool's nodes that take jobs and
    // the most on one (if that is enough, CPUs or memory are short there).
    uint64_t free_on_nodes = 0;
    uint32_t most_free_on_a_node = 0;

    uint64_t pending_gpus() const { return gpupool::pending_gpus(gpus, tasks); }
};

struct RunningExplain {
    uint32_t job_id = 0;
    int pool = -1;
    int tier = -1;
    uint32_t gpus = 0;
    int64_t start = 0;
    bool preemptible = false;
    VictimClass cls = VictimClass::Never;
    uint32_t rank = 0;                 // R6 reclaim order, 1 = first
    uint32_t borrowed = 0;             // its GPUs over its pool's quota
    std::vector<PoolGpus> lenders;     // whose GPUs those are
    int64_t protected_until = 0;       // start + MinRuntime while in force; 0 else
};

struct Explanation {
    int64_t now = 0;
    std::vector<NodeSetExplain> node_sets;
    std::vector<PoolExplain> pools;          // as Evaluation::pools
    std::vector<PendingExplain> pending;     // R1 order, then held jobs
    std::vector<RunningExplain> running;     // by reclaim rank
    const PendingExplain *find_pending(uint32_t job_id) const;
    const RunningExplain *find_running(uint32_t job_id) const;
};

struct ExplainInput {
    // Pending jobs Slurm will not start yet whatever the GPUs (a
    // dependency, a begin time): they take no free GPU in the walk.
    std::unordered_set<uint32_t> not_eligible;
    // Jobs ahead and users of the quota cost O(queue) per job: they are
    // listed for `detail_job` only, or for every job with `all_details`.
    uint32_t detail_job = 0;
    bool all_details = false;
};

// Explain the engine's last full pass over `snap` (the snapshot it
// evaluated: user-held jobs come from it).  Throws std::logic_error when
// the engine has no valid pass.
Explanation explain(const Engine &engine, const Snapshot &snap, const ExplainInput &in, int64_t now);

}  // namespace gpupool

// The data of one pass: what the engine keeps of the last one (pools,
// pending results in R1 order, running jobs, the containers they live in)
// and the types the rules (admission.cpp, victims.cpp, pass_fairshare.cpp,
// job_end.cpp) decide over.  Plain data; the rules that fill it are
// Engine's (engine.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "containers.hpp"
#include "queue_tree.hpp"
#include "snapshot.hpp"

namespace gpupool {

enum class Admission { Free, Quota, Held };
// Consolidate: a preemptible job moved so that an entitled job fits (Run:ai's
// consolidation), allowed only where it can start again at once elsewhere.
enum class Rule { None, InPool, Reclaim, Consolidate };
// R6 class of a running preemptible job within its pool's victim walk.
enum class VictimClass { OverFairshare = 0, OverQuota = 1, InQuota = 2, Never = 3 };

const char *rule_name(Rule r);
const char *victim_class_name(VictimClass c);

// One pool's queues: the pool at 0, below it the accounts with
// an entry for the pool (Account=), parented by Slurm's account tree.
// Built once per pass (levels.cpp), never changed after: shared by the
// pass's PoolState and its copies.
struct QueueTree {
    std::vector<QueueSpec> queues;   // tree order (queue_tree.hpp)
    // Per account (Evaluation::account_ids): the queue its jobs draw on,
    // its own entry's or its nearest ancestor's, else the pool (0).
    std::vector<int32_t> queue_of;
    bool limited = false;            // some queue has a Limit
    std::vector<int32_t> keepers;    // the queues with a LendingLimit, in tree order
};

// A pool's queue figures, each queue's summed over its subtree, per
// resource.  R2 reads and moves np_taken; the rest is the pass's, for
// status and why.
struct PoolQueues {
    std::shared_ptr<const QueueTree> tree;  // null: no account has an entry here
    // NP amounts held by running jobs, and those plus admitted
    // reservations.  Row 0 is the pool itself: every pool has it, a pool
    // without queues only it (PoolState's NP figures read it).
    std::vector<Amounts> np_running = std::vector<Amounts>(1), np_taken = std::vector<Amounts>(1);
    std::vector<Amounts> allocated = std::vector<Amounts>(1);  // all running jobs, row 0 included
    // What the admission walk admitted ahead, all tiers (Limit and
    // LendingLimit count it with `allocated`), row 0 included.
    std::vector<Amounts> ahead;
    std::vector<Amounts> pending;           // asked for by the queue's own pending jobs
    std::vector<Amounts> demand, fairshare; // divide_among_queues's
    // Decayed GPU usage of each queue's own jobs over the pool's decayed
    // capacity (R8's U, as PoolState::usage_share); row 0: the pool's jobs
    // that no account entry takes.
    std::vector<double> usage_share;
    // R1.2 with levels: each queue's standing among all pools' queues (0 =
    // most starved), set by a full pass (rank_queues); a pool without a
    // tree: its one standing there.  Empty without levels.
    std::vector<uint32_t> standing;
    // The victim walk per queue (rank_victims): for each preemptible job,
    // from RunningInfo::queue_walk on, each queue's allocation at the job's
    // place, from its own queue up to the root (check_reclaim's victim_at).
    std::vector<Amounts> victim_at;
    Amounts capacity{};                     // the pool's nodes' GPUs, CPUs, memory (0: unknown)
};

// The pools of one node set as the top queues of a tree: row 0 the node
// set (it counts nothing), below it its pools in configuration order, each
// counting its GPU quota.  R5 between pools asks check_reclaim of this tree,
// as R5 between queues asks it of a pool's own tree.
struct NodeSetTree {
    std::vector<QueueSpec> queues;
    std::vector<int> pool_of;                 // per row, its pool (row 0: -1)
    // Per row: its pool's GPUs in use and fairshare (sync_node_set_rows).
    std::vector<Amounts> allocated, fairshare;
};

struct PoolState {
    std::string name;
    int config_index = 0;
    int domain = -1;            // set of pools sharing nodes; -1: no nodes
    int32_t node_set = -1;      // its tree in Evaluation::node_sets, and its row there
    int32_t node_set_row = -1;
    uint32_t capacity = 0;
    uint32_t domain_capacity = 0;
    uint32_t quota = 0, weight = 1;
    int64_t min_runtime = 0;
    std::vector<uint32_t> p_used_by_tier;  // p_used() per tier index
    // Reserved twice: a job placed again by provisional() keeps its former
    // placement's reservation in np_reserved() until the next job end (or
    // refresh) takes this back.
    uint32_t np_overcount = 0;
    uint32_t pending_jobs = 0, pending_gpus = 0, held_jobs = 0;
    uint32_t fairshare = 0, lent = 0;
    double decayed_usage = 0, usage_share = 0;
    uint32_t standing = 0;      // 0 = most starved (R1.2)
    std::vector<uint32_t> pending_by_tier;  // pending jobs per tier index
    PoolQueues queues;          // account levels; empty without Account= entries

    // The pool's GPUs are its queue row's (row 0): held by running jobs,
    // by running NP jobs, and NP held or admitted (R2).
    uint32_t np_used() const { return static_cast<uint32_t>(queues.np_running[0][kGpu]); }
    uint64_t np_taken() const { return queues.np_taken[0][kGpu]; }
    uint32_t np_reserved() const { return static_cast<uint32_t>(np_taken() - np_used()); }
    uint32_t used() const { return static_cast<uint32_t>(queues.allocated[0][kGpu]); }
    uint32_t p_used() const { return used() > np_used() ? used() - np_used() : 0; }
    uint32_t borrowed() const { return used() > quota ? used() - quota : 0; }
    uint64_t quota_room() const { return room_left(np_taken(), quota); }
};

// "Never fits": a job asking more than a quota holds waits for good, even
// with that quota unused (Hold::QuotaTooSmall).  The one home of the test,
// for a pool's GPU quota and a queue's quota in any resource.
inline bool never_fits(uint64_t job, uint64_t quota) { return job > quota; }

// R2 with levels: one account queue's check of one resource for an NP job
// (why): the queue's NP use then (held and admitted ahead), its quota and
// what one task of the job asks.
struct QueueCheck {
    int32_t queue = 0;
    Resource resource = kGpu;
    uint64_t taken = 0, quota = 0, job = 0;
    bool fits() const { return room_left(taken, quota) >= job; }
    bool never_fits() const { return gpupool::never_fits(job, quota); }  // even with the queue empty
};

// R2's arithmetic for an NP job in one of its pools, at its turn in the
// admission walk: what admission checked, in the trace it fills when asked
// (Engine::admission_trace).
struct QuotaLine {
    int pool = -1;
    uint32_t quota = 0;
    uint32_t np_used = 0;      // running NP jobs
    uint32_t reserved = 0;     // admitted NP jobs ahead of it, not running yet
    uint32_t gpus = 0;         // this job (per task for an array)
    uint32_t needed = 0;       // GPUs of quota missing: used+reserved+gpus-quota
    // The pool's GPUs fitting, a queue of the pool's tree that has no room
    // for one task (queue_blocked false: none): which (0: the
    // pool's own CPU or memory quota), in which resource, its NP use (held
    // and admitted) and quota.
    bool queue_blocked = false;
    int32_t queue = 0;
    Resource resource = kGpu;
    uint64_t queue_used = 0, queue_quota = 0;
    // Every queue on the job's path (its own first, up to the pool's child)
    // in each resource its quota counts and the job asks for; empty when
    // the pool's GPU quota refused it first or the pool has no queues.
    std::vector<QueueCheck> checks;
    bool fits() const { return needed == 0 && !queue_blocked; }  // the verdict
    bool never_fits() const { return gpupool::never_fits(gpus, quota); }  // the pool's GPU quota, even unused
};

// The quota lines of the pending jobs (R1 order): those of the job at
// position i are lines[first[i]] up to lines[first[i + 1]].
struct AdmissionTrace {
    std::vector<QuotaLine> lines;
    std::vector<uint32_t> first;
};

// Pools a job may run in.
using PoolList = InlineList<int, 4>;

// A listed pool whose quota a pending NP job does not fit.
// With levels the refusal may be an account queue's of the
// pool, in one resource (`level`, packed to keep results small: every
// pending job has this list inline).
// Why a job is held; the text is made only when someone asks.  Limit and
// LendingLimit hold a job of any tier, the others NP jobs only.
enum class Hold : uint8_t { None, Quota, QuotaTooSmall, Starting, Limit, LendingLimit };

struct Refusal {
    int pool = -1;
    // The pool's NP GPUs then, used + reserved (a queue's: that queue's
    // use, capped; by Limit: its allocation and admitted ahead; by
    // LendingLimit: what the queue keeps unused for its own jobs).
    uint32_t taken = 0;
    uint32_t level = 0;  // 0: the pool's GPU quota; else queue << 2 | resource
    Hold by = Hold::Quota;  // or Limit, LendingLimit: which rule refused
    static uint32_t level_of(int32_t queue, Resource r) { return static_cast<uint32_t>(queue) << 2 | r; }
    int32_t queue() const { return static_cast<int32_t>(level >> 2); }
    Resource resource() const { return static_cast<Resource>(level & 3); }
    bool operator==(const Refusal &o) const {
        return pool == o.pool && taken == o.taken && level == o.level && by == o.by;
    }
};

struct PendingResult {
    uint32_t job_id = 0;
    uint32_t position = 0;
    uint32_t priority = 0;      // 0 when held
    uint32_t nominal = 0;       // the priority it has when not held
    Admission admission = Admission::Free;
    // It preempted and has not started yet: first in its tier (R1), so
    // that it gets the GPUs it freed; among such jobs, the one whose freed
    // node comes first in node order first (`freed_node`: that node's
    // index), so that Slurm's first fit puts each on its own node.
    bool preempted = false;
    // Slurm holds it back for a reason of its own (held_back(): after
    // every job it does not, R1): it waits for another job
    // (SnapJob::dependent), or it was over Slurm's limits at the last test
    // (SnapJob::over_limit; a job placed again between passes keeps it:
    // only a pass tests the limits).
    // Another component of its heterogeneous job is held back so (a
    // pass's finding; Slurm starts the components together or not at all).
    bool dependent = false, over_limit = false, het_held_back = false;
    bool held_back() const { return dependent || over_limit || het_held_back; }
    Hold hold = Hold::None;
    uint32_t factor_tier = 0, factor_fairshare = 0, factor_age = 0;
    int64_t orig_submit = 0;
    int tier = -1;
    // With levels only: its account (Evaluation::account_ids;
    // -1: none known), and below the CPUs and memory per task it asks for.
    int32_t account = -1;
    PoolList pools;             // managed pools it may run in
    uint32_t gpus = 0;
    uint32_t group_standing = 0;
    uint32_t freed_node = 0;
    uint32_t cpus = 0;
    // R2 over several pools: the listed pools whose quota it does not fit.
    // Held: all of them.  Admitted: Slurm must not start it there, only in
    // its other partitions (start_partitions()); nothing is reserved there.
    InlineList<Refusal, 2> refused;
    int hold_pool = -1;         // held: the first of them
    // Job array meta record: pending tasks it stands for (0/1: ordinary).
    uint32_t array_tasks = 0;
    uint32_t mem_mb = 0;        // MiB (4 PiB at most: more counts as that)
    // Tasks of this record that may start now: Quota: k >= 1 (1 for an
    // ordinary job), Held: 0, Free: max(1, array_tasks).
    uint32_t admitted_tasks = 0;
    // The heterogeneous job it is a component of (SnapJob::het_job_id; 0:
    // none): its components are admitted or held together (admit_together).
    // Held for another component's refusal: that component (its reason is
    // theirs; the refusal is counted once, there); 0: its own, or none.
    uint32_t het_job_id = 0, het_held_for = 0;

    uint32_t task_count() const { return gpupool::task_count(array_tasks); }
    uint64_t pending_gpus() const { return gpupool::pending_gpus(gpus, array_tasks); }
    bool refuses(int pool) const {
        for (const Refusal &x : refused)
            if (x.pool == pool) return true;
        return false;
    }
};

// R1, the one home of the pending order (policy.md): jobs Slurm does not
// hold back (a dependency, an association's or QOS's limit) before those
// it does, then tier
// priority (higher first), a job that preempted first in its tier (by its
// freed node's order), the standing of the job's pools (more starved
// first), original submit time (older first), job id (lower first).
// Ascending keys are that order; the pass sorts by it, job ends place jobs
// by it, the simulator's gpupool policy orders by it.
struct PendingOrderKey {
    bool held_back = false;  // Slurm holds it back: after every one it does not
    uint64_t major = 0;      // ~tier priority << 32 | standing
    int64_t submit = 0;      // original submit time
    uint32_t job_id = 0;
    friend bool operator<(const PendingOrderKey &a, const PendingOrderKey &b) {
        if (a.held_back != b.held_back) return b.held_back;
        if (a.major != b.major) return a.major < b.major;
        if (a.submit != b.submit) return a.submit < b.submit;
        return a.job_id < b.job_id;
    }
};
inline PendingOrderKey pending_order_key(const PendingResult &r, uint32_t tier_priority) {
    // Jobs that preempted by node order (node indices stay below 2^31), then the others by standing.
    constexpr uint32_t kNotPreempted = 1u << 31;
    const uint64_t standing = r.preempted ? std::min(r.freed_node, kNotPreempted - 1)
                                          : kNotPreempted + uint64_t(std::min(r.group_standing, kNotPreempted - 1));
    return PendingOrderKey{r.held_back(), (uint64_t(~tier_priority) << 32) | standing, r.orig_submit, r.job_id};
}
inline bool order_before(const PendingResult &a, uint32_t a_prio, const PendingResult &b, uint32_t b_prio) {
    return pending_order_key(a, a_prio) < pending_order_key(b, b_prio);
}

struct RunningInfo {
    uint32_t job_id = 0;
    int pool = -1;              // -1: not a gpupool pool
    int tier = -1;
    uint32_t gpus = 0;
    int64_t start = 0;
    uint32_t array_job_id = 0;  // task of this job array; 0: none
    // Its class in its pool's walk; with levels, its own queue's class if
    // that is further over (R6 ranks by it).
    VictimClass cls = VictimClass::Never;
    uint32_t rank = 0;          // R6 victim order, 1 = first
    // The R5 walk of its pool (preemptible jobs): its place, 0 = first,
    // and its GPUs over the pool's quota at that place (borrowed excess:
    // what another pool may reclaim).
    uint32_t walk = 0;
    uint32_t excess = 0;
    uint32_t pool_at = 0;       // its pool's GPUs in use at that place (R5 between pools)
    // With levels only: its account and CPUs and memory (MiB),
    // and where its queues' walk is (PoolQueues::victim_at; kNoWalk: none).
    int32_t account = -1;
    uint32_t cpus = 0, mem_mb = 0;
    static constexpr uint32_t kNoWalk = UINT32_MAX;
    uint32_t queue_walk = kNoWalk;
    bool stays = false;  // SnapJob::stays
    int64_t run_limit = 0;  // SnapJob::run_limit
    // Suspended (scontrol suspend): it holds its GPUs and is never a victim
    // (Evaluation::suspended).
    bool suspended = false;
};

// Jobs placed by provisional() since the last pass: results in one array
// (any order), found by id.  Kept from pass to pass with its room (see
// FlatIdMap), so that a submit adds one without a heap allocation.
class ProvisionalSet {
public:
    size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    void reserve(size_t n) {
        items_.reserve(n);
        index_.reserve(n);
    }
    const PendingResult *find(uint32_t id) const {
        const uint32_t *i = index_.find(id);
        return i ? &items_[*i] : nullptr;
    }
    bool contains(uint32_t id) const { return index_.contains(id); }
    void put(const PendingResult &r) {
        auto [i, added] = index_.try_emplace(r.job_id, static_cast<uint32_t>(items_.size()));
        if (added)
            items_.push_back(r);
        else
            items_[*i] = r;
    }
    void erase(uint32_t id) {
        const uint32_t *i = index_.find(id);
        if (!i) return;
        uint32_t pos = *i;
        index_.erase(id);
        if (pos + 1 != items_.size()) {
            items_[pos] = std::move(items_.back());
            *index_.find(items_[pos].job_id) = pos;
        }
        items_.pop_back();
    }
    void clear() {
        items_.clear();
        index_.clear();
    }
    std::vector<PendingResult>::iterator begin() { return items_.begin(); }
    std::vector<PendingResult>::iterator end() { return items_.end(); }
    std::vector<PendingResult>::const_iterator begin() const { return items_.begin(); }
    std::vector<PendingResult>::const_iterator end() const { return items_.end(); }

private:
    std::vector<PendingResult> items_;
    FlatIdMap<uint32_t> index_;
};

// A pool's pass jobs that a job end may admit (more of): held ones listing
// the pool, and job arrays admitted there with tasks still waiting.  `pos`:
// their places in the order (ascending); `gpus`: the GPUs each needs,
// kEmpty once it can gain nothing more before the next pass.
struct PoolCandidates {
    std::vector<uint32_t> pos;
    MinTree gpus;
};

// GPUs of one pool (pool -1: of no pool's quota) lent to or borrowed from
// another.
struct PoolGpus {
    int pool = -1;
    uint32_t gpus = 0;
};

// R3's node sets: pools that share a node share its GPUs.  Union-find over
// pools, each node owned by the first pool found on it; the one home of the
// grouping (the pass's domains; the simulator's node sets may use it too).
class PoolSets {
public:
    PoolSets(size_t pools, size_t nodes) : parent_(pools), owner_(nodes, -1) {
        for (size_t i = 0; i < pools; ++i) parent_[i] = static_cast<int>(i);
    }
    // Pool `pool` has node `node`: it joins the set of the node's owner.
    void add(int pool, size_t node) {
        int &o = owner_[node];
        if (o < 0)
            o = pool;
        else
            parent_[static_cast<size_t>(find(pool))] = find(o);
    }
    // The pool standing for pool x's set.
    int find(int x) {
        while (parent_[static_cast<size_t>(x)] != x)
            x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
        return x;
    }
    int owner(size_t node) const { return owner_[node]; }  // -1: in no pool

private:
    std::vector<int> parent_;
    std::vector<int> owner_;
};

// R3 lending within one node set (`members`: its pools in gpupool.conf
// order, sharing `capacity` GPUs): whose GPUs each member's borrowed GPUs
// are.  First GPUs in nobody's quota (pool -1), then the members' idle
// quota in that order, borrowers in that order too.  Per member, its
// lenders in that order.  The one home of the lending order: the engine's
// `lent` and the gpupool command's borrowed-from and lent-to read it.
std::vector<std::vector<PoolGpus>> lending(const std::vector<PoolState> &pools, const std::vector<size_t> &members,
                                           uint32_t capacity);

// Each node set tree's rows from its pools' use and fairshare: after a
// pass, a refresh and a job end (which change them).
void sync_node_set_rows(std::vector<NodeSetTree> &trees, const std::vector<PoolState> &pools);

// Everything the last pass decided.
struct Evaluation {
    int64_t now = 0;
    bool valid = false;
    std::vector<PoolState> pools;                 // config order
    std::vector<NodeSetTree> node_sets;           // pools sharing nodes, as trees
    std::unordered_map<std::string, int> pool_index;
    // The accounts the queue trees know (entries and Slurm's
    // tree), numbered; empty without Account= entries.
    std::unordered_map<std::string, int32_t> account_ids;
    // Some pool has a queue tree (Account= entries, or a pool's own CPU or
    // memory quota): jobs' accounts, CPUs and memory are counted.
    bool levels = false;
    // Standings in use (R1.2): pools, or with levels pools' queues; a job
    // in no pool gets this one, after all.
    uint32_t standings = 0;
    std::vector<PendingResult> pending;           // R1 order
    IdIndex pending_index;
    std::unordered_map<uint32_t, RunningInfo> running;
    // Suspended jobs: counted in their pools' use like running ones, but
    // kept out of `running` (the victims, the R5 walk, what a preemptor's
    // pool frees): Slurm never preempts them, so their GPUs free nothing.
    std::unordered_map<uint32_t, RunningInfo> suspended;
    // Job array id -> its tasks among `running`.
    std::unordered_map<uint32_t, uint32_t> array_running;
    // Jobs placed by provisional() since this pass.
    ProvisionalSet provisional;
    // Each heterogeneous job's components, by position in `pending` (R1
    // order), as admit() and admit_more() found them.
    std::unordered_map<uint32_t, std::vector<uint32_t>> het_parts;
    // Per pool (config order), for job_ended().
    std::vector<PoolCandidates> candidates;
    // Pass jobs that left the queue (refresh_running) since the last job end.
    std::vector<uint32_t> cleared;
    std::vector<std::string> warnings;
};

}  // namespace gpupool

// Internal to the replay: the mechanics' state (World) that policies read,
// and the interface every policy implements.  The replay (replay.cpp) owns
// time, nodes, allocations and events; a policy owns the order, the limits
// and who may be preempted for whom.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "engine.hpp"
#include "replay.hpp"
#include "workload.hpp"

namespace gpupool::sim {

// Place in a policy's scheduling order: `major` higher first, then `minor`
// lower first, then job id lower first.
struct OrderKey {
    uint64_t major = 0;
    int64_t minor = 0;
    uint32_t id = 0;
};
inline bool order_before(const OrderKey &a, const OrderKey &b) {
    if (a.major != b.major) return a.major > b.major;
    if (a.minor != b.minor) return a.minor < b.minor;
    return a.id < b.id;
}

enum class SimState : uint8_t {
    Future,    // not submitted yet
    Waiting,   // requeued, before its begin time
    Pending,   // may start
    Running,
    Done,      // completed or cancelled
};

struct SimJobState {
    uint32_t id = 0;
    uint32_t gpus = 0;
    int tier = 0;
    bool np = false;              // its tier is not preemptible
    bool can_start = true;        // lists a partition of the cluster that could hold it
    uint32_t parts = 0;           // index into World::part_lists
    int64_t submit = 0, duration = 0;
    SimState state = SimState::Future;
    int64_t eligible = 0;         // first moment it may start (Slurm's begin time)
    int64_t pending_since = 0;
    int64_t start = -1, end = -1; // current run
    int32_t part = -1;            // partition it runs in
    int32_t node = -1;            // its node when it runs on one
    uint32_t multi = UINT32_MAX;  // else: index into World::multi_alloc
    uint32_t restarts = 0;
    int64_t preempted_at = INT64_MIN;  // pending: when it last preempted (kill_delay)
    uint32_t cls = UINT32_MAX;    // pending class (replay.cpp)
    int64_t ckey = 0;             // its class key there
    uint32_t run_pos = UINT32_MAX;   // in World::running
    uint32_t p_pos = UINT32_MAX;     // in World::running_preemptible
};

struct TierInfo {
    std::string name;
    uint32_t priority = 0;
    bool preemptible = false;
    bool removable = true;        // REQUEUE or CANCEL (SUSPEND needs gang: never removed)
    bool requeue = true;          // else cancelled when preempted
};

// What the mechanics know, read by policies.
struct World {
    const SimCluster *cluster = nullptr;
    const Workload *workload = nullptr;
    const Config *config = nullptr;
    ReplayOptions options;
    std::vector<SimJobState> jobs;                 // Workload order
    std::vector<std::vector<int32_t>> part_lists;  // a job's partitions, in its order
    std::vector<std::vector<uint8_t>> part_has_node;
    std::vector<int32_t> pool_of_part;             // gpupool.conf pool index, -1: not a pool
    std::vector<int32_t> part_of_pool;             // pool index -> partition, -1: none
    std::vector<int64_t> min_runtime_of_part;      // the pool's MinRuntime (or the global one); 0: none
    std::vector<TierInfo> tiers;
    std::vector<std::vector<std::pair<int32_t, uint32_t>>> multi_alloc;  // node, GPUs
    std::vector<uint32_t> running;                 // job indices
    std::vector<uint32_t> running_preemptible;     // running jobs of preemptible tiers
    std::vector<uint32_t> part_used;               // GPUs of jobs running in each partition
    std::vector<uint32_t> completing_gpus;         // per node: GPUs victims hold until their kill ends

    const std::string &part_name(int32_t p) const { return cluster->partitions[static_cast<size_t>(p)].name; }
    const SimJob &spec(uint32_t j) const { return workload->jobs[j]; }
    // Does the running job hold GPUs on a node of partition p?
    bool overlaps(uint32_t j, int32_t p) const;
    // Nodes the running job holds.
    uint32_t node_count(uint32_t j) const;
};

struct PolicyCounters {
    uint64_t passes = 0, refreshes = 0;
};

class Policy {
public:
    explicit Policy(World &world) : w_(world) {}
    virtual ~Policy() = default;

    // Events, as the replay applies them at one instant: ends, requeues
    // and eligibility, submits; then before_walk(); then the walk (starts).
    virtual void on_submit(uint32_t /*j*/, int64_t /*t*/) {}
    // Preempted and requeued: it is pending again and may start at its
    // `eligible` time; its GPUs are free, or completing (kill_delay).
    virtual void on_requeue(uint32_t /*j*/, int64_t /*t*/) {}
    // A preempted job's kill ended: its GPUs are free (kill_delay).
    virtual void on_kill_ended(int64_t /*t*/) {}
    // Its begin time came.
    virtual void on_eligible(uint32_t /*j*/, int64_t /*t*/) {}
    // Completed, or cancelled by preemption: its GPUs are free.
    virtual void on_end(uint32_t /*j*/, int64_t /*t*/) {}
    virtual void on_start(uint32_t /*j*/, int64_t /*t*/) {}
    // j preempted `victims` and waits for their kill (kill_delay).
    virtual void on_preempted(uint32_t /*j*/, const std::vector<uint32_t> & /*victims*/, int64_t /*t*/) {}
    virtual void before_walk(int64_t /*t*/) {}
    // Pending jobs whose class_key may have changed since the last call.
    virtual void take_rekeyed(std::vector<uint32_t> & /*out*/) {}
    // A time after `t` the policy wants to look again (a pass due); none:
    // INT64_MAX.
    virtual int64_t next_wakeup(int64_t /*t*/) const { return INT64_MAX; }

    // Scheduling order.  `class_key` orders jobs that ask the same (same
    // partitions, tier and GPUs), with the id; it must agree with
    // order_key among them, and may change while the job is pending only
    // for the jobs take_rekeyed() names (the replay moves them).
    virtual OrderKey order_key(uint32_t j) const = 0;
    virtual int64_t class_key(uint32_t j) const = 0;
    // Held (gpupool: quota): not tried.
    virtual bool held(uint32_t /*j*/) const { return false; }
    // Partitions it may start in now, in the order Slurm tries them.
    virtual void start_partitions(uint32_t j, std::vector<int32_t> &out);
    // Limits beyond the nodes (partition QOS GrpTRES).
    virtual bool within_limits(uint32_t /*j*/, int32_t /*p*/) const { return true; }
    virtual bool preempts() const { return false; }
    // May the start of running job j let a job tried before it in this
    // walk preempt now (j a new candidate, or its pool or queue taken over
    // its quota so that their borrowers become reclaimable)?  The class
    // walk then tries the failed classes' later jobs, as the reference
    // walk tries every job.
    virtual bool start_opens_preemption(uint32_t /*j*/) const { return preempts(); }
    // Does a victim search that failed for a job fail for every job of its
    // partition and tier that asks more GPUs (until something starts or
    // stops)?  Not with gpupool's swaps: a larger job takes its pool
    // further past its quota, and so may give more in a swap.
    virtual bool larger_fails_too() const { return true; }
    // Running jobs that may be preempted for j in partition p, in the
    // order they are to be taken.
    virtual void candidates(uint32_t /*j*/, int32_t /*p*/, int64_t /*t*/, std::vector<uint32_t> & /*out*/) {}
    // Did a held job become admitted since the last call (gpupool:
    // job_ended)?  The replay walks again at the same instant.
    virtual bool take_admission_change() { return false; }
    // Candidates may come from a view of the running jobs older than the
    // last start or end (gpupool with pass_interval > 1); the replay then
    // asks for a fresh view before it preempts, and asks again.
    virtual bool view_stale() const { return false; }
    virtual void refresh_view(int64_t /*t*/) {}

    PolicyCounters counters;

protected:
    // Slurm's own order, as the strict and borrow baselines model it: the
    // QOS's priority (the tier's), then the time the job became eligible.
    OrderKey qos_then_eligible(uint32_t j) const {
        const SimJobState &s = w_.jobs[j];
        OrderKey k;
        k.major = w_.tiers[static_cast<size_t>(s.tier)].priority;
        k.minor = s.eligible;
        k.id = s.id;
        return k;
    }

    World &w_;
};

// The strict and borrow baselines: Slurm's own order (qos_then_eligible),
// jobs of a class ordered by the time they became eligible.
class SlurmOrderPolicy : public Policy {
public:
    using Policy::Policy;
    OrderKey order_key(uint32_t j) const override { return qos_then_eligible(j); }
    int64_t class_key(uint32_t j) const override { return w_.jobs[j].eligible; }
};

std::unique_ptr<Policy> make_gpupool_policy(World &world);
std::unique_ptr<Policy> make_strict_policy(World &world);
std::unique_ptr<Policy> make_borrow_policy(World &world);
std::unique_ptr<Policy> make_fifo_policy(World &world);

}  // namespace gpupool::sim

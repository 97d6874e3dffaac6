// The replay's state and steps (replay.cpp: setup and the instants;
// replay_nodes.cpp: first-fit allocation and the victim search on a copy
// of the nodes; replay_walk.cpp: pending classes, starts and stops, the
// scheduling walk).  Internal to src/sim: the mechanics are described at
// the top of replay.cpp.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "engine.hpp"
#include "policy.hpp"
#include "replay.hpp"
#include "sim_metrics.hpp"

namespace gpupool::sim::replay_detail {

// Largest free GPUs over a partition's nodes, in partition order, with
// "first node holding at least g" in O(log n).
class MaxTree {
public:
    void init(size_t n) {
        size_ = 1;
        while (size_ < n) size_ <<= 1;
        t_.assign(2 * size_, 0);
    }
    void set(size_t i, uint32_t v) {
        i += size_;
        t_[i] = v;
        for (i >>= 1; i; i >>= 1) t_[i] = std::max(t_[2 * i], t_[2 * i + 1]);
    }
    uint32_t max() const { return t_.empty() ? 0 : t_[1]; }
    // First index >= from with value >= g; SIZE_MAX if none.
    size_t find(size_t from, uint32_t g) const {
        if (t_.empty() || from >= size_) return SIZE_MAX;
        return find_in(1, 0, size_, from, g);
    }

private:
    size_t find_in(size_t node, size_t lo, size_t hi, size_t from, uint32_t g) const {
        if (hi <= from || t_[node] < g) return SIZE_MAX;
        if (hi - lo == 1) return lo;
        size_t mid = (lo + hi) / 2;
        size_t r = find_in(2 * node, lo, mid, from, g);
        return r != SIZE_MAX ? r : find_in(2 * node + 1, mid, hi, from, g);
    }
    size_t size_ = 0;
    std::vector<uint32_t> t_;
};

struct Member {
    int64_t key;
    uint32_t id;
    uint32_t job;
    bool operator<(const Member &o) const { return key != o.key ? key < o.key : id < o.id; }
};

struct PendingClass {
    std::set<Member> members;
    std::set<Member>::iterator cursor;
};

struct HeapEntry {
    OrderKey key;
    uint32_t cls;
};
// std::push_heap keeps the largest first: "largest" = first in order.
struct HeapLess {
    bool operator()(const HeapEntry &a, const HeapEntry &b) const { return order_before(b.key, a.key); }
};

struct EndEvent {
    int64_t time;
    uint32_t job;
    uint32_t run;  // restarts when it was scheduled: stale if it changed
    bool operator>(const EndEvent &o) const { return time != o.time ? time > o.time : job > o.job; }
};

struct Timed {
    int64_t time;
    uint32_t job;
    bool operator>(const Timed &o) const { return time != o.time ? time > o.time : job > o.job; }
};

// Killing: it preempted and waits for its victims' kill (kill_delay).
// FailedAlone: it failed for a reason of its own, having preempted before
// (its preemption's guard runs, or it may start only where it preempted):
// the next job of its class may still start.
enum class Tried { Failed, Started, Preempted, Killing, FailedAlone };


class Replay {
public:
    Replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind kind,
           const ReplayOptions &options);
    ReplayResult run();

private:
    void setup();
    void setup_tiers();
    void setup_partitions();
    void setup_jobs(const Engine &tiers);
    void setup_metrics();
    uint32_t intern_parts(const std::vector<std::string> &pools, bool *known);
    uint32_t class_of(uint32_t j);

    // Nodes.
    void node_changed(int32_t node);
    void setup_placement();
    uint32_t offered(size_t node) const;
    uint64_t node_order(size_t pi, size_t node, uint32_t avail) const;
    void place_key(size_t node, bool add);
    void refresh_keys();
    uint32_t pack_key(size_t node) const;
    void note_np_gpus(uint32_t j, int sign);
    size_t choose_node(size_t pi, uint32_t g) const;
    int64_t kill_delay_of(uint32_t j);
    bool backfill_due(int64_t t) const;
    int64_t next_backfill(int64_t t) const;
    bool fits_free(int32_t p, uint32_t g) const;
    void allocate(uint32_t j, int32_t p);
    void release(uint32_t j);
    void give(int32_t node, uint32_t g);
    void reserve(uint32_t j, const std::vector<int32_t> &nodes);
    void unreserve(uint32_t j);
    bool fits_idle(int32_t p, uint32_t g) const;
    void block_nodes_of(int32_t p);
    void block_node(int32_t node);
    bool planned_for_other(size_t node, uint32_t j) const;
    void plan_at_kill_end(uint32_t j, const std::vector<int32_t> &parts, uint32_t g);
    void unblock_nodes();
    void hold_until(uint32_t j, int64_t t);
    bool may_preempt(uint32_t j, int64_t t, bool *guarded);

    // Pending classes.
    void enter_pending(uint32_t j);
    void leave_pending(uint32_t j);
    void rekey();

    // Walk.
    bool walk(int64_t t);
    bool reference_walk(int64_t t);
    Tried try_start(uint32_t j, int64_t t);
    bool preempt_for(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims);
    bool find_victims(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims);
    void start(uint32_t j, int32_t p, int64_t t);
    void stop(uint32_t j, int64_t t, bool preempted);

    // Instants.
    bool take_events(int64_t t);
    void walk_if_due(int64_t t);
    void finish(int64_t last);
    int64_t next_instant() const;
    void add_timer(int64_t t);
    void record_interval(int64_t from, int64_t to);
    void note_preemptible_gpus(uint32_t j, int32_t part, int sign);
    BelowCause below_cause(size_t pool, uint32_t g) const;

    const SimCluster &cluster_;
    const Workload &workload_;
    const Config &config_;
    PolicyKind kind_;
    World w_;
    std::unique_ptr<Policy> policy_;
    ReplayResult result_;
    std::vector<std::pair<uint32_t, int64_t>> restarts_;  // (job, time) of jobs with a recorded start

    std::vector<uint32_t> free_;                       // per node
    std::vector<MaxTree> trees_;                       // per partition
    std::vector<std::vector<int32_t>> part_pos_;       // partition -> node -> position, -1
    std::vector<std::vector<std::pair<int32_t, uint32_t>>> node_parts_;  // node -> (partition, position)
    std::vector<uint32_t> part_free_;                  // per partition
    std::vector<uint32_t> part_gpus_;                  // per partition: all its GPUs
    std::vector<uint32_t> part_max_node_;              // per partition: GPUs of its largest node
    std::vector<uint32_t> free_multi_;                 // free slots of World::multi_alloc
    // Placement (replay_nodes.cpp): how each partition chooses a node.
    // Keyed: by the node Weights gpupool gives for pack (base rank, then
    // pack_key as the last refresh saw it on packing nodes, 0 on the
    // others), then position; Spread: the node with the most free GPUs
    // (LLN); First: first fit.
    enum class Choice : uint8_t { First, Keyed, Spread, BestFit };
    std::vector<Choice> part_choice_;
    std::vector<uint8_t> node_packs_;                  // per node: its Weight follows its free GPUs
    std::vector<uint32_t> base_rank_;                  // per node: rank of its slurm.conf Weight
    std::vector<uint32_t> key_;                        // per node: pack_key at the last refresh (packing nodes)
    std::vector<uint32_t> node_np_;                    // per node: GPUs of non-preemptible jobs
    uint32_t key_mod_ = 1;                             // pack_key = GPUs not held by NP jobs * key_mod_ + free
    std::vector<uint8_t> key_dirty_;
    std::vector<uint32_t> dirty_nodes_;
    // Keyed partitions: per base rank, the level nodes (Weight base * scale)
    // and the packing nodes by key_, each a set of positions.
    struct KeyBuckets {
        std::set<uint32_t> level;
        std::vector<std::set<uint32_t>> by_key;
    };
    std::vector<std::vector<KeyBuckets>> buckets_;     // partition -> base rank

    std::unordered_map<std::string, uint32_t> parts_index_;
    // (partitions, tier, GPUs), and with Account= entries the account,
    // CPUs and memory (what R2 with levels holds a job by) -> class.
    std::map<std::tuple<uint32_t, int, uint32_t, std::string, uint32_t, uint64_t>, uint32_t> class_index_;
    std::vector<PendingClass> classes_;
    std::vector<HeapEntry> heap_;
    std::vector<uint32_t> failed_;
    std::vector<int32_t> parts_scratch_;
    std::vector<uint32_t> cand_scratch_, victims_scratch_, rekey_scratch_;
    std::unordered_set<uint32_t> first_keyed_;  // pending jobs with a class key below 0 (a preemptor's)
    // Failed preemption searches since the last start or stop: per
    // partition and tier, the fewest GPUs asked.
    std::vector<uint32_t> search_failed_, search_gen_;
    std::unordered_map<uint64_t, uint32_t> search_failed_exact_;  // (memo, GPUs) -> walk (larger_fails_too false)
    uint32_t walk_gen_ = 1;

    size_t next_submit_ = 0;
    std::priority_queue<EndEvent, std::vector<EndEvent>, std::greater<EndEvent>> ends_;
    std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> eligible_;
    std::multimap<int64_t, std::vector<std::pair<int32_t, uint32_t>>> completing_;  // kill ends
    std::unordered_map<uint32_t, std::vector<uint32_t>> killing_victims_;  // preemptor -> its victims
    std::unordered_map<uint32_t, std::vector<int32_t>> reserved_nodes_;    // preemptor -> its victims' nodes
    static constexpr uint32_t kNoJob = UINT32_MAX;
    std::vector<uint32_t> reserved_by_;  // per node: the preemptor waiting on it, kNoJob
    std::vector<std::pair<int32_t, uint32_t>> reservations_;  // (node, preemptor)
    size_t kills_ = 0;  // victims preempted so far (ReplayOptions::kill_delays)
    bool backfill_walk_ = false;        // this walk is a backfill cycle (may preempt)
    bool backfill_owed_ = false;        // a main walk left a job that a backfill cycle may preempt for
    uint32_t cycle_preemptors_ = 0;     // jobs this backfill cycle preempted for
    int64_t preempt_lag_ = 0;           // the preemption at hand comes this much after the walk (backfill_spacing_milli)
    bool changed_since_backfill_ = false;  // an event (not a timer) since the last backfill cycle
    std::vector<uint8_t> part_blocked_; // main walk: partitions whose first job did not fit
    // Main walk: nodes of those partitions, which no job of any partition
    // gets until the walk ends (Slurm's failed partitions' nodes leave
    // avail_node_bitmap).
    std::vector<uint8_t> node_blocked_;
    std::vector<int32_t> blocked_nodes_;
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> timers_;
    std::unordered_set<int64_t> timer_set_;

    // Metrics state.
    uint32_t used_total_ = 0;
    std::vector<uint32_t> pool_np_used_;
    std::vector<uint32_t> pool_pending_gpus_;
    uint64_t waiting_jobs_ = 0;  // pending or waiting out a requeue, and able to start some day
    std::vector<std::map<uint32_t, uint32_t>> pool_np_wait_;  // eligible NP jobs: GPUs -> count
    std::vector<MetricsRecorder::PoolNow> pool_now_;
    // Per node and pool (the last column: no pool), GPUs of running
    // preemptible jobs, kept as they start and stop (below_cause).
    std::vector<uint32_t> node_p_gpus_;
    std::vector<uint32_t> node_p_total_;  // per node: the sum of its row
    // Eligible waiting NP jobs per pool in tier and submit order, and the
    // instant each first fitted its pool's quota (-1: not yet).
    struct QuotaOrder {
        uint32_t rank;  // tier priority, inverted: higher first
        int64_t submit;
        uint32_t id, job;
        bool operator<(const QuotaOrder &o) const {
            return std::tie(rank, submit, id) < std::tie(o.rank, o.submit, o.id);
        }
    };
    std::vector<std::set<QuotaOrder>> pool_np_order_;
    std::vector<int64_t> within_quota_at_;
    std::vector<int64_t> within_quota_waits_;
    std::vector<uint32_t> within_quota_gpus_;  // the GPUs of each of those jobs
    QuotaOrder quota_order(uint32_t j) const;
    bool fits_quota_in_order(size_t pool, uint32_t j) const;
    int32_t demand_pool(int32_t part, uint32_t j) const;
    uint32_t mark_within_quota(size_t pool, int64_t t);
    std::unique_ptr<MetricsRecorder> recorder_;
    uint64_t done_ = 0;
    int64_t last_walk_ = INT64_MIN;
    uint64_t requeue_limited_ = 0;
    std::string first_limited_;
    bool walk_owed_ = false;
};


}  // namespace gpupool::sim::replay_detail

// The replay's mechanics: what Slurm does around the policy.  Choices, and
// why (the live test cluster of scripts/cluster.sh is the reference):
//
// - Time is whole seconds.  Everything that happens in one second is one
//   instant: ends first, then requeued jobs whose begin time came, then
//   submits (workload order), then the policy's look (gpupool: a pass if
//   due), then the scheduling walk.  Nothing happens between instants.
// - GPUs are whole.  A job fits on one node of its partition when it asks
//   for no more GPUs than the partition's largest node holds: the first
//   node, in partition order, with enough free GPUs (first fit).  A larger
//   job spans nodes, taking free GPUs node by node in partition order.
//   CPUs and memory are not modelled.
// - The walk tries pending jobs in the policy's order; for a job listing
//   several partitions, the ones the policy lets it start in, in its
//   order, as Slurm tries one queue record per partition: in each, the
//   free GPUs first, then preemption.  A job that cannot start blocks
//   nobody behind it: the jobs of the live cluster (and of sacct dumps
//   replayed here) carry no time limit, so sched/backfill reserves nothing
//   for it (its start lies beyond bf_window) and starts what fits behind
//   it.  Held jobs are not tried.
// - Preemption (cons_tres _run_now): the policy's candidates, in its
//   order, are taken off a copy of the nodes one at a time until the job
//   fits; of that prefix, those on the nodes the job then gets are
//   preempted (a candidate elsewhere is left running).  Victims of a tier
//   with PreemptMode=suspend are never taken (it needs gang scheduling).
//   A requeued victim loses its progress, keeps its original submit time
//   for the policy, and may start again cred_expire + 1 s later (Slurm's
//   begin_time); a cancelled one is gone.  The job starts in the same
//   instant its victims stop.
// - Jobs that ask the same (partitions, tier, GPUs) form a class, ordered
//   by the policy's class key; when the first pending one of a class
//   cannot start, none of the others can at that moment, so the walk
//   takes the class off until a preemption frees GPUs (then the class is
//   tried again from its first job behind the walk's position).  This
//   keeps a walk proportional to the classes, not to the queue.  After a
//   walk that preempted, or in which the policy admitted held jobs, the
//   replay walks again in the same instant (Slurm schedules again at once).
// - MinRuntime: the instant a preemptible job's protection ends is an
//   instant (a job waiting for it is tried then).
#include "replay.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sim_metrics.hpp"
#include "policy.hpp"
#include "gpupool.h"
#include "preemption.hpp"

namespace gpupool::sim {

const char *policy_name(PolicyKind p) {
    switch (p) {
    case PolicyKind::Gpupool: return "gpupool";
    case PolicyKind::Strict: return "strict";
    case PolicyKind::Borrow: return "borrow";
    case PolicyKind::Fifo: return "fifo";
    }
    return "?";
}

std::vector<PolicyKind> parse_policies(const std::string &text) {
    std::vector<PolicyKind> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        const std::string name = text.substr(start, end - start);
        std::vector<PolicyKind> add;
        if (name == "all")
            add = {PolicyKind::Gpupool, PolicyKind::Strict, PolicyKind::Borrow, PolicyKind::Fifo};
        else if (name == "gpupool")
            add = {PolicyKind::Gpupool};
        else if (name == "strict")
            add = {PolicyKind::Strict};
        else if (name == "borrow")
            add = {PolicyKind::Borrow};
        else if (name == "fifo")
            add = {PolicyKind::Fifo};
        else
            throw InputError("--policy: unknown policy '" + name + "' (gpupool, strict, borrow, fifo or all)");
        for (PolicyKind k : add)
            if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
        start = end + 1;
    }
    return out;
}

const char *job_end_name(JobEnd e) {
    switch (e) {
    case JobEnd::Completed: return "completed";
    case JobEnd::Cancelled: return "cancelled";
    case JobEnd::NeverStarted: return "never_started";
    case JobEnd::RequeueLimit: return "requeue_limit";
    }
    return "?";
}

bool World::overlaps(uint32_t j, int32_t p) const {
    const SimJobState &s = jobs[j];
    const std::vector<uint8_t> &has = part_has_node[static_cast<size_t>(p)];
    if (s.node >= 0) return has[static_cast<size_t>(s.node)] != 0;
    if (s.multi == UINT32_MAX) return false;
    for (const auto &[node, gpus] : multi_alloc[s.multi])
        if (has[static_cast<size_t>(node)]) return true;
    return false;
}

uint32_t World::node_count(uint32_t j) const {
    const SimJobState &s = jobs[j];
    if (s.node >= 0) return 1;
    return s.multi == UINT32_MAX ? 0 : static_cast<uint32_t>(multi_alloc[s.multi].size());
}

void Policy::start_partitions(uint32_t j, std::vector<int32_t> &out) {
    out = w_.part_lists[w_.jobs[j].parts];
}

namespace {

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

enum class Tried { Failed, Started, Preempted };

class Replay {
public:
    Replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind kind,
           const ReplayOptions &options);
    ReplayResult run();

private:
    void setup();
    uint32_t intern_parts(const std::vector<std::string> &pools, bool *known);
    uint32_t class_of(const SimJobState &s);

    // Nodes.
    void node_changed(int32_t node);
    bool fits_free(int32_t p, uint32_t g) const;
    void allocate(uint32_t j, int32_t p);
    void release(uint32_t j);

    // Pending classes.
    void enter_pending(uint32_t j);
    void leave_pending(uint32_t j);

    // Walk.
    bool walk(int64_t t);
    bool reference_walk(int64_t t);
    Tried try_start(uint32_t j, int64_t t);
    bool preempt_for(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims);
    bool find_victims(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims);
    void start(uint32_t j, int32_t p, int64_t t);
    void stop(uint32_t j, int64_t t, bool preempted);

    // Instants.
    int64_t next_instant() const;
    void add_timer(int64_t t);
    void record_interval(int64_t from, int64_t to);

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
    std::vector<uint32_t> part_max_node_;              // per partition: GPUs of its largest node
    std::vector<uint32_t> free_multi_;                 // free slots of World::multi_alloc

    std::unordered_map<std::string, uint32_t> parts_index_;
    std::unordered_map<uint64_t, uint32_t> class_index_;
    std::vector<PendingClass> classes_;
    std::vector<HeapEntry> heap_;
    std::vector<uint32_t> failed_;
    std::vector<int32_t> parts_scratch_;
    std::vector<uint32_t> cand_scratch_, victims_scratch_;
    // Failed preemption searches since the last start or stop: per
    // partition and tier, the fewest GPUs asked.
    std::vector<uint32_t> search_failed_, search_gen_;
    uint32_t walk_gen_ = 1;

    size_t next_submit_ = 0;
    std::priority_queue<EndEvent, std::vector<EndEvent>, std::greater<EndEvent>> ends_;
    std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> eligible_;
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> timers_;
    std::unordered_set<int64_t> timer_set_;

    // Metrics state.
    uint32_t used_total_ = 0;
    std::vector<uint32_t> pool_np_used_;
    std::vector<uint32_t> pool_pending_gpus_;
    std::vector<std::map<uint32_t, uint32_t>> pool_np_wait_;  // eligible NP jobs: GPUs -> count
    std::vector<MetricsRecorder::PoolNow> pool_now_;
    std::unique_ptr<MetricsRecorder> recorder_;
    uint64_t done_ = 0;
    int64_t last_walk_ = INT64_MIN;
    uint64_t requeue_limited_ = 0;
    std::string first_limited_;
    bool walk_owed_ = false;
};

Replay::Replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind kind,
               const ReplayOptions &options)
    : cluster_(cluster), workload_(workload), config_(config), kind_(kind) {
    w_.cluster = &cluster;
    w_.workload = &workload;
    w_.config = &config;
    w_.options = options;
    if (w_.options.pass_interval < 1) w_.options.pass_interval = 1;
    if (w_.options.sched_interval < 0) w_.options.sched_interval = 0;
    if (w_.options.cred_expire < 0) w_.options.cred_expire = 0;
}

uint32_t Replay::intern_parts(const std::vector<std::string> &pools, bool *known) {
    std::string key;
    for (const std::string &p : pools) key += p + ',';
    auto [it, fresh] = parts_index_.try_emplace(key, static_cast<uint32_t>(w_.part_lists.size()));
    if (fresh) {
        std::vector<int32_t> list;
        for (const std::string &p : pools)
            for (size_t i = 0; i < cluster_.partitions.size(); ++i)
                if (cluster_.partitions[i].name == p) {
                    if (std::find(list.begin(), list.end(), static_cast<int32_t>(i)) == list.end())
                        list.push_back(static_cast<int32_t>(i));
                    break;
                }
        w_.part_lists.push_back(std::move(list));
    }
    *known = !w_.part_lists[it->second].empty();
    return it->second;
}

uint32_t Replay::class_of(const SimJobState &s) {
    const uint64_t key = (uint64_t(s.parts) << 40) ^ (uint64_t(static_cast<uint32_t>(s.tier)) << 32) ^ s.gpus;
    auto [it, fresh] = class_index_.try_emplace(key, static_cast<uint32_t>(classes_.size()));
    if (fresh) classes_.emplace_back();
    return it->second;
}

void Replay::setup() {
    const size_t nparts = cluster_.partitions.size(), nnodes = cluster_.nodes.size();
    // Tiers: the core's QOS mapping (DefaultTier for unknown QOS).
    Engine tiers;
    tiers.set_config(config_);
    for (const Tier &t : config_.tiers) {
        TierInfo ti;
        ti.name = t.name;
        ti.priority = t.priority;
        ti.preemptible = t.preemptible;
        // How a victim of this tier is stopped, by the core's R7 (as
        // preempt/gpupool asks it): slurm.conf's PreemptMode is REQUEUE on
        // the live cluster; every replayed job is requeueable.  Whether
        // the tier may be preempted at all is each policy's rule.
        const int mode = preempt_mode(true, static_cast<int>(t.preempt_mode), GP_MODE_REQUEUE, true);
        ti.removable = mode == GP_MODE_REQUEUE || mode == GP_MODE_CANCEL;
        ti.requeue = mode == GP_MODE_REQUEUE;
        w_.tiers.push_back(ti);
    }
    // Partitions and pools.
    w_.part_has_node.assign(nparts, std::vector<uint8_t>(nnodes, 0));
    w_.pool_of_part.assign(nparts, -1);
    w_.part_of_pool.assign(config_.pools.size(), -1);
    w_.min_runtime_of_part.assign(nparts, 0);
    w_.part_used.assign(nparts, 0);
    part_pos_.assign(nparts, std::vector<int32_t>(nnodes, -1));
    node_parts_.assign(nnodes, {});
    trees_.assign(nparts, MaxTree());
    part_free_.assign(nparts, 0);
    part_max_node_.assign(nparts, 0);
    free_.resize(nnodes);
    for (size_t n = 0; n < nnodes; ++n) free_[n] = cluster_.nodes[n].gpus;
    for (size_t p = 0; p < nparts; ++p) {
        const SimPartition &sp = cluster_.partitions[p];
        trees_[p].init(sp.nodes.size());
        for (size_t i = 0; i < sp.nodes.size(); ++i) {
            const uint32_t node = sp.nodes[i];
            if (node >= nnodes) throw InputError("partition " + sp.name + ": node index out of range");
            if (part_pos_[p][node] >= 0) continue;  // listed twice
            w_.part_has_node[p][node] = 1;
            part_pos_[p][node] = static_cast<int32_t>(i);
            node_parts_[node].emplace_back(static_cast<int32_t>(p), static_cast<uint32_t>(i));
            trees_[p].set(i, free_[node]);
            part_free_[p] += free_[node];
            part_max_node_[p] = std::max(part_max_node_[p], cluster_.nodes[node].gpus);
        }
        for (size_t k = 0; k < config_.pools.size(); ++k)
            if (config_.pools[k].name == sp.name) {
                w_.pool_of_part[p] = static_cast<int32_t>(k);
                if (w_.part_of_pool[k] < 0) w_.part_of_pool[k] = static_cast<int32_t>(p);
                const int64_t mr = config_.pools[k].min_runtime;
                w_.min_runtime_of_part[p] = mr >= 0 ? mr : config_.min_runtime;
            }
    }
    // Jobs.
    const size_t njobs = workload_.jobs.size();
    w_.jobs.resize(njobs);
    result_.jobs.resize(njobs);
    std::unordered_set<uint32_t> ids;
    ids.reserve(njobs);
    uint64_t unknown_parts = 0, too_big = 0;
    std::string unknown_example, too_big_example;
    for (size_t j = 0; j < njobs; ++j) {
        const SimJob &sj = workload_.jobs[j];
        if (sj.id == 0 || !ids.insert(sj.id).second)
            throw InputError("workload: job id " + std::to_string(sj.id) + (sj.id == 0 ? " is 0" : " is used twice") +
                             " (job " + sj.label + ")");
        if (sj.duration <= 0)
            throw InputError("workload: job " + std::to_string(sj.id) + " (" + sj.label + ") has no duration");
        if (j > 0 && sj.submit < workload_.jobs[j - 1].submit)
            throw InputError("workload: jobs are not sorted by submit time (job " + std::to_string(sj.id) + ")");
        SimJobState &s = w_.jobs[j];
        s.id = sj.id;
        s.gpus = sj.gpus;
        s.tier = tiers.tier_of_qos(sj.qos);
        s.np = !w_.tiers[static_cast<size_t>(s.tier)].preemptible;
        bool known = false;
        s.parts = intern_parts(sj.pools, &known);
        s.submit = sj.submit;
        s.duration = sj.duration;
        result_.jobs[j].tier = s.tier;
        if (!known) {
            if (!unknown_parts++) unknown_example = sj.label.empty() ? std::to_string(sj.id) : sj.label;
            continue;
        }
        uint32_t room = 0;
        for (int32_t p : w_.part_lists[s.parts]) room = std::max(room, cluster_.partitions[static_cast<size_t>(p)].nodes.empty() ? 0u : part_free_[static_cast<size_t>(p)]);
        if (s.gpus > room && !too_big++) too_big_example = sj.label.empty() ? std::to_string(sj.id) : sj.label;
    }
    if (unknown_parts)
        result_.notes.push_back(std::to_string(unknown_parts) +
                                " jobs list no partition of the cluster: they never start (e.g. " + unknown_example + ")");
    if (too_big)
        result_.notes.push_back(std::to_string(too_big) +
                                " jobs ask more GPUs than any of their partitions holds: they never start (e.g. " +
                                too_big_example + ")");

    search_failed_.assign(nparts * w_.tiers.size() * 2, 0);
    search_gen_.assign(nparts * w_.tiers.size() * 2, 0);

    switch (kind_) {
    case PolicyKind::Gpupool: policy_ = make_gpupool_policy(w_); break;
    case PolicyKind::Strict: policy_ = make_strict_policy(w_); break;
    case PolicyKind::Borrow: policy_ = make_borrow_policy(w_); break;
    case PolicyKind::Fifo: policy_ = make_fifo_policy(w_); break;
    }

    const size_t npools = config_.pools.size();
    pool_np_used_.assign(npools, 0);
    pool_pending_gpus_.assign(npools, 0);
    pool_np_wait_.assign(npools, {});
    pool_now_.assign(npools, {});
    const int64_t begin = njobs ? workload_.jobs.front().submit : 0;
    int64_t sample = w_.options.sample_interval;
    if (sample <= 0) {
        // About 1000 samples: the span is not known before the end, so
        // guess it from submits and durations.
        int64_t last = begin;
        for (const SimJob &sj : workload_.jobs) last = std::max(last, sj.submit + sj.duration);
        sample = std::max<int64_t>(1, (last - begin) / 1000);
    }
    recorder_ = std::make_unique<MetricsRecorder>(cluster_, config_, w_.part_of_pool, begin, sample);
}

// --- nodes ---------------------------------------------------------------

void Replay::node_changed(int32_t node) {
    for (const auto &[p, pos] : node_parts_[static_cast<size_t>(node)]) trees_[static_cast<size_t>(p)].set(pos, free_[static_cast<size_t>(node)]);
}

bool Replay::fits_free(int32_t p, uint32_t g) const {
    const size_t pi = static_cast<size_t>(p);
    if (cluster_.partitions[pi].nodes.empty()) return false;
    if (g <= part_max_node_[pi]) return trees_[pi].max() >= g;
    return part_free_[pi] >= g;
}

void Replay::allocate(uint32_t j, int32_t p) {
    SimJobState &s = w_.jobs[j];
    const size_t pi = static_cast<size_t>(p);
    const std::vector<uint32_t> &nodes = cluster_.partitions[pi].nodes;
    auto take = [&](int32_t node, uint32_t g) {
        free_[static_cast<size_t>(node)] -= g;
        for (const auto &[q, pos] : node_parts_[static_cast<size_t>(node)]) part_free_[static_cast<size_t>(q)] -= g;
        node_changed(node);
    };
    if (s.gpus <= part_max_node_[pi]) {
        size_t pos = trees_[pi].find(0, s.gpus);
        const int32_t node = static_cast<int32_t>(nodes[pos]);
        s.node = node;
        take(node, s.gpus);
        return;
    }
    std::vector<std::pair<int32_t, uint32_t>> alloc;
    uint32_t left = s.gpus;
    size_t pos = 0;
    while (left > 0) {
        pos = trees_[pi].find(pos, 1);
        const int32_t node = static_cast<int32_t>(nodes[pos]);
        const uint32_t g = std::min(left, free_[static_cast<size_t>(node)]);
        alloc.emplace_back(node, g);
        take(node, g);
        left -= g;
        ++pos;
    }
    s.node = -1;
    if (!free_multi_.empty()) {
        s.multi = free_multi_.back();
        free_multi_.pop_back();
        w_.multi_alloc[s.multi] = std::move(alloc);
    } else {
        s.multi = static_cast<uint32_t>(w_.multi_alloc.size());
        w_.multi_alloc.push_back(std::move(alloc));
    }
}

void Replay::release(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    auto give = [&](int32_t node, uint32_t g) {
        free_[static_cast<size_t>(node)] += g;
        for (const auto &[q, pos] : node_parts_[static_cast<size_t>(node)]) part_free_[static_cast<size_t>(q)] += g;
        node_changed(node);
    };
    if (s.node >= 0) {
        give(s.node, s.gpus);
        s.node = -1;
    } else if (s.multi != UINT32_MAX) {
        for (const auto &[node, g] : w_.multi_alloc[s.multi]) give(node, g);
        w_.multi_alloc[s.multi].clear();
        free_multi_.push_back(s.multi);
        s.multi = UINT32_MAX;
    }
}

// --- pending classes ---------------------------------------------------------

void Replay::enter_pending(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    s.state = SimState::Pending;
    s.cls = class_of(s);
    classes_[s.cls].members.insert(Member{policy_->class_key(j), s.id, j});
    if (s.np)
        for (int32_t p : w_.part_lists[s.parts]) {
            int32_t pool = w_.pool_of_part[static_cast<size_t>(p)];
            if (pool >= 0) pool_np_wait_[static_cast<size_t>(pool)][s.gpus]++;
        }
}

void Replay::leave_pending(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    if (s.np)
        for (int32_t p : w_.part_lists[s.parts]) {
            int32_t pool = w_.pool_of_part[static_cast<size_t>(p)];
            if (pool < 0) continue;
            auto &m = pool_np_wait_[static_cast<size_t>(pool)];
            auto it = m.find(s.gpus);
            if (it != m.end() && --it->second == 0) m.erase(it);
        }
}

// --- starting and stopping ------------------------------------------------------

void Replay::start(uint32_t j, int32_t p, int64_t t) {
    walk_gen_++;  // the search memo is void
    SimJobState &s = w_.jobs[j];
    JobOutcome &o = result_.jobs[j];
    leave_pending(j);
    for (int32_t q : w_.part_lists[s.parts]) {
        int32_t pool = w_.pool_of_part[static_cast<size_t>(q)];
        if (pool >= 0) pool_pending_gpus_[static_cast<size_t>(pool)] -= s.gpus;
    }
    allocate(j, p);
    s.state = SimState::Running;
    s.part = p;
    s.start = t;
    s.end = t + s.duration;
    o.wait += t - s.pending_since;
    if (o.first_start < 0)
        o.first_start = t;
    else if (workload_.jobs[j].recorded_start >= 0)
        restarts_.emplace_back(j, t);  // for the start order check
    o.last_start = t;
    o.partition = p;
    w_.part_used[static_cast<size_t>(p)] += s.gpus;
    used_total_ += s.gpus;
    const int32_t pool = w_.pool_of_part[static_cast<size_t>(p)];
    if (pool >= 0 && s.np) pool_np_used_[static_cast<size_t>(pool)] += s.gpus;
    s.run_pos = static_cast<uint32_t>(w_.running.size());
    w_.running.push_back(j);
    if (w_.tiers[static_cast<size_t>(s.tier)].preemptible) {
        s.p_pos = static_cast<uint32_t>(w_.running_preemptible.size());
        w_.running_preemptible.push_back(j);
        const int64_t mr = w_.min_runtime_of_part[static_cast<size_t>(p)];
        if (mr > 0 && policy_->preempts()) add_timer(t + mr);
    }
    ends_.push(EndEvent{s.end, j, s.restarts});
    policy_->on_start(j, t);
}

// The job stops running: completed, or preempted (requeued or cancelled).
void Replay::stop(uint32_t j, int64_t t, bool preempted) {
    walk_gen_++;
    SimJobState &s = w_.jobs[j];
    JobOutcome &o = result_.jobs[j];
    release(j);
    w_.part_used[static_cast<size_t>(s.part)] -= s.gpus;
    used_total_ -= s.gpus;
    const int32_t pool = w_.pool_of_part[static_cast<size_t>(s.part)];
    if (pool >= 0 && s.np) pool_np_used_[static_cast<size_t>(pool)] -= s.gpus;
    auto swap_remove = [&](std::vector<uint32_t> &v, uint32_t SimJobState::*pos) {
        uint32_t at = s.*pos;
        uint32_t last = v.back();
        v[at] = last;
        w_.jobs[last].*pos = at;
        v.pop_back();
        s.*pos = UINT32_MAX;
    };
    swap_remove(w_.running, &SimJobState::run_pos);
    if (s.p_pos != UINT32_MAX) swap_remove(w_.running_preemptible, &SimJobState::p_pos);

    const bool limit = preempted && s.restarts >= w_.options.max_requeues;
    const bool requeue = preempted && w_.tiers[static_cast<size_t>(s.tier)].requeue && !limit;
    if (preempted) {
        o.preemptions++;
        o.lost_gpu_seconds += int64_t(s.gpus) * (t - s.start);
    }
    if (requeue) {
        s.restarts++;
        s.state = SimState::Waiting;
        s.eligible = t + w_.options.cred_expire + 1;
        s.pending_since = t;
        s.start = s.end = -1;
        for (int32_t q : w_.part_lists[s.parts]) {
            int32_t pl = w_.pool_of_part[static_cast<size_t>(q)];
            if (pl >= 0) pool_pending_gpus_[static_cast<size_t>(pl)] += s.gpus;
        }
        eligible_.push(Timed{s.eligible, j});
        policy_->on_requeue(j, t);
        return;
    }
    s.state = SimState::Done;
    o.end = t;
    o.state = !preempted ? JobEnd::Completed : limit ? JobEnd::RequeueLimit : JobEnd::Cancelled;
    if (limit && !requeue_limited_++)
        first_limited_ = workload_.jobs[j].label.empty() ? std::to_string(s.id) : workload_.jobs[j].label;
    done_++;
    policy_->on_end(j, t);
}

// --- the walk ----------------------------------------------------------------------

// Take the shortest prefix of the policy's candidates that lets j fit in
// partition p, as cons_tres does on a copy of the nodes; `victims` gets
// those of the prefix on the nodes j then gets.
bool Replay::preempt_for(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims) {
    if (!find_victims(j, p, t, victims)) return false;
    if (!policy_->view_stale()) return true;
    // Found on an old view: decide on a fresh one.
    policy_->refresh_view(t);
    return find_victims(j, p, t, victims);
}

bool Replay::find_victims(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims) {
    victims.clear();
    std::vector<uint32_t> &cands = cand_scratch_;
    policy_->candidates(j, p, t, cands);
    result_.stats.preemption_searches++;
    if (cands.empty()) return false;
    const size_t pi = static_cast<size_t>(p);
    const uint32_t g = w_.jobs[j].gpus;
    const bool single = g <= part_max_node_[pi];
    std::unordered_map<int32_t, uint32_t> extra;  // node -> GPUs the prefix frees
    uint64_t freed_in_part = 0;
    size_t prefix = 0;
    int32_t chosen = -1;  // single node: the node j gets
    for (; prefix < cands.size(); ++prefix) {
        const SimJobState &v = w_.jobs[cands[prefix]];
        auto add = [&](int32_t node, uint32_t gpus) {
            if (!w_.part_has_node[pi][static_cast<size_t>(node)]) return;
            extra[node] += gpus;
            freed_in_part += gpus;
        };
        if (v.node >= 0)
            add(v.node, v.gpus);
        else if (v.multi != UINT32_MAX)
            for (const auto &[node, gg] : w_.multi_alloc[v.multi]) add(node, gg);
        if (single) {
            // Free GPUs alone fit nowhere: only a node the prefix freed
            // GPUs on can; the first one in partition order.
            int32_t best_pos = INT32_MAX;
            for (const auto &[node, gg] : extra)
                if (free_[static_cast<size_t>(node)] + gg >= g && part_pos_[pi][static_cast<size_t>(node)] < best_pos) {
                    best_pos = part_pos_[pi][static_cast<size_t>(node)];
                    chosen = node;
                }
            if (chosen >= 0) break;
        } else if (part_free_[pi] + freed_in_part >= g) {
            break;
        }
    }
    if (prefix == cands.size()) return false;
    // Nodes j gets on the copy.
    std::unordered_set<int32_t> nodes;
    if (single) {
        nodes.insert(chosen);
    } else {
        uint32_t left = g;
        for (uint32_t node : cluster_.partitions[pi].nodes) {
            if (left == 0) break;
            auto it = extra.find(static_cast<int32_t>(node));
            uint32_t avail = free_[node] + (it != extra.end() ? it->second : 0);
            if (avail == 0) continue;
            nodes.insert(static_cast<int32_t>(node));
            left -= std::min(left, avail);
        }
    }
    for (size_t k = 0; k <= prefix; ++k) {
        const SimJobState &v = w_.jobs[cands[k]];
        bool on = false;
        if (v.node >= 0)
            on = nodes.count(v.node) != 0;
        else if (v.multi != UINT32_MAX)
            for (const auto &[node, gg] : w_.multi_alloc[v.multi]) on |= nodes.count(node) != 0;
        if (on) victims.push_back(cands[k]);
    }
    return true;
}

Tried Replay::try_start(uint32_t j, int64_t t) {
    std::vector<int32_t> &parts = parts_scratch_;
    policy_->start_partitions(j, parts);
    const uint32_t g = w_.jobs[j].gpus;
    for (int32_t p : parts) {
        if (!policy_->within_limits(j, p)) continue;
        if (fits_free(p, g)) {
            start(j, p, t);
            if (w_.options.start_log) result_.starts.push_back(StartRecord{t, j, p, {}});
            return Tried::Started;
        }
        if (!policy_->preempts()) continue;
        // A search that failed for a job of this tier in this partition
        // fails for any that asks more, until something starts or stops
        // (jobs on one node and jobs spanning nodes apart: three GPUs on
        // one node can be harder to find than five on two).
        const bool spans = g > part_max_node_[static_cast<size_t>(p)];
        const size_t memo =
            (static_cast<size_t>(p) * w_.tiers.size() + static_cast<size_t>(w_.jobs[j].tier)) * 2 + (spans ? 1 : 0);
        if (!w_.options.reference_walk && search_gen_[memo] == walk_gen_ && search_failed_[memo] <= g) continue;
        std::vector<uint32_t> &victims = victims_scratch_;
        if (!preempt_for(j, p, t, victims)) {
            if (search_gen_[memo] != walk_gen_ || g < search_failed_[memo]) search_failed_[memo] = g;
            search_gen_[memo] = walk_gen_;
            continue;
        }
        for (uint32_t v : victims) stop(v, t, true);
        if (!fits_free(p, g)) throw std::logic_error("sim: preemption freed too little");  // cannot happen
        start(j, p, t);
        if (w_.options.start_log) result_.starts.push_back(StartRecord{t, j, p, victims});
        return Tried::Preempted;
    }
    return Tried::Failed;
}

// Every pending job in order, each tried once: what the class walk below
// must match.
bool Replay::reference_walk(int64_t t) {
    std::vector<std::pair<OrderKey, uint32_t>> order;
    for (const PendingClass &pc : classes_)
        for (const Member &m : pc.members) order.emplace_back(policy_->order_key(m.job), m.job);
    std::sort(order.begin(), order.end(),
              [](const auto &a, const auto &b) { return order_before(a.first, b.first); });
    bool again = false;
    for (const auto &[key, j] : order) {
        if (policy_->held(j)) continue;
        const uint32_t cls = w_.jobs[j].cls;
        const Tried r = try_start(j, t);
        if (r == Tried::Failed) continue;
        PendingClass &pc = classes_[cls];
        pc.members.erase(Member{policy_->class_key(j), w_.jobs[j].id, j});
        w_.jobs[j].cls = UINT32_MAX;
        again |= r == Tried::Preempted;
    }
    if (policy_->take_admission_change()) again = true;
    return again;
}

bool Replay::walk(int64_t t) {
    result_.stats.walks++;
    walk_gen_++;
    if (w_.options.reference_walk) return reference_walk(t);
    heap_.clear();
    failed_.clear();
    auto push = [&](uint32_t c) {
        PendingClass &pc = classes_[c];
        if (pc.cursor == pc.members.end() || policy_->held(pc.cursor->job)) return;
        heap_.push_back(HeapEntry{policy_->order_key(pc.cursor->job), c});
        std::push_heap(heap_.begin(), heap_.end(), HeapLess());
    };
    for (uint32_t c = 0; c < classes_.size(); ++c) {
        PendingClass &pc = classes_[c];
        if (pc.members.empty()) continue;
        pc.cursor = pc.members.begin();
        push(c);
    }
    bool again = false;
    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), HeapLess());
        const HeapEntry top = heap_.back();
        heap_.pop_back();
        PendingClass &pc = classes_[top.cls];
        const uint32_t j = pc.cursor->job;
        const Tried r = try_start(j, t);
        if (r == Tried::Failed) {
            failed_.push_back(top.cls);
            continue;
        }
        pc.cursor = pc.members.erase(pc.cursor);
        w_.jobs[j].cls = UINT32_MAX;
        if (r == Tried::Preempted) {
            again = true;
            // Freed GPUs may let classes tried before start now: their
            // jobs behind the walk's position.
            for (uint32_t c : failed_) {
                PendingClass &fc = classes_[c];
                auto it = fc.members.begin();
                while (it != fc.members.end() && order_before(policy_->order_key(it->job), top.key)) ++it;
                fc.cursor = it;
                push(c);
            }
            failed_.clear();
        }
        push(top.cls);
    }
    if (policy_->take_admission_change()) again = true;
    return again;
}

// --- instants --------------------------------------------------------------------

void Replay::add_timer(int64_t t) {
    if (timer_set_.insert(t).second) timers_.push(t);
}

int64_t Replay::next_instant() const {
    int64_t t = INT64_MAX;
    if (next_submit_ < workload_.jobs.size()) t = std::min(t, workload_.jobs[next_submit_].submit);
    if (!ends_.empty()) t = std::min(t, ends_.top().time);
    if (!eligible_.empty()) t = std::min(t, eligible_.top().time);
    // Timers (a pass or a walk due, a MinRuntime ending) matter only
    // while something else can still happen or a walk is owed: a queue
    // nothing can change ends the replay.
    if (!timers_.empty() && (t != INT64_MAX || walk_owed_)) t = std::min(t, timers_.top());
    return t;
}

void Replay::record_interval(int64_t from, int64_t to) {
    for (size_t i = 0; i < pool_now_.size(); ++i) {
        MetricsRecorder::PoolNow &pn = pool_now_[i];
        const int32_t part = w_.part_of_pool[i];
        pn.used = part >= 0 ? w_.part_used[static_cast<size_t>(part)] : 0;
        pn.np_used = pool_np_used_[i];
        pn.pending_gpus = pool_pending_gpus_[i];
        pn.np_wait_min_gpus = pool_np_wait_[i].empty() ? 0 : pool_np_wait_[i].begin()->first;
    }
    recorder_->interval(from, to, used_total_, pool_now_);
}

ReplayResult Replay::run() {
    const auto wall0 = std::chrono::steady_clock::now();
    setup();
    result_.policy = kind_;
    const size_t njobs = workload_.jobs.size();
    int64_t prev = njobs ? workload_.jobs.front().submit : 0;
    auto last_progress = wall0;
    const int64_t sched = w_.options.sched_interval;
    while (true) {
        const int64_t t = next_instant();
        if (t == INT64_MAX) break;
        record_interval(prev, t);
        prev = t;
        result_.stats.instants++;
        bool changed = false;
        while (!timers_.empty() && timers_.top() <= t) {
            timer_set_.erase(timers_.top());
            timers_.pop();
            changed = true;
        }
        while (!ends_.empty() && ends_.top().time == t) {
            const EndEvent e = ends_.top();
            ends_.pop();
            const SimJobState &s = w_.jobs[e.job];
            if (s.state != SimState::Running || s.restarts != e.run || s.end != t) continue;  // preempted since
            stop(e.job, t, false);
            changed = true;
        }
        while (!eligible_.empty() && eligible_.top().time == t) {
            const uint32_t j = eligible_.top().job;
            eligible_.pop();
            enter_pending(j);
            policy_->on_eligible(j, t);
            changed = true;
        }
        while (next_submit_ < njobs && workload_.jobs[next_submit_].submit == t) {
            const uint32_t j = static_cast<uint32_t>(next_submit_++);
            SimJobState &s = w_.jobs[j];
            s.eligible = s.pending_since = t;
            for (int32_t q : w_.part_lists[s.parts]) {
                int32_t pool = w_.pool_of_part[static_cast<size_t>(q)];
                if (pool >= 0) pool_pending_gpus_[static_cast<size_t>(pool)] += s.gpus;
            }
            policy_->on_submit(j, t);
            enter_pending(j);
            changed = true;
        }
        walk_owed_ |= changed;
        if (walk_owed_) {
            if (sched == 0 || last_walk_ == INT64_MIN || t - last_walk_ >= sched) {
                policy_->before_walk(t);
                for (int k = 0; k < 64 && walk(t); ++k) {
                }
                last_walk_ = t;
                walk_owed_ = false;
            } else {
                add_timer(last_walk_ + sched);
            }
        }
        const int64_t wake = policy_->next_wakeup(t);
        if (wake != INT64_MAX) add_timer(wake);
        if (w_.options.progress && (result_.stats.instants & 1023) == 0) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_progress >= std::chrono::seconds(1)) {
                last_progress = now;
                w_.options.progress(njobs ? static_cast<double>(done_) / static_cast<double>(njobs) : 1.0, t);
            }
        }
    }
    // Jobs still pending never start.
    for (size_t j = 0; j < njobs; ++j) {
        const SimJobState &s = w_.jobs[j];
        JobOutcome &o = result_.jobs[j];
        if (s.state == SimState::Pending || s.state == SimState::Waiting) {
            o.state = JobEnd::NeverStarted;
            o.wait += prev - s.pending_since;
        }
    }
    if (requeue_limited_)
        result_.notes.push_back(std::to_string(requeue_limited_) + " jobs were preempted " +
                                std::to_string(w_.options.max_requeues) +
                                " times and held (a preemption cycle of the policy; e.g. " + first_limited_ + ")");
    std::vector<int> job_pool(njobs, -1);
    for (size_t j = 0; j < njobs; ++j) {
        const JobOutcome &o = result_.jobs[j];
        int32_t part = o.partition;
        if (part < 0)
            for (int32_t p : w_.part_lists[w_.jobs[j].parts])
                if (w_.pool_of_part[static_cast<size_t>(p)] >= 0) {
                    part = p;
                    break;
                }
        if (part >= 0) job_pool[j] = w_.pool_of_part[static_cast<size_t>(part)];
    }
    recorder_->finish(prev, result_.jobs, job_pool, result_.metrics, &result_.samples);
    result_.order_check = check_start_order(workload_, result_.jobs, restarts_,
                                            std::max<int64_t>(0, w_.options.order_tolerance));
    result_.stats.passes = policy_->counters.passes;
    result_.stats.refreshes = policy_->counters.refreshes;
    result_.stats.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (w_.options.progress) w_.options.progress(1.0, prev);
    return std::move(result_);
}

}  // namespace

ReplayResult replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind policy,
                    const ReplayOptions &options) {
    Replay r(cluster, workload, config, policy, options);
    return r.run();
}

}  // namespace gpupool::sim

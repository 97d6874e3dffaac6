// The replay's mechanics: what Slurm does around the policy.  Choices, and
// why (the live test cluster of scripts/cluster.sh is the reference):
//
// - Time is whole seconds.  Everything that happens in one second is one
//   instant: ends first, then requeued jobs whose begin time came, then
//   submits (workload order), then the policy's look (gpupool: a pass if
//   due), then the scheduling walk.  Nothing happens between instants.
// - GPUs are whole.  A job fits on one node of its partition when it asks
//   for no more GPUs than the partition's largest node holds.  Which node
//   (ReplayOptions::placement, replay_nodes.cpp): first fit in partition
//   order (Weight, then slurm.conf), as Slurm alone; pack, by the Weights
//   gpupool gives (free GPUs as the last refresh before the walk saw them,
//   and at once after GPUs are freed); or the node with the most free
//   GPUs (LLN=YES, judged by GPUs, not CPUs).  A larger job spans nodes,
//   taking free GPUs node by node in partition order.  CPUs and memory are
//   not modelled.
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
// - With a kill delay and backfill cycles, a cycle plans each one-node job
//   that cannot start where a kill is freeing enough GPUs (cons_tres's
//   will-run test counts them free), and no later job of the cycle starts
//   or preempts on that node (backfill reserves whole nodes; _start_job
//   excludes them).  Of a class, only the job tried is planned so.  A
//   preemptor waiting for its kills is planned so too, anew in each cycle
//   (not on the nodes it freed), and a job that preempts in a cycle holds
//   its node for the rest of it: no later job of the cycle preempts there.
// - Jobs that ask the same (partitions, tier, GPUs; with Account= entries
//   also account, CPUs and memory, which R2 holds jobs by) form a class, ordered
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

#include "gpupool.h"
#include "preemption.hpp"
#include "replay_state.hpp"

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

namespace replay_detail {

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
    if (w_.options.kill_delay < 0) w_.options.kill_delay = 0;
    // No spread below 1 s, and none without a kill delay (0 s is no kill).
    if (w_.options.kill_delay_max < w_.options.kill_delay || w_.options.kill_delay == 0)
        w_.options.kill_delay_max = w_.options.kill_delay;
    if (w_.options.kill_delay == 0) w_.options.kill_delays.clear();
    for (int64_t &d : w_.options.kill_delays) d = std::max<int64_t>(d, 1);
    if (w_.options.backfill_interval < 0) w_.options.backfill_interval = 0;
    std::sort(w_.options.backfill_times.begin(), w_.options.backfill_times.end());
    if (w_.options.backfill_interval == 0) w_.options.backfill_times.clear();
    if (w_.options.preempt_guard < 0) w_.options.preempt_guard = 0;
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

uint32_t Replay::class_of(uint32_t j) {
    const SimJobState &s = w_.jobs[j];
    const bool levels = !config_.accounts.empty();
    const SimJob &spec = w_.spec(j);
    auto key = std::make_tuple(s.parts, s.tier, s.gpus, levels ? spec.account : std::string(), levels ? spec.cpus : 0,
                               levels ? spec.mem_mb : 0);
    auto [it, fresh] = class_index_.try_emplace(std::move(key), static_cast<uint32_t>(classes_.size()));
    if (fresh) classes_.emplace_back();
    return it->second;
}

void Replay::setup() {
    // Tiers: the core's QOS mapping (DefaultTier for unknown QOS).
    Engine tiers;
    tiers.set_config(config_);
    setup_tiers();
    setup_partitions();
    setup_placement();
    setup_jobs(tiers);
    search_failed_.assign(cluster_.partitions.size() * w_.tiers.size() * 2, 0);
    search_gen_.assign(cluster_.partitions.size() * w_.tiers.size() * 2, 0);
    switch (kind_) {
    case PolicyKind::Gpupool: policy_ = make_gpupool_policy(w_); break;
    case PolicyKind::Strict: policy_ = make_strict_policy(w_); break;
    case PolicyKind::Borrow: policy_ = make_borrow_policy(w_); break;
    case PolicyKind::Fifo: policy_ = make_fifo_policy(w_); break;
    }
    setup_metrics();
}

void Replay::setup_tiers() {
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
}

void Replay::setup_partitions() {
    const size_t nparts = cluster_.partitions.size(), nnodes = cluster_.nodes.size();
    w_.part_has_node.assign(nparts, std::vector<uint8_t>(nnodes, 0));
    w_.pool_of_part.assign(nparts, -1);
    w_.part_of_pool.assign(config_.pools.size(), -1);
    w_.min_runtime_of_part.assign(nparts, 0);
    w_.part_used.assign(nparts, 0);
    w_.completing_gpus.assign(nnodes, 0);
    part_blocked_.assign(nparts, 0);
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
                w_.min_runtime_of_part[p] = config_.min_runtime_of(config_.pools[k]);
            }
    }
    part_gpus_ = part_free_;
}

void Replay::setup_jobs(const Engine &tiers) {
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
            s.can_start = false;
            if (!unknown_parts++) unknown_example = sj.label.empty() ? std::to_string(sj.id) : sj.label;
            continue;
        }
        uint32_t room = 0;
        for (int32_t p : w_.part_lists[s.parts]) room = std::max(room, cluster_.partitions[static_cast<size_t>(p)].nodes.empty() ? 0u : part_free_[static_cast<size_t>(p)]);
        if (s.gpus > room) s.can_start = false;
        if (s.gpus > room && !too_big++) too_big_example = sj.label.empty() ? std::to_string(sj.id) : sj.label;
    }
    if (unknown_parts)
        result_.notes.push_back(std::to_string(unknown_parts) +
                                " jobs list no partition of the cluster: they never start (e.g. " + unknown_example + ")");
    if (too_big)
        result_.notes.push_back(std::to_string(too_big) +
                                " jobs ask more GPUs than any of their partitions holds: they never start (e.g. " +
                                too_big_example + ")");
}

void Replay::setup_metrics() {
    const size_t njobs = workload_.jobs.size();
    const size_t npools = config_.pools.size();
    pool_np_used_.assign(npools, 0);
    pool_pending_gpus_.assign(npools, 0);
    pool_np_wait_.assign(npools, {});
    pool_np_order_.assign(npools, {});
    within_quota_at_.assign(njobs, -1);
    pool_now_.assign(npools, {});
    const int64_t begin = njobs ? workload_.jobs.front().submit : 0;
    int64_t last_submit = begin;
    for (const SimJob &sj : workload_.jobs) last_submit = std::max(last_submit, sj.submit);
    int64_t sample = w_.options.sample_interval;
    if (sample <= 0) {
        // About 1000 samples: the span is not known before the end, so
        // guess it from submits and durations.
        int64_t last = begin;
        for (const SimJob &sj : workload_.jobs) last = std::max(last, sj.submit + sj.duration);
        sample = std::max<int64_t>(1, (last - begin) / 1000);
    }
    recorder_ = std::make_unique<MetricsRecorder>(cluster_, config_, w_.part_of_pool, begin, last_submit, sample);
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
    if (!completing_.empty()) t = std::min(t, completing_.begin()->first);
    // Timers (a pass or a walk due, a MinRuntime ending) matter only
    // while something else can still happen or a walk is owed: a queue
    // nothing can change ends the replay.
    // A backfill cycle owed keeps the replay going while something happened
    // since the last one (timers alone change nothing).
    if (!timers_.empty() && (t != INT64_MAX || walk_owed_ || (backfill_owed_ && changed_since_backfill_))) t = std::min(t, timers_.top());
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
        pn.cause = BelowCause::Other;
    }
    for (size_t i = 0; i < pool_now_.size(); ++i) {
        MetricsRecorder::PoolNow &pn = pool_now_[i];
        if (!MetricsRecorder::below_quota(pn, config_.pools[i].quota)) continue;
        // The cause is judged for the first job in order that fits.
        const uint32_t first = mark_within_quota(i, from);
        if (w_.part_of_pool[i] >= 0) pn.cause = below_cause(i, w_.jobs[first].gpus);
    }
    recorder_->interval(from, to, used_total_, waiting_jobs_ > 0, pool_now_);
}

// The pool's waiting NP jobs that fit its quota now, in order (each one
// that fits takes its share: a later small job may fit past a large one),
// are within quota from t on.  Returns the first (below_quota() holds:
// there is one).
uint32_t Replay::mark_within_quota(size_t pool, int64_t t) {
    uint32_t first = kNoJob;
    const uint32_t quota = config_.pools[pool].quota;
    uint32_t left = quota - std::min(quota, pool_np_used_[pool]);
    const uint32_t smallest = pool_np_wait_[pool].empty() ? 1 : pool_np_wait_[pool].begin()->first;
    for (const QuotaOrder &q : pool_np_order_[pool]) {
        if (left < smallest) break;
        const uint32_t g = w_.jobs[q.job].gpus;
        if (g > left) continue;
        left -= g;
        if (within_quota_at_[q.job] < 0) within_quota_at_[q.job] = t;
        if (first == kNoJob) first = q.job;
    }
    return first;
}

// Whether pending NP job j fits its pool's quota now after the waiting
// jobs ahead of it that fit (mark_within_quota's rule, without marking):
// a job that starts past a larger one ahead was not within quota.
bool Replay::fits_quota_in_order(size_t pool, uint32_t j) const {
    const uint32_t quota = config_.pools[pool].quota;
    uint32_t left = quota - std::min(quota, pool_np_used_[pool]);
    for (const QuotaOrder &q : pool_np_order_[pool]) {
        const uint32_t g = w_.jobs[q.job].gpus;
        if (q.job == j) return g <= left;
        if (g <= left) left -= g;
    }
    return false;
}

// The pool j is demand in through partition `part`: the partition's
// pool, unless the partition cannot hold j (more GPUs than it has), where
// j never starts and no pool waits on it.
int32_t Replay::demand_pool(int32_t part, uint32_t j) const {
    const size_t p = static_cast<size_t>(part);
    return w_.jobs[j].gpus <= part_gpus_[p] ? w_.pool_of_part[p] : -1;
}

void Replay::note_preemptible_gpus(uint32_t j, int32_t part, int sign) {
    const size_t np = pool_now_.size() + 1;
    if (node_p_gpus_.empty()) node_p_gpus_.assign(free_.size() * np, 0);
    const int32_t pool = w_.pool_of_part[static_cast<size_t>(part)];
    const size_t col = pool >= 0 ? static_cast<size_t>(pool) : np - 1;
    const SimJobState &s = w_.jobs[j];
    if (node_p_total_.empty()) node_p_total_.assign(free_.size(), 0);
    auto add = [&](int32_t node, uint32_t g) {
        uint32_t &v = node_p_gpus_[static_cast<size_t>(node) * np + col];
        uint32_t &total = node_p_total_[static_cast<size_t>(node)];
        v = sign > 0 ? v + g : v - std::min(v, g);
        total = sign > 0 ? total + g : total - std::min(total, g);
    };
    if (s.node >= 0)
        add(s.node, s.gpus);
    else if (s.multi != UINT32_MAX)
        for (const auto &[node, g] : w_.multi_alloc[s.multi]) add(node, g);
}

// Why a job of `g` GPUs of pool q waits (BelowCause).  A node's room:
// free GPUs, GPUs being killed, and GPUs of preemptible jobs; those of
// other pools within their quota are R5's to keep (Protected).  Stops at
// the first node with open room (Other), the common case.
BelowCause Replay::below_cause(size_t q, uint32_t g) const {
    const int32_t p = w_.part_of_pool[q];
    for (const auto &[j, nodes] : reserved_nodes_) {
        const SimJobState &s = w_.jobs[j];
        if (!s.np || s.state != SimState::Pending) continue;
        const std::vector<int32_t> &parts = w_.part_lists[s.parts];
        if (std::find(parts.begin(), parts.end(), p) == parts.end()) continue;
        for (int32_t node : nodes)
            if (w_.completing_gpus[static_cast<size_t>(node)] > 0) return BelowCause::Kill;
    }
    const size_t npools = pool_now_.size(), np = npools + 1;
    const bool one_node = g <= part_max_node_[static_cast<size_t>(p)];
    uint64_t all = 0;
    uint32_t best = 0;
    for (uint32_t node : cluster_.partitions[static_cast<size_t>(p)].nodes) {
        const size_t n = node;
        uint32_t open = free_[n] + w_.completing_gpus[n], kept = 0;
        const uint32_t held = node_p_total_.empty() ? 0 : node_p_total_[n];
        if (open + held < g) {  // too small whoever's jobs go
            all += open + held;
            best = std::max(best, open + held);
            continue;
        }
        if (held > 0)
            for (size_t k = 0; k < np; ++k) {
                const uint32_t v = node_p_gpus_[n * np + k];
                if (v == 0) continue;
                const bool within = k < npools && k != q && pool_now_[k].used <= config_.pools[k].quota;
                (within ? kept : open) += v;
            }
        if (one_node && open >= g) return BelowCause::Other;
        all += open + kept;
        best = std::max(best, open + kept);
    }
    if (all < g) return BelowCause::CannotFree;
    if (!one_node) return BelowCause::Other;
    return best < g ? BelowCause::NoSingleNode : BelowCause::Protected;
}

ReplayResult Replay::run() {
    const auto wall0 = std::chrono::steady_clock::now();
    setup();
    result_.policy = kind_;
    const size_t njobs = workload_.jobs.size();
    int64_t prev = njobs ? workload_.jobs.front().submit : 0;
    auto last_progress = wall0;
    while (true) {
        const int64_t t = next_instant();
        if (t == INT64_MAX) break;
        record_interval(prev, t);
        prev = t;
        result_.stats.instants++;
        walk_owed_ |= take_events(t);
        if (walk_owed_) walk_if_due(t);
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
    finish(prev);
    result_.stats.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (w_.options.progress) w_.options.progress(1.0, prev);
    return std::move(result_);
}

// What happens at instant t, in its order: timers, kills that end, ends,
// requeued jobs whose begin time came, submits.  True if anything did.
bool Replay::take_events(int64_t t) {
    bool timer = false;
    while (!timers_.empty() && timers_.top() <= t) {
        timer_set_.erase(timers_.top());
        timers_.pop();
        timer = true;
    }
    bool changed = false;
    while (!completing_.empty() && completing_.begin()->first == t) {
        for (const auto &[node, g] : completing_.begin()->second) {
            w_.completing_gpus[static_cast<size_t>(node)] -= g;
            give(node, g);
        }
        completing_.erase(completing_.begin());
        walk_gen_++;
        policy_->on_kill_ended(t);
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
    while (next_submit_ < workload_.jobs.size() && workload_.jobs[next_submit_].submit == t) {
        const uint32_t j = static_cast<uint32_t>(next_submit_++);
        SimJobState &s = w_.jobs[j];
        s.eligible = s.pending_since = t;
        if (s.can_start) waiting_jobs_++;
        for (int32_t q : w_.part_lists[s.parts]) {
            const int32_t pool = demand_pool(q, j);
            if (pool >= 0) pool_pending_gpus_[static_cast<size_t>(pool)] += s.gpus;
        }
        policy_->on_submit(j, t);
        enter_pending(j);
        changed = true;
    }
    changed_since_backfill_ |= changed;
    return changed || timer;
}

// Is a backfill cycle due at t: one of backfill_times, or after them a
// multiple of backfill_interval?  And the next after t.
bool Replay::backfill_due(int64_t t) const {
    const int64_t bf = w_.options.backfill_interval;
    if (bf <= 0) return false;
    const std::vector<int64_t> &at = w_.options.backfill_times;
    if (!at.empty() && t <= at.back()) return std::binary_search(at.begin(), at.end(), t);
    return t % bf == 0;
}

int64_t Replay::next_backfill(int64_t t) const {
    const std::vector<int64_t> &at = w_.options.backfill_times;
    if (!at.empty() && t < at.back()) return *std::upper_bound(at.begin(), at.end(), t);
    const int64_t bf = w_.options.backfill_interval;
    return (t / bf + 1) * bf;
}

// The owed walk, now or (sched_interval) when the last is far enough back.
void Replay::walk_if_due(int64_t t) {
    const int64_t sched = w_.options.sched_interval;
    if (sched == 0 || last_walk_ == INT64_MIN || t - last_walk_ >= sched) {
        policy_->before_walk(t);
        rekey();
        refresh_keys();
        // A preemptor's reservation ends with its guard (it may preempt
        // elsewhere then) or when it is no longer pending.
        for (size_t i = reservations_.size(); i-- > 0;) {
            if (i >= reservations_.size()) continue;
            const SimJobState &s = w_.jobs[reservations_[i].second];
            if (s.state != SimState::Pending || t - s.preempted_at >= w_.options.preempt_guard)
                unreserve(reservations_[i].second);
        }
        const int64_t bf = w_.options.backfill_interval;
        backfill_walk_ = backfill_due(t);
        if (backfill_walk_) {
            backfill_owed_ = changed_since_backfill_ = false;
            cycle_preemptors_ = 0;
        }
        // A backfill cycle plans each waiting preemptor anew, in order, where
        // a kill is freeing GPUs (plan_at_kill_end), not on the nodes it
        // freed: their reservations are lifted for the cycle and come back
        // for the main scheduler's walks after it.
        std::vector<std::pair<int32_t, uint32_t>> waiting;
        if (backfill_walk_) {
            waiting = reservations_;
            for (const auto &[node, h] : waiting) {
                (void)node;
                unreserve(h);
            }
        }
        for (int k = 0; k < 64 && walk(t); ++k) {
        }
        for (const auto &[node, h] : waiting)
            if (w_.jobs[h].state == SimState::Pending && w_.jobs[h].preempted_at != INT64_MIN) reserve(h, {node});
        last_walk_ = t;
        walk_owed_ = false;
        // The next backfill cycle, if a job the main scheduler left may
        // preempt then.
        if (bf > 0 && backfill_owed_) add_timer(next_backfill(t));
    } else {
        add_timer(last_walk_ + sched);
    }
}

// The replay ended at `last`: outcomes of jobs that never started, notes,
// metrics, the start order check.
void Replay::finish(int64_t last) {
    const size_t njobs = workload_.jobs.size();
    // Jobs still pending never start.
    for (size_t j = 0; j < njobs; ++j) {
        const SimJobState &s = w_.jobs[j];
        JobOutcome &o = result_.jobs[j];
        if (s.state == SimState::Pending || s.state == SimState::Waiting) {
            o.state = JobEnd::NeverStarted;
            o.wait += last - s.pending_since;
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
    recorder_->finish(last, result_.jobs, job_pool, result_.metrics, &result_.samples);
    Metrics &m = result_.metrics;
    int64_t longest_kill = w_.options.kill_delay_max;
    for (int64_t d : w_.options.kill_delays) longest_kill = std::max(longest_kill, d);
    m.prompt_window = longest_kill + std::max(w_.options.backfill_interval, w_.options.sched_interval);
    // Prompt: of the jobs that started; those still waiting at the end
    // count in the waits only.
    for (int64_t wq : within_quota_waits_) m.within_quota_prompt += wq <= m.prompt_window ? 1 : 0;
    for (size_t j = 0; j < njobs; ++j)
        if (within_quota_at_[j] >= 0) {
            within_quota_waits_.push_back(last - within_quota_at_[j]);
            within_quota_gpus_.push_back(w_.jobs[j].gpus);
        }
    m.within_quota_wait = percentiles(within_quota_waits_);
    std::map<uint32_t, std::vector<int64_t>> by_gpus;
    for (size_t i = 0; i < within_quota_waits_.size(); ++i) by_gpus[within_quota_gpus_[i]].push_back(within_quota_waits_[i]);
    for (auto &[g, waits] : by_gpus) m.within_quota_wait_by_gpus[g] = percentiles(std::move(waits));
    const Config &quotas = w_.options.account_quotas ? *w_.options.account_quotas : config_;
    result_.metrics.accounts = account_metrics(workload_, cluster_.account_parent, quotas, config_, result_.jobs, last);
    result_.order_check = check_start_order(workload_, result_.jobs, restarts_,
                                            std::max<int64_t>(0, w_.options.order_tolerance));
    result_.stats.passes = policy_->counters.passes;
    result_.stats.refreshes = policy_->counters.refreshes;
}

}  // namespace replay_detail

ReplayResult replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind policy,
                    const ReplayOptions &options) {
    replay_detail::Replay r(cluster, workload, config, policy, options);
    return r.run();
}

}  // namespace gpupool::sim

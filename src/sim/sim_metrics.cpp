#include "sim_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "fairshare.hpp"
#include "pass.hpp"

namespace gpupool::sim {

const char *below_cause_name(BelowCause c) {
    switch (c) {
    case BelowCause::Kill: return "kill";
    case BelowCause::CannotFree: return "cannot_free";
    case BelowCause::NoSingleNode: return "no_single_node";
    case BelowCause::Protected: return "protected";
    case BelowCause::Other: return "other";
    }
    return "other";
}

Percentiles percentiles(std::vector<int64_t> values) {
    Percentiles p;
    p.jobs = values.size();
    if (values.empty()) return p;
    std::sort(values.begin(), values.end());
    auto rank = [&](double pct) {
        size_t r = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(values.size())));
        return values[std::max<size_t>(r, 1) - 1];
    };
    p.p50 = rank(50);
    p.p95 = rank(95);
    p.p99 = rank(99);
    p.max = values.back();
    long double sum = 0;
    for (int64_t v : values) sum += v;
    p.mean = static_cast<double>(sum / values.size());
    return p;
}

double jain_index(const std::vector<double> &x) {
    double s = 0, s2 = 0;
    for (double v : x) {
        s += v;
        s2 += v * v;
    }
    if (x.empty() || s2 <= 0) return 0;
    return s * s / (static_cast<double>(x.size()) * s2);
}

StartOrderCheck check_start_order(const Workload &workload, const std::vector<JobOutcome> &jobs,
                                  const std::vector<std::pair<uint32_t, int64_t>> &restarts, int64_t tolerance) {
    StartOrderCheck out;
    out.tolerance = tolerance;
    // One entry per start compared: the job, the recorded time, the replay's.
    struct Start {
        uint32_t job;
        uint32_t run;  // 0: first start, N: the Nth start after a requeue
        int64_t rec, sim;
    };
    std::vector<Start> sel;
    // The replay's restarts of each job, in order (CSR).
    std::vector<size_t> first(jobs.size() + 1, 0);
    for (const auto &[j, t] : restarts) first[j + 1]++;
    for (size_t j = 0; j < jobs.size(); ++j) first[j + 1] += first[j];
    std::vector<int64_t> again_at(restarts.size());
    std::vector<size_t> fill(first.begin(), first.end() - 1);
    for (const auto &[j, t] : restarts) again_at[fill[j]++] = t;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const SimJob &w = workload.jobs[j];
        if (!w.has_recorded_run() || jobs[j].first_start < 0) continue;
        ++out.jobs;
        // Runs are paired by their place; a recorded run without a start
        // keeps its place but has no time to compare.
        if (w.recorded_start >= 0) sel.push_back({static_cast<uint32_t>(j), 0, w.recorded_start, jobs[j].first_start});
        const size_t again = first[j + 1] - first[j];
        const size_t both = std::min(again, w.recorded_restarts.size());
        for (size_t k = 0; k < both; ++k)
            if (w.recorded_restarts[k] >= 0)
                sel.push_back({static_cast<uint32_t>(j), static_cast<uint32_t>(k + 1), w.recorded_restarts[k],
                               again_at[first[j] + k]});
        out.unmatched_restarts += std::max(again, w.recorded_restarts.size()) - both;
    }
    out.starts = sel.size();
    std::sort(sel.begin(), sel.end(), [&](const Start &a, const Start &b) {
        return std::make_tuple(a.rec, workload.jobs[a.job].id, a.run) < std::make_tuple(b.rec, workload.jobs[b.job].id, b.run);
    });
    // Fenwick tree over the replay's start times (compressed) of the starts
    // recorded more than `tolerance` before the one at hand.
    std::vector<int64_t> times;
    for (const Start &e : sel) times.push_back(e.sim);
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    const size_t n = times.size();
    std::vector<uint64_t> tree(n + 1, 0);
    // Index (1-based) of the last time <= v.
    auto upto = [&](int64_t v) { return static_cast<size_t>(std::upper_bound(times.begin(), times.end(), v) - times.begin()); };
    auto add = [&](size_t i) { for (; i <= n; i += i & (~i + 1)) tree[i]++; };
    auto below = [&](size_t i) { uint64_t s = 0; for (; i > 0; i -= i & (~i + 1)) s += tree[i]; return s; };
    uint64_t inserted = 0;
    size_t next = 0;
    for (const Start &e : sel) {
        while (next < sel.size() && sel[next].rec + tolerance < e.rec) {
            add(upto(sel[next].sim));
            ++inserted;
            ++next;
        }
        // Recorded clearly before e, made clearly after it here.
        const uint64_t later = inserted - below(upto(e.sim + tolerance));
        out.pairs += inserted;
        out.discordant += later;
        if (later && out.first_mismatch < 0) out.first_mismatch = e.job;
    }
    return out;
}

NodeSets node_sets(const SimCluster &cluster, const Config &config, const std::vector<int32_t> &part_of_pool) {
    const size_t n = config.pools.size();
    PoolSets sets(n, cluster.nodes.size());
    for (size_t i = 0; i < n; ++i) {
        if (part_of_pool[i] < 0) continue;
        for (uint32_t node : cluster.partitions[static_cast<size_t>(part_of_pool[i])].nodes)
            sets.add(static_cast<int>(i), node);
    }
    auto find = [&](int x) { return sets.find(x); };
    NodeSets out;
    out.of_pool.assign(n, -1);
    std::vector<int> set_of_root(n, -1);
    for (size_t i = 0; i < n; ++i) {
        if (part_of_pool[i] < 0 || cluster.partitions[static_cast<size_t>(part_of_pool[i])].nodes.empty()) continue;
        int root = find(static_cast<int>(i));
        if (set_of_root[static_cast<size_t>(root)] < 0) {
            set_of_root[static_cast<size_t>(root)] = static_cast<int>(out.gpus.size());
            out.gpus.push_back(0);
        }
        out.of_pool[i] = set_of_root[static_cast<size_t>(root)];
    }
    for (size_t node = 0; node < cluster.nodes.size(); ++node)
        if (sets.owner(node) >= 0) {
            int s = out.of_pool[static_cast<size_t>(find(sets.owner(node)))];
            if (s >= 0) out.gpus[static_cast<size_t>(s)] += cluster.nodes[node].gpus;
        }
    return out;
}

std::vector<uint32_t> point_fairshare(const Config &config, const NodeSets &sets, const std::vector<uint32_t> &demand) {
    const size_t n = config.pools.size();
    std::vector<uint32_t> fs(n);
    for (size_t i = 0; i < n; ++i) fs[i] = config.pools[i].quota;
    for (size_t s = 0; s < sets.gpus.size(); ++s) {
        std::vector<size_t> members;
        std::vector<FairshareInput> in;
        for (size_t i = 0; i < n; ++i)
            if (sets.of_pool[i] == static_cast<int>(s)) {
                members.push_back(i);
                in.push_back(
                    FairshareInput{config.pools[i].quota, config.pools[i].weight, demand[i], 0.0, -1, config.pools[i].rank});
            }
        FairshareResult r = compute_fairshare(sets.gpus[s], in, 0.0);
        for (size_t k = 0; k < members.size(); ++k) fs[members[k]] = r.fairshare[k];
    }
    return fs;
}

MetricsRecorder::MetricsRecorder(const SimCluster &cluster, const Config &config,
                                 const std::vector<int32_t> &part_of_pool, int64_t begin, int64_t last_submit,
                                 int64_t sample_interval)
    : config_(config), sets_(node_sets(cluster, config, part_of_pool)), begin_(begin),
      last_submit_(std::max(begin, last_submit)), sample_interval_(std::max<int64_t>(1, sample_interval)), next_sample_(begin) {
    for (const SimNode &n : cluster.nodes) gpus_ += n.gpus;
    const size_t n = config.pools.size();
    over_.assign(n, 0);
    below_.assign(n, 0);
    lost_.assign(n, 0);
    preempted_.assign(n, 0);
    below_by_cause_.assign(n, BelowByCause{});
    used_int_.assign(n, 0);
    share_sum_.assign(n, 0);
    share_n_.assign(n, 0);
    demand_.assign(n, 0);
}

void MetricsRecorder::interval(int64_t from, int64_t to, uint32_t cluster_used, bool waiting,
                               const std::vector<PoolNow> &pools) {
    if (to <= from) return;
    const int64_t dt = to - from;
    busy_ += static_cast<double>(cluster_used) * static_cast<double>(dt);
    if (from < last_submit_)
        busy_arriving_ += static_cast<double>(cluster_used) * static_cast<double>(std::min(to, last_submit_) - from);
    // While some job waits: GPUs idle then are what a policy left idle
    // (quota, fragmentation), not a queue that ran dry.
    if (waiting) {
        busy_waiting_ += static_cast<double>(cluster_used) * static_cast<double>(dt);
        waiting_ += dt;
    }
    bool any_over = false, any_below = false;
    for (size_t i = 0; i < pools.size(); ++i) {
        const PoolNow &p = pools[i];
        const uint32_t quota = config_.pools[i].quota;
        used_int_[i] += static_cast<double>(p.used) * static_cast<double>(dt);
        if (p.np_used > quota) {
            over_[i] += dt;
            any_over = true;
        }
        if (below_quota(p, quota)) {
            below_[i] += dt;
            below_by_cause_[i][static_cast<size_t>(p.cause)] += dt;
            any_below = true;
        }
    }
    if (any_over) any_over_ += dt;
    if (any_below) any_below_ += dt;

    std::vector<double> x;
    for (; next_sample_ < to; next_sample_ += sample_interval_) {
        if (next_sample_ < from) continue;
        for (size_t i = 0; i < pools.size(); ++i) demand_[i] = pools[i].used + pools[i].pending_gpus;
        const std::vector<uint32_t> fs = point_fairshare(config_, sets_, demand_);
        x.clear();
        for (size_t i = 0; i < pools.size(); ++i) {
            PoolSample s;
            s.time = next_sample_;
            s.pool = static_cast<uint32_t>(i);
            s.used = pools[i].used;
            s.np_used = pools[i].np_used;
            s.p_used = pools[i].used - std::min(pools[i].used, pools[i].np_used);
            s.pending_gpus = pools[i].pending_gpus;
            s.fairshare = fs[i];
            samples_.push_back(s);
            // What the pool is entitled to use now: its fairshare, but no
            // more than it asks for.
            const uint32_t entitled = std::min(fs[i], demand_[i]);
            if (demand_[i] > 0 && entitled > 0) {
                const double share = static_cast<double>(pools[i].used) / entitled;
                share_sum_[i] += share;
                share_n_[i]++;
                x.push_back(share);
            }
        }
        samples_n_++;
        if (x.size() >= 2) {
            jain_sum_ += jain_index(x);
            jain_n_++;
        }
    }
}

void MetricsRecorder::finish(int64_t end, const std::vector<JobOutcome> &jobs, const std::vector<int> &job_pool,
                             Metrics &out, std::vector<PoolSample> *samples) {
    out = Metrics{};
    out.gpus = gpus_;
    out.begin = begin_;
    out.end = std::max(end, begin_);
    out.busy_gpu_seconds = busy_;
    const double span = static_cast<double>(out.end - out.begin);
    out.utilisation = gpus_ > 0 && span > 0 ? busy_ / (static_cast<double>(gpus_) * span) : 0;
    out.waiting_seconds = waiting_;
    out.utilisation_waiting =
        gpus_ > 0 && waiting_ > 0 ? busy_waiting_ / (static_cast<double>(gpus_) * static_cast<double>(waiting_)) : 0;
    out.arriving_seconds = last_submit_ - begin_;
    out.utilisation_arriving =
        gpus_ > 0 && out.arriving_seconds > 0
            ? busy_arriving_ / (static_cast<double>(gpus_) * static_cast<double>(out.arriving_seconds))
            : 0;
    out.np_over_quota_seconds = any_over_;
    out.below_quota_seconds = any_below_;
    out.jain = jain_n_ ? jain_sum_ / static_cast<double>(jain_n_) : 0;
    out.samples = samples_n_;

    const size_t ntiers = config_.tiers.size(), npools = config_.pools.size();
    std::vector<std::vector<int64_t>> tier_wait(ntiers), pool_wait(npools);
    std::vector<int64_t> all_wait;
    out.tiers.resize(ntiers);
    out.pools.resize(npools);
    for (size_t t = 0; t < ntiers; ++t) {
        out.tiers[t].name = config_.tiers[t].name;
        out.tiers[t].preemptible = config_.tiers[t].preemptible;
    }
    for (size_t p = 0; p < npools; ++p) {
        PoolMetrics &pm = out.pools[p];
        pm.name = config_.pools[p].name;
        pm.quota = config_.pools[p].quota;
        pm.np_over_quota_seconds = over_[p];
        pm.below_quota_seconds = below_[p];
        pm.below_by_cause = below_by_cause_[p];
        for (size_t c = 0; c < kBelowCauses; ++c) out.below_by_cause[c] += below_by_cause_[p][c];
        pm.mean_used = span > 0 ? used_int_[p] / span : 0;
        pm.mean_share = share_n_[p] ? share_sum_[p] / static_cast<double>(share_n_[p]) : 0;
        pm.preemptions = preempted_[p];
        pm.lost_gpu_hours = static_cast<double>(lost_[p]) / 3600.0;
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
        const JobOutcome &o = jobs[j];
        out.jobs++;
        if (o.state == JobEnd::Completed) out.completed++;
        if (o.state == JobEnd::Cancelled) out.cancelled++;
        if (o.state == JobEnd::RequeueLimit) out.requeue_limit++;
        if (o.first_start < 0) out.never_started++;
        out.preemptions += o.preemptions;
        out.lost_gpu_hours += static_cast<double>(o.lost_gpu_seconds) / 3600.0;
        const int pool = job_pool[j];
        if (o.tier >= 0) out.tiers[static_cast<size_t>(o.tier)].jobs++;
        if (pool >= 0) {
            PoolMetrics &pm = out.pools[static_cast<size_t>(pool)];
            pm.jobs++;
        }
        if (o.first_start < 0) continue;
        all_wait.push_back(o.wait);
        if (o.tier >= 0) tier_wait[static_cast<size_t>(o.tier)].push_back(o.wait);
        if (pool >= 0) pool_wait[static_cast<size_t>(pool)].push_back(o.wait);
    }
    // The same as utilisation, less the runs a preemption threw away.
    out.utilisation_useful = gpus_ > 0 && span > 0
                                 ? std::max(0.0, busy_ - out.lost_gpu_hours * 3600.0) / (static_cast<double>(gpus_) * span)
                                 : 0;
    out.wait = percentiles(std::move(all_wait));
    for (size_t t = 0; t < ntiers; ++t) out.tiers[t].wait = percentiles(std::move(tier_wait[t]));
    for (size_t p = 0; p < npools; ++p) out.pools[p].wait = percentiles(std::move(pool_wait[p]));
    if (samples) *samples = std::move(samples_);
}

}  // namespace gpupool::sim

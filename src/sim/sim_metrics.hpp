// Metrics of a replay: what the replay accumulates while it runs (time
// integrals per pool, samples) and the figures made of them at the end.
// Internal to src/sim; the figures themselves are in replay.hpp (Metrics).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "config.hpp"
#include "replay.hpp"
#include "workload.hpp"

namespace gpupool::sim {

// Nearest rank: the p-th percentile of n sorted values is the value at
// rank ceil(p/100 * n).  Takes a copy: callers keep their order (the
// within-quota waits are split by job size after).
Percentiles percentiles(std::vector<int64_t> values);

// Jain's fairness index (sum x)^2 / (n * sum x^2) of the values; 1 when
// all are equal; 0 for none (or all 0).
double jain_index(const std::vector<double> &x);

// Compare the replay's starts with the recorded ones (StartOrderCheck):
// first starts from `jobs`, restarts from `restarts`, the replay's starts
// after a requeue as (Workload index, time) in time order.
StartOrderCheck check_start_order(const Workload &workload, const std::vector<JobOutcome> &jobs,
                                  const std::vector<std::pair<uint32_t, int64_t>> &restarts, int64_t tolerance);

// Pools sharing nodes, as the core groups them ("domains"): for each
// gpupool.conf pool, the index of its node set (-1: no partition or no
// nodes) and each node set's GPUs.
struct NodeSets {
    std::vector<int> of_pool;
    std::vector<uint32_t> gpus;
};
NodeSets node_sets(const SimCluster &cluster, const Config &config, const std::vector<int32_t> &part_of_pool);

// Point-in-time fairshare (R8 with UsageWeight=0: quota plus a share of
// the unused GPUs by weight, water-filling) of every pool for the demand
// given (GPUs used plus GPUs asked by pending jobs), by the core's own
// compute_fairshare over each node set.
std::vector<uint32_t> point_fairshare(const Config &config, const NodeSets &sets, const std::vector<uint32_t> &demand);

// Each account's figures (AccountMetrics), from the jobs'
// outcomes and the account tree, quotas from `quotas`, tiers from the
// replay's `config`; `end`: the last instant (jobs never started wait
// until then).  None when no job has an account.
std::vector<AccountMetrics> account_metrics(const Workload &workload, const AccountTree &tree, const Config &quotas,
                                            const Config &config, const std::vector<JobOutcome> &jobs, int64_t end);

// Time integrals and samples, fed by the replay after each instant.
class MetricsRecorder {
public:
    // [begin, last_submit): the workload arriving.
    MetricsRecorder(const SimCluster &cluster, const Config &config, const std::vector<int32_t> &part_of_pool,
                    int64_t begin, int64_t last_submit, int64_t sample_interval);

    // Pool state over [from, to): GPUs used (all, NP) per pool, GPUs of
    // pending jobs listing it, and whether an eligible NP job waits that
    // fits the quota left by the running NP jobs.
    struct PoolNow {
        uint32_t used = 0, np_used = 0;
        uint32_t pending_gpus = 0;
        uint32_t np_wait_min_gpus = 0;  // smallest eligible waiting NP job; 0: none
        BelowCause cause = BelowCause::Other;  // why, when below_quota()
    };
    // An eligible NP job waits that fits the quota its pool's running NP
    // jobs leave.
    static bool below_quota(const PoolNow &p, uint32_t quota) {
        return p.np_wait_min_gpus > 0 && uint64_t(p.np_used) + p.np_wait_min_gpus <= quota;
    }
    // `waiting`: some job that could start some day is pending (or waits
    // out a requeue).
    void interval(int64_t from, int64_t to, uint32_t cluster_used, bool waiting, const std::vector<PoolNow> &pools);
    // A preemption in `pool`'s partition threw `gpu_seconds` away: the
    // pool that lost the run, wherever the job runs later.
    void preempted(size_t pool, int64_t gpu_seconds) {
        lost_[pool] += gpu_seconds;
        preempted_[pool]++;
    }

    // Figures at the end (`end`: the last instant).
    // `job_pool`: the pool each job counts in (where it ran last, else the
    // first pool it lists; -1: none); its preemptions count where they
    // happened (preempted()).
    void finish(int64_t end, const std::vector<JobOutcome> &jobs, const std::vector<int> &job_pool, Metrics &out,
                std::vector<PoolSample> *samples);

private:
    const Config &config_;
    NodeSets sets_;
    uint32_t gpus_ = 0;
    int64_t begin_ = 0, last_submit_ = 0, sample_interval_ = 0, next_sample_ = 0;
    double busy_ = 0, busy_waiting_ = 0, busy_arriving_ = 0;
    int64_t waiting_ = 0;
    int64_t any_over_ = 0, any_below_ = 0;
    std::vector<int64_t> over_, below_;
    std::vector<int64_t> lost_;        // GPU-seconds preemption threw away, per pool
    std::vector<uint64_t> preempted_;  // preemptions, per pool
    std::vector<BelowByCause> below_by_cause_;
    std::vector<double> used_int_;
    std::vector<double> share_sum_;
    std::vector<uint64_t> share_n_;
    double jain_sum_ = 0;
    uint64_t jain_n_ = 0, samples_n_ = 0;
    std::vector<PoolSample> samples_;
    std::vector<uint32_t> demand_;
};

}  // namespace gpupool::sim

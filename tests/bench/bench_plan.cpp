// The victim plan's cost (issue 27, acceptance 5): one preemptor's plan
// with 10,000 running jobs on 1,000 nodes, every GPU busy, the first of its
// kind and the next ones alike.  Target on a 2-core machine: 2 us per
// preemptor; the figures go to doc/performance.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "engine.hpp"

using namespace gpupool;

namespace {

constexpr int kPlanNodes = 1000;
constexpr uint32_t kPlanGpusPerNode = 16;

// pool1 and pool2 share the 1,000 nodes (quota 8,000 GPUs each).  Each
// node holds 10 jobs of 1 or 2 GPUs and is full: pool1's LOW jobs borrow
// from pool2, pool2 runs NORMAL and LOW jobs.  State `partitions`: the
// preemptor's partition covers all nodes (1) or one in ten (10 partitions).
Snapshot plan_snapshot(std::mt19937 &rng, int partitions) {
    Snapshot s;
    for (int n = 0; n < kPlanNodes; ++n) s.add_node("node" + std::to_string(n), kPlanGpusPerNode);
    std::vector<int32_t> all;
    for (int n = 0; n < kPlanNodes; ++n) all.push_back(n);
    s.add_partition("pool1", all);
    s.add_partition("pool2", all);
    for (int p = 0; p < partitions && partitions > 1; ++p) {
        std::vector<int32_t> part;
        for (int n = p; n < kPlanNodes; n += partitions) part.push_back(n);
        s.add_partition("pool2x" + std::to_string(p), part);
    }
    s.node_usage = true;
    uint32_t id = 1;
    for (int n = 0; n < kPlanNodes; ++n) {
        uint32_t left = kPlanGpusPerNode;
        for (int k = 0; k < 10; ++k) {
            const uint32_t gpus = k == 9 ? left : std::min<uint32_t>(left - (9 - k), 1 + rng() % 2);
            SnapJob j;
            j.id = id++;
            j.state = JobState::Running;
            const bool borrower = rng() % 2;
            j.partitions = {borrower ? "pool1" : "pool2"};
            j.qos = borrower || rng() % 2 ? "low" : "normal";
            j.gpus = gpus;
            j.submit_time = 1000;
            j.start_time = 1000 + rng() % 4000;
            j.nodes = {NodeShare{n, gpus}};
            left -= gpus;
            s.add_job(std::move(j));
        }
        s.nodes[size_t(n)].free_gpus = left;
    }
    return s;
}

// pool1 and pool2 of plan_snapshot(), with `extra` after each Pool line and
// `global` first.
Config two_pools(const std::string &extra = "", const std::string &global = "") {
    return parse_config(global + "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
                        "DefaultTier=normal\n"
                        "Pool=pool1 Quota=8000" + extra + "\nPool=pool2 Quota=8000" + extra + "\n",
                        "bench.conf");
}

// State: (partitions, alike, least-work).  alike 0: each preemptor in a new
// second, planning from nothing; alike 1: preemptors alike in one layout and
// second, as Slurm tries pending jobs of one kind in a row (a new second every
// 4,096, so that the kept plans stay few).  least-work 1: Swap=least-work.
void BM_VictimPlan(benchmark::State &state) {
    const int partitions = static_cast<int>(state.range(0));
    const bool alike = state.range(1) != 0;
    std::mt19937 rng(27);
    Engine e;
    e.set_config(two_pools("", state.range(2) ? "Swap=least-work\n" : ""));
    Snapshot s = plan_snapshot(rng, partitions);
    e.evaluate(s, 5000);
    std::vector<std::string> parts;
    for (int p = 0; p < partitions; ++p) parts.push_back(partitions > 1 ? "pool2x" + std::to_string(p) : "pool2");
    JobRef pre;
    pre.qos = "normal";
    pre.gpus = 4;
    pre.submit_time = 4900;
    pre.partitions = parts.front();
    int64_t now = 5000;
    uint32_t k = 0, victims = 0;
    for (auto _ : state) {
        pre.id = 900000 + k;
        if (!alike) pre.partitions = parts[k % parts.size()];
        if (!alike || k % 4096 == 0) ++now;
        ++k;
        victims += static_cast<uint32_t>(e.victim_plan(pre, now).victims.size());
    }
    benchmark::DoNotOptimize(victims);
    state.counters["nodes_searched"] = kPlanNodes / partitions;
}
BENCHMARK(BM_VictimPlan)
    ->Args({1, 0, 0})
    ->Args({10, 0, 0})
    ->Args({1, 1, 0})
    ->Args({10, 1, 0})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

// Placement=pack's cost per pass (issue 29, acceptance 3's core part): the
// Weights of 1,000 nodes with 10,000 running jobs, as priority/gpupool asks
// after every pass (gp_engine_node_weights), each Weight already set (the
// steady state: nothing to change) and all to set (the first pass).
void BM_NodeWeights(benchmark::State &state) {
    const bool first = state.range(0) != 0;
    std::mt19937 rng(29);
    Engine e;
    e.set_config(two_pools(" Placement=pack"));
    Snapshot s = plan_snapshot(rng, 1);
    e.evaluate(s, 5000);
    std::vector<uint32_t> base(kPlanNodes, 1), want(kPlanNodes);
    e.node_weights(base.data(), want.data(), want.size());
    const std::vector<uint32_t> set = want;
    size_t changed = 0;
    for (auto _ : state) {
        if (first) {
            // A fresh engine's memory would see the admin's Weights: the
            // same work as re-reading them.
            changed += e.node_weights(base.data(), want.data(), want.size());
            state.PauseTiming();
            e.node_weights(set.data(), want.data(), want.size());
            state.ResumeTiming();
        } else {
            changed += e.node_weights(set.data(), want.data(), want.size());
        }
    }
    benchmark::DoNotOptimize(changed);
    state.counters["nodes"] = kPlanNodes;
}
BENCHMARK(BM_NodeWeights)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

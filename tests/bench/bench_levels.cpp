// Benchmark of account queues: 1,000 accounts in a 3-level tree
// (10 departments, 9 groups in each, 10 projects in each group) over 4
// node pools, quotas on GPUs, CPUs and memory, 100,000 pending and 10,000
// running jobs of the projects.  Targets on a 2-core machine: a full pass
// at most 1 us per pending job, a preemption check at most 200 ns.
// Results go to doc/performance.md.  Full size alone:
//   make bench BENCH_ARGS='--benchmark_filter=Levels'
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "engine.hpp"

using namespace gpupool;

namespace {

constexpr int kLevelPools = 4;
constexpr int kLevelNodes = 4096;  // 1,024 per pool
constexpr int kDepartments = 10, kGroups = 9, kProjects = 10;
constexpr uint32_t kNodeCpus = 64;
constexpr uint64_t kNodeMemMb = 512 * 1024;

std::string department(int d) { return "dept" + std::to_string(d); }
std::string group(int d, int g) { return department(d) + "g" + std::to_string(g); }
std::string project(int d, int g, int p) { return group(d, g) + "p" + std::to_string(p); }

// Each pool: 8,192 GPUs; the departments' quotas take 6,000 of them, the
// groups' 540 of a department's 600, the projects' 50 of a group's 60.
std::string levels_config() {
    std::string c =
        "QuotaTRES=gres/gpu,cpu,mem\n"
        "ReclaimTo=fairshare\n"
        "Tier=high QOS=high Priority=300 Preemptible=no\n"
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\n";
    for (int p = 0; p < kLevelPools; ++p) c += "Pool=pool" + std::to_string(p) + " Quota=gres/gpu=8000,cpu=64000,mem=64000G\n";
    for (int d = 0; d < kDepartments; ++d) {
        c += "Account=" + department(d) + " Pool=* Quota=gres/gpu=600,cpu=4800,mem=38400G\n";
        for (int g = 0; g < kGroups; ++g) {
            c += "Account=" + group(d, g) + " Pool=* Quota=gres/gpu=60,cpu=480 Weight=" + std::to_string(1 + g % 3) + "\n";
            for (int p = 0; p < kProjects; ++p)
                c += "Account=" + project(d, g, p) + " Pool=* Quota=gres/gpu=" + std::to_string(p % 5 == 4 ? 0 : 6) +
                     " Weight=" + std::to_string(1 + p % 4) + "\n";
        }
    }
    return c;
}

Snapshot levels_snapshot(int pending, int running) {
    std::mt19937 rng(20);
    Snapshot s;
    s.nodes.reserve(kLevelNodes);
    for (int n = 0; n < kLevelNodes; ++n) s.nodes.push_back(SnapNode{"node" + std::to_string(n), 8, kNodeCpus, kNodeMemMb});
    const int block = kLevelNodes / kLevelPools;
    for (int p = 0; p < kLevelPools; ++p) {
        std::vector<int32_t> idx;
        for (int n = p * block; n < (p + 1) * block; ++n) idx.push_back(n);
        s.add_partition("pool" + std::to_string(p), idx);
    }
    std::vector<std::string> projects;
    for (int d = 0; d < kDepartments; ++d) {
        s.account_parent[department(d)] = "root";
        for (int g = 0; g < kGroups; ++g) {
            s.account_parent[group(d, g)] = department(d);
            for (int p = 0; p < kProjects; ++p) {
                s.account_parent[project(d, g, p)] = group(d, g);
                projects.push_back(project(d, g, p));
            }
        }
    }
    const char *qos[] = {"high", "normal", "low", "low"};
    s.jobs.reserve(static_cast<size_t>(pending + running));
    uint32_t id = 1;
    auto job = [&](JobState state) {
        SnapJob j;
        j.id = id++;
        j.state = state;
        j.partitions = {"pool" + std::to_string(rng() % kLevelPools)};
        j.qos = qos[rng() % 4];
        j.account = projects[rng() % projects.size()];
        j.gpus = 1 + rng() % (state == JobState::Running ? 2 : 8);
        j.cpus = 8 * j.gpus;
        j.mem_mb = 64 * 1024 * uint64_t(j.gpus);
        j.submit_time = 1000 + (state == JobState::Running ? 0 : rng() % 100000);
        j.start_time = state == JobState::Running ? 1000 + rng() % 1000 : 0;
        return j;
    };
    for (int r = 0; r < running; ++r) s.add_job(job(JobState::Running));
    for (int k = 0; k < pending; ++k) {
        SnapJob j = job(JobState::Pending);
        if (rng() % 10 == 0) j.partitions.push_back("pool" + std::to_string(rng() % kLevelPools));
        s.add_job(std::move(j));
    }
    return s;
}

Config parsed_levels_config() {
    return parse_config(levels_config(), "bench-levels.conf");
}

// One full pass with the queue trees: usage accounting, fairshare down
// each tree, order, admission against every queue on a job's path, victims.
void BM_LevelsPass(benchmark::State &state) {
    const int pending = static_cast<int>(state.range(0));
    Engine e;
    e.set_config(parsed_levels_config());
    Snapshot s = levels_snapshot(pending, 10000);
    int64_t now = 200000;
    for (auto _ : state) {
        e.evaluate(s, now++);
        benchmark::DoNotOptimize(e.last().pending.data());
    }
    state.counters["accounts"] = static_cast<double>(s.account_parent.size());
    state.counters["ns_per_pending_job"] =
        benchmark::Counter(static_cast<double>(pending), benchmark::Counter::kIsIterationInvariantRate |
                                                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_LevelsPass)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// Preemptability of the 10,000 running jobs for one pending NP job of a
// project, as preempt/gpupool asks it per candidate (Engine::preemptable;
// the C ABI passes accounts once the plugins do).
void BM_LevelsPreemptable(benchmark::State &state) {
    Engine e;
    e.set_config(parsed_levels_config());
    Snapshot s = levels_snapshot(100000, 10000);
    e.evaluate(s, 5000);
    std::vector<JobRef> victims;
    std::vector<std::string> parts(s.jobs.size());  // the refs' partition strings
    for (size_t i = 0; i < s.jobs.size(); ++i)
        if (s.jobs[i].state == JobState::Running) victims.push_back(job_ref(s.jobs[i], parts[i]));
    JobRef preemptor;
    preemptor.id = 999999;
    preemptor.partitions = "pool0";
    preemptor.qos = "high";
    preemptor.gpus = 1;
    preemptor.account = "dept0g0p0";
    preemptor.cpus = 8;
    preemptor.mem_mb = 64 * 1024;
    size_t allowed = 0;
    for (auto _ : state)
        for (const JobRef &v : victims) allowed += e.preemptable(v, preemptor, 5000).allowed;
    benchmark::DoNotOptimize(allowed);
    state.counters["ns_per_check"] = benchmark::Counter(static_cast<double>(victims.size()),
                                                        benchmark::Counter::kIsIterationInvariantRate |
                                                            benchmark::Counter::kInvert);
    state.counters["allowed"] = static_cast<double>(allowed) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_LevelsPreemptable)->Unit(benchmark::kMicrosecond);

// A new preemptor's first check: what it frees in its pool (Engine::
// freeable: a scan of the pool's running jobs and its queues) made again,
// as when Slurm's scheduler moves on to the next pending job.  Two
// preemptors of different projects take turns, one check each.
void BM_LevelsNewPreemptor(benchmark::State &state) {
    Engine e;
    e.set_config(parsed_levels_config());
    Snapshot s = levels_snapshot(100000, 10000);
    e.evaluate(s, 5000);
    std::string part;
    JobRef victim;
    for (const SnapJob &j : s.jobs)
        if (j.state == JobState::Running) {
            victim = job_ref(j, part);
            break;
        }
    JobRef pre[2];
    const char *accounts[2] = {"dept0g0p0", "dept1g0p0"};
    for (int i = 0; i < 2; ++i) {
        pre[i].id = 999990 + uint32_t(i);
        pre[i].partitions = "pool0";
        pre[i].qos = "high";
        pre[i].gpus = 1;
        pre[i].account = accounts[i];
        pre[i].cpus = 8;
        pre[i].mem_mb = 64 * 1024;
    }
    size_t allowed = 0, k = 0;
    for (auto _ : state) allowed += e.preemptable(victim, pre[k++ & 1], 5000).allowed;
    benchmark::DoNotOptimize(allowed);
    state.counters["ns_per_preemptor"] =
        benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LevelsNewPreemptor)->Unit(benchmark::kMicrosecond);

}  // namespace

// Benchmarks (printed, not pass/fail): targets on a 2-core machine are at
// most 1 us per pending job for order + admission, and 200 ns per
// preemptability check.  Results go to doc/performance.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "engine.hpp"
#include "gpupool.h"
#include "../../src/plugins/priority/gpupool/id_index.h"

using namespace gpupool;

namespace {

constexpr int kPools = 64;
constexpr int kNodes = 4096;
constexpr int kGpusPerNode = 8;

std::string bench_config() {
    std::string c =
        "Tier=high QOS=high Priority=300 Preemptible=no\n"
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\n";
    // 64 pools: pairs of pools share a block of 128 nodes (1024 GPUs),
    // each with a quota of 384 GPUs.
    for (int p = 0; p < kPools; ++p) c += "Pool=pool" + std::to_string(p) + " Quota=384 Weight=" + std::to_string(1 + p % 3) + "\n";
    return c;
}

Snapshot bench_snapshot(int pending, int running) {
    std::mt19937 rng(1);
    Snapshot s;
    s.nodes.reserve(kNodes);
    for (int n = 0; n < kNodes; ++n) s.add_node("node" + std::to_string(n), kGpusPerNode);
    const int block = kNodes / (kPools / 2);
    for (int p = 0; p < kPools; ++p) {
        std::vector<int32_t> idx;
        int first = (p / 2) * block;
        for (int n = first; n < first + block; ++n) idx.push_back(n);
        s.add_partition("pool" + std::to_string(p), idx);
    }
    const char *qos[] = {"high", "normal", "low", "low"};
    s.jobs.reserve(static_cast<size_t>(pending + running));
    uint32_t id = 1;
    for (int r = 0; r < running; ++r) {
        SnapJob j;
        j.id = id++;
        j.state = JobState::Running;
        j.partitions = {"pool" + std::to_string(rng() % kPools)};
        j.qos = qos[rng() % 4];
        j.gpus = 1 + rng() % 2;
        j.submit_time = 1000;
        j.start_time = 1000 + rng() % 1000;
        s.add_job(std::move(j));
    }
    for (int k = 0; k < pending; ++k) {
        SnapJob j;
        j.id = id++;
        j.state = JobState::Pending;
        j.partitions = {"pool" + std::to_string(rng() % kPools)};
        if (rng() % 10 == 0) j.partitions.push_back("pool" + std::to_string(rng() % kPools));
        j.qos = qos[rng() % 4];
        j.gpus = 1 + rng() % 8;
        j.submit_time = 1000 + rng() % 100000;
        s.add_job(std::move(j));
    }
    return s;
}

// One full pass: usage accounting, fairshare, order, admission, victims.
void BM_OrderAndAdmission(benchmark::State &state) {
    const int pending = static_cast<int>(state.range(0));
    Engine e;
    e.set_config(parse_config(bench_config(), "bench.conf"));
    Snapshot s = bench_snapshot(pending, 10000);
    int64_t now = 200000;
    for (auto _ : state) {
        e.evaluate(s, now++);
        benchmark::DoNotOptimize(e.last().pending.data());
    }
    state.counters["ns_per_pending_job"] =
        benchmark::Counter(static_cast<double>(pending), benchmark::Counter::kIsIterationInvariantRate |
                                                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_OrderAndAdmission)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// Building the snapshot through the C ABI, as the plugins do.
void BM_SnapshotThroughAbi(benchmark::State &state) {
    const int pending = static_cast<int>(state.range(0));
    Snapshot s = bench_snapshot(pending, 10000);
    std::vector<std::string> parts;
    for (const SnapJob &j : s.jobs) {
        std::string p;
        for (const std::string &x : j.partitions) p += (p.empty() ? "" : ",") + x;
        parts.push_back(p);
    }
    for (auto _ : state) {
        gp_snapshot_t *snap = gp_snapshot_create();
        gp_snapshot_reserve(snap, kNodes, s.jobs.size());
        for (const SnapNode &n : s.nodes) gp_snapshot_add_node(snap, n.name.c_str(), n.gpus);
        for (const SnapPartition &p : s.partitions)
            gp_snapshot_add_partition(snap, p.name.c_str(), p.nodes.data(), p.nodes.size());
        for (size_t i = 0; i < s.jobs.size(); ++i) {
            const SnapJob &j = s.jobs[i];
            gp_job_t g{};
            g.job_id = j.id;
            g.state = j.state == JobState::Running ? GP_JOB_RUNNING : GP_JOB_PENDING;
            g.partitions = parts[i].c_str();
            g.qos = j.qos.c_str();
            g.gpus = j.gpus;
            g.submit_time = j.submit_time;
            g.start_time = j.start_time;
            gp_snapshot_add_job(snap, &g);
        }
        gp_snapshot_destroy(snap);
    }
    state.counters["ns_per_job"] = benchmark::Counter(static_cast<double>(s.jobs.size()),
                                                      benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_SnapshotThroughAbi)->Arg(100000)->Unit(benchmark::kMillisecond);

// Preemptability of 10k running candidates against one pending NP job,
// through the C ABI as preempt_p_preemptable calls it.
void BM_Preemptable(benchmark::State &state) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    gp_engine_load_config_text(e, bench_config().c_str(), "bench.conf", err, sizeof err);
    Snapshot s = bench_snapshot(1000, 10000);
    gp_snapshot_t *snap = gp_snapshot_create();
    for (const SnapNode &n : s.nodes) gp_snapshot_add_node(snap, n.name.c_str(), n.gpus);
    for (const SnapPartition &p : s.partitions) gp_snapshot_add_partition(snap, p.name.c_str(), p.nodes.data(), p.nodes.size());
    std::vector<gp_job_t> victims;
    for (const SnapJob &j : s.jobs) {
        gp_job_t g{};
        g.job_id = j.id;
        g.state = j.state == JobState::Running ? GP_JOB_RUNNING : GP_JOB_PENDING;
        g.partitions = j.partitions[0].c_str();
        g.qos = j.qos.c_str();
        g.gpus = j.gpus;
        g.submit_time = j.submit_time;
        g.start_time = j.start_time;
        gp_snapshot_add_job(snap, &g);
        if (g.state == GP_JOB_RUNNING) victims.push_back(g);
    }
    gp_engine_evaluate(e, snap, 5000);
    gp_job_t preemptor{};
    preemptor.job_id = 999999;
    preemptor.state = GP_JOB_PENDING;
    preemptor.partitions = "pool0";
    preemptor.qos = "high";
    preemptor.gpus = 1;
    size_t allowed = 0;
    for (auto _ : state) {
        for (const gp_job_t &v : victims) {
            gp_verdict_t out;
            gp_engine_preemptable(e, &v, &preemptor, 5000, &out);
            allowed += static_cast<size_t>(out.allowed);
        }
    }
    benchmark::DoNotOptimize(allowed);
    state.counters["ns_per_check"] = benchmark::Counter(static_cast<double>(victims.size()),
                                                        benchmark::Counter::kIsIterationInvariantRate |
                                                            benchmark::Counter::kInvert);
    state.counters["candidates"] = static_cast<double>(victims.size());
    gp_snapshot_destroy(snap);
    gp_engine_destroy(e);
}
BENCHMARK(BM_Preemptable)->Unit(benchmark::kMicrosecond);

// Victim order lookups (PREEMPT_DATA_PRIO), 10k per iteration.
void BM_VictimRank(benchmark::State &state) {
    Engine e;
    e.set_config(parse_config(bench_config(), "bench.conf"));
    Snapshot s = bench_snapshot(1000, 10000);
    e.evaluate(s, 5000);
    uint64_t sum = 0;
    for (auto _ : state)
        for (uint32_t id = 1; id <= 10000; ++id) sum += e.victim_rank(id);
    benchmark::DoNotOptimize(sum);
    state.counters["ns_per_lookup"] = benchmark::Counter(10000, benchmark::Counter::kIsIterationInvariantRate |
                                                                    benchmark::Counter::kInvert);
}
BENCHMARK(BM_VictimRank)->Unit(benchmark::kMicrosecond);

// One job end at 100,000 pending jobs, through the C ABI
// as priority_p_job_end calls it: every pool's quota is full of running
// non-preemptible 1-GPU jobs and its pending ones wait (held), so each end
// gives one GPU back to a pool whose queue is long.  Timed: the core's part
// of the job end, gp_engine_job_ended() and reading back every result the
// plugin then writes; `touched` counts those results (jobs the plugin
// looks up and rewrites under slurmctld's job write lock).
struct JobEndFixture {
    gp_engine_t *e = nullptr;
    gp_snapshot_t *snap = nullptr;
    std::vector<uint32_t> ends;  // running NP jobs, pools taken in turn
    std::vector<std::string> parts;
    int64_t now = 5000;

    explicit JobEndFixture(int pending) {
        e = gp_engine_create();
        char err[256];
        gp_engine_load_config_text(e, bench_config().c_str(), "bench.conf", err, sizeof err);
        std::mt19937 rng(7);
        snap = gp_snapshot_create();
        gp_snapshot_reserve(snap, kNodes, static_cast<size_t>(pending) + 30000);
        std::vector<int32_t> idx;
        for (int n = 0; n < kNodes; ++n) gp_snapshot_add_node(snap, ("node" + std::to_string(n)).c_str(), kGpusPerNode);
        const int block = kNodes / (kPools / 2);
        for (int p = 0; p < kPools; ++p) {
            idx.clear();
            for (int n = (p / 2) * block; n < (p / 2 + 1) * block; ++n) idx.push_back(n);
            gp_snapshot_add_partition(snap, ("pool" + std::to_string(p)).c_str(), idx.data(), idx.size());
        }
        parts.reserve(static_cast<size_t>(pending) + 30000);
        uint32_t id = 1;
        std::vector<std::vector<uint32_t>> by_pool(kPools);
        auto add = [&](int state, std::string part, const char *qos, uint32_t gpus, int64_t submit) {
            parts.push_back(std::move(part));
            gp_job_t g{};
            g.job_id = id++;
            g.state = state;
            g.partitions = parts.back().c_str();
            g.qos = qos;
            g.gpus = gpus;
            g.submit_time = submit;
            g.start_time = state == GP_JOB_RUNNING ? 2000 : 0;
            gp_snapshot_add_job(snap, &g);
            return g.job_id;
        };
        // Quota (384) full: non-preemptible 1-GPU jobs; and preemptible
        // jobs borrowing beside them.
        for (int p = 0; p < kPools; ++p)
            for (int k = 0; k < 384; ++k)
                by_pool[static_cast<size_t>(p)].push_back(add(GP_JOB_RUNNING, "pool" + std::to_string(p), "normal", 1, 1000));
        for (int k = 0; k < 4096; ++k) add(GP_JOB_RUNNING, "pool" + std::to_string(rng() % kPools), "low", 1, 1000);
        const char *qos[] = {"high", "normal", "normal", "low"};
        for (int k = 0; k < pending; ++k) {
            std::string part = "pool" + std::to_string(rng() % kPools);
            if (rng() % 10 == 0) part += ",pool" + std::to_string(rng() % kPools);
            add(GP_JOB_PENDING, part, qos[rng() % 4], 1 + rng() % 2, 1000 + rng() % 100000);
        }
        for (int k = 0; k < 384; ++k)
            for (int p = 0; p < kPools; ++p) ends.push_back(by_pool[static_cast<size_t>(p)][static_cast<size_t>(k)]);
        gp_engine_evaluate(e, snap, now);
    }
    // Jobs submitted since the pass (priority_p_set): held, as the pools
    // are full.
    void place(int n) {
        static const std::string pools[] = {"pool0", "pool1", "pool2", "pool3"};
        for (int k = 0; k < n; ++k) {
            gp_job_t g{};
            g.job_id = 900000 + static_cast<uint32_t>(k);
            g.state = GP_JOB_PENDING;
            g.partitions = pools[k % 4].c_str();
            g.qos = "normal";
            g.gpus = 1;
            g.submit_time = now;
            gp_pending_result_t r;
            gp_engine_provisional(e, &g, now, &r);
        }
    }
    ~JobEndFixture() {
        gp_snapshot_destroy(snap);
        gp_engine_destroy(e);
    }
};

void BM_JobEnd(benchmark::State &state) {
    JobEndFixture f(static_cast<int>(state.range(0)));
    const int placed = static_cast<int>(state.range(1));
    f.place(placed);
    size_t next = 0;
    uint64_t touched = 0, ended = 0;
    for (auto _ : state) {
        if (next == f.ends.size()) {
            // Every running job ended: back to the pass's picture.
            state.PauseTiming();
            gp_engine_evaluate(f.e, f.snap, ++f.now);
            f.place(placed);
            next = 0;
            state.ResumeTiming();
        }
        int rc = gp_engine_job_ended(f.e, f.ends[next++], f.now);
        // As gpp_results_apply_changed() reads them (before ABI 10 the
        // plugin read all pending jobs' results, gp_engine_pending_at,
        // whenever an admission changed: 12.9 ms, 100,000 touched).
        for (int i = 0; i < rc; ++i) {
            gp_pending_result_t r;
            if (gp_engine_changed_at(f.e, static_cast<size_t>(i), &r) == GP_OK) ++touched;
            benchmark::DoNotOptimize(r);
        }
        ++ended;
    }
    state.counters["pending"] = static_cast<double>(state.range(0));
    state.counters["placed_since_pass"] = placed;
    state.counters["touched_per_end"] = ended ? static_cast<double>(touched) / static_cast<double>(ended) : 0;
}
// Args: pending jobs of the pass, jobs placed since (held).
BENCHMARK(BM_JobEnd)->Args({100000, 0})->Args({100000, 2000})->Unit(benchmark::kMicrosecond);

// priority/gpupool's lookup of a job array record's cap, once per pending
// job a pass writes, with 10,000 capped arrays: by the
// id index (id_index.h) and, arg 1, by the linear search it replaced.
void BM_CapLookup(benchmark::State &state) {
    const bool linear = state.range(0) == 1;
    std::vector<uint32_t> capped;
    gpp_id_index_t ix{};
    for (uint32_t k = 0; k < 10000; ++k) {
        capped.push_back(1000 + 7 * k);
        gpp_id_put(&ix, capped.back(), k);
    }
    uint64_t found = 0;
    for (auto _ : state) {
        for (uint32_t id = 1000; id < 1000 + 100000; ++id) {
            if (linear) {
                for (uint32_t c : capped)
                    if (c == id) {
                        ++found;
                        break;
                    }
            } else {
                found += gpp_id_find(&ix, id) >= 0;
            }
        }
    }
    benchmark::DoNotOptimize(found);
    gpp_id_free(&ix);
    state.counters["ns_per_pending_job"] = benchmark::Counter(100000, benchmark::Counter::kIsIterationInvariantRate |
                                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_CapLookup)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

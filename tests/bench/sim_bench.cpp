// Benchmark of `gpupool sim`: one million jobs on
// 10,000 GPUs, generated with a fixed seed, replayed under each policy
// asked for; prints the wall seconds of each replay and the process's
// peak RSS.  Printed, not pass/fail; figures in doc/performance.md.
//
//   tests/bench/sim_bench [--jobs=N] [--nodes=COUNTxGPUS] [--pools=N]
//                         [--policy=LIST] [--load=L] [--seed=S]
//                         [--sched-interval=S] [--pass-interval=S]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config.hpp"
#include "replay.hpp"
#include "workload.hpp"

using namespace gpupool;
using namespace gpupool::sim;

namespace {

double peak_rss_mib() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

const char *arg(int argc, char **argv, const char *name, const char *def) {
    const size_t n = std::strlen(name);
    for (int i = 1; i < argc; ++i)
        if (!std::strncmp(argv[i], name, n) && argv[i][n] == '=') return argv[i] + n + 1;
    return def;
}

}  // namespace

int main(int argc, char **argv) {
    const uint64_t jobs = std::strtoull(arg(argc, argv, "--jobs", "1000000"), nullptr, 10);
    const std::string nodes = arg(argc, argv, "--nodes", "1250x8");
    const int npools = std::atoi(arg(argc, argv, "--pools", "8"));
    const std::string policies = arg(argc, argv, "--policy", "gpupool");
    const std::string load = arg(argc, argv, "--load", "0.95");
    const std::string seed = arg(argc, argv, "--seed", "1");
    ReplayOptions ro;
    ro.sched_interval = std::atoll(arg(argc, argv, "--sched-interval", "0"));
    ro.pass_interval = std::atoll(arg(argc, argv, "--pass-interval", "1"));

    try {
        std::string pool_list;
        for (int p = 1; p <= npools; ++p) pool_list += (p > 1 ? "," : "") + std::string("pool") + std::to_string(p);
        const SimCluster cluster = make_cluster(nodes, pool_list);
        const uint64_t gpus = total_gpus(cluster);
        // Every pool over every node, quotas splitting the GPUs evenly.
        std::string conf =
            "Tier=high   QOS=high   Priority=300 Preemptible=no\n"
            "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
            "Tier=low    QOS=low    Priority=100 Preemptible=yes\n"
            "DefaultTier=normal\n";
        for (int p = 1; p <= npools; ++p)
            conf += "Pool=pool" + std::to_string(p) + " Quota=" + std::to_string(gpus / npools) + "\n";
        const Config config = parse_config(conf, "bench.conf");
        const std::string spec_text = "Seed=" + seed + " Jobs=" + std::to_string(jobs) + " Pools=" + pool_list +
                                      " Tiers=high:0.1,normal:0.6,low:0.3 Gpus=1:0.5,2:0.2,4:0.15,8:0.15"
                                      " Duration=lognormal:1h:1.0 DurationMin=60 DurationMax=3d Load=" +
                                      load;
        const auto g0 = std::chrono::steady_clock::now();
        const Workload workload = generate_workload(parse_generator_spec(spec_text, "bench"), gpus);
        const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
        std::printf("workload: %zu jobs on %llu GPUs (%zu nodes, %d pools), generated in %.2f s: %s\n",
                    workload.jobs.size(), static_cast<unsigned long long>(gpus), cluster.nodes.size(), npools, gen_s,
                    spec_text.c_str());
        std::printf("options: sched_interval %lld s, pass_interval %lld s\n",
                    static_cast<long long>(ro.sched_interval), static_cast<long long>(ro.pass_interval));
        for (PolicyKind k : parse_policies(policies)) {
            const ReplayResult r = replay(cluster, workload, config, k, ro);
            const Metrics &m = r.metrics;
            std::printf("%-8s wall %7.2f s  peak RSS %7.1f MiB  util %5.1f%%  wait p50 %lld s p99 %lld s  "
                        "preemptions %llu  never started %llu  | instants %llu walks %llu passes %llu refreshes %llu "
                        "searches %llu\n",
                        policy_name(k), r.stats.wall_seconds, peak_rss_mib(), 100.0 * m.utilisation,
                        static_cast<long long>(m.wait.p50), static_cast<long long>(m.wait.p99),
                        static_cast<unsigned long long>(m.preemptions),
                        static_cast<unsigned long long>(m.never_started),
                        static_cast<unsigned long long>(r.stats.instants),
                        static_cast<unsigned long long>(r.stats.walks), static_cast<unsigned long long>(r.stats.passes),
                        static_cast<unsigned long long>(r.stats.refreshes),
                        static_cast<unsigned long long>(r.stats.preemption_searches));
            std::fflush(stdout);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "sim_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}

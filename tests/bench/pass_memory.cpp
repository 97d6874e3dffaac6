// The heap a pass takes inside slurmctld, in the shape of issue 30's live
// run (scripts/live-cost.sh --accounts 10x20): one pool `gpu` (quota 8) over
// 4 nodes x 2 GPUs, 10 departments x 20 projects with Account= entries, 8
// running NORMAL jobs, N pending 1-GPU jobs (NORMAL and LOW in turns of 4,
// the projects in turn).  Each pass goes through the C ABI as the plugin's
// agent does it: snapshot create, reserve, nodes, partition, accounts,
// jobs, evaluate, destroy.  Counted by replacing this program's operator
// new and delete, and the snapshot's job array the core maps for the pass
// (PageAllocator):
//   held:  bytes the core keeps between passes (after the third);
//   peak:  the most it holds during the fourth pass, above `held`.
// slurmctld's RSS carries both (a freed peak stays as free pages).
//   tests/bench/pass_memory [N...]      (default 10000 100000)
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "../counted_new.hpp"
#include "containers.hpp"
#include "gpupool.h"

namespace {
std::atomic<long long> live{0}, peak{0};
long long mapped_in_pass = 0;  // mapped while the last pass evaluated

long long mapped_now() { return static_cast<long long>(gpupool::mapped_bytes()); }
}  // namespace

void *counted_new(std::size_t n) noexcept {
    void *p = std::malloc(n ? n : 1);
    if (!p) return nullptr;
    const long long size = static_cast<long long>(malloc_usable_size(p));
    const long long now = live.fetch_add(size) + size;
    long long was = peak.load();
    while (now > was && !peak.compare_exchange_weak(was, now)) {
    }
    return p;
}
void counted_delete(void *p) noexcept {
    if (!p) return;
    live.fetch_sub(static_cast<long long>(malloc_usable_size(p)));
    std::free(p);
}

namespace {

constexpr int kDepartments = 10, kProjects = 20;

std::string project(int i) {
    return "d" + std::to_string(i / kProjects % kDepartments) + "p" + std::to_string(i % kProjects);
}

std::string config() {
    std::string c =
        "QuotaTRES=gres/gpu\nRecalcInterval=10\n"
        "Tier=high QOS=high Priority=300 Preemptible=no\n"
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nPool=gpu Quota=8\n";
    for (int d = 0; d < kDepartments; ++d) {
        c += "Account=d" + std::to_string(d) + " Pool=gpu Quota=gres/gpu=1\n";
        for (int p = 0; p < kProjects; ++p)
            c += "Account=d" + std::to_string(d) + "p" + std::to_string(p) + " Pool=gpu Quota=gres/gpu=1 Weight=" +
                 std::to_string(1 + p % 3) + "\n";
    }
    return c;
}

struct Job {
    uint32_t id;
    int state;
    std::string qos, account;
    int64_t submit;
};

void pass(gp_engine_t *e, const std::vector<Job> &jobs, int64_t now) {
    gp_snapshot_t *s = gp_snapshot_create();
    gp_snapshot_reserve(s, 4, jobs.size());
    int32_t idx[4];
    for (int n = 0; n < 4; ++n) idx[n] = gp_snapshot_add_node(s, ("node" + std::to_string(n + 1)).c_str(), 2);
    gp_snapshot_add_partition(s, "gpu", idx, 4);
    for (int d = 0; d < kDepartments; ++d) {
        std::string dep = "d" + std::to_string(d);
        gp_snapshot_add_account(s, dep.c_str(), "root");
        for (int p = 0; p < kProjects; ++p) gp_snapshot_add_account(s, (dep + "p" + std::to_string(p)).c_str(), dep.c_str());
    }
    for (const Job &j : jobs) {
        gp_job_t g{};
        g.job_id = j.id;
        g.state = j.state;
        g.partitions = "gpu";
        g.qos = j.qos.c_str();
        g.account = j.account.c_str();
        g.gpus = 1;
        g.cpus = 1;
        g.submit_time = j.submit;
        g.start_time = j.state == GP_JOB_RUNNING ? j.submit : 0;
        gp_snapshot_add_job(s, &g);
    }
    mapped_in_pass = mapped_now();
    if (gp_engine_evaluate(e, s, now) != GP_OK) std::fprintf(stderr, "pass_memory: evaluate failed\n");
    gp_snapshot_destroy(s);
}

void measure(int pending) {
    gp_engine_t *e = gp_engine_create();
    char err[512];
    if (gp_engine_load_config_text(e, config().c_str(), "pass_memory", err, sizeof err) != GP_OK) {
        std::fprintf(stderr, "pass_memory: %s\n", err);
        std::exit(1);
    }
    std::vector<Job> jobs;
    uint32_t id = 1;
    for (int i = 0; i < 8; ++i) jobs.push_back(Job{id++, GP_JOB_RUNNING, "normal", "d" + std::to_string(i) + "p0", 1000});
    for (int i = 0; i < pending; ++i)
        jobs.push_back(Job{id++, GP_JOB_PENDING, (i / 4) % 2 ? "low" : "normal", project(i), 2000 + i / 100});
    const long long before = live.load() + mapped_now();
    int64_t now = 5000;
    for (int k = 0; k < 3; ++k) pass(e, jobs, now += 10);
    const long long held = live.load() + mapped_now() - before;
    peak.store(live.load());
    const long long at = live.load() + mapped_now();
    pass(e, jobs, now += 10);
    const long long over = peak.load() + mapped_in_pass - at;
    std::printf("%7d pending: held between passes %6.2f MiB (%4.0f B/job), peak during a pass +%6.2f MiB (%4.0f B/job)\n",
                pending, static_cast<double>(held) / 1048576.0, static_cast<double>(held) / pending,
                static_cast<double>(over) / 1048576.0, static_cast<double>(over) / pending);
    gp_engine_destroy(e);
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<int> sizes;
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
    if (sizes.empty()) sizes = {10000, 100000};
    std::printf("pass_memory: the core's heap per pass, issue 30's shape (1 pool, 10x20 accounts)\n");
    for (int n : sizes)
        if (n > 0) measure(n);
    return 0;
}

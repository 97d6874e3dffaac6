// slurmctld's submit path (priority_p_set -> gp_engine_note_job,
// gp_engine_provisional) runs once per job in slurmctld's request thread:
// a heap allocation there per job would land between slurmctld's own job
// records, and freed by the next pass from the agent thread it leaves holes
// that later records fill, scattering the job list that every scheduling
// cycle walks (doc/performance.md, live cost).  Counted here by replacing
// the global operator new of this test binary.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "../counted_new.hpp"
#include "gpupool.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

void *counted_new(std::size_t n) noexcept {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n ? n : 1);
}
void counted_delete(void *p) noexcept { std::free(p); }

namespace {
gp_job_t job(uint32_t id, int state, const char *part, const char *qos, int64_t t) {
    gp_job_t j{};
    j.job_id = id;
    j.state = state;
    j.partitions = part;
    j.qos = qos;
    j.gpus = 1;
    j.submit_time = t;
    j.start_time = state == GP_JOB_RUNNING ? t : 0;
    return j;
}
// Tiers normal (NP) and low (P); pools pool1 and pool2, quota 2 each.
gp_engine_t *two_pools() {
    const char *conf =
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n";
    gp_engine_t *e = gp_engine_create();
    char err[256];
    if (gp_engine_load_config_text(e, conf, "gpupool.conf", err, sizeof err) != GP_OK) {
        ADD_FAILURE() << err;
        gp_engine_destroy(e);
        return nullptr;
    }
    return e;
}

// Two 2-GPU nodes, pool1 and pool2 over both.
gp_snapshot_t *two_nodes() {
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t idx[2];
    for (int i = 0; i < 2; ++i) idx[i] = gp_snapshot_add_node(s, i ? "node2" : "node1", 2);
    EXPECT_EQ(gp_snapshot_add_partition(s, "pool1", idx, 2), GP_OK);
    EXPECT_EQ(gp_snapshot_add_partition(s, "pool2", idx, 2), GP_OK);
    return s;
}
}  // namespace

// A full cluster of two pools (quota 2 each), 10,000 jobs pending: the
// next 1,000 submits (NORMAL held over quota, LOW free, one listing both
// pools) allocate nothing, held reasons included.
TEST(SubmitPath, NoHeapAllocationPerSubmittedJob) {
    gp_engine_t *e = two_pools();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = two_nodes();
    uint32_t id = 1;
    for (int i = 0; i < 4; ++i) {
        gp_job_t r = job(id++, GP_JOB_RUNNING, i < 2 ? "pool1" : "pool2", "normal", 100);
        ASSERT_EQ(gp_snapshot_add_job(s, &r), GP_OK);
    }
    for (int i = 0; i < 10000; ++i) {
        gp_job_t p = job(id++, GP_JOB_PENDING, i % 2 ? "pool1" : "pool2", (i / 2) % 2 ? "low" : "normal", 200 + i);
        ASSERT_EQ(gp_snapshot_add_job(s, &p), GP_OK);
    }
    ASSERT_EQ(gp_engine_evaluate(e, s, 20000), GP_OK);
    gp_snapshot_destroy(s);

    long before = allocations.load();
    int held = 0;
    for (int i = 0; i < 1000; ++i) {
        const char *part = i == 500 ? "pool1,pool2" : i % 2 ? "pool1" : "pool2";
        gp_job_t j = job(id++, GP_JOB_PENDING, part, (i / 2) % 2 ? "low" : "normal", 30000 + i);
        gp_pending_result_t r;
        gp_engine_note_job(e, j.job_id, j.submit_time, 0, 30000 + i);
        ASSERT_EQ(gp_engine_provisional(e, &j, 30000 + i, &r), GP_OK);
        if (r.admission == GP_HELD_QUOTA) {
            ++held;
            // (strncmp: a std::string here would count)
            EXPECT_EQ(std::strncmp(r.reason, GP_HOLD_PREFIX "Quota:pool", 16), 0) << r.reason;
        }
    }
    EXPECT_EQ(allocations.load() - before, 0);
    EXPECT_EQ(held, 500);
    gp_engine_destroy(e);
}

// Accounts with names longer than a std::string keeps in itself (15 bytes).
const std::vector<std::string> &long_accounts() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (int i = 0; i < 200; ++i) v.push_back("physics-department-project-" + std::to_string(i));
        return v;
    }();
    return names;
}

// A pass builds a snapshot of every job (slurmctld's agent thread, every
// few seconds): after the first, building it again and evaluating it
// allocates nothing per job, even for account names too long for a
// string's own room and for running jobs' node lists (the last snapshot's
// heap rooms are handed on, its job array is mapped), so that passes do not
// churn the heap between slurmctld's job records.
TEST(PassPath, SnapshotRebuiltWithoutAnAllocationPerJob) {
    gp_engine_t *e = two_pools();
    ASSERT_NE(e, nullptr);
    const std::vector<std::string> &accounts = long_accounts();
    auto pass = [&](int64_t now) {
        gp_snapshot_t *s = two_nodes();
        gp_snapshot_reserve(s, 2, 10004);
        uint32_t id = 1;
        for (int i = 0; i < 4; ++i) {
            gp_job_t r = job(id++, GP_JOB_RUNNING, i < 2 ? "pool1" : "pool2", "normal", 100);
            r.account = accounts[size_t(i)].c_str();
            EXPECT_EQ(gp_snapshot_add_job(s, &r), GP_OK);
            const int32_t nodes[2] = {0, 1};
            const uint32_t gpus[2] = {1, 0};
            EXPECT_EQ(gp_snapshot_set_job_nodes(s, nodes, gpus, 2), GP_OK);
        }
        for (int i = 0; i < 10000; ++i) {
            gp_job_t p = job(id++, GP_JOB_PENDING, i == 8 ? "pool1,pool2" : i % 2 ? "pool1" : "pool2",
                             (i / 2) % 2 ? "low" : "normal", 200 + i);
            p.account = accounts[size_t(i) % accounts.size()].c_str();
            EXPECT_EQ(gp_snapshot_add_job(s, &p), GP_OK);
        }
        EXPECT_EQ(gp_engine_evaluate(e, s, now), GP_OK);
        gp_snapshot_destroy(s);
    };
    pass(20000);
    long before = allocations.load();
    pass(20010);
    // A few dozen per pass (the pass's own arrays), not one per job.
    EXPECT_LT(allocations.load() - before, 200);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 13, &r), GP_OK);  // i == 8: NORMAL, both pools
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_EQ(std::strncmp(r.reason, GP_HOLD_PREFIX "Quota:pool1 2/2,pool2 2/2", 40), 0) << r.reason;
    gp_engine_destroy(e);
}

// A refresh of running jobs (preempt/gpupool, between passes) takes the
// heap rooms the last pass's snapshot left: the next pass must still find
// them (no allocation per job again) and lose neither the refresh's jobs
// nor the pass's.
TEST(PassPath, ARefreshBetweenPassesLeavesTheNextPassItsRooms) {
    gp_engine_t *e = two_pools();
    ASSERT_NE(e, nullptr);
    const std::vector<std::string> &accounts = long_accounts();
    auto build = [&](int pending) {
        gp_snapshot_t *s = two_nodes();
        gp_snapshot_reserve(s, 2, 4 + pending);
        uint32_t id = 1;
        for (int i = 0; i < 4; ++i) {
            gp_job_t r = job(id++, GP_JOB_RUNNING, i < 2 ? "pool1" : "pool2", i % 2 ? "low" : "normal", 100);
            r.account = accounts[size_t(i)].c_str();
            EXPECT_EQ(gp_snapshot_add_job(s, &r), GP_OK);
        }
        for (int i = 0; i < pending; ++i) {
            gp_job_t p = job(id++, GP_JOB_PENDING, i % 2 ? "pool1" : "pool2", "low", 200 + i);
            p.account = accounts[size_t(i) % accounts.size()].c_str();
            EXPECT_EQ(gp_snapshot_add_job(s, &p), GP_OK);
        }
        return s;
    };
    gp_snapshot_t *s = build(5000);
    ASSERT_EQ(gp_engine_evaluate(e, s, 20000), GP_OK);
    gp_snapshot_destroy(s);
    s = build(0);  // the refresh: running jobs only
    ASSERT_EQ(gp_engine_refresh_running(e, s, 20005), GP_OK);
    gp_snapshot_destroy(s);
    long before = allocations.load();
    s = build(5000);
    EXPECT_LT(allocations.load() - before, 50);  // the rooms were handed on
    ASSERT_EQ(gp_engine_evaluate(e, s, 20010), GP_OK);
    gp_snapshot_destroy(s);
    EXPECT_EQ(gp_engine_pending_count(e), 5000u);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 5004, &r), GP_OK);  // the last one
    EXPECT_EQ(r.admission, GP_ADMIT_FREE);
    gp_engine_destroy(e);
}

// preempt_p_preemptable asks about every running job for each job Slurm
// tests (request threads at submit, the scheduler, backfill): its answer,
// the why text included, allocates nothing.
TEST(PreemptPath, PreemptableAllocatesNothing) {
    gp_engine_t *e = two_pools();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = two_nodes();
    gp_job_t run[4];
    for (int i = 0; i < 4; ++i) {
        // pool1: NORMAL, LOW (borrowing pool2's quota); pool2: LOW, LOW
        run[i] = job(static_cast<uint32_t>(i + 1), GP_JOB_RUNNING, i < 2 ? "pool1" : "pool2", i == 0 ? "normal" : "low",
                     100 + i);
        ASSERT_EQ(gp_snapshot_add_job(s, &run[i]), GP_OK);
    }
    ASSERT_EQ(gp_engine_evaluate(e, s, 200), GP_OK);
    gp_snapshot_destroy(s);
    gp_job_t pre[3] = {job(10, GP_JOB_PENDING, "pool2", "normal", 150), job(11, GP_JOB_PENDING, "pool1", "low", 151),
                       job(12, GP_JOB_PENDING, "pool1,pool2", "normal", 152)};
    long before = allocations.load();
    int allowed = 0;
    for (const gp_job_t &p : pre)
        for (const gp_job_t &v : run) {
            gp_verdict_t out;
            ASSERT_EQ(gp_engine_preemptable(e, &v, &p, 300, &out), GP_OK);
            EXPECT_NE(out.why[0], '\0');
            allowed += out.allowed;
        }
    EXPECT_EQ(allocations.load() - before, 0);
    EXPECT_GT(allowed, 0);
    gp_engine_destroy(e);
}

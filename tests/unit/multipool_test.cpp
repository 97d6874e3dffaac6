// R2 for a non-preemptible job listing several pools (`sbatch -p
// pool1,pool2`): it starts in a listed pool whose quota it fits, never in
// one whose quota it would exceed, and is held only while it fits none.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "gpupool.h"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

// The integration cluster: pool1 and pool2 over the same four 1-GPU nodes,
// pool3 over two more, each with quota 2 (etc/gpupool.conf.example).
Snapshot shared_nodes() {
    Snapshot s = cluster(6);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    partition(s, "pool3", 4, 5);
    partition(s, "plain", 0, 3);  // not a pool
    return s;
}

const std::string kPools = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\nPool=pool3 Quota=2\n";
}  // namespace

// A NORMAL job listing two pools, the first at quota and the second free,
// is admitted at once and may start only in the second.
TEST(MultiPool, FirstAtQuotaSecondFreeStartsInTheSecond) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "normal", 1, T0));
    s.add_job(pending(3, "pool1,pool2", "normal", 1, T0 + 1));
    e.evaluate(s, T0 + 2);
    const PendingResult *r = e.pending_result(3);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->admission, Admission::Quota);
    EXPECT_GT(r->priority, 0u);
    EXPECT_EQ(e.reason_of(*r), "");
    ASSERT_EQ(r->refused.size(), 1u);
    EXPECT_EQ(r->refused.front(), (Refusal{0, 2}));
    EXPECT_EQ(e.start_partitions(3, "pool1,pool2"), "pool2");
    // Its GPU of quota is taken in pool2 only.
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 0u);
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 1u);
    EXPECT_EQ(pool(e, "pool1").held_jobs, 0u);
}

// A NORMAL job listing two full pools is held, its reason naming both, and
// may start nowhere.
TEST(MultiPool, TwoFullPoolsHoldItNamingBoth) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    for (uint32_t id : {3u, 4u}) s.add_job(running(id, "pool2", "high", 1, T0));
    s.add_job(pending(5, "pool1,pool2", "normal", 1, T0 + 1));
    e.evaluate(s, T0 + 2);
    const PendingResult *r = e.pending_result(5);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->admission, Admission::Held);
    EXPECT_EQ(r->priority, 0u);
    EXPECT_EQ(e.reason_of(*r), "GpuPoolQuota:pool1 2/2,pool2 2/2");
    EXPECT_EQ(e.start_partitions(5, "pool1,pool2"), "");
    // It waits in both pools.
    EXPECT_EQ(pool(e, "pool1").held_jobs, 1u);
    EXPECT_EQ(pool(e, "pool2").held_jobs, 1u);
}

// The order of the reason is the order the job lists its pools in.
TEST(MultiPool, ReasonFollowsTheListedOrder) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    s.add_job(running(3, "pool2", "normal", 1, T0));
    s.add_job(pending(4, "pool2", "normal", 1, T0 + 1));     // takes pool2's last GPU of quota
    s.add_job(pending(5, "pool2,pool1", "normal", 1, T0 + 2));
    e.evaluate(s, T0 + 3);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_EQ(e.reason_of(*e.pending_result(5)), "GpuPoolQuota:pool2 2/2,pool1 2/2");
}

// Held while both are full, it is admitted as soon as one frees (a job
// ends, no pass needed), for that pool only.
TEST(MultiPool, HeldJobIsAdmittedToThePoolThatFrees) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    for (uint32_t id : {3u, 4u}) s.add_job(running(id, "pool2", "normal", 1, T0));
    s.add_job(pending(5, "pool1,pool2", "normal", 1, T0 + 1));
    e.evaluate(s, T0 + 2);
    ASSERT_EQ(e.pending_result(5)->admission, Admission::Held);
    EXPECT_TRUE(e.job_ended(1, T0 + 3));
    const PendingResult *r = e.pending_result(5);
    EXPECT_EQ(r->admission, Admission::Quota);
    EXPECT_EQ(e.reason_of(*r), "");
    EXPECT_EQ(e.start_partitions(5, "pool1,pool2"), "pool1");
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 1u);
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 0u);
    EXPECT_EQ(pool(e, "pool2").held_jobs, 0u);
}

// Its reservation counts only where it may start: pool2 takes one more NP
// job beside it, then holds the next.
TEST(MultiPool, ReservesOnlyInThePoolsItMayStartIn) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    s.add_job(pending(3, "pool1,pool2", "normal", 1, T0 + 1));
    s.add_job(pending(4, "pool2", "normal", 1, T0 + 2));
    s.add_job(pending(5, "pool2", "normal", 1, T0 + 3));
    e.evaluate(s, T0 + 4);
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(5)->admission, Admission::Held);
    EXPECT_EQ(e.reason_of(*e.pending_result(5)), "GpuPoolQuota:pool2 2/2");
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 2u);
}

// Submitted between passes, the same rule, and its reservation holds the
// next job of the free pool.
TEST(MultiPool, ProvisionalPlacementFollowsTheSameRule) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    s.add_job(running(3, "pool2", "normal", 1, T0));
    e.evaluate(s, T0 + 1);
    PendingResult a = e.provisional(pending(10, "pool1,pool2", "normal", 1, T0 + 2), T0 + 2);
    EXPECT_EQ(a.admission, Admission::Quota);
    EXPECT_EQ(e.start_partitions(10, "pool1,pool2"), "pool2");
    PendingResult b = e.provisional(pending(11, "pool1,pool2", "normal", 1, T0 + 3), T0 + 3);
    EXPECT_EQ(b.admission, Admission::Held);
    EXPECT_EQ(e.reason_of(b), "GpuPoolQuota:pool1 2/2,pool2 2/2");
}

// A job too big for one pool's quota is admitted to the other; too big for
// both, it says so for each; one too small and one full is a wait.
TEST(MultiPool, QuotaTooSmallInOnePool) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=4\nPool=pool3 Quota=1\n");
    Snapshot s = shared_nodes();
    s.add_job(pending(1, "pool1,pool2", "normal", 3, T0));
    s.add_job(pending(2, "pool1,pool3", "normal", 3, T0 + 1));
    s.add_job(pending(3, "pool1,pool2", "normal", 3, T0 + 2));
    e.evaluate(s, T0 + 3);
    EXPECT_EQ(e.pending_result(1)->admission, Admission::Quota);
    EXPECT_EQ(e.start_partitions(1, "pool1,pool2"), "pool2");
    EXPECT_EQ(e.reason_of(*e.pending_result(2)), "GpuPoolQuotaTooSmall:pool1 needs 3 quota 2,pool3 needs 3 quota 1");
    EXPECT_EQ(e.reason_of(*e.pending_result(3)), "GpuPoolQuota:pool1 needs 3 quota 2,pool2 3/4");
}

// Partitions gpupool does not manage are never refused; a job listing a
// full pool and such a partition waits as with the pool alone (R2 is about
// its pools, and a held job starts nowhere).
TEST(MultiPool, UnmanagedPartitionsStayAllowed) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    s.add_job(pending(3, "pool1,plain,pool2", "normal", 1, T0 + 1));
    s.add_job(pending(4, "pool1,plain", "normal", 1, T0 + 2));
    s.add_job(pending(5, "pool1,plain", "low", 1, T0 + 3));
    e.evaluate(s, T0 + 4);
    EXPECT_EQ(e.start_partitions(3, "pool1,plain,pool2"), "plain,pool2");
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Held);
    EXPECT_EQ(e.reason_of(*e.pending_result(4)), "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(e.start_partitions(5, "pool1,plain"), "pool1,plain");  // LOW: never held by quota
    EXPECT_THROW(e.start_partitions(99, "pool1"), std::invalid_argument);
}

// An array record gets as many tasks as fit every pool it is admitted to.
TEST(MultiPool, ArrayTasksFitThePoolsItIsAdmittedTo) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    for (uint32_t id : {1u, 2u}) s.add_job(running(id, "pool1", "normal", 1, T0));
    SnapJob a = pending(3, "pool1,pool2", "normal", 1, T0 + 1);
    a.array_tasks = 5;
    s.add_job(a);
    e.evaluate(s, T0 + 2);
    const PendingResult *r = e.pending_result(3);
    EXPECT_EQ(r->admission, Admission::Quota);
    EXPECT_EQ(r->admitted_tasks, 2u);
    EXPECT_EQ(e.start_partitions(3, "pool1,pool2"), "pool2");
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 2u);
    // pool1 frees: the refused pool stays refused until the next pass, so
    // no more tasks are admitted there (and none beyond pool2's quota).
    EXPECT_FALSE(e.job_ended(1, T0 + 3));
    EXPECT_EQ(e.pending_result(3)->admitted_tasks, 2u);
    EXPECT_EQ(e.start_partitions(3, "pool1,pool2"), "pool2");
}

// It preempts only for a pool it was admitted to: in pool1, at quota, it
// may not take a LOW job's GPU; in pool2 it may.
TEST(MultiPool, PreemptsOnlyWhereItMayStart) {
    Engine e = engine_with(kPools);
    Snapshot s = shared_nodes();
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "normal", 1, T0));
    SnapJob low1 = running(3, "pool1", "low", 1, T0);
    SnapJob low2 = running(4, "pool2", "low", 1, T0);
    s.add_job(low1);
    s.add_job(low2);
    SnapJob np = pending(5, "pool1,pool2", "normal", 1, T0 + 1);
    s.add_job(np);
    e.evaluate(s, T0 + 2);
    ASSERT_EQ(e.pending_result(5)->admission, Admission::Quota);

    JobRef in_pool1 = ref(np);  // as Slurm tries it: one partition
    in_pool1.partitions = "pool1";
    Verdict v = e.preemptable(ref(low1), in_pool1, T0 + 2);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(v.why, "preemptor does not fit the quota of pool1");

    JobRef in_pool2 = ref(np);
    in_pool2.partitions = "pool2";
    v = e.preemptable(ref(low2), in_pool2, T0 + 2);
    EXPECT_TRUE(v.allowed) << v.why;
    EXPECT_EQ(v.rule, Rule::InPool);

    // Asked with its whole list, it preempts for pool2 only: LOW job 3 is
    // pool1's borrowed excess (3 GPUs used, quota 2), reclaimed for pool2.
    JobRef both = ref(np);
    both.partitions = "pool1,pool2";
    v = e.preemptable(ref(low1), both, T0 + 2);
    EXPECT_TRUE(v.allowed) << v.why;
    EXPECT_EQ(v.rule, Rule::Reclaim);
    EXPECT_EQ(v.preemptor_pool, 1);
    v = e.preemptable(ref(low2), both, T0 + 2);
    EXPECT_TRUE(v.allowed) << v.why;
    EXPECT_EQ(v.rule, Rule::InPool);
    EXPECT_EQ(v.preemptor_pool, 1);
}

// Through the C ABI: the count of refused pools and where it may start.
TEST(MultiPool, ThroughTheCAbi) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kPools.c_str(), "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t idx[4];
    for (int i = 0; i < 4; ++i) idx[i] = gp_snapshot_add_node(s, ("node" + std::to_string(i + 1)).c_str(), 1);
    ASSERT_EQ(gp_snapshot_add_partition(s, "pool1", idx, 4), GP_OK);
    ASSERT_EQ(gp_snapshot_add_partition(s, "pool2", idx, 4), GP_OK);
    auto add = [&](uint32_t id, int state, const char *parts) {
        gp_job_t j{};
        j.job_id = id;
        j.state = state;
        j.partitions = parts;
        j.qos = "normal";
        j.gpus = 1;
        j.submit_time = 100 + id;
        j.start_time = state == GP_JOB_RUNNING ? 100 : 0;
        ASSERT_EQ(gp_snapshot_add_job(s, &j), GP_OK);
    };
    add(1, GP_JOB_RUNNING, "pool1");
    add(2, GP_JOB_RUNNING, "pool1");
    add(3, GP_JOB_PENDING, "pool1,pool2");
    add(4, GP_JOB_PENDING, "pool2");
    ASSERT_EQ(gp_engine_evaluate(e, s, 200), GP_OK);
    gp_snapshot_destroy(s);

    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 3, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(r.refused_pools, 1u);
    ASSERT_EQ(gp_engine_pending_result(e, 4, &r), GP_OK);
    EXPECT_EQ(r.refused_pools, 0u);

    const char *listed = "pool1,pool2";
    char buf[16];
    ASSERT_EQ(gp_engine_start_partitions(e, 3, listed, buf, strlen(listed) + 1), GP_OK);
    EXPECT_STREQ(buf, "pool2");
    ASSERT_EQ(gp_engine_start_partitions(e, 4, "pool2", buf, sizeof buf), GP_OK);
    EXPECT_STREQ(buf, "pool2");
    EXPECT_EQ(gp_engine_start_partitions(e, 4, "pool2", buf, 5), GP_ERR_ARG);  // "pool2" needs 6
    EXPECT_EQ(gp_engine_start_partitions(e, 77, "pool2", buf, sizeof buf), GP_ERR_ARG);
    EXPECT_EQ(gp_engine_start_partitions(e, 3, nullptr, buf, sizeof buf), GP_ERR_ARG);
    gp_engine_destroy(e);
}

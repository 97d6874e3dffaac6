// The figures of `gpupool status`, `queue` and `why` (explain.cpp) on
// fixed snapshots, with exact expected values.
#include <gtest/gtest.h>

#include "explain.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

int pool_ix(const Engine &e, const std::string &name) { return e.last().pool_index.at(name); }

const PoolExplain &px(const Explanation &x, const Engine &e, const std::string &name) {
    return x.pools.at(static_cast<size_t>(pool_ix(e, name)));
}

std::vector<std::pair<int, uint32_t>> edges(const std::vector<PoolGpus> &v) {
    std::vector<std::pair<int, uint32_t>> out;
    for (const PoolGpus &g : v) out.emplace_back(g.pool, g.gpus);
    return out;
}

Explanation explain_all(const Engine &e, const Snapshot &s, int64_t now, ExplainInput in = {}) {
    in.all_details = true;
    return explain(e, s, in, now);
}

// OSMO "Borrowing and Reclaiming": pool1 and pool2 share 4 GPUs, quota 2
// each; pool1 runs WF1 NORMAL, WF2 LOW and WF3 LOW, pool2 runs WF4 NORMAL.
Snapshot osmo_borrowing() {
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "low", 1, T0 + 1));
    s.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    s.add_job(running(3, "pool1", "low", 1, T0 + 5, T0 + 3));
    return s;
}
const std::string kTwoPools = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";
}  // namespace

TEST(Explain, OsmoBorrowingPool1BorrowsOneFromPool2) {
    Engine e = engine_with(kTwoPools);
    Snapshot s = osmo_borrowing();
    e.evaluate(s, T0 + 7);
    Explanation x = explain_all(e, s, T0 + 7);
    const int p1 = pool_ix(e, "pool1"), p2 = pool_ix(e, "pool2");

    EXPECT_EQ(pool(e, "pool1").used(), 3u);
    EXPECT_EQ(pool(e, "pool1").quota, 2u);
    EXPECT_EQ(pool(e, "pool1").borrowed(), 1u);
    EXPECT_EQ(edges(px(x, e, "pool1").borrowed_from), (std::vector<std::pair<int, uint32_t>>{{p2, 1}}));
    EXPECT_TRUE(px(x, e, "pool1").lent_to.empty());
    EXPECT_EQ(pool(e, "pool2").lent, 1u);
    EXPECT_EQ(edges(px(x, e, "pool2").lent_to), (std::vector<std::pair<int, uint32_t>>{{p1, 1}}));
    EXPECT_TRUE(px(x, e, "pool2").borrowed_from.empty());

    // One node set of 4 GPUs, all in use, all in some quota.
    ASSERT_EQ(x.node_sets.size(), 1u);
    EXPECT_EQ(x.node_sets[0].pools, (std::vector<int>{p1, p2}));
    EXPECT_EQ(x.node_sets[0].capacity, 4u);
    EXPECT_EQ(x.node_sets[0].quota, 4u);
    EXPECT_EQ(x.node_sets[0].used, 4u);
    EXPECT_EQ(x.node_sets[0].free_gpus, 0u);
    EXPECT_EQ(x.node_sets[0].unassigned, 0u);
    EXPECT_TRUE(px(x, e, "pool1").shared);
    EXPECT_TRUE(px(x, e, "pool2").shared);

    // pool1: NP 1 of quota 2, so one LOW GPU is inside quota, one borrowed.
    EXPECT_EQ(px(x, e, "pool1").p_in_quota, 1u);
    EXPECT_EQ(px(x, e, "pool1").free_quota, 1u);
    EXPECT_EQ(px(x, e, "pool2").free_quota, 1u);
    EXPECT_EQ(px(x, e, "pool1").free_gpus, 0u);
    // WF3 (newest LOW) is the borrowed GPU; no MinRuntime: reclaimable now.
    EXPECT_EQ(px(x, e, "pool2").reclaimable, 1u);
    EXPECT_EQ(px(x, e, "pool1").reclaimable, 0u);

    const RunningExplain *wf3 = x.find_running(3);
    ASSERT_NE(wf3, nullptr);
    EXPECT_EQ(wf3->borrowed, 1u);
    EXPECT_EQ(edges(wf3->lenders), (std::vector<std::pair<int, uint32_t>>{{p2, 1}}));
    EXPECT_EQ(wf3->rank, 1u);
    EXPECT_EQ(wf3->protected_until, 0);
    const RunningExplain *wf2 = x.find_running(2);
    ASSERT_NE(wf2, nullptr);
    EXPECT_EQ(wf2->borrowed, 0u);
    EXPECT_TRUE(wf2->lenders.empty());
    EXPECT_EQ(wf2->cls, VictimClass::InQuota);
    EXPECT_FALSE(x.find_running(1)->preemptible);
}

// WF5 NORMAL arrives in pool2: it waits for the reclaim of WF3, not WF2.
TEST(Explain, OsmoReclaimWaitNamesTheBorrower) {
    Engine e = engine_with(kTwoPools);
    Snapshot s = osmo_borrowing();
    s.add_job(pending(5, "pool2", "normal", 1, T0 + 6));
    e.evaluate(s, T0 + 7);
    Explanation x = explain_all(e, s, T0 + 7);
    const PendingExplain *wf5 = x.find_pending(5);
    ASSERT_NE(wf5, nullptr);
    EXPECT_EQ(wf5->reason, WaitReason::WaitingForReclaim);
    EXPECT_EQ(wf5->reason_pool, pool_ix(e, "pool2"));
    ASSERT_EQ(wf5->victims.size(), 1u);
    EXPECT_EQ(wf5->victims[0].job_id, 3u);
    EXPECT_EQ(wf5->victims[0].rule, Rule::Reclaim);
    // R2 arithmetic: pool2 quota 2, WF4 uses 1, WF5 needs 1: it fits.
    ASSERT_EQ(wf5->quota.size(), 1u);
    EXPECT_EQ(wf5->quota[0].quota, 2u);
    EXPECT_EQ(wf5->quota[0].np_used, 1u);
    EXPECT_EQ(wf5->quota[0].reserved, 0u);
    EXPECT_EQ(wf5->quota[0].needed, 0u);
    EXPECT_EQ(px(x, e, "pool2").pending_jobs_by_tier, (std::vector<uint32_t>{0, 1, 0}));
    EXPECT_EQ(px(x, e, "pool2").pending_gpus_by_tier, (std::vector<uint32_t>{0, 1, 0}));
}

// A quota-held job: the arithmetic and the jobs holding the quota, running
// and admitted ahead of it.
TEST(Explain, QuotaHeldJobNamesPoolQuotaAndItsUsers) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=3\n");
    Snapshot s = cluster(6);
    partition(s, "pool1", 0, 5);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(pending(2, "pool1", "normal", 1, T0 + 1));  // admitted: 1+1 <= 3
    s.add_job(pending(3, "pool1", "normal", 2, T0 + 2));  // 1+1+2 > 3: held
    s.add_job(pending(4, "pool1", "normal", 1, T0 + 3));  // fits after 3: admitted
    e.evaluate(s, T0 + 10);
    Explanation x = explain_all(e, s, T0 + 10);

    const PendingExplain *j3 = x.find_pending(3);
    ASSERT_NE(j3, nullptr);
    EXPECT_EQ(j3->reason, WaitReason::QuotaFull);
    EXPECT_EQ(j3->reason_pool, pool_ix(e, "pool1"));
    ASSERT_EQ(j3->quota.size(), 1u);
    EXPECT_EQ(j3->quota[0].quota, 3u);
    EXPECT_EQ(j3->quota[0].np_used, 1u);
    EXPECT_EQ(j3->quota[0].reserved, 1u);
    EXPECT_EQ(j3->quota[0].gpus, 2u);
    EXPECT_EQ(j3->quota[0].needed, 1u);
    // The engine's own figure at its turn agrees: "GpuPoolQuota:pool1 2/3".
    EXPECT_EQ(e.reason_of(*e.pending_result(3)), "GpuPoolQuota:pool1 2/3");
    ASSERT_EQ(j3->quota_users.size(), 2u);
    EXPECT_EQ(j3->quota_users[0].job_id, 1u);
    EXPECT_TRUE(j3->quota_users[0].running);
    EXPECT_EQ(j3->quota_users[1].job_id, 2u);
    EXPECT_FALSE(j3->quota_users[1].running);
    EXPECT_EQ(j3->ahead, (std::vector<uint32_t>{2}));
    EXPECT_EQ(j3->position, 1);

    // Job 4 counts job 2 as reserved but not held job 3.
    const PendingExplain *j4 = x.find_pending(4);
    EXPECT_EQ(j4->quota[0].reserved, 1u);
    EXPECT_EQ(j4->quota[0].needed, 0u);
    EXPECT_EQ(j4->reason, WaitReason::Starting);
    EXPECT_EQ(px(x, e, "pool1").free_quota, 0u);  // 1 used + 2 reserved (jobs 2, 4)
}

TEST(Explain, JobLargerThanQuotaNeverFits) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(pending(1, "pool1", "normal", 3, T0));
    e.evaluate(s, T0 + 1);
    Explanation x = explain_all(e, s, T0 + 1);
    EXPECT_EQ(x.find_pending(1)->reason, WaitReason::QuotaTooSmall);
    EXPECT_EQ(x.find_pending(1)->quota[0].needed, 1u);
}

// OSMO "Priority Queueing Order": positions and reasons.
TEST(Explain, QueuePositionsAndReasons) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "normal", 1, T0 + 1));
    s.add_job(pending(3, "pool1", "low", 1, T0 + 10));
    s.add_job(pending(4, "pool1", "high", 1, T0 + 11));
    s.add_job(pending(5, "pool1", "normal", 1, T0 + 12));
    s.add_job(pending(6, "pool1", "high", 1, T0 + 13));
    e.evaluate(s, T0 + 20);
    Explanation x = explain_all(e, s, T0 + 20);
    ASSERT_EQ(x.pending.size(), 4u);
    std::vector<uint32_t> ids;
    for (const PendingExplain &p : x.pending) ids.push_back(p.job_id);
    EXPECT_EQ(ids, (std::vector<uint32_t>{4, 6, 5, 3}));
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(x.pending[i].position, int64_t(i));
        ASSERT_EQ(x.pending[i].pool_position.size(), 1u);
        EXPECT_EQ(x.pending[i].pool_position[0].second, i);
    }
    EXPECT_EQ(x.pending[0].reason, WaitReason::QuotaFull);
    EXPECT_EQ(x.pending[2].reason, WaitReason::QuotaFull);
    // LOW: no free GPU and nothing lower to preempt.
    EXPECT_EQ(x.pending[3].reason, WaitReason::WaitingForGpus);
    EXPECT_EQ(x.pending[3].ahead, (std::vector<uint32_t>{4, 6, 5}));
}

// One free GPU goes to the HIGH job ahead; LOW waits behind it; a second
// LOW waits behind the first (same tier).
TEST(Explain, BehindHigherTierAndWaitingForGpus) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool3", 0, 1);
    s.add_job(running(1, "pool3", "normal", 1, T0));
    s.add_job(pending(2, "pool3", "low", 1, T0 + 1));
    s.add_job(pending(3, "pool3", "high", 1, T0 + 2));
    e.evaluate(s, T0 + 3);
    Explanation x = explain_all(e, s, T0 + 3);
    EXPECT_EQ(x.find_pending(3)->reason, WaitReason::Starting);
    EXPECT_EQ(x.find_pending(2)->reason, WaitReason::BehindHigherTier);
    EXPECT_EQ(x.find_pending(2)->position, 1);

    Engine f = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot t = cluster(2);
    partition(t, "pool3", 0, 1);
    t.add_job(running(1, "pool3", "normal", 1, T0));
    t.add_job(pending(2, "pool3", "low", 1, T0 + 1));
    t.add_job(pending(3, "pool3", "low", 1, T0 + 2));
    f.evaluate(t, T0 + 3);
    Explanation y = explain_all(f, t, T0 + 3);
    EXPECT_EQ(y.find_pending(2)->reason, WaitReason::Starting);
    EXPECT_EQ(y.find_pending(3)->reason, WaitReason::WaitingForGpus);
}

// Borrowers within the lender-side MinRuntime: nothing reclaimable now;
// the NP job waits until the borrower's protection ends.
TEST(Explain, MinRuntimeProtectsTheBorrower) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=1 MinRuntime=10:00\nPool=pool2 Quota=1\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    partition(s, "pool2", 0, 1);
    s.add_job(running(1, "pool1", "low", 1, T0 + 100));
    s.add_job(running(2, "pool1", "low", 1, T0 + 101));
    s.add_job(pending(3, "pool2", "normal", 1, T0 + 102));
    e.evaluate(s, T0 + 200);
    Explanation x = explain_all(e, s, T0 + 200);
    const int p2 = pool_ix(e, "pool2");
    EXPECT_EQ(edges(px(x, e, "pool1").borrowed_from), (std::vector<std::pair<int, uint32_t>>{{p2, 1}}));
    EXPECT_EQ(px(x, e, "pool2").reclaimable, 0u);
    // Newest first: job 2 is the borrowed GPU.
    EXPECT_EQ(x.find_running(2)->borrowed, 1u);
    EXPECT_EQ(x.find_running(2)->protected_until, T0 + 101 + 600);
    EXPECT_EQ(x.find_running(1)->borrowed, 0u);
    const PendingExplain *j3 = x.find_pending(3);
    EXPECT_EQ(j3->reason, WaitReason::MinRuntime);
    EXPECT_EQ(j3->protected_until, T0 + 101 + 600);
    ASSERT_EQ(j3->victims.size(), 1u);
    EXPECT_EQ(j3->victims[0].job_id, 2u);

    // Once past it: reclaimable, and the job waits for the reclaim.
    e.evaluate(s, T0 + 800);
    Explanation later = explain_all(e, s, T0 + 800);
    EXPECT_EQ(px(later, e, "pool2").reclaimable, 1u);
    EXPECT_EQ(later.find_pending(3)->reason, WaitReason::WaitingForReclaim);
}

// Capacity beyond the quotas is lent by nobody: it is borrowed first.
TEST(Explain, UnassignedGpusAreBorrowedFirst) {
    Engine e = engine_with(kTwoPools);
    Snapshot s = cluster(5);
    partition(s, "pool1", 0, 4);
    partition(s, "pool2", 0, 4);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    for (uint32_t id = 2; id <= 4; ++id) s.add_job(running(id, "pool1", "low", 1, T0 + id));
    e.evaluate(s, T0 + 10);
    Explanation x = explain_all(e, s, T0 + 10);
    const int p1 = pool_ix(e, "pool1"), p2 = pool_ix(e, "pool2");
    EXPECT_EQ(x.node_sets[0].unassigned, 1u);
    EXPECT_EQ(edges(px(x, e, "pool1").borrowed_from), (std::vector<std::pair<int, uint32_t>>{{-1, 1}, {p2, 1}}));
    EXPECT_EQ(edges(px(x, e, "pool2").lent_to), (std::vector<std::pair<int, uint32_t>>{{p1, 1}}));
    EXPECT_EQ(pool(e, "pool2").lent, 1u);  // the engine's figure agrees
    // Newest first: job 4 borrows nobody's GPU, job 3 pool2's.
    EXPECT_EQ(edges(x.find_running(4)->lenders), (std::vector<std::pair<int, uint32_t>>{{-1, 1}}));
    EXPECT_EQ(edges(x.find_running(3)->lenders), (std::vector<std::pair<int, uint32_t>>{{p2, 1}}));
    EXPECT_EQ(px(x, e, "pool2").reclaimable, 1u);
    EXPECT_EQ(px(x, e, "pool1").free_gpus, 1u);
}

// Held by a user: listed, not ordered.  Not eligible: takes no free GPU.
TEST(Explain, UserHeldAndNotEligible) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "p", 0, 1);
    SnapJob held = pending(1, "p", "normal", 1, T0);
    held.user_held = true;
    s.add_job(held);
    s.add_job(pending(2, "p", "low", 1, T0 + 1));
    s.add_job(pending(3, "p", "low", 2, T0 + 2));
    e.evaluate(s, T0 + 3);
    ExplainInput in;
    in.not_eligible.insert(2);
    Explanation x = explain_all(e, s, T0 + 3, in);
    ASSERT_EQ(x.pending.size(), 3u);
    EXPECT_EQ(x.pending[0].job_id, 2u);
    EXPECT_EQ(x.pending[0].reason, WaitReason::NotEligible);
    EXPECT_EQ(x.pending[1].job_id, 3u);
    EXPECT_EQ(x.pending[1].reason, WaitReason::Starting);  // both GPUs still free
    EXPECT_EQ(x.pending[2].job_id, 1u);
    EXPECT_EQ(x.pending[2].reason, WaitReason::Held);
    EXPECT_EQ(x.pending[2].position, -1);
    EXPECT_EQ(x.pending[2].pools, (std::vector<int>{0}));
    EXPECT_EQ(x.pending[2].gpus, 1u);
}

// A held --exclusive job is listed with the GPUs admission will count
// once it is released: every GPU of a node, not the one it asked for.
TEST(Explain, AUserHeldWholeNodeJobCountsItsNode) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=8\n");
    Snapshot s = cluster(2, 4);
    partition(s, "p", 0, 1);
    SnapJob held = pending(1, "p", "normal", 1, T0);
    held.user_held = true;
    held.whole_node = true;
    held.node_count = 1;
    s.add_job(held);
    e.evaluate(s, T0 + 1);
    Explanation x = explain_all(e, s, T0 + 1, ExplainInput{});
    ASSERT_EQ(x.pending.size(), 1u);
    EXPECT_EQ(x.pending[0].reason, WaitReason::Held);
    EXPECT_EQ(x.pending[0].gpus, 4u);
}

// A job listing two pools has a place in each.  pool2 uses nothing, so
// it is the more starved (R1.2): its jobs, and the job listing both, go
// before pool1's LOW job of the same tier.
TEST(Explain, PositionInEachPool) {
    Engine e = engine_with(kTwoPools);
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    partition(s, "pool2", 0, 1);
    s.add_job(running(9, "pool1", "low", 2, T0));
    s.add_job(pending(1, "pool1", "low", 1, T0 + 1));
    s.add_job(pending(2, "pool2", "low", 1, T0 + 2));
    s.add_job(pending(3, "pool1,pool2", "low", 1, T0 + 3));
    e.evaluate(s, T0 + 4);
    Explanation x = explain_all(e, s, T0 + 4);
    const PendingExplain *j3 = x.find_pending(3);
    ASSERT_NE(j3, nullptr);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{2, 3, 1}));
    EXPECT_EQ(j3->position, 1);
    EXPECT_EQ(j3->pool_position,
              (std::vector<std::pair<int, uint32_t>>{{pool_ix(e, "pool1"), 0}, {pool_ix(e, "pool2"), 1}}));
    EXPECT_EQ(j3->ahead, (std::vector<uint32_t>{2}));
    EXPECT_EQ(x.find_pending(1)->ahead, (std::vector<uint32_t>{3}));
}

// Details (jobs ahead, quota users) only for the job asked about.
TEST(Explain, DetailsOnlyForTheJobAsked) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=1\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(pending(2, "pool1", "normal", 1, T0 + 1));
    s.add_job(pending(3, "pool1", "normal", 1, T0 + 2));
    e.evaluate(s, T0 + 3);
    ExplainInput in;
    in.detail_job = 3;
    Explanation x = explain(e, s, in, T0 + 3);
    EXPECT_TRUE(x.find_pending(2)->ahead.empty());
    EXPECT_TRUE(x.find_pending(2)->quota_users.empty());
    EXPECT_EQ(x.find_pending(3)->ahead, (std::vector<uint32_t>{2}));
    ASSERT_EQ(x.find_pending(3)->quota_users.size(), 1u);
    EXPECT_EQ(x.find_pending(3)->quota_users[0].job_id, 1u);
}

TEST(Explain, NeedsAPass) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=1\n");
    Snapshot s = cluster(1);
    EXPECT_THROW(explain(e, s, ExplainInput{}, T0), std::logic_error);
}

// `gpupool why` names as victims only jobs the engine would let the job
// preempt (both ask Engine::candidacy).  ReclaimBy=all, one node of 2 GPUs
// shared by pools a and b (quota 1 each), two LOW jobs in a.  A MID job of
// 2 GPUs in a would borrow in a at once, so R4 lets it take only the LOW
// job in a's borrowed excess (the newest), not the one within a's quota
// (engine_test ReclaimCycle); one GPU is not enough, so it waits for GPUs
// with no victims.  explain.cpp used to restate R4 without that guard and
// named both LOW jobs as its victims.
TEST(Explain, VictimsAreTheOnesTheEngineAllows) {
    const std::string conf =
        "Tier=high QOS=high Priority=300 Preemptible=no\n"
        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=high\nUsageWeight=0\nReclaimBy=all\nPool=a Quota=1\nPool=b Quota=1\n";
    struct Case {
        const char *sentence;
        uint32_t gpus;
        WaitReason reason;
        std::vector<uint32_t> victims;
    };
    const std::vector<Case> cases = {
        {"a MID job of 2 GPUs that would borrow in a may take only the LOW job in a's excess: not enough",
         2, WaitReason::WaitingForGpus, {}},
        {"a MID job of 1 GPU fits a's quota and takes the newest LOW job", 1, WaitReason::WaitingForReclaim, {3}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        Engine e = engine_with(conf);
        Snapshot s = cluster(1, 2);
        partition(s, "a", 0, 0);
        partition(s, "b", 0, 0);
        const SnapJob low1 = running(1, "a", "low", 1, T0), low3 = running(3, "a", "low", 1, T0 + 1);
        s.add_job(low1);
        s.add_job(low3);
        const SnapJob mid = pending(10, "a", "mid", c.gpus, T0 + 5);
        s.add_job(mid);
        e.evaluate(s, T0 + 10);
        Explanation x = explain_all(e, s, T0 + 10);
        const PendingExplain *pe = x.find_pending(10);
        ASSERT_NE(pe, nullptr);
        EXPECT_EQ(pe->reason, c.reason) << wait_reason_code(pe->reason);
        std::vector<uint32_t> named;
        for (const VictimRef &v : pe->victims) named.push_back(v.job_id);
        EXPECT_EQ(named, c.victims);
        // The engine's own verdicts for the same pair.
        EXPECT_FALSE(e.preemptable(ref(low1), ref(mid), T0 + 10).allowed && c.gpus == 2);
        EXPECT_TRUE(e.preemptable(ref(low3), ref(mid), T0 + 10).allowed);
    }
}

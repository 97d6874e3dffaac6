// R5's entitlement judged with what one preemption frees together: a
// non-preemptible job within its quota whose own lower tiers and others'
// borrowers must go at once to make room starts, with pools (partitions
// over the same node) and with accounts (KAI-Scheduler's department
// reclaim case); and it still reclaims nothing its quota does not cover.
#include <gtest/gtest.h>

#include "explain.hpp"
#include "reclaim_loop.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {



SnapJob of(SnapJob j, const std::string &account) {
    j.account = account;
    return j;
}

AccountQuota entry(const std::string &account, uint32_t gpus) {
    AccountQuota a;
    a.account = account;
    a.pool = "*";
    a.quota = parse_resource_amounts("gres/gpu=" + std::to_string(gpus), "gres/gpu");
    return a;
}

// One node of 4 GPUs; q0 (quota 4) runs LOW job 1 (2 GPUs), q1 (quota 0)
// LOW job 2 (2 GPUs, borrowed from q0); q0 asks for NORMAL job 3 (4 GPUs).
struct TwoPartitions {
    Snapshot snap = cluster(1, 4);
    explicit TwoPartitions(int64_t low_start = 100) {
        partition(snap, "q0", 0, 0);
        partition(snap, "q1", 0, 0);
        snap.add_job(running(1, "q0", "low", 2, low_start));
        snap.add_job(running(2, "q1", "low", 2, low_start + 1));
        snap.add_job(pending(3, "q0", "normal", 4, 200));
    }
};

// KAI-Scheduler's department case on one pool of 4 GPUs: d1 (quota 0) over
// queue0 (quota 1), d2 (quota 4) over queue1 (quota 0) and queue2 (quota
// 4); queue0 and queue1 run a LOW job of 2 GPUs each; queue2 asks for a
// NORMAL job of 4.
struct TwoDepartments {
    Config cfg;
    Snapshot snap = cluster(1, 4);
    explicit TwoDepartments(const std::string &extra = "") {
        cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=4\n" + extra, "test.conf");
        cfg.accounts = {entry("d1", 0), entry("queue0", 1), entry("d2", 4), entry("queue1", 0), entry("queue2", 4)};
        partition(snap, "pool1", 0, 0);
        snap.account_parent = {{"d1", "root"}, {"d2", "root"}, {"queue0", "d1"}, {"queue1", "d2"}, {"queue2", "d2"}};
        snap.add_job(of(running(1, "pool1", "low", 2, 100), "queue0"));
        snap.add_job(of(running(2, "pool1", "low", 2, 101), "queue1"));
        snap.add_job(of(pending(3, "pool1", "normal", 4, 200), "queue2"));
    }
};

}  // namespace

TEST(ReclaimTogether, APoolsOwnLowJobAndAnotherPoolsBorrowerGoTogetherForItsJobWithinQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=q0 Quota=4\nPool=q1 Quota=0\n");
    TwoPartitions w;
    ReclaimLoop loop(e, w.snap);
    e.evaluate(w.snap, 1000);
    expect_rows(e, loop,
                {{"q1's borrower is reclaimed: q0's own LOW job goes with it, so q0 stays within its quota", 2, 3,
                  true, Rule::Reclaim, "borrowed excess (over-fairshare) of q1"},
                 {"q0's own LOW job is R4's", 1, 3, true, Rule::InPool, "lower tier in the same pool"}},
                1000);
    // `gpupool why` names both.
    const Explanation x = explain(e, w.snap, ExplainInput{}, 1000);
    const PendingExplain *pe = x.find_pending(3);
    ASSERT_NE(pe, nullptr);
    EXPECT_EQ(pe->reason, WaitReason::WaitingForReclaim);
    std::vector<std::pair<uint32_t, Rule>> named;
    for (const VictimRef &v : pe->victims) named.emplace_back(v.job_id, v.rule);
    EXPECT_EQ(named, (std::vector<std::pair<uint32_t, Rule>>{{2, Rule::Reclaim}, {1, Rule::InPool}}));
    // Each with the engine's verdict and the level that decided: q1 among
    // the pools of the node, above its quota of 0 with its 2 GPUs.
    EXPECT_EQ(pe->victims[0].why, "borrowed excess (over-fairshare) of q1");
    EXPECT_EQ(pe->victims[0].decided.pool, 1);
    EXPECT_EQ(pe->victims[0].decided.queue, -1);
    EXPECT_EQ(pe->victims[0].decided.amount, 2u);
    EXPECT_EQ(pe->victims[0].decided.bound, 0u);
    EXPECT_FALSE(pe->victims[0].decided.fairshare);
    EXPECT_EQ(pe->victims[1].why, "lower tier in the same pool");
    EXPECT_EQ(pe->victims[1].decided.pool, -1);
    int64_t now = 1000;
    EXPECT_EQ(settle(loop, now), (std::vector<uint32_t>{2, 1}));
    EXPECT_EQ(loop.job(3).state, JobState::Running);
}

TEST(ReclaimTogether, AProjectsJobWithinItsDepartmentsQuotaTakesItsSiblingsAndTheOtherDepartmentsBorrowers) {
    TwoDepartments w;
    Engine e;
    e.set_config(w.cfg);
    ReclaimLoop loop(e, w.snap);
    e.evaluate(w.snap, 1000);
    expect_rows(e, loop,
                {{"d1's borrower goes: queue1's excess under d2 goes with it", 1, 3, true, Rule::Reclaim,
                  "queue d1 over its quota (gpu 2/0)"},
                 {"queue1's borrower goes, a sibling over its quota", 2, 3, true, Rule::Reclaim,
                  "queue queue1 over its quota (gpu 2/0)"}},
                1000);
    // `gpupool why` shows which queue decided each, from the verdict.
    const Explanation x = explain(e, w.snap, ExplainInput{}, 1000);
    const PendingExplain *pe = x.find_pending(3);
    ASSERT_NE(pe, nullptr);
    ASSERT_EQ(pe->victims.size(), 2u);
    for (const VictimRef &v : pe->victims) {
        const QueueTree &tree = *e.last().pools[0].queues.tree;
        ASSERT_GT(v.decided.queue, 0);
        const std::string queue = tree.queues[size_t(v.decided.queue)].name;
        EXPECT_EQ(v.why, "queue " + queue + " over its quota (gpu 2/0)");
        EXPECT_EQ(v.decided.resource, kGpu);
        EXPECT_EQ(v.decided.amount, 2u);
        EXPECT_EQ(v.decided.bound, 0u);
        EXPECT_EQ(queue, v.job_id == 1 ? "d1" : "queue1");
    }
    int64_t now = 1000;
    const std::vector<uint32_t> evicted = settle(loop, now);
    EXPECT_EQ(evicted.size(), 2u);
    EXPECT_EQ(loop.job(1).state, JobState::Pending);
    EXPECT_EQ(loop.job(2).state, JobState::Pending);
    EXPECT_EQ(loop.job(3).state, JobState::Running);
}

// What is freed together is only what the job may take: a LOW job of its
// own tier or one MinRuntime protects, or a sibling within its quota,
// frees nothing for the entitlement.
TEST(ReclaimTogether, OnlyItsCandidatesCountAsFreed) {
    {
        // q0's own job is NORMAL: not a candidate, q0 is not entitled.
        Engine e = engine_with(kOsmoTiers + "Pool=q0 Quota=4\nPool=q1 Quota=0\n");
        Snapshot s = cluster(1, 4);
        partition(s, "q0", 0, 0);
        partition(s, "q1", 0, 0);
        s.add_job(running(1, "q0", "normal", 2, 100));
        s.add_job(running(2, "q1", "low", 2, 101));
        s.add_job(pending(3, "q0", "normal", 4, 200));
        e.evaluate(s, 1000);
        // Held by its quota anyway: 2 + 4 > 4.
        EXPECT_EQ(admission_of(e, 3), Admission::Held);
    }
    {
        // q0's LOW job within MinRuntime: it cannot go, q0 is not entitled.
        Engine e = engine_with(kOsmoTiers + "Pool=q0 Quota=4 MinRuntime=10:00\nPool=q1 Quota=0\n");
        TwoPartitions w(900);
        e.evaluate(w.snap, 1000);
        Verdict v = e.preemptable(ref(w.snap.jobs[1]), ref(w.snap.jobs[2]), 1000);
        EXPECT_FALSE(v.allowed);
        EXPECT_EQ(v.why, std::string("preemptor pool q0 not entitled: 2+4 > quota 4"));
        // Past it, both go.
        e.evaluate(w.snap, 900 + 600);
        EXPECT_TRUE(e.preemptable(ref(w.snap.jobs[1]), ref(w.snap.jobs[2]), 1500).allowed);
    }
    {
        // queue1 within its quota (2): it frees nothing, so d2 (quota 3)
        // would pass its quota taking d1's borrower.
        TwoDepartments w;
        w.cfg.accounts[2] = entry("d2", 3);
        w.cfg.accounts[3] = entry("queue1", 2);
        w.cfg.accounts[4] = entry("queue2", 2);
        w.snap.jobs[2].gpus = 2;
        Engine e;
        e.set_config(w.cfg);
        ReclaimLoop loop(e, w.snap);
        e.evaluate(w.snap, 1000);
        EXPECT_EQ(admission_of(e, 3), Admission::Quota);
        expect_rows(e, loop,
                    {{"d2 past its quota with queue1 within its own keeps d1's borrower out of reach", 1, 3, false,
                      Rule::None, "preemptor's queue d2 would pass its quota: gpu 4 > 3"}},
                    1000);
    }
}

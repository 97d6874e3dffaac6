// ReclaimTo=fairshare between pools as between queues: pools are the top
// queues of their node set's tree, so a pool below its fairshare takes
// back from one above it (KAI-Scheduler's "reclaim according to the
// fairness ratio" case), up to its fairshare and never taking the other
// below its quota; with ReclaimTo=quota a LOW job reclaims nothing.
#include <gtest/gtest.h>

#include "reclaim_loop.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

// One node of 8 GPUs shared by pools a and b (quota 1, weight 1 each): a
// runs LOW jobs of 1, 3 and 4 GPUs (started in that order), b asks for two
// LOW jobs of 4 GPUs.  Each pool's fairshare: 1 + 3 = 4.
struct FairnessRatio {
    Snapshot snap = cluster(1, 8);
    explicit FairnessRatio(uint32_t b_job = 4) {
        partition(snap, "a", 0, 0);
        partition(snap, "b", 0, 0);
        snap.add_job(running(1, "a", "low", 1, 100));
        snap.add_job(running(2, "a", "low", 3, 101));
        snap.add_job(running(3, "a", "low", 4, 102));
        snap.add_job(pending(4, "b", "low", b_job, 200));
        snap.add_job(pending(5, "b", "low", b_job, 201));
    }
};

const std::string kPools = kOsmoTiers + "Pool=a Quota=1\nPool=b Quota=1\n";

}  // namespace

TEST(PoolsFairshare, APoolBelowItsFairshareTakesBackFromOneAboveItUpToIt) {
    Engine e = engine_with(kPools + "ReclaimTo=fairshare\n");
    FairnessRatio w;
    ReclaimLoop loop(e, w.snap);
    e.evaluate(w.snap, 1000);
    EXPECT_EQ(pool(e, "a").fairshare, 4u);
    EXPECT_EQ(pool(e, "b").fairshare, 4u);
    expect_rows(e, loop,
                {{"a's newest job is where a is above its fairshare (8 > 4)", 3, 4, true, Rule::Reclaim,
                  "borrowed excess (over-fairshare) of a"},
                 {"a's 3-GPU job is where a is at its fairshare (4)", 2, 4, false, Rule::None,
                  "victim pool a is not over its fairshare for this job (8/4)"},
                 {"a's oldest job is within a's quota", 1, 4, false, Rule::None,
                  "victim pool a is not over its fairshare for this job (8/4)"}},
                1000);
    int64_t now = 1000;
    EXPECT_EQ(settle(loop, now), (std::vector<uint32_t>{3}));
    EXPECT_EQ(loop.job(4).state, JobState::Running);
    // 4 and 4: b's second job would take b past its fairshare.
    EXPECT_EQ(loop.job(5).state, JobState::Pending);
    EXPECT_EQ(loop.job(1).state, JobState::Running);
    EXPECT_EQ(loop.job(2).state, JobState::Running);
    e.evaluate(w.snap, now);
    EXPECT_EQ(pool(e, "a").used(), 4u);
    EXPECT_EQ(pool(e, "b").used(), 4u);
    std::string vp, pp;
    const Verdict v = e.preemptable(job_ref(loop.job(2), vp), job_ref(loop.job(5), pp), now);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(v.why, std::string("preemptor pool b not entitled: 4+4 > fairshare 4"));
    // At rest: five more passes evict nothing.
    for (int k = 0; k < 5; ++k) EXPECT_TRUE(loop.pass(now++).evicted.empty());
}

TEST(PoolsFairshare, TakingToFairshareNeverTakesTheOtherPoolBelowItsQuota) {
    // a's quota 5, b's 1, the 2 GPUs left split: fairshares 6 and 2.  b's
    // 2-GPU job is within b's fairshare, but taking a's 4-GPU job would
    // take a from 8 to 4, below its quota.
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=5\nPool=b Quota=1\nReclaimTo=fairshare\n");
    FairnessRatio w(2);
    e.evaluate(w.snap, 1000);
    EXPECT_EQ(pool(e, "a").fairshare, 6u);
    EXPECT_EQ(pool(e, "b").fairshare, 2u);
    const Verdict v = e.preemptable(ref(w.snap.jobs[2]), ref(w.snap.jobs[3]), 1000);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(v.why, std::string("victim pool a would fall below its quota taken to fairshare (4 < 5)"));
}

TEST(PoolsFairshare, WithReclaimToQuotaALowJobReclaimsNothing) {
    Engine e = engine_with(kPools);
    FairnessRatio w;
    ReclaimLoop loop(e, w.snap);
    int64_t now = 1000;
    EXPECT_TRUE(settle(loop, now).empty());
    EXPECT_EQ(loop.job(4).state, JobState::Pending);
    std::string vp, pp;
    const Verdict v = e.preemptable(job_ref(loop.job(3), vp), job_ref(loop.job(4), pp), now);
    EXPECT_EQ(v.why, std::string("only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)"));
}

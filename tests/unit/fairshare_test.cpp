// R8: fairshare by water-filling, and time-decayed usage.
#include <gtest/gtest.h>

#include <cmath>

#include "fairshare.hpp"
#include "test_helpers.hpp"
#include "usage.hpp"

using namespace gpupool;
using namespace gpupool::test;

// Run:ai "Example of Splitting Quota": 20 unused GPUs, weights 2, 3, 1; the
// weight-3 project with quota 6 gets 10 over quota: fairshare 16.
TEST(Fairshare, RunAiSplitOfTwentyUnusedGpus) {
    FairshareResult r = compute_fairshare(36, {{10, 2, 100, 0}, {6, 3, 100, 0}, {0, 1, 100, 0}}, 0.0);
    EXPECT_EQ(r.divisible, 20u);
    EXPECT_EQ(r.over_quota, (std::vector<uint32_t>{7, 10, 3}));
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{17, 16, 3}));
    EXPECT_FALSE(r.overcommitted);
}

// Run:ai water-filling: 20 GPUs, two pools of quota 5, one asks for 5 and
// the other for 15: fairshares 5 and 15.
TEST(Fairshare, RunAiWaterFilling) {
    FairshareResult r = compute_fairshare(20, {{5, 1, 15, 0}, {5, 1, 5, 0}}, 0.0);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{15, 5}));
}

TEST(Fairshare, WeightZeroGetsNothingOverQuota) {
    FairshareResult r = compute_fairshare(10, {{2, 0, 10, 0}, {2, 1, 10, 0}}, 0.0);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{2, 8}));
}

TEST(Fairshare, OvercommittedQuotasDivideNothing) {
    FairshareResult r = compute_fairshare(4, {{3, 1, 10, 0}, {3, 1, 10, 0}}, 0.0);
    EXPECT_TRUE(r.overcommitted);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{3, 3}));
}

// Left-over GPUs go to the largest remainder, ties to the pool listed first.
TEST(Fairshare, LeftOversByRemainderThenConfigOrder) {
    EXPECT_EQ(water_fill(3, {1, 1}, {10, 10}), (std::vector<uint32_t>{2, 1}));
    EXPECT_EQ(water_fill(5, {1, 1, 1}, {10, 10, 10}), (std::vector<uint32_t>{2, 2, 1}));
    EXPECT_EQ(water_fill(10, {1, 3}, {1, 100}), (std::vector<uint32_t>{1, 9}));
    EXPECT_EQ(water_fill(0, {1, 3}, {1, 100}), (std::vector<uint32_t>{0, 0}));
}

// Time-based: with K = 1, a pool that used more than its weight's share
// gets less of the unused GPUs: max(0, W + K (W - U)).
TEST(Fairshare, HistoryShiftsTheOverQuotaShare) {
    FairshareResult r = compute_fairshare(10, {{0, 1, 10, 0.8}, {0, 1, 10, 0.2}}, 1.0);
    EXPECT_EQ(r.over_quota, (std::vector<uint32_t>{2, 8}));
    FairshareResult k0 = compute_fairshare(10, {{0, 1, 10, 0.8}, {0, 1, 10, 0.2}}, 0.0);
    EXPECT_EQ(k0.over_quota, (std::vector<uint32_t>{5, 5}));
}

// Pools that share no node divide their own GPUs only.
TEST(Fairshare, SeparateNodeSetsAreSeparateDomains) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=1\nPool=b Quota=1\nPool=c Quota=0\n");
    Snapshot s = cluster(6);
    partition(s, "a", 0, 1);
    partition(s, "b", 1, 2);  // shares node 1 with a
    partition(s, "c", 3, 5);
    s.add_job(pending(1, "a", "low", 5, 0));
    s.add_job(pending(2, "c", "low", 5, 0));
    e.evaluate(s, 100);
    EXPECT_EQ(pool(e, "a").domain_capacity, 3u);
    EXPECT_EQ(pool(e, "c").domain_capacity, 3u);
    // a: quota 1 + node 2's GPU (in no quota) + b's idle quota GPU.
    EXPECT_EQ(pool(e, "a").fairshare, 3u);
    EXPECT_EQ(pool(e, "b").fairshare, 1u);
    EXPECT_EQ(pool(e, "c").fairshare, 3u);
}

TEST(Fairshare, OvercommitWarns) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=3\nPool=b Quota=3\n");
    Snapshot s = cluster(4);
    partition(s, "a", 0, 3);
    partition(s, "b", 0, 3);
    e.evaluate(s, 100);
    ASSERT_EQ(e.warnings().size(), 1u);
    EXPECT_EQ(e.warnings()[0], "pools a,b share 4 GPUs but their quotas add up to 6: quotas cannot all be honoured");
}

// A GPU-second that is one half-life old counts half.
TEST(Decay, UsageHalvesAfterOneHalfLife) {
    DecayParams p{3600, 0};
    UsageSeries s;
    s.add(2, 0, 600, p);
    double at = s.decayed(600, p);
    EXPECT_NEAR(s.decayed(600 + 3600, p), at / 2, 1e-9 * at);
    // Folding old buckets into the tail keeps the value.
    s.prune(600 + 100 * 3600, p);
    EXPECT_EQ(s.buckets().size(), 0u);
    EXPECT_NEAR(s.decayed(600 + 100 * 3600, p), at * std::exp2(-100.0), 1e-9 * at);
}

TEST(Decay, WindowForgetsOldUsage) {
    DecayParams p{0, 6400};  // no decay; window 6400 s, buckets of 100 s
    ASSERT_EQ(p.bucket_width(), 100);
    UsageSeries s;
    s.add(1, 0, 100, p);
    EXPECT_DOUBLE_EQ(s.decayed(100, p), 100.0);
    s.add(1, 6400, 6450, p);
    EXPECT_DOUBLE_EQ(s.decayed(6450, p), 150.0);
    // Once all of [0, 100) is older than the window, it no longer counts.
    EXPECT_DOUBLE_EQ(s.decayed(6500, p), 50.0);
    s.prune(6500, p);
    EXPECT_EQ(s.buckets().size(), 1u);
}

TEST(Decay, EnginePoolUsageHalvesAfterOneHalfLife) {
    Engine e = engine_with(kOsmoTiers + "DecayHalfLife=01:00:00\nUsageWindow=0\nPool=p Quota=2\n");
    Snapshot busy = cluster(2);
    partition(busy, "p", 0, 1);
    busy.add_job(running(1, "p", "normal", 2, 1000));
    Snapshot idle = cluster(2);
    partition(idle, "p", 0, 1);
    e.evaluate(busy, 1000);
    e.evaluate(idle, 1600);  // 2 GPUs over 600 s accounted
    double u1 = pool(e, "p").decayed_usage;
    EXPECT_GT(u1, 0.0);
    e.evaluate(idle, 1600 + 3600);
    EXPECT_NEAR(pool(e, "p").decayed_usage, u1 / 2, 1e-9 * u1);
    // Its nodes were there all along, so the share is below one but not 0.
    EXPECT_GT(pool(e, "p").usage_share, 0.05);
    EXPECT_LT(pool(e, "p").usage_share, 0.5);
}

// A pool taken out of gpupool.conf for a while (its line commented out, its
// name mistyped) comes back with the usage it had, not as the least used
// pool; once out for longer than the usage window its history goes.
TEST(Decay, APoolOutOfTheConfigurationKeepsItsHistoryForTheWindow) {
    const std::string both = kOsmoTiers + "DecayHalfLife=0\nUsageWindow=1-0\nPool=p Quota=2\nPool=q Quota=2\n";
    const std::string only_q = kOsmoTiers + "DecayHalfLife=0\nUsageWindow=1-0\nPool=q Quota=2\n";
    Snapshot busy = cluster(4);
    partition(busy, "p", 0, 1);
    partition(busy, "q", 2, 3);
    busy.add_job(running(1, "p", "normal", 2, 1000));
    Snapshot idle = cluster(4);
    partition(idle, "p", 0, 1);
    partition(idle, "q", 2, 3);
    Engine e = engine_with(both);
    e.evaluate(busy, 1000);
    e.evaluate(idle, 1600);  // p held 2 GPUs over 600 s
    const double before = pool(e, "p").decayed_usage;
    ASSERT_GT(before, 0.0);

    e.set_config(parse_config(only_q, "test.conf"));
    e.evaluate(idle, 1700);
    EXPECT_NE(e.state_json(1700).find("\"p\":"), std::string::npos) << "kept in the state file";
    e.set_config(parse_config(both, "test.conf"));
    e.evaluate(idle, 1800);
    EXPECT_NEAR(pool(e, "p").decayed_usage, before, 1e-9 * before) << "back with its usage";

    e.set_config(parse_config(only_q, "test.conf"));
    e.evaluate(idle, 1900);
    e.evaluate(idle, 2 * 86400);  // out for longer than the window
    EXPECT_EQ(e.state_json(2 * 86400).find("\"p\":"), std::string::npos);
    e.set_config(parse_config(both, "test.conf"));
    e.evaluate(idle, 2 * 86400 + 1);
    EXPECT_EQ(pool(e, "p").decayed_usage, 0.0);
}

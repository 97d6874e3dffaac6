// Run:ai's ranks: a pool or account queue with a higher Rank divides the
// unused GPUs first (R8) and is served first within a tier (R1.2); with no
// Rank set every decision is as before (tests/unit/decisions_test.cpp).
#include <gtest/gtest.h>

#include "fairshare.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

FairshareInput asking(uint32_t quota, uint32_t demand, uint32_t rank, uint32_t weight = 1) {
    FairshareInput in;
    in.quota = quota;
    in.weight = weight;
    in.demand = demand;
    in.rank = rank;
    return in;
}

// One node of 4 GPUs, pool gpu (quota 2); departments dep-hi and dep-lo
// (quota 1 each) with one project each (quota 1).  `ranks` goes on the
// departments' lines.
Config departments(const std::string &hi_rank, const std::string &lo_rank) {
    return parse_config(kOsmoTiers + "QuotaTRES=gres/gpu\nPool=gpu Quota=2\n"
                                     "Account=dep-hi Pool=gpu Quota=gres/gpu=1" + hi_rank + "\n"
                                     "Account=dep-lo Pool=gpu Quota=gres/gpu=1" + lo_rank + "\n"
                                     "Account=proj-hi Pool=gpu Quota=gres/gpu=1\n"
                                     "Account=proj-lo Pool=gpu Quota=gres/gpu=1\n",
                        "test.conf");
}

Snapshot department_cluster() {
    Snapshot s = cluster(1, 4);
    partition(s, "gpu", 0, 0);
    s.account_parent = {{"dep-hi", "root"}, {"dep-lo", "root"}, {"proj-hi", "dep-hi"}, {"proj-lo", "dep-lo"}};
    return s;
}

SnapJob of(SnapJob j, const std::string &account) {
    j.account = account;
    return j;
}

// Three LOW jobs per project, proj-lo's submitted first.
void three_each(Snapshot &s) {
    for (uint32_t k = 0; k < 3; ++k) {
        s.add_job(of(pending(10 + k, "gpu", "low", 1, 100 + k), "proj-lo"));
        s.add_job(of(pending(20 + k, "gpu", "low", 1, 200 + k), "proj-hi"));
    }
}

Engine engine_of(Config cfg) {
    Engine e;
    e.set_config(std::move(cfg));
    return e;
}

uint64_t queue_fairshare(const Engine &e, const std::string &name) {
    const PoolState &ps = pool(e, "gpu");
    const std::vector<QueueSpec> &q = ps.queues.tree->queues;
    for (size_t i = 0; i < q.size(); ++i)
        if (q[i].name == name) return ps.queues.fairshare[i][kGpu];
    ADD_FAILURE() << "no queue " << name;
    return 0;
}

}  // namespace

TEST(Ranks, TheHigherRankTakesTheUnusedGpusUpToItsDemandBeforeALowerRankGetsAny) {
    FairshareResult r = compute_fairshare(10, {asking(2, 10, 0), asking(2, 10, 1)}, 0.0);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{2, 8}));
}

TEST(Ranks, WhatTheHigherRankDoesNotAskForGoesToTheLowerRank) {
    FairshareResult r = compute_fairshare(10, {asking(2, 10, 0), asking(2, 4, 1)}, 0.0);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{6, 4}));
}

TEST(Ranks, WithinOneRankTheUnusedGpusAreDividedByWeight) {
    FairshareResult r = compute_fairshare(8, {asking(0, 8, 1, 1), asking(0, 8, 1, 3), asking(0, 8, 0, 9)}, 0.0);
    EXPECT_EQ(r.fairshare, (std::vector<uint32_t>{2, 6, 0}));
}

TEST(Ranks, EqualRanksDivideAsWithoutRanks) {
    FairshareResult ranked = compute_fairshare(36, {asking(10, 100, 3, 2), asking(6, 100, 3, 3), asking(0, 100, 3, 1)}, 0.0);
    FairshareResult plain = compute_fairshare(36, {asking(10, 100, 0, 2), asking(6, 100, 0, 3), asking(0, 100, 0, 1)}, 0.0);
    EXPECT_EQ(ranked.fairshare, plain.fairshare);
    EXPECT_EQ(plain.fairshare, (std::vector<uint32_t>{17, 16, 3}));
}

TEST(Ranks, RankIsReadOnPoolAndAccountLinesAndWrittenBack) {
    Config cfg = parse_config(kOsmoTiers + "QuotaTRES=gres/gpu\nPool=a Quota=1 Rank=2\nPool=b Quota=1\n"
                                           "Account=dep Pool=a Quota=gres/gpu=1 Rank=5\n",
                              "test.conf");
    EXPECT_EQ(cfg.pools[0].rank, 2u);
    EXPECT_EQ(cfg.pools[1].rank, 0u);
    EXPECT_EQ(cfg.accounts[0].rank, 5u);
    EXPECT_TRUE(cfg.ranked());
    Config again = parse_config(write_config(cfg), "written.conf");
    EXPECT_EQ(again.pools[0].rank, 2u);
    EXPECT_EQ(again.accounts[0].rank, 5u);
    EXPECT_THROW(parse_config(kOsmoTiers + "Pool=a Quota=1 Rank=-1\n", "test.conf"), ConfigError);
}

TEST(Ranks, TheHigherRankedDepartmentsProjectGetsTheOverQuotaGpusAndIsServedFirst) {
    Engine e = engine_of(departments(" Rank=1", ""));
    Snapshot s = department_cluster();
    three_each(s);
    e.evaluate(s, 1000);
    // 4 GPUs: 1 each deserved, the 2 unused go to dep-hi (rank 1) first.
    EXPECT_EQ(queue_fairshare(e, "dep-hi"), 3u);
    EXPECT_EQ(queue_fairshare(e, "dep-lo"), 1u);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{20, 21, 22, 10, 11, 12}));
}

TEST(Ranks, WithoutRanksTheDepartmentsShareEquallyAndTheOlderJobsGoFirst) {
    Engine e = engine_of(departments("", ""));
    Snapshot s = department_cluster();
    three_each(s);
    e.evaluate(s, 1000);
    EXPECT_EQ(queue_fairshare(e, "dep-hi"), 2u);
    EXPECT_EQ(queue_fairshare(e, "dep-lo"), 2u);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{10, 11, 12, 20, 21, 22}));
}

TEST(Ranks, ATierStillComesBeforeRank) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=2\nPool=b Quota=2 Rank=1\n");
    Snapshot s = cluster(2, 2);
    partition(s, "a", 0, 0);
    partition(s, "b", 1, 1);
    s.add_job(pending(1, "a", "low", 1, 100));
    s.add_job(pending(2, "b", "low", 1, 200));
    s.add_job(pending(3, "a", "normal", 1, 300));
    e.evaluate(s, 1000);
    // NORMAL first (tier), then among LOW jobs pool b's (rank 1) before a's older one.
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{3, 2, 1}));
}

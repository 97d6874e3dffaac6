// Queues in a tree (departments over projects), quotas per
// resource, fairshare top-down and reclaim between the sides below the
// common ancestor.  Tests named after the Run:ai seed's examples.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "queue_tree.hpp"
#include "resources.hpp"

using namespace gpupool;

namespace {

ResourceAmounts gpus(uint64_t n) {
    ResourceAmounts a;
    a.set(kGpu, n);
    return a;
}

QueueSpec queue(const std::string &name, int32_t parent, ResourceAmounts quota, uint32_t weight = 1) {
    QueueSpec q;
    q.name = name;
    q.parent = parent;
    q.quota = quota;
    q.weight = weight;
    return q;
}

QueueLoad wants(uint64_t gpu, uint64_t cpu = 0, uint64_t mem = 0) {
    QueueLoad l;
    l.demand = {gpu, cpu, mem};
    return l;
}

Amounts only_gpus(uint64_t n) { return {n, 0, 0}; }

}  // namespace

// --- Quotas per resource, in Slurm's TRES syntax ---

TEST(ResourceAmounts, ParsesSlurmTresSyntaxWithMemorySuffixes) {
    ResourceAmounts a = parse_resource_amounts("gres/gpu=6,cpu=96,mem=768G", "gres/gpu");
    EXPECT_EQ(a.get(kGpu), 6u);
    EXPECT_EQ(a.get(kCpu), 96u);
    EXPECT_EQ(a.get(kMem), 768u * 1024);
    EXPECT_EQ(format_resource_amounts(a, "gres/gpu"), "gres/gpu=6,cpu=96,mem=768G");
    EXPECT_EQ(parse_resource_amounts("mem=2T", "gres/gpu").get(kMem), 2u << 20);
    EXPECT_EQ(parse_resource_amounts("mem=4096K", "gres/gpu").get(kMem), 4u);
    EXPECT_EQ(parse_resource_amounts("mem=1500", "gres/gpu").get(kMem), 1500u);
}

TEST(ResourceAmounts, ABareNumberIsGpusAsQuotaAlwaysWas) {
    ResourceAmounts a = parse_resource_amounts("4", "gres/gpu");
    EXPECT_TRUE(a.has(kGpu));
    EXPECT_FALSE(a.has(kCpu));
    EXPECT_EQ(a.get(kGpu), 4u);
}

TEST(ResourceAmounts, ATypedGpuTresCountsAsGpus) {
    ResourceAmounts a = parse_resource_amounts("gres/gpu:a100=8,cpu=64", "gres/gpu:a100");
    EXPECT_EQ(a.get(kGpu), 8u);
    EXPECT_EQ(format_resource_amounts(a, "gres/gpu:a100"), "gres/gpu:a100=8,cpu=64");
}

TEST(ResourceAmounts, BadItemsAreNamed) {
    auto msg = [](const std::string &text) {
        try {
            parse_resource_amounts(text, "gres/gpu");
        } catch (const std::invalid_argument &e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(msg("gres/gpu=6,node=2"), "'node=2': not a TRES a quota counts (gres/gpu, cpu, mem)");
    EXPECT_EQ(msg("cpu=4,cpu=8"), "'cpu=8': given twice");
    EXPECT_EQ(msg("cpu=4G"), "'cpu=4G': not a whole number");
    EXPECT_EQ(msg("mem=3X"), "'mem=3X': unknown memory suffix (K, M, G, T or P)");
    EXPECT_EQ(msg("cpu=-1"), "'cpu=-1': not a whole number");
    EXPECT_EQ(msg("gpu"), "'gpu': not a whole number");
    EXPECT_EQ(msg("cpu=4,"), "'': expected TRES=count");
}

// --- Fairshare top-down (R8 with levels) ---

// Run:ai, "Quota, over-quota, and fairshare": 20 unused GPUs in node pool A,
// over-quota weights 2, 3, 1: Project 2 gets (3 / 6) x 20 = 10 over quota,
// and with quota 6 its fairshare is 16.
TEST(Seed, OverQuotaSplitOfTwentyUnusedGpusGivesTheWeightThreeProjectTenAndFairshareSixteen) {
    std::vector<QueueSpec> t = {queue("pool-a", -1, {}), queue("project1", 0, gpus(10), 2),
                                queue("project2", 0, gpus(6), 3), queue("project3", 0, gpus(0), 1)};
    std::vector<QueueLoad> load = {wants(0), wants(100), wants(100), wants(100)};
    QueueShares s = divide_among_queues(t, load, only_gpus(36), 0.0);
    EXPECT_EQ(s.fairshare[2][kGpu], 16u);
    EXPECT_EQ(s.fairshare[1][kGpu], 17u);  // 10 + 6.67, the left-over GPU to the larger remainder
    EXPECT_EQ(s.fairshare[3][kGpu], 3u);
}

// The same split one level down: the department's share is what its
// projects divide.
TEST(Seed, TheSameSplitInsideADepartment) {
    std::vector<QueueSpec> t = {queue("pool-a", -1, {}), queue("dept1", 0, gpus(16)),
                                queue("project1", 1, gpus(10), 2), queue("project2", 1, gpus(6), 3),
                                queue("project3", 1, gpus(0), 1), queue("dept2", 0, gpus(4))};
    std::vector<QueueLoad> load = {wants(0), wants(0), wants(100), wants(100), wants(100), wants(0)};
    QueueShares s = divide_among_queues(t, load, only_gpus(36), 0.0);
    EXPECT_EQ(s.fairshare[1][kGpu], 36u);  // dept2 asks for nothing: dept1 has it all
    EXPECT_EQ(s.fairshare[5][kGpu], 0u);
    EXPECT_EQ(s.fairshare[3][kGpu], 16u);
    EXPECT_EQ(s.fairshare[2][kGpu] + s.fairshare[3][kGpu] + s.fairshare[4][kGpu], 36u);
}

// "Departments' over-quota is always proportional to its quota": the
// projects' weights do not change how departments divide.
TEST(Seed, DepartmentsOverQuotaIsProportionalToTheirQuota) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}),        queue("small", 0, gpus(10)),
                                queue("s1", 1, gpus(10), 100), queue("large", 0, gpus(30)),
                                queue("l1", 3, gpus(30), 1)};
    std::vector<QueueLoad> load = {wants(0), wants(0), wants(1000), wants(0), wants(1000)};
    QueueShares s = divide_among_queues(t, load, only_gpus(80), 0.0);
    EXPECT_EQ(s.fairshare[1][kGpu], 20u);  // 10 + 40 x 10/40
    EXPECT_EQ(s.fairshare[3][kGpu], 60u);  // 30 + 40 x 30/40
}

// A queue deserves its quota only as far as it asks; what it leaves goes to
// the others, and no queue's fairshare is over its demand.
TEST(Seed, AQueueAskingLessThanItsQuotaLeavesTheRestToItsSiblings) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("p1", 0, gpus(5)), queue("p2", 0, gpus(5))};
    QueueShares s = divide_among_queues(t, {wants(0), wants(15), wants(2)}, only_gpus(20), 0.0);
    EXPECT_EQ(s.fairshare[1][kGpu], 15u);
    EXPECT_EQ(s.fairshare[2][kGpu], 2u);
}

TEST(Seed, ALimitCapsAQueuesFairshare) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("p1", 0, gpus(2)), queue("p2", 0, gpus(2))};
    t[1].limit.set(kGpu, 6);
    QueueShares s = divide_among_queues(t, {wants(0), wants(100), wants(100)}, only_gpus(20), 0.0);
    EXPECT_EQ(s.fairshare[1][kGpu], 6u);
    EXPECT_EQ(s.fairshare[2][kGpu], 14u);
}

// Jobs of accounts with no entry draw on their parent's queue: they divide
// as one more child holding the quota the children do not.
TEST(Seed, ADepartmentsOwnJobsShareWithItsProjects) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("dept", 0, gpus(8)), queue("p1", 1, gpus(6))};
    QueueShares s = divide_among_queues(t, {wants(0), wants(10), wants(10)}, only_gpus(8), 0.0);
    EXPECT_EQ(s.fairshare[2][kGpu], 6u);  // its quota; the department's own jobs have the other 2
}

// A department with no quota gets nothing over quota while a department
// with quota asks; what no one else asks for it gets rather than lie idle.
TEST(Seed, ADepartmentWithNoQuotaGetsOnlyWhatOthersLeave) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("funded", 0, gpus(4)), queue("f1", 1, gpus(4)),
                                queue("unfunded", 0, gpus(0)), queue("u1", 3, gpus(0))};
    QueueShares busy = divide_among_queues(t, {wants(0), wants(0), wants(100), wants(0), wants(100)}, only_gpus(10), 0.0);
    EXPECT_EQ(busy.fairshare[1][kGpu], 10u);
    EXPECT_EQ(busy.fairshare[3][kGpu], 0u);
    QueueShares quiet = divide_among_queues(t, {wants(0), wants(0), wants(6), wants(0), wants(100)}, only_gpus(10), 0.0);
    EXPECT_EQ(quiet.fairshare[1][kGpu], 6u);
    EXPECT_EQ(quiet.fairshare[3][kGpu], 4u);
    EXPECT_EQ(quiet.fairshare[4][kGpu], 4u);
}

// "Similarly, fairshare is also calculated for CPU and CPU memory."
TEST(Seed, TheSameSplitForCpusAndMemory) {
    ResourceAmounts q1 = parse_resource_amounts("cpu=100,mem=1000", "gres/gpu");
    ResourceAmounts q2 = parse_resource_amounts("cpu=60,mem=600", "gres/gpu");
    ResourceAmounts q3 = parse_resource_amounts("cpu=0,mem=0", "gres/gpu");
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("p1", 0, q1, 2), queue("p2", 0, q2, 3),
                                queue("p3", 0, q3, 1)};
    std::vector<QueueLoad> load = {wants(0), wants(0, 1000, 10000), wants(0, 1000, 10000), wants(0, 1000, 10000)};
    QueueShares s = divide_among_queues(t, load, {0, 360, 3600}, 0.0);
    EXPECT_EQ(s.fairshare[2][kCpu], 160u);  // 60 + 200 x 3/6
    EXPECT_EQ(s.fairshare[2][kMem], 1600u);
    EXPECT_EQ(s.fairshare[3][kCpu], 33u);  // 200 x 1/6 = 33.3
    EXPECT_EQ(s.fairshare[1][kCpu], 167u);
}

// --- R2 with levels ---

namespace {

// pool: physics (gres/gpu=4,cpu=32) over qcd (gres/gpu=4) and astro (gres/gpu=2).
struct PhysicsWorld {
    std::vector<QueueSpec> t = {queue("pool", -1, gpus(8)),
                                queue("physics", 0, parse_resource_amounts("gres/gpu=4,cpu=32", "gres/gpu")),
                                queue("qcd", 1, gpus(4)), queue("astro", 1, gpus(2))};
};

}  // namespace

// A project's NORMAL job is held by its department's quota although the
// project has room.
TEST(Seed, AProjectsJobIsHeldByItsDepartmentsQuotaAlthoughTheProjectHasRoom) {
    PhysicsWorld w;
    std::vector<Amounts> np_used = {only_gpus(4), only_gpus(4), only_gpus(2), only_gpus(2)};
    QuotaBlock b = quota_block(w.t, np_used, 2, {1, 4, 0});
    EXPECT_EQ(b.queue, 1);
    EXPECT_EQ(b.resource, kGpu);
    EXPECT_EQ(b.used, 4u);
    EXPECT_EQ(b.quota, 4u);
}

// A job held by the CPU quota while GPUs are free.
TEST(Seed, AJobIsHeldByTheCpuQuotaWhileGpusAreFree) {
    PhysicsWorld w;
    std::vector<Amounts> np_used = {{1, 30, 0}, {1, 30, 0}, {1, 30, 0}, {0, 0, 0}};
    QuotaBlock b = quota_block(w.t, np_used, 2, {1, 4, 0});
    EXPECT_EQ(b.queue, 1);
    EXPECT_EQ(b.resource, kCpu);
    EXPECT_EQ(b.used, 30u);
    EXPECT_EQ(b.quota, 32u);
    EXPECT_EQ(quota_block(w.t, np_used, 2, {1, 2, 0}).queue, -1);
}

TEST(Seed, TheProjectsOwnQuotaIsCheckedFirst) {
    PhysicsWorld w;
    std::vector<Amounts> np_used = {only_gpus(6), only_gpus(4), only_gpus(2), only_gpus(2)};
    EXPECT_EQ(quota_block(w.t, np_used, 3, only_gpus(1)).queue, 3);
    EXPECT_EQ(quota_block(w.t, np_used, 0, only_gpus(2)).queue, -1);
    EXPECT_EQ(quota_block(w.t, np_used, 0, only_gpus(3)).queue, 0);
}

// --- The three queue states ---

TEST(Seed, TheThreeQueueStates) {
    EXPECT_EQ(standing(6, 6, 16), QueueStanding::InQuota);
    EXPECT_EQ(standing(16, 6, 16), QueueStanding::OverQuota);
    EXPECT_EQ(standing(17, 6, 16), QueueStanding::OverFairshare);
}

// --- Reclaim with levels ---

namespace {

// pool 36: project1 (quota 10, w 2) runs 33, project3 (quota 0, w 1) asks.
struct ZeroQuotaWorld {
    std::vector<QueueSpec> t = {queue("pool-a", -1, {}), queue("project1", 0, gpus(10), 2),
                                queue("project2", 0, gpus(6), 3), queue("project3", 0, gpus(0), 1)};
    std::vector<Amounts> fairshare;
    std::vector<Amounts> allocated = {only_gpus(36), only_gpus(30), only_gpus(6), only_gpus(0)};
    ZeroQuotaWorld() {
        fairshare = divide_among_queues(t, {wants(0), wants(100), wants(100), wants(100)}, only_gpus(36), 0.0)
                        .fairshare;
    }
    bool reclaim(int32_t from, ReclaimTo mode) const {
        return may_reclaim(t, allocated, fairshare, {3, from, only_gpus(1), only_gpus(1)}, mode);
    }
};

}  // namespace

// "Project 3 has no guaranteed quota, but it still has a share of the excess
// resources ... even if this results in reclaiming resources from other
// projects": with ReclaimTo=fairshare it reclaims from project 1 (over its
// fairshare of 17), not from project 2 (in quota); with ReclaimTo=quota it
// reclaims nothing.
TEST(Seed, TheZeroQuotaProjectGetsItsOverQuotaShareByReclaim) {
    ZeroQuotaWorld w;
    ASSERT_EQ(w.fairshare[3][kGpu], 3u);
    EXPECT_TRUE(w.reclaim(1, ReclaimTo::Fairshare));
    EXPECT_FALSE(w.reclaim(2, ReclaimTo::Fairshare));
    EXPECT_FALSE(w.reclaim(1, ReclaimTo::Quota));
}

// Once project 3 holds its fairshare it reclaims no more: no thrash.
TEST(Seed, AtItsFairshareTheZeroQuotaProjectStopsReclaiming) {
    ZeroQuotaWorld w;
    w.allocated = {only_gpus(36), only_gpus(27), only_gpus(6), only_gpus(3)};
    EXPECT_FALSE(w.reclaim(1, ReclaimTo::Fairshare));
    // and project 1, now over its quota but within its fairshare, cannot take one back
    EXPECT_FALSE(may_reclaim(w.t, w.allocated, w.fairshare, {1, 3, only_gpus(1), only_gpus(1)},
                             ReclaimTo::Fairshare));
}

// "first take resources from over-fairshare queues, then from over-quota
// queues": a queue that stays within its quota takes back from one over its
// quota; one past its quota but within its fairshare (ReclaimTo=fairshare)
// only from one over its fairshare; an in-quota queue never gives back.
TEST(Seed, ReclaimTakesFromOverFairshareThenOverQuotaNeverInQuota) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("owner", 0, gpus(8)), queue("borrower", 0, gpus(4))};
    std::vector<Amounts> fs = {only_gpus(16), only_gpus(8), only_gpus(8)};
    auto ask = [&](uint64_t owner_alloc, uint64_t borrower_alloc, ReclaimTo mode) {
        std::vector<Amounts> alloc = {only_gpus(owner_alloc + borrower_alloc), only_gpus(owner_alloc),
                                      only_gpus(borrower_alloc)};
        return may_reclaim(t, alloc, fs, {1, 2, only_gpus(1), only_gpus(1)}, mode);
    };
    EXPECT_TRUE(ask(4, 10, ReclaimTo::Fairshare));   // borrower over fairshare (10 > 8)
    EXPECT_TRUE(ask(4, 7, ReclaimTo::Fairshare));    // over quota: owner, within its quota, takes it back
    EXPECT_TRUE(ask(4, 7, ReclaimTo::Quota));        // the same to quota
    EXPECT_FALSE(ask(4, 4, ReclaimTo::Quota));       // in quota: keeps its jobs
    EXPECT_FALSE(ask(8, 7, ReclaimTo::Quota));       // the owner is at its quota already
    // Owner at its quota 8, fairshare 10: to fairshare it takes only from
    // a borrower over its fairshare (6).
    fs = {only_gpus(16), only_gpus(10), only_gpus(6)};
    EXPECT_FALSE(ask(8, 6, ReclaimTo::Fairshare));   // borrower over quota, at its fairshare
    EXPECT_TRUE(ask(8, 7, ReclaimTo::Fairshare));    // borrower over its fairshare
    EXPECT_FALSE(ask(8, 7, ReclaimTo::Quota));
}

// Taking to fairshare stops at the victim's quota: a borrower over its
// fairshare by 1 GPU whose one job of 3 would take it below its quota
// keeps it; had it lost it, it would reclaim it back to quota from the
// owner (then over its quota), and the two would evict each other for
// ever.  Taking to quota may still take the job that straddles the line.
TEST(Seed, ReclaimToFairshareNeverTakesTheVictimsSideBelowItsQuota) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("owner", 0, gpus(8)), queue("borrower", 0, gpus(4))};
    std::vector<Amounts> fs = {only_gpus(16), only_gpus(10), only_gpus(5)};
    std::vector<Amounts> alloc = {only_gpus(14), only_gpus(8), only_gpus(6)};
    const ReclaimCheck c = check_reclaim(t, alloc, fs, {1, 2, only_gpus(2), only_gpus(3)}, ReclaimTo::Fairshare);
    EXPECT_EQ(c.outcome, ReclaimCheck::VictimSideToQuota);
    EXPECT_EQ(c.queue, 2);
    EXPECT_EQ(c.allocated, 3u);
    EXPECT_EQ(c.bound, 4u);
    // A job of 2 leaves it at its quota: taken.
    EXPECT_TRUE(may_reclaim(t, alloc, fs, {1, 2, only_gpus(2), only_gpus(2)}, ReclaimTo::Fairshare));
    // To quota (the owner within its quota after) the straddling job goes.
    alloc = {only_gpus(12), only_gpus(6), only_gpus(6)};
    EXPECT_TRUE(may_reclaim(t, alloc, fs, {1, 2, only_gpus(2), only_gpus(3)}, ReclaimTo::Fairshare));
}

// A department's quota caps its projects: project d1p has room, but its
// department is at its quota, so it cannot reclaim from the other one.
TEST(Seed, ADepartmentAtItsQuotaHoldsBackItsProjectsReclaim) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d1p", 1, gpus(4)),
                                queue("d1q", 1, gpus(0)), queue("d2", 0, gpus(4)), queue("d2p", 4, gpus(4))};
    std::vector<Amounts> fs = {only_gpus(8), only_gpus(4), only_gpus(4), only_gpus(0), only_gpus(4), only_gpus(4)};
    std::vector<Amounts> alloc = {only_gpus(8), only_gpus(4), only_gpus(1), only_gpus(3), only_gpus(4),
                                  only_gpus(4)};
    EXPECT_FALSE(may_reclaim(t, alloc, fs, {2, 5, only_gpus(1), only_gpus(1)}, ReclaimTo::Quota));
    // Within the department the project takes its quota back from its sibling.
    EXPECT_TRUE(may_reclaim(t, alloc, fs, {2, 3, only_gpus(1), only_gpus(1)}, ReclaimTo::Quota));
}

TEST(Seed, ReclaimIsDecidedBetweenTheChildrenOfTheCommonAncestor) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d1p", 1, gpus(4)),
                                queue("d2", 0, gpus(4)), queue("d2p", 3, gpus(4))};
    EXPECT_EQ(sides_below_common_ancestor(t, 2, 4), std::make_pair(1, 3));
    EXPECT_EQ(sides_below_common_ancestor(t, 2, 1), std::make_pair(-1, -1));
    EXPECT_EQ(sides_below_common_ancestor(t, 2, 2), std::make_pair(-1, -1));
}

// A queue whose quota does not count GPUs has no GPUs to take back.
TEST(Seed, ReclaimIsOwedOnlyInAResourceBothSidesCount) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}),
                                queue("cpu-only", 0, parse_resource_amounts("cpu=64", "gres/gpu")),
                                queue("borrower", 0, gpus(0))};
    std::vector<Amounts> fs = {{8, 128, 0}, {0, 64, 0}, {0, 64, 0}};
    std::vector<Amounts> alloc = {{8, 16, 0}, {0, 8, 0}, {8, 8, 0}};
    EXPECT_FALSE(may_reclaim(t, alloc, fs, {1, 2, {1, 1, 0}, {1, 1, 0}}, ReclaimTo::Quota));
}

TEST(Seed, TheSidesOfQueuesAtDifferentDepthsAreTheCommonAncestorsChildren) {
    // pool > d1 > d1s > d1p, pool > d2 > d2p
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d2", 0, gpus(4)),
                                queue("d1s", 1, gpus(4)), queue("d2p", 2, gpus(4)), queue("d1p", 3, gpus(4))};
    EXPECT_EQ(sides_below_common_ancestor(t, 5, 4), std::make_pair(1, 2));
    EXPECT_EQ(sides_below_common_ancestor(t, 4, 5), std::make_pair(2, 1));
    EXPECT_EQ(sides_below_common_ancestor(t, 5, 1), std::make_pair(-1, -1));
    EXPECT_EQ(sides_below_common_ancestor(t, 0, 5), std::make_pair(-1, -1));
}

// d2 is over its quota, but its project d2a is within its own: d2a keeps
// its jobs, and d2's excess is d2b's to give back.
TEST(Seed, AProjectWithinItsQuotaKeepsItsJobsInADepartmentOverItsQuota) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d1p", 1, gpus(4)),
                                queue("d2", 0, gpus(4)), queue("d2a", 3, gpus(3)), queue("d2b", 3, gpus(1))};
    std::vector<Amounts> fs = {only_gpus(8), only_gpus(4), only_gpus(4), only_gpus(4), only_gpus(3), only_gpus(1)};
    std::vector<Amounts> alloc = {only_gpus(8), only_gpus(1), only_gpus(1), only_gpus(7), only_gpus(3), only_gpus(4)};
    const ReclaimCheck a = check_reclaim(t, alloc, fs, {2, 4, only_gpus(1), only_gpus(1)}, ReclaimTo::Quota);
    EXPECT_EQ(a.outcome, ReclaimCheck::VictimQueueWithin);
    EXPECT_EQ(a.queue, 4);
    EXPECT_EQ(a.allocated, 3u);
    EXPECT_EQ(a.bound, 3u);
    const ReclaimCheck b = check_reclaim(t, alloc, fs, {2, 5, only_gpus(1), only_gpus(1)}, ReclaimTo::Quota);
    EXPECT_EQ(b.outcome, ReclaimCheck::Allowed);
    EXPECT_EQ(b.queue, 3);  // decided between d1 and d2
    EXPECT_EQ(b.allocated, 7u);
}

// The walk's figures at the victim's place: d2b's newest jobs are over,
// the one that brings d2 back to its quota is the last taken.
TEST(Seed, ReclaimReadsTheVictimsQueuesAtItsPlaceInTheWalk) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d2", 0, gpus(4)),
                                queue("d2b", 2, gpus(1))};
    std::vector<Amounts> fs = {only_gpus(8), only_gpus(4), only_gpus(4), only_gpus(4)};
    std::vector<Amounts> alloc = {only_gpus(8), only_gpus(1), only_gpus(7), only_gpus(7)};
    auto at = [&](uint64_t d2b, uint64_t d2) {
        const std::vector<Amounts> walk = {only_gpus(d2b), only_gpus(d2), only_gpus(8)};  // d2b, d2, pool
        return check_reclaim(t, alloc, fs, {1, 3, only_gpus(1), only_gpus(2), walk.data()}, ReclaimTo::Quota);
    };
    EXPECT_EQ(at(7, 7).outcome, ReclaimCheck::Allowed);
    EXPECT_EQ(at(5, 5).outcome, ReclaimCheck::Allowed);  // straddles: 5 > 4, 3 after
    const ReclaimCheck in = at(3, 3);
    EXPECT_EQ(in.outcome, ReclaimCheck::VictimSideWithin);
    EXPECT_EQ(in.queue, 2);
    EXPECT_EQ(in.allocated, 3u);
}

// A reclaimer whose department would pass its quota is named with it.
TEST(Seed, TheReclaimersQueueThatWouldPassItsBoundIsNamed) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("d1", 0, gpus(4)), queue("d1p", 1, gpus(4)),
                                queue("d2", 0, gpus(4))};
    std::vector<Amounts> fs = {only_gpus(8), only_gpus(6), only_gpus(6), only_gpus(2)};
    std::vector<Amounts> alloc = {only_gpus(9), only_gpus(4), only_gpus(2), only_gpus(5)};
    const ReclaimCheck q = check_reclaim(t, alloc, fs, {2, 3, only_gpus(1), only_gpus(1)}, ReclaimTo::Quota);
    EXPECT_EQ(q.outcome, ReclaimCheck::ReclaimerOver);
    EXPECT_EQ(q.queue, 1);
    EXPECT_EQ(q.allocated, 5u);
    EXPECT_EQ(q.bound, 4u);
    // To fairshare d1 may grow to 6, and d2 (5) is over its bound, its quota of 4.
    EXPECT_EQ(check_reclaim(t, alloc, fs, {2, 3, only_gpus(1), only_gpus(1)}, ReclaimTo::Fairshare).outcome,
              ReclaimCheck::Allowed);
}

TEST(QueueTree, ATreeOutOfOrderIsRefusedNamingTheQueue) {
    std::vector<QueueSpec> t = {queue("pool", -1, {}), queue("p", 2, gpus(1)), queue("d", 0, gpus(1))};
    try {
        divide_among_queues(t, {wants(0), wants(0), wants(0)}, only_gpus(4), 0.0);
        FAIL() << "accepted";
    } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(), "queue 'p': parent 2 is not an earlier queue (the tree must list parents first, one root)");
    }
}

// --- Property: the division among queues ---

// Random trees (depth up to 4, up to 50 queues), quotas that fit their
// parent's, weights 1..5, optional limits, random demand in all three
// resources: no queue's fairshare is over its demand or limit, children
// never divide more than their parent has, and when the children ask for
// all of it, they divide all of it.
TEST(Property, TreeFairshareAddsUpAndStaysWithinDemandAndLimit) {
    std::mt19937_64 rng(20);
    auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
    size_t cases = 0;
    for (int world = 0; world < 4000; ++world) {
        Amounts cap = {pick(1, 64), pick(1, 512), pick(1, 8192)};
        size_t n = pick(2, 50);
        std::vector<QueueSpec> t = {queue("root", -1, {})};
        std::vector<int> depth = {0};
        std::vector<Amounts> quota_left = {cap};  // what a queue's children may still be guaranteed
        for (size_t i = 1; i < n; ++i) {
            int32_t parent;
            do parent = int32_t(pick(0, i - 1));
            while (depth[size_t(parent)] >= 4);
            QueueSpec q = queue("q" + std::to_string(i), parent, {}, uint32_t(pick(1, 5)));
            Amounts mine{};
            for (size_t r = 0; r < kResources; ++r) {
                if (pick(0, 5) == 0) continue;  // this queue does not count r
                uint64_t v = pick(0, quota_left[size_t(parent)][r]);
                quota_left[size_t(parent)][r] -= v;
                q.quota.set(Resource(r), v);
                mine[r] = v;
                if (pick(0, 3) == 0) q.limit.set(Resource(r), v + pick(0, cap[r]));
            }
            t.push_back(q);
            depth.push_back(depth[size_t(parent)] + 1);
            quota_left.push_back(mine);
        }
        std::vector<QueueLoad> load(n);
        for (size_t i = 1; i < n; ++i)
            for (size_t r = 0; r < kResources; ++r)
                if (pick(0, 2) > 0) load[i].demand[r] = pick(0, cap[r]);
        QueueShares s = divide_among_queues(t, load, cap, 0.0);
        std::vector<Amounts> child_sum(n, Amounts{});
        std::vector<Amounts> child_demand(n, Amounts{});
        for (size_t i = 1; i < n; ++i)
            for (size_t r = 0; r < kResources; ++r) {
                child_sum[size_t(t[i].parent)][r] += s.fairshare[i][r];
                child_demand[size_t(t[i].parent)][r] += s.demand[i][r];
            }
        for (size_t i = 0; i < n; ++i)
            for (size_t r = 0; r < kResources; ++r) {
                ++cases;
                SCOPED_TRACE("world " + std::to_string(world) + " queue " + std::to_string(i) + " resource " +
                             std::to_string(r));
                if (i > 0) {
                    ASSERT_LE(s.fairshare[i][r], s.demand[i][r]);
                    if (t[i].limit.has(Resource(r))) {
                        ASSERT_LE(s.fairshare[i][r], t[i].limit.value[r]);
                    }
                }
                bool parent = child_demand[i][r] > 0 || child_sum[i][r] > 0;
                if (!parent) continue;
                uint64_t has = s.fairshare[i][r];
                uint64_t own = load[i].demand[r];
                ASSERT_LE(child_sum[i][r], has);
                if (child_demand[i][r] >= has && own == 0) {
                    ASSERT_EQ(child_sum[i][r], has);
                }
            }
    }
    EXPECT_GE(cases, 100000u);
}

// Random trees, random non-preemptible jobs admitted and ended through
// quota_block: no queue's non-preemptible use is ever over the quota of any
// queue that counts the resource, itself or an ancestor.
TEST(Property, NonPreemptibleUseNeverExceedsAnyAncestorsQuota) {
    std::mt19937_64 rng(2020);
    auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
    size_t cases = 0;
    for (int world = 0; world < 1000; ++world) {
        size_t n = pick(2, 50);
        std::vector<QueueSpec> t = {queue("root", -1, parse_resource_amounts("gres/gpu=16,cpu=128,mem=1024", "g"))};
        for (size_t i = 1; i < n; ++i) {
            QueueSpec q = queue("q" + std::to_string(i), int32_t(pick(0, i - 1)), {});
            for (size_t r = 0; r < kResources; ++r)
                if (pick(0, 3) > 0) q.quota.set(Resource(r), pick(0, r == kGpu ? 8 : 256));
            t.push_back(q);
        }
        std::vector<Amounts> np_used(n, Amounts{});
        std::vector<std::pair<int32_t, Amounts>> running;
        for (int step = 0; step < 100; ++step, ++cases) {
            if (!running.empty() && pick(0, 3) == 0) {  // a job ends
                size_t k = pick(0, running.size() - 1);
                for (int32_t q = running[k].first; q >= 0; q = t[size_t(q)].parent)
                    for (size_t r = 0; r < kResources; ++r) np_used[size_t(q)][r] -= running[k].second[r];
                running.erase(running.begin() + long(k));
                continue;
            }
            int32_t home = int32_t(pick(0, n - 1));
            Amounts job = {pick(0, 3), pick(0, 32), pick(0, 128)};
            if (quota_block(t, np_used, home, job).queue >= 0) continue;
            for (int32_t q = home; q >= 0; q = t[size_t(q)].parent)
                for (size_t r = 0; r < kResources; ++r) np_used[size_t(q)][r] += job[r];
            running.emplace_back(home, job);
            for (size_t q = 0; q < n; ++q)
                for (size_t r = 0; r < kResources; ++r)
                    if (t[q].quota.has(Resource(r))) {
                        ASSERT_LE(np_used[q][r], t[q].quota.value[r]) << "world " << world << " step " << step;
                    }
        }
    }
    EXPECT_GE(cases, 100000u);
}

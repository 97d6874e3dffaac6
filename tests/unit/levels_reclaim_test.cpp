// R4-R6 with levels through the engine: reclaim between the
// queues of one pool (departments over projects) to quota or, with
// ReclaimTo=fairshare, to fairshare; the victim order over-fairshare, then
// over-quota, never in-quota but for the job straddling the line; the same
// when CPUs or memory are counted.
#include <gtest/gtest.h>

#include <algorithm>

#include "explain.hpp"
#include "levels.hpp"
#include "reclaim_loop.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

AccountQuota entry(const std::string &account, const std::string &quota, uint32_t weight = 1) {
    AccountQuota a;
    a.account = account;
    a.pool = "*";
    a.quota = parse_resource_amounts(quota, "gres/gpu");
    a.weight = weight;
    return a;
}

Engine engine_of(Config cfg) {
    Engine e;
    e.set_config(std::move(cfg));
    return e;
}

SnapJob of(SnapJob j, const std::string &account, uint32_t cpus = 0, uint64_t mem_mb = 0) {
    j.account = account;
    j.cpus = cpus;
    j.mem_mb = mem_mb;
    return j;
}


// Running jobs by victim rank.
std::vector<uint32_t> by_rank(const Engine &e) {
    std::vector<std::pair<uint32_t, uint32_t>> ranked;
    for (const auto &[id, r] : e.last().running) ranked.emplace_back(r.rank, id);
    std::sort(ranked.begin(), ranked.end());
    std::vector<uint32_t> ids;
    for (auto [rank, id] : ranked) ids.push_back(id);
    return ids;
}

uint64_t allocated(const Engine &e, const std::string &queue, Resource r = kGpu) {
    const PoolState &ps = e.last().pools.front();
    for (size_t q = 0; q < ps.queues.tree->queues.size(); ++q)
        if (ps.queues.tree->queues[q].name == queue) return ps.queues.allocated[q][r];
    ADD_FAILURE() << "no queue " << queue;
    return 0;
}


// pool1: 2 nodes of 4 GPUs, 32 CPUs, 1,024 MiB.  physics and chemistry
// (each half of what `resource` counts) over projects phys-a and chem-a
// (the same quota).  chem-a's LOW jobs 1-6 borrow physics' half; phys-a
// runs LOW job 7 and asks for NORMAL job 10.  Each job holds 1 GPU, 8
// CPUs and 128 MiB; job 10 three times that.
struct CrossDepartment {
    Config cfg;
    Snapshot snap;
    explicit CrossDepartment(Resource resource) {
        const char *half[] = {"gres/gpu=4", "gres/gpu=8,cpu=32", "gres/gpu=8,mem=512"};
        cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=8\n", "test.conf");
        cfg.counted = {{true, resource == kCpu, resource == kMem}};
        const std::string q = half[resource];
        cfg.accounts = {entry("physics", q), entry("chemistry", q), entry("phys-a", q), entry("chem-a", q)};
        snap = cluster(2, resource == kGpu ? 4 : 8);
        for (SnapNode &n : snap.nodes) {
            n.cpus = resource == kCpu ? 32 : 64;
            n.mem_mb = resource == kMem ? 512 : 4096;
        }
        partition(snap, "pool1", 0, 1);
        snap.account_parent = {
            {"physics", "root"}, {"chemistry", "root"}, {"phys-a", "physics"}, {"chem-a", "chemistry"}};
        for (uint32_t id = 1; id <= 6; ++id)
            snap.add_job(of(running(id, "pool1", "low", 1, 100 + id), "chem-a", 8, 128));
        snap.add_job(of(running(7, "pool1", "low", 1, 110), "phys-a", 8, 128));
        snap.add_job(of(pending(10, "pool1", "normal", 3, 200), "phys-a", 24, 384));
    }
};

void cross_department_reclaims_back_to_quota(Resource resource) {
    CrossDepartment w(resource);
    Engine e = engine_of(w.cfg);
    ReclaimLoop loop(e, w.snap);
    e.evaluate(w.snap, 1000);
    const std::string unit = resource_word(resource);
    const uint64_t per_job = resource == kGpu ? 1 : resource == kCpu ? 8 : 128;
    auto figures = [&](uint64_t jobs, uint64_t quota) {
        return "(" + unit + " " + std::to_string(jobs * per_job) + "/" + std::to_string(quota) + ")";
    };
    const uint64_t quota = resource == kGpu ? 4 : resource == kCpu ? 32 : 512;
    const std::string over6 = "queue chemistry over its quota " + figures(6, quota);
    const std::string over5 = "queue chemistry over its quota " + figures(5, quota);
    const std::string within = "victim's queue chemistry within its quota " + figures(4, quota);
    expect_rows(e, loop,
                {{"the other department's newest borrower is reclaimed", 6, 10, true, Rule::Reclaim, over6.c_str()},
                 {"and its next borrower", 5, 10, true, Rule::Reclaim, over5.c_str()},
                 {"never a job within its quota", 4, 10, false, Rule::None, within.c_str()},
                 {"the reclaimer's own LOW job is R4's in its queue", 7, 10, true, Rule::InPool,
                  "lower tier in the same pool"}},
                1000);
    // Borrowers first: the reclaimer's own LOW job comes after them.
    const std::vector<uint32_t> ranked = by_rank(e);
    EXPECT_EQ(std::vector<uint32_t>(ranked.begin(), ranked.begin() + 3), (std::vector<uint32_t>{6, 5, 7}));
    // `gpupool why` names the same two, by the engine's rule (its free
    // resources are GPUs only so far: CPUs and memory are the show side's).
    if (resource == kGpu) {
        const Explanation x = explain(e, w.snap, ExplainInput{}, 1000);
        const PendingExplain *pe = x.find_pending(10);
        ASSERT_NE(pe, nullptr);
        EXPECT_EQ(pe->reason, WaitReason::WaitingForReclaim);
        std::vector<std::pair<uint32_t, Rule>> named;
        for (const VictimRef &v : pe->victims) named.emplace_back(v.job_id, v.rule);
        EXPECT_EQ(named, (std::vector<std::pair<uint32_t, Rule>>{{6, Rule::Reclaim}, {5, Rule::Reclaim}}));
    }
    int64_t now = 1000;
    EXPECT_EQ(settle(loop, now), (std::vector<uint32_t>{6, 5}));
    EXPECT_EQ(loop.job(10).state, JobState::Running);
    EXPECT_EQ(loop.job(7).state, JobState::Running);  // its own LOW job keeps running
    EXPECT_EQ(allocated(e, "chemistry", resource), quota);
    // Back to quota, nobody reclaims: not physics (at its quota), not
    // chemistry's requeued LOW jobs (ReclaimBy=nonpreemptible).
    w.snap.add_job(of(pending(11, "pool1", "normal", 1, 300), "phys-a", 8, 128));
    e.evaluate(w.snap, now);
    // Its own LOW job 7 goes with any reclaim (R4), so phys-a is entitled;
    // chemistry is back at its quota.
    expect_rows(e, loop,
                {{"the reclaimer at its quota takes nothing within the other's", 4, 11, false, Rule::None,
                  within.c_str()},
                 {"a requeued LOW borrower does not reclaim back", 7, 6, false, Rule::None,
                  "only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)"}},
                now);
    // Now phys-a's NORMAL job preempts its own LOW job (R4), chemistry keeps its quota.
    EXPECT_EQ(settle(loop, now), (std::vector<uint32_t>{7}));
    EXPECT_EQ(allocated(e, "chemistry", resource), quota);
}

}  // namespace

TEST(LevelsReclaim, ADepartmentReclaimsItsQuotaFromTheOtherDepartmentsBorrowersNeverItsInQuotaJobs) {
    cross_department_reclaims_back_to_quota(kGpu);
}

TEST(LevelsReclaim, TheSameWithCpusCounted) { cross_department_reclaims_back_to_quota(kCpu); }

TEST(LevelsReclaim, TheSameWithMemoryCounted) { cross_department_reclaims_back_to_quota(kMem); }

namespace {

// The seed's example: a pool of 36 GPUs, project1 (quota 10, weight 2)
// runs 30 LOW jobs and asks for 20 more, project2 (quota 6, weight 3) runs
// 6 and asks for 20 more, project3 (no quota, weight 1)
// asks for 5 LOW jobs.  Fairshares: project1 17, project2 16, project3 3.
struct ZeroQuotaProject {
    Config cfg;
    Snapshot snap;
    ZeroQuotaProject(const std::string &reclaim) {
        cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=36\n" + reclaim, "test.conf");
        cfg.accounts = {entry("project1", "gres/gpu=10", 2), entry("project2", "gres/gpu=6", 3),
                        entry("project3", "gres/gpu=0", 1)};
        snap = cluster(9, 4);
        partition(snap, "pool1", 0, 8);
        snap.account_parent = {{"project1", "root"}, {"project2", "root"}, {"project3", "root"}};
        uint32_t id = 1;
        for (int k = 0; k < 30; ++k, ++id) snap.add_job(of(running(id, "pool1", "low", 1, 100 + id), "project1"));
        for (int k = 0; k < 6; ++k, ++id) snap.add_job(of(running(id, "pool1", "low", 1, 100 + id), "project2"));
        for (int k = 0; k < 20; ++k, ++id) snap.add_job(of(pending(id, "pool1", "low", 1, 200 + id), "project1"));
        for (int k = 0; k < 20; ++k, ++id) snap.add_job(of(pending(id, "pool1", "low", 1, 200 + id), "project2"));
        for (int k = 0; k < 5; ++k, ++id) snap.add_job(of(pending(id, "pool1", "low", 1, 100), "project3"));
    }
    static constexpr uint32_t kFirstProject3Job = 77;
};

uint64_t fairshare(const Engine &e, int32_t queue) {
    return e.last().pools.front().queues.fairshare[size_t(queue)][kGpu];
}

}  // namespace

TEST(LevelsReclaim, WithReclaimToFairshareAZeroQuotaProjectsLowJobReclaimsUpToItsFairshareThenStops) {
    ZeroQuotaProject w("ReclaimTo=fairshare\n");
    Engine e = engine_of(w.cfg);
    ReclaimLoop loop(e, w.snap);
    e.evaluate(w.snap, 1000);
    ASSERT_EQ(fairshare(e, 1), 17u);
    ASSERT_EQ(fairshare(e, 2), 16u);
    ASSERT_EQ(fairshare(e, 3), 3u);
    const uint32_t p3 = ZeroQuotaProject::kFirstProject3Job;
    expect_rows(e, loop,
                {{"project1's newest job, over its fairshare, goes to project3", 30, p3, true, Rule::Reclaim,
                  "queue project1 over its fairshare (gpu 30/17)"},
                 {"project2's jobs are within its quota", 36, p3, false, Rule::None,
                  "victim's queue project2 within its fairshare (gpu 6/16)"}},
                1000);
    int64_t now = 1000;
    const std::vector<uint32_t> evicted = settle(loop, now);
    EXPECT_EQ(evicted.size(), 13u);  // 3 to project3, 10 to project2
    EXPECT_EQ(allocated(e, "project1"), 17u);
    EXPECT_EQ(allocated(e, "project2"), 16u);
    EXPECT_EQ(allocated(e, "project3"), 3u);
    // At fairshare: five more passes evict nothing.
    for (int k = 0; k < 5; ++k) EXPECT_TRUE(loop.pass(now++).evicted.empty());
    expect_rows(e, loop,
                {{"project3 at its fairshare reclaims no more", 1, p3 + 3, false, Rule::None,
                  "preemptor's queue project3 would pass its fairshare: gpu 4 > 3"},
                 {"project1 at its fairshare does not reclaim back", p3, 7 + 30, false, Rule::None,
                  "preemptor's queue project1 would pass its fairshare: gpu 18 > 17"}},
                now);
}

TEST(LevelsReclaim, WithReclaimToQuotaTheZeroQuotaProjectReclaimsNothing) {
    for (const char *by : {"", "ReclaimBy=all\n"}) {
        ZeroQuotaProject w(by);
        Engine e = engine_of(w.cfg);
        ReclaimLoop loop(e, w.snap);
        e.evaluate(w.snap, 1000);
        const std::string why = *by ? "preemptor's queue project3 would pass its quota: gpu 1 > 0"
                                    : "only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)";
        const uint32_t p3 = ZeroQuotaProject::kFirstProject3Job;
        expect_rows(e, loop, {{"project3 owns no quota", 30, p3, false, Rule::None, why.c_str()}}, 1000);
        int64_t now = 1000;
        EXPECT_TRUE(settle(loop, now).empty()) << by;
        EXPECT_EQ(allocated(e, "project3"), 0u);
    }
}

namespace {

// Pool of 16 GPUs: X (quota 2) runs 8 LOW jobs, Y (quota 2) 4, Z (quota
// 8) 4 NORMAL jobs and asks for 4 more.  Fairshares X 4, Y 4, Z 8: X's
// four newest jobs are over its fairshare, its next two and Y's two newest
// over quota, the rest in quota.  With CPUs or memory counted the same in
// that resource (8 CPUs or 16 MiB a job, GPUs plenty).
void victims_over_fairshare_first(Resource resource) {
    const uint64_t unit[] = {1, 8, 16};
    const uint64_t u = unit[resource];
    auto quota = [&](uint64_t jobs) {
        const std::string n = std::to_string(jobs * u);
        if (resource == kGpu) return "gres/gpu=" + n;
        return "gres/gpu=16," + std::string(resource == kCpu ? "cpu=" : "mem=") + n;
    };
    auto figures = [&](uint64_t a, uint64_t b) {
        const std::string word = resource_word(resource);
        return "(" + word + " " + std::to_string(a * u) + "/" + std::to_string(b * u) + ")";
    };
    for (const char *to : {"", "ReclaimTo=fairshare\n"}) {
        Config cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=16\n" + to, "test.conf");
        cfg.counted = {{true, resource == kCpu, resource == kMem}};
        cfg.accounts = {entry("X", quota(2)), entry("Y", quota(2)), entry("Z", quota(8))};
        Snapshot s = cluster(4, resource == kGpu ? 4 : 8);
        for (SnapNode &n : s.nodes) {
            n.cpus = resource == kCpu ? 32 : 64;
            n.mem_mb = resource == kMem ? 64 : 4096;
        }
        partition(s, "pool1", 0, 3);
        s.account_parent = {{"X", "root"}, {"Y", "root"}, {"Z", "root"}};
        const uint32_t cpus = resource == kCpu ? 8 : 1;
        const uint64_t mem = resource == kMem ? 16 : 1;
        for (uint32_t id = 1; id <= 8; ++id) s.add_job(of(running(id, "pool1", "low", 1, 100 + id), "X", cpus, mem));
        for (uint32_t id = 11; id <= 14; ++id) s.add_job(of(running(id, "pool1", "low", 1, 100 + id), "Y", cpus, mem));
        for (uint32_t id = 21; id <= 24; ++id) s.add_job(of(running(id, "pool1", "normal", 1, 100), "Z", cpus, mem));
        for (uint32_t id = 31; id <= 34; ++id) s.add_job(of(pending(id, "pool1", "normal", 1, 200), "Z", cpus, mem));
        Engine e = engine_of(cfg);
        e.evaluate(s, 1000);
        const PoolState &ps = e.last().pools.front();
        ASSERT_EQ(ps.queues.fairshare[1][resource], 4 * u);
        ASSERT_EQ(ps.queues.fairshare[2][resource], 4 * u);
        const auto &run = e.last().running;
        for (uint32_t id : {8u, 7u, 6u, 5u}) EXPECT_EQ(run.at(id).cls, VictimClass::OverFairshare) << id;
        for (uint32_t id : {4u, 3u, 14u, 13u}) EXPECT_EQ(run.at(id).cls, VictimClass::OverQuota) << id;
        for (uint32_t id : {2u, 1u, 12u, 11u}) EXPECT_EQ(run.at(id).cls, VictimClass::InQuota) << id;
        const std::vector<uint32_t> ranked = by_rank(e);
        EXPECT_EQ(std::vector<uint32_t>(ranked.begin(), ranked.begin() + 8),
                  (std::vector<uint32_t>{8, 7, 6, 5, 14, 13, 4, 3}))
            << to;
        ReclaimLoop loop(e, s);
        // Z stays within its quota: Y's over-quota jobs may go too, in
        // either mode (after X's over its fairshare, by rank).
        const std::string y = "queue Y over its quota " + figures(4, 2);
        expect_rows(e, loop, {{"Y over its quota", 14, 31, true, Rule::Reclaim, y.c_str()}}, 1000);
        // Z takes X's four over its fairshare first.
        int64_t now = 1000;
        EXPECT_EQ(settle(loop, now), (std::vector<uint32_t>{8, 7, 6, 5})) << to;
    }
}

}  // namespace

TEST(LevelsReclaim, VictimsComeFromOverFairshareQueuesFirstThenOverQuotaThenInQuota) {
    victims_over_fairshare_first(kGpu);
}

TEST(LevelsReclaim, VictimsComeFromOverFairshareQueuesFirstWithCpusCounted) { victims_over_fairshare_first(kCpu); }

TEST(LevelsReclaim, VictimsComeFromOverFairshareQueuesFirstWithMemoryCounted) { victims_over_fairshare_first(kMem); }

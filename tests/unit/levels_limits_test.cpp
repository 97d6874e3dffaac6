// Limit= and LendingLimit= in the pass: a queue never holds more
// than its Limit (borrowed included, every tier), and the part of its quota
// a queue does not lend is kept free for its own jobs, so that they never
// wait for a reclaim.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "explain.hpp"
#include "levels.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

// pool1: 8 GPUs on 8 nodes, Quota=8.  Department physics (4 GPUs) over
// astro (1, Limit 3) and qcd (2); genomics (1) lends none of its GPU.
// `physics`, `astro` and `genomics` replace those entries' keys.
std::string departments(const std::string &physics = "Quota=gres/gpu=4",
                        const std::string &astro = "Quota=gres/gpu=1 Limit=gres/gpu=3",
                        const std::string &genomics = "Quota=gres/gpu=1 LendingLimit=gres/gpu=0") {
    return kOsmoTiers + "Pool=pool1 Quota=8\n" + "Account=physics  Pool=pool1 " + physics + "\n" +
           "Account=astro    Pool=pool1 " + astro + "\n" +
           "Account=qcd      Pool=pool1 Quota=gres/gpu=2\n"
           "Account=genomics Pool=pool1 " + genomics + "\n";
}

Snapshot departments_cluster() {
    Snapshot s = cluster(8, 1);
    partition(s, "pool1", 0, 7);
    s.account_parent = {{"physics", "root"}, {"astro", "physics"}, {"qcd", "physics"}, {"genomics", "root"},
                        {"chemistry", "root"}};
    return s;
}

SnapJob of(SnapJob j, const std::string &account) {
    j.account = account;
    return j;
}


}  // namespace

TEST(LevelsLimits, ALowJobOfAstroIsHeldAtItsLimitWhileGpusAreFree) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 2, 100), "astro"));
    s.add_job(of(pending(2, "pool1", "low", 1, 200), "astro"));  // 3/3 with it
    s.add_job(of(pending(3, "pool1", "low", 1, 300), "astro"));
    s.add_job(of(pending(4, "pool1", "low", 1, 400), "qcd"));    // qcd has no limit
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Free);
    EXPECT_EQ(admission_of(e, 3), Admission::Held);
    EXPECT_EQ(e.pending_result(3)->hold, Hold::Limit);
    EXPECT_EQ(e.pending_result(3)->priority, 0u);
    EXPECT_EQ(reason(e, 3), "GpuPoolLimit:pool1/astro gpu 3/3");
    EXPECT_EQ(admission_of(e, 4), Admission::Free);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 0u);  // P jobs reserve no quota
}

TEST(LevelsLimits, AdmittedJobsOfEveryTierCountAgainstTheLimitAndALargerJobSaysSo) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 1, 100), "astro"));
    s.add_job(of(pending(2, "pool1", "normal", 1, 200), "astro"));
    s.add_job(of(pending(3, "pool1", "low", 1, 300), "astro"));  // 1 running + 1 admitted + 1 = 3
    s.add_job(of(pending(4, "pool1", "low", 1, 400), "astro"));
    s.add_job(of(pending(5, "pool1", "low", 4, 500), "astro"));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
    EXPECT_EQ(admission_of(e, 3), Admission::Free);
    EXPECT_EQ(admission_of(e, 4), Admission::Held);
    EXPECT_EQ(reason(e, 4), "GpuPoolLimit:pool1/astro gpu 3/3");
    EXPECT_EQ(reason(e, 5), "GpuPoolLimit:pool1/astro gpu needs 4 limit 3");
}

TEST(LevelsLimits, ANormalJobWithinItsQuotaIsHeldWhenBorrowedJobsFillItsLimit) {
    Engine e = engine_with(departments("Quota=gres/gpu=4", "Quota=gres/gpu=2 Limit=gres/gpu=3"));
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 3, 100), "astro"));   // borrowing
    s.add_job(of(pending(2, "pool1", "normal", 1, 200), "astro"));
    s.add_job(of(pending(3, "pool1", "normal", 4, 300), "qcd"));  // above qcd's quota of 2
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_EQ(e.pending_result(2)->hold, Hold::Limit);
    EXPECT_EQ(reason(e, 2), "GpuPoolLimit:pool1/astro gpu 3/3");
    EXPECT_EQ(pool(e, "pool1").held_jobs, 2u);
}

TEST(LevelsLimits, TheLimitOfADepartmentCapsItsProjectsTogether) {
    Engine e = engine_with(departments("Quota=gres/gpu=4 Limit=gres/gpu=5"));
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 2, 100), "astro"));
    s.add_job(of(running(2, "pool1", "low", 2, 100), "qcd"));
    s.add_job(of(pending(3, "pool1", "low", 1, 200), "qcd"));     // physics 5/5 with it
    s.add_job(of(pending(4, "pool1", "low", 1, 300), "astro"));   // astro 2 of its 3, physics full
    s.add_job(of(pending(5, "pool1", "low", 1, 400), "genomics"));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 3), Admission::Free);
    EXPECT_EQ(admission_of(e, 4), Admission::Held);
    EXPECT_EQ(reason(e, 4), "GpuPoolLimit:pool1/physics gpu 5/5");
    EXPECT_EQ(admission_of(e, 5), Admission::Free);
}

TEST(LevelsLimits, ABorrowerIsHeldByGenomicsLendingLimitWhileGenomicsQuotaIsIdle) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 6, 100), "qcd"));  // 2 GPUs free, genomics keeps 1
    s.add_job(of(pending(2, "pool1", "low", 1, 200), "qcd"));
    s.add_job(of(pending(3, "pool1", "low", 1, 300), "qcd"));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Free);  // 1 left, genomics's
    EXPECT_EQ(admission_of(e, 3), Admission::Held);
    EXPECT_EQ(e.pending_result(3)->hold, Hold::LendingLimit);
    EXPECT_EQ(e.pending_result(3)->priority, 0u);
    EXPECT_EQ(reason(e, 3), "GpuPoolLendingLimit:pool1/genomics gpu 1");
    // genomics's own job starts at once: its GPU was never lent.
    const PendingResult own = e.provisional(of(pending(4, "pool1", "normal", 1, 1001), "genomics"), 1001);
    EXPECT_EQ(own.admission, Admission::Quota);
    EXPECT_EQ(e.reason_of(own), "");
    s.add_job(of(pending(4, "pool1", "normal", 1, 1001), "genomics"));
    e.evaluate(s, 1010);
    EXPECT_EQ(admission_of(e, 4), Admission::Quota);
}

TEST(LevelsLimits, ANormalJobOfAnotherDepartmentIsHeldByTheLendingLimitToo) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 5, 100), "chemistry"));
    s.add_job(of(running(2, "pool1", "low", 1, 100), "qcd"));
    s.add_job(of(pending(3, "pool1", "normal", 1, 200), "qcd"));  // free 2: 1 for qcd, genomics keeps 1
    s.add_job(of(pending(4, "pool1", "normal", 1, 300), "qcd"));  // qcd's quota 2 has room
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 3), Admission::Quota);
    EXPECT_EQ(admission_of(e, 4), Admission::Held);
    EXPECT_EQ(reason(e, 4), "GpuPoolLendingLimit:pool1/genomics gpu 1");
}

TEST(LevelsLimits, OnceGenomicsHoldsItsQuotaOthersMayTakeTheRest) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "normal", 1, 100), "genomics"));
    s.add_job(of(running(2, "pool1", "low", 5, 100), "qcd"));
    s.add_job(of(pending(3, "pool1", "low", 2, 200), "qcd"));  // the last 2
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 3), Admission::Free);
}

TEST(LevelsLimits, AJobEndFreesRoomUnderTheLimitForTheHeldLowJob) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 3, 100), "astro"));
    s.add_job(of(pending(2, "pool1", "low", 1, 200), "astro"));
    e.evaluate(s, 1000);
    EXPECT_EQ(reason(e, 2), "GpuPoolLimit:pool1/astro gpu 3/3");
    EXPECT_TRUE(e.job_ended(1, 1005));
    EXPECT_EQ(admission_of(e, 2), Admission::Free);
    EXPECT_EQ(reason(e, 2), "");
}

TEST(LevelsLimits, AJobSubmittedBetweenPassesIsHeldAtItsLimit) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 2, 100), "astro"));
    e.evaluate(s, 1000);
    const PendingResult first = e.provisional(of(pending(2, "pool1", "low", 1, 1001), "astro"), 1001);
    EXPECT_EQ(first.admission, Admission::Free);
    const PendingResult second = e.provisional(of(pending(3, "pool1", "low", 1, 1002), "astro"), 1002);
    EXPECT_EQ(second.admission, Admission::Held);
    EXPECT_EQ(e.reason_of(second), "GpuPoolLimit:pool1/astro gpu 3/3");
}

TEST(LevelsLimits, AJobOfAnAccountWithNoEntryIsHeldByTheLendingLimit) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 7, 100), "qcd"));
    s.add_job(of(pending(2, "pool1", "low", 1, 200), "chemistry"));  // no entry: draws on the pool
    e.evaluate(s, 1000);
    EXPECT_EQ(reason(e, 2), "GpuPoolLendingLimit:pool1/genomics gpu 1");
}

TEST(LevelsLimits, ConfigurationsWithoutLimitsAdmitPreemptibleJobsFreelyAsBefore) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=8\n"
                           "Account=astro Pool=pool1 Quota=gres/gpu=1\n");
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 7, 100), "astro"));
    s.add_job(of(pending(2, "pool1", "low", 4, 200), "astro"));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Free);
    EXPECT_EQ(e.pending_result(2)->admitted_tasks, 1u);
    EXPECT_TRUE(e.pending_result(2)->refused.empty());
}

TEST(LevelsLimits, WhySaysAJobWaitsAtItsLimitOrForWhatALendingLimitKeeps) {
    Engine e = engine_with(departments());
    Snapshot s = departments_cluster();
    s.add_job(of(running(1, "pool1", "low", 3, 100), "astro"));
    s.add_job(of(running(2, "pool1", "low", 4, 100), "qcd"));
    s.add_job(of(pending(3, "pool1", "low", 1, 200), "astro"));
    s.add_job(of(pending(4, "pool1", "low", 1, 300), "qcd"));
    e.evaluate(s, 1000);
    ExplainInput in;
    const Explanation x = explain(e, s, in, 1000);
    ASSERT_NE(x.find_pending(3), nullptr);
    ASSERT_NE(x.find_pending(4), nullptr);
    EXPECT_EQ(x.find_pending(3)->reason, WaitReason::OverLimit);
    EXPECT_EQ(x.find_pending(4)->reason, WaitReason::LendingLimit);
    EXPECT_STREQ(wait_reason_code(WaitReason::OverLimit), "over_limit");
}

TEST(LevelsLimits, AdmissionNeverTakesAQueuePastItsLimitNorTheLastFreeGpusKeptByALendingLimit) {
    std::mt19937 rng(2020);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const char *accounts[] = {"physics", "astro", "qcd", "genomics", "chemistry"};
    const char *qos[] = {"high", "normal", "low"};
    uint64_t held_by_limit = 0, held_by_lending = 0;
    for (int world = 0; world < 300; ++world) {
        const int physics_limit = pick(4, 8), astro_limit = pick(1, 4), kept = pick(0, 1);
        Engine e = engine_with(departments("Quota=gres/gpu=4 Limit=gres/gpu=" + std::to_string(physics_limit),
                                           "Quota=gres/gpu=1 Limit=gres/gpu=" + std::to_string(astro_limit),
                                           "Quota=gres/gpu=1 LendingLimit=gres/gpu=" + std::to_string(1 - kept)));
        Snapshot s = departments_cluster();
        std::map<std::string, uint64_t> holds;
        uint32_t free = 8;
        for (uint32_t id = 1; id <= 12; ++id) {
            const std::string account = accounts[pick(0, 4)];
            const uint32_t gpus = uint32_t(pick(1, 2));
            if (pick(0, 2) == 0 && gpus <= free) {
                free -= gpus;
                holds[account] += gpus;
                s.add_job(of(running(id, "pool1", qos[pick(1, 2)], gpus, 100), account));
            } else {
                s.add_job(of(pending(id, "pool1", qos[pick(0, 2)], gpus, 100 + id), account));
            }
        }
        e.evaluate(s, 1000);
        auto used = [&](const std::map<std::string, uint64_t> &m, const std::string &a) {
            auto it = m.find(a);
            return it == m.end() ? uint64_t(0) : it->second;
        };
        // In the pass's order: each admitted job within the limits with the
        // jobs admitted ahead, and one of another account leaving what
        // genomics keeps (its quota it does not hold) free.
        std::map<std::string, uint64_t> admitted;
        uint64_t ahead = 0;
        const std::string where = "world " + std::to_string(world);
        for (const PendingResult &r : e.last().pending) {
            if (r.hold == Hold::Limit) ++held_by_limit;
            if (r.hold == Hold::LendingLimit) ++held_by_lending;
            if (r.admission == Admission::Held) continue;
            const SnapJob &j = *std::find_if(s.jobs.begin(), s.jobs.end(), [&](const SnapJob &x) { return x.id == r.job_id; });
            const uint64_t genomics = used(holds, "genomics") + used(admitted, "genomics");
            const uint64_t keeps = genomics < uint64_t(kept) ? kept - genomics : 0;
            if (j.account != "genomics" && keeps) {
                EXPECT_LE(8 - free + ahead + r.gpus + keeps, 8u) << where << " job " << r.job_id;
            }
            admitted[j.account] += r.gpus;
            ahead += r.gpus;
            const uint64_t astro = used(holds, "astro") + used(admitted, "astro");
            const uint64_t physics = astro + used(holds, "qcd") + used(admitted, "qcd") + used(holds, "physics") +
                                     used(admitted, "physics");
            if (j.account == "astro") {
                EXPECT_LE(astro, uint64_t(astro_limit)) << where << " job " << r.job_id;
            }
            if (j.account == "astro" || j.account == "qcd" || j.account == "physics") {
                EXPECT_LE(physics, uint64_t(physics_limit)) << where << " job " << r.job_id;
            }
        }
    }
    EXPECT_GT(held_by_limit, 100u);
    EXPECT_GT(held_by_lending, 20u);
}

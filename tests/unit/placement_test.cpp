// How the plugins apply a result where it depends on what only Slurm
// knows (the C ABI of ABI 7): a new job that waits for the next pass, the
// throttle of a job array record, the hold-reason prefix, rule names.
#include <gtest/gtest.h>

#include <cstring>

#include "gpupool.h"

namespace {
gp_pending_result_t result(int admission, uint32_t priority = 500) {
    gp_pending_result_t r{};
    r.job_id = 7;
    r.admission = admission;
    r.priority = priority;
    r.admitted_tasks = admission == GP_HELD_QUOTA ? 0 : 1;
    return r;
}
gp_array_throttle_t throttle(uint32_t now, int capped = 0, uint32_t user = 0, uint32_t ours = 0) {
    gp_array_throttle_t t{};
    t.max_run_tasks = now;
    t.capped = capped;
    t.user_max = user;
    t.our_max = ours;
    return t;
}
gp_pending_result_t array_admitted(uint32_t running, uint32_t admitted) {
    gp_pending_result_t r = result(GP_ADMIT_QUOTA);
    r.array_running = running;
    r.admitted_tasks = admitted;
    return r;
}
}  // namespace

// A new admitted job that Slurm has not tested may be an array record it
// has not made yet: it waits for the next pass, held as GpuPoolStarting.
TEST(HoldUntilPass, AnUntestedNewAdmittedJobWaitsForTheNextPass) {
    gp_pending_result_t r = result(GP_ADMIT_QUOTA);
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_SUBMIT | GP_PLACE_UNTESTED), 1);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_EQ(r.priority, 0u);
    EXPECT_STREQ(r.reason, "GpuPoolStarting");
}

TEST(HoldUntilPass, AJobSlurmFoundMayStartNowStartsAtOnce) {
    gp_pending_result_t r = result(GP_ADMIT_QUOTA);
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_SUBMIT), 0);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(r.priority, 500u);
    EXPECT_STREQ(r.reason, "");
}

TEST(HoldUntilPass, AKnownArrayRecordOrAJobAlreadySubmittedDoesNotWait) {
    gp_pending_result_t r = result(GP_ADMIT_QUOTA);
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_SUBMIT | GP_PLACE_ARRAY | GP_PLACE_UNTESTED), 0);
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_UNTESTED), 0);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
}

// Quota does not apply to it: nothing for a pass to cap.
TEST(HoldUntilPass, AJobFreeOfQuotaDoesNotWaitAtSubmit) {
    gp_pending_result_t r = result(GP_ADMIT_FREE);
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_SUBMIT | GP_PLACE_UNTESTED), 0);
    EXPECT_EQ(r.admission, GP_ADMIT_FREE);
}

TEST(HoldUntilPass, AnAdmittedJobWithNoPartitionItMayStartInWaits) {
    for (int admission : {GP_ADMIT_QUOTA, GP_ADMIT_FREE}) {
        gp_pending_result_t r = result(admission);
        EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_NO_ROOM), 1);
        EXPECT_EQ(r.admission, GP_HELD_QUOTA);
        EXPECT_STREQ(r.reason, "GpuPoolStarting");
    }
}

TEST(HoldUntilPass, AJobHeldForQuotaKeepsItsReason) {
    gp_pending_result_t r = result(GP_HELD_QUOTA, 0);
    std::strcpy(r.reason, "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(gp_hold_until_pass(&r, GP_PLACE_SUBMIT | GP_PLACE_UNTESTED | GP_PLACE_NO_ROOM), 0);
    EXPECT_STREQ(r.reason, "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(gp_hold_until_pass(nullptr, GP_PLACE_NO_ROOM), 0);
}

// An NP array record admitted with k tasks may run its running tasks + k.
TEST(ArrayThrottle, AnAdmittedRecordIsCappedAtItsRunningTasksPlusThoseAdmitted) {
    gp_array_throttle_t t = throttle(0);
    gp_pending_result_t r = array_admitted(1, 2);
    EXPECT_EQ(gp_array_throttle(&t, &r, 5, 0), 0);  // from none to 3: fewer may start
    EXPECT_EQ(t.max_run_tasks, 3u);
    EXPECT_EQ(t.capped, 1);
    EXPECT_EQ(t.user_max, 0u);
    EXPECT_EQ(t.our_max, 3u);
}

TEST(ArrayThrottle, ACapIsAtLeastOneTask) {
    gp_array_throttle_t t = throttle(0);
    gp_pending_result_t r = array_admitted(0, 0);
    gp_array_throttle(&t, &r, 4, 0);
    EXPECT_EQ(t.max_run_tasks, 1u);
}

TEST(ArrayThrottle, TheUsersTighterThrottleStaysAndNeedsNoCap) {
    gp_array_throttle_t t = throttle(2);
    gp_pending_result_t r = array_admitted(0, 4);
    EXPECT_EQ(gp_array_throttle(&t, &r, 6, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 2u);
    EXPECT_EQ(t.capped, 0);
}

TEST(ArrayThrottle, ACapGoingUpLetsMoreTasksStart) {
    gp_array_throttle_t t = throttle(3, 1, 10, 3);
    gp_pending_result_t r = array_admitted(2, 3);
    EXPECT_EQ(gp_array_throttle(&t, &r, 4, 0), 1);
    EXPECT_EQ(t.max_run_tasks, 5u);
    EXPECT_EQ(t.user_max, 10u);
    EXPECT_EQ(t.our_max, 5u);
}

// priority_p_set may hold a result older than tasks started since.
TEST(ArrayThrottle, LowerOnlyNeverRaisesTheCapSetBefore) {
    gp_array_throttle_t t = throttle(3, 1, 0, 3);
    gp_pending_result_t r = array_admitted(2, 3);
    EXPECT_EQ(gp_array_throttle(&t, &r, 4, 1), 0);
    EXPECT_EQ(t.max_run_tasks, 3u);
    gp_pending_result_t less = array_admitted(1, 1);
    EXPECT_EQ(gp_array_throttle(&t, &less, 4, 1), 0);
    EXPECT_EQ(t.max_run_tasks, 2u);
}

// A throttle changed by its user or an admin since gpupool set it is theirs.
TEST(ArrayThrottle, AThrottleChangedSinceTheCapBecomesTheUsers) {
    gp_array_throttle_t t = throttle(4, 1, 0, 3);
    gp_pending_result_t r = array_admitted(0, 6);
    EXPECT_EQ(gp_array_throttle(&t, &r, 8, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 4u);
    EXPECT_EQ(t.capped, 0);
}

TEST(ArrayThrottle, AHeldRecordKeepsItsCap) {
    gp_array_throttle_t t = throttle(3, 1, 0, 3);
    gp_pending_result_t r = result(GP_HELD_QUOTA, 0);
    EXPECT_EQ(gp_array_throttle(&t, &r, 4, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 3u);
    EXPECT_EQ(t.capped, 1);
}

TEST(ArrayThrottle, ACapNoLongerNeededGivesTheUsersThrottleBack) {
    gp_array_throttle_t t = throttle(3, 1, 8, 3);
    gp_pending_result_t free_ = result(GP_ADMIT_FREE);
    EXPECT_EQ(gp_array_throttle(&t, &free_, 4, 1), 1);
    EXPECT_EQ(t.max_run_tasks, 8u);
    EXPECT_EQ(t.capped, 0);
    // No longer a pending array (NULL result): none gives "no throttle".
    gp_array_throttle_t u = throttle(3, 1, 0, 3);
    EXPECT_EQ(gp_array_throttle(&u, nullptr, 0, 0), 1);
    EXPECT_EQ(u.max_run_tasks, 0u);
    EXPECT_EQ(u.capped, 0);
}

TEST(ArrayThrottle, ARecordGpupoolNeverCappedIsLeftAlone) {
    gp_array_throttle_t t = throttle(6);
    gp_pending_result_t r = result(GP_ADMIT_FREE);
    EXPECT_EQ(gp_array_throttle(&t, &r, 4, 0), 0);
    EXPECT_EQ(gp_array_throttle(&t, nullptr, 0, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 6u);
    EXPECT_EQ(t.capped, 0);
    // One task left pending: an ordinary job, no cap.
    gp_pending_result_t one = array_admitted(3, 1);
    EXPECT_EQ(gp_array_throttle(&t, &one, 1, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 6u);
}

TEST(HoldPrefix, EveryReasonOfAGpupoolHoldStartsWithThePrefix) {
    EXPECT_STREQ(GP_HOLD_PREFIX, "GpuPool");
    gp_pending_result_t r = result(GP_ADMIT_QUOTA);
    gp_hold_until_pass(&r, GP_PLACE_NO_ROOM);
    EXPECT_EQ(std::strncmp(r.reason, GP_HOLD_PREFIX, std::strlen(GP_HOLD_PREFIX)), 0);
}

TEST(RuleName, RulesAreNamedAsTheEventLogNamesThem) {
    EXPECT_STREQ(gp_rule_name(GP_RULE_INPOOL), "InPool");
    EXPECT_STREQ(gp_rule_name(GP_RULE_RECLAIM), "Reclaim");
    EXPECT_STREQ(gp_rule_name(GP_RULE_NONE), "None");
    EXPECT_STREQ(gp_rule_name(42), "None");
}

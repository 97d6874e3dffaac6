// How the plugins apply a result where it depends on what only Slurm
// knows (the C ABI of ABI 7): a new job that waits for the next pass, the
// throttle of a job array record, the hold-reason prefix, rule names.
// Each case is keyed by the sentence it checks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpupool.h"

namespace {
gp_pending_result_t result(int admission, uint32_t running = 0, uint32_t admitted = 1) {
    gp_pending_result_t r{};
    r.job_id = 7;
    r.admission = admission;
    r.priority = admission == GP_HELD_QUOTA ? 0 : 500;
    r.admitted_tasks = admission == GP_HELD_QUOTA ? 0 : admitted;
    r.array_running = running;
    if (admission == GP_HELD_QUOTA) std::strcpy(r.reason, "GpuPoolQuota:pool1 2/2");
    return r;
}
}  // namespace

TEST(HoldUntilPass, NewJobsWaitOnlyWhereSlurmCouldStartTooMuch) {
    struct Case {
        const char *sentence;
        int admission;
        uint32_t facts;
        bool waits;
    };
    const uint32_t kNew = GP_PLACE_SUBMIT | GP_PLACE_UNTESTED;
    const std::vector<Case> cases = {
        {"a new admitted job Slurm has not tested may be an array it has not made yet: it waits", GP_ADMIT_QUOTA,
         kNew, true},
        {"a new job Slurm found may start now starts at once", GP_ADMIT_QUOTA, GP_PLACE_SUBMIT, false},
        {"a new record Slurm already made an array is capped at once instead", GP_ADMIT_QUOTA,
         kNew | GP_PLACE_ARRAY, false},
        {"a job placed again (update, release) does not wait", GP_ADMIT_QUOTA, GP_PLACE_UNTESTED, false},
        {"a job free of quota has nothing for a pass to cap", GP_ADMIT_FREE, kNew, false},
        {"an admitted job with no partition it may start in waits for a pass", GP_ADMIT_QUOTA, GP_PLACE_NO_ROOM,
         true},
        {"so does one free of quota", GP_ADMIT_FREE, GP_PLACE_NO_ROOM, true},
        {"a job held for quota keeps its own reason", GP_HELD_QUOTA, kNew | GP_PLACE_NO_ROOM, false},
        {"an admitted array record whose throttle a user changes waits for a pass to cap it again",
         GP_ADMIT_QUOTA, GP_PLACE_THROTTLE, true},
        {"a record free of quota has no cap to lose", GP_ADMIT_FREE, GP_PLACE_THROTTLE, false},
        {"a record held for quota cannot start anyway", GP_HELD_QUOTA, GP_PLACE_THROTTLE, false},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        gp_pending_result_t r = result(c.admission);
        const gp_pending_result_t before = r;
        EXPECT_EQ(gp_hold_until_pass(&r, c.facts), c.waits ? 1 : 0);
        if (c.waits) {
            EXPECT_EQ(r.admission, GP_HELD_QUOTA);
            EXPECT_EQ(r.priority, 0u);
            EXPECT_STREQ(r.reason, "GpuPoolStarting");
        } else {
            EXPECT_EQ(r.admission, before.admission);
            EXPECT_EQ(r.priority, before.priority);
            EXPECT_STREQ(r.reason, before.reason);
        }
    }
    EXPECT_EQ(gp_hold_until_pass(nullptr, GP_PLACE_NO_ROOM), 0);
}

TEST(ArrayThrottle, TheCoreComputesTheThrottleThePluginSets) {
    struct Case {
        const char *sentence;
        gp_array_throttle_t before;  // max_run_tasks, capped, user_max, our_max
        int admission;               // -1: no longer a pending array (NULL)
        uint32_t running, admitted, pending_tasks;
        bool lower_only;
        gp_array_throttle_t after;
        int raised;
    };
    const std::vector<Case> cases = {
        {"an NP array record admitted with k tasks may run its running tasks + k", {0, 0, 0, 0}, GP_ADMIT_QUOTA, 1,
         2, 5, false, {3, 1, 0, 3}, 0},
        {"a cap is at least one task", {0, 0, 0, 0}, GP_ADMIT_QUOTA, 0, 0, 4, false, {1, 1, 0, 1}, 0},
        {"the user's tighter throttle stays and needs no cap", {2, 0, 0, 0}, GP_ADMIT_QUOTA, 0, 4, 6, false,
         {2, 0, 0, 0}, 0},
        {"a cap going up lets more tasks start; the user's throttle is kept", {3, 1, 10, 3}, GP_ADMIT_QUOTA, 2, 3, 4,
         false, {5, 1, 10, 5}, 1},
        {"with lower_only (a result older than tasks started since) the cap never goes up", {3, 1, 0, 3},
         GP_ADMIT_QUOTA, 2, 3, 4, true, {3, 1, 0, 3}, 0},
        {"but it goes down", {3, 1, 0, 3}, GP_ADMIT_QUOTA, 1, 1, 4, true, {2, 1, 0, 2}, 0},
        {"a throttle changed since gpupool set it is the user's", {4, 1, 0, 3}, GP_ADMIT_QUOTA, 0, 6, 8, false,
         {4, 0, 0, 0}, 0},
        {"a held record keeps its cap (priority 0 stops it)", {3, 1, 0, 3}, GP_HELD_QUOTA, 0, 0, 4, false,
         {3, 1, 0, 3}, 0},
        {"a cap no longer needed gives the user's throttle back", {3, 1, 8, 3}, GP_ADMIT_FREE, 0, 1, 4, true,
         {8, 0, 0, 0}, 1},
        {"a record no longer a pending array gets no throttle back when its user had none", {3, 1, 0, 3}, -1, 0, 0,
         0, false, {0, 0, 0, 0}, 1},
        {"a record gpupool never capped is left alone", {6, 0, 0, 0}, GP_ADMIT_FREE, 0, 1, 4, false, {6, 0, 0, 0},
         0},
        {"nor when it is no longer a pending array", {6, 0, 0, 0}, -1, 0, 0, 0, false, {6, 0, 0, 0}, 0},
        {"one task left pending is an ordinary job: no cap", {6, 0, 0, 0}, GP_ADMIT_QUOTA, 3, 1, 1, false,
         {6, 0, 0, 0}, 0},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        gp_array_throttle_t t = c.before;
        gp_pending_result_t r = result(c.admission < 0 ? GP_ADMIT_FREE : c.admission, c.running, c.admitted);
        EXPECT_EQ(gp_array_throttle(&t, c.admission < 0 ? nullptr : &r, c.pending_tasks, c.lower_only ? 1 : 0),
                  c.raised);
        EXPECT_EQ(t.max_run_tasks, c.after.max_run_tasks);
        EXPECT_EQ(t.capped, c.after.capped);
        if (t.capped) {
            EXPECT_EQ(t.user_max, c.after.user_max);
            EXPECT_EQ(t.our_max, c.after.our_max);
        }
    }
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

// Slurm's records -> the snapshot (src/slurm/gpupool_rules.h), the
// rules the plugins and the gpupool command share, over the state bits and
// reason codes of the Slurm release built against.
#include <vector>
#include <gtest/gtest.h>

#include <slurm/slurm.h>

#include "gpupool.h"
#include "gpupool_rules.h"

TEST(SlurmRules, NodeUnusable) {
    EXPECT_TRUE(gpr_node_unusable(NODE_STATE_DOWN));
    EXPECT_TRUE(gpr_node_unusable(NODE_STATE_FUTURE));
    EXPECT_TRUE(gpr_node_unusable(NODE_STATE_DOWN | NODE_STATE_DRAIN));
    EXPECT_FALSE(gpr_node_unusable(NODE_STATE_IDLE));
    EXPECT_FALSE(gpr_node_unusable(NODE_STATE_ALLOCATED));
    EXPECT_FALSE(gpr_node_unusable(NODE_STATE_MIXED | NODE_STATE_COMPLETING));
    // Drained (nothing left on it) counts nothing; draining, its jobs' GPUs.
    EXPECT_TRUE(gpr_node_unusable(NODE_STATE_IDLE | NODE_STATE_DRAIN));
    EXPECT_FALSE(gpr_node_unusable(NODE_STATE_ALLOCATED | NODE_STATE_DRAIN));
    EXPECT_FALSE(gpr_node_unusable(NODE_STATE_MIXED | NODE_STATE_DRAIN));
}

// A node that starts no new job now: its free GPUs fit no preemptor and
// no victim is planned there.
TEST(SlurmRules, NodeClosed) {
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_IDLE));
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_MIXED | NODE_STATE_COMPLETING));
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_MIXED | NODE_STATE_RES));  // some cores reserved
    // A powered-down node is started again for a job (ResumeProgram).
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_IDLE | NODE_STATE_POWERED_DOWN));
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_MIXED | NODE_STATE_DRAIN));
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_IDLE | NODE_STATE_FAIL));
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_IDLE | NODE_STATE_NO_RESPOND));
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_IDLE | NODE_STATE_POWERING_DOWN));
    // scontrol update State=POWER_DOWN: idle, it waits to be powered down
    // and takes no job meanwhile; busy, it may (Slurm 26.05 marks every
    // node of a PowerDownOnIdle partition's jobs so), and must not block
    // a plan.  POWER_DOWN_ASAP drains it.
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_IDLE | NODE_STATE_POWER_DOWN));
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_MIXED | NODE_STATE_POWER_DOWN));
    EXPECT_FALSE(gpr_node_closed(NODE_STATE_ALLOCATED | NODE_STATE_POWER_DOWN));
    EXPECT_TRUE(gpr_node_closed(NODE_STATE_MIXED | NODE_STATE_POWER_DOWN | NODE_STATE_POWER_DRAIN |
                                NODE_STATE_DRAIN));
}

TEST(SlurmRules, JobState) {
    EXPECT_EQ(gpr_job_state(JOB_PENDING), GP_JOB_PENDING);
    EXPECT_EQ(gpr_job_state(JOB_PENDING | JOB_REQUEUE), GP_JOB_PENDING);
    EXPECT_EQ(gpr_job_state(JOB_RUNNING), GP_JOB_RUNNING);
    EXPECT_EQ(gpr_job_state(JOB_SUSPENDED), GP_JOB_SUSPENDED);
    // Holds and wants nothing: revoked, ended, ended and completing.
    EXPECT_EQ(gpr_job_state(JOB_PENDING | JOB_REVOKED), -1);
    EXPECT_EQ(gpr_job_state(JOB_COMPLETE), -1);
    EXPECT_EQ(gpr_job_state(JOB_CANCELLED | JOB_COMPLETING), -1);
    EXPECT_EQ(gpr_job_state(JOB_PREEMPTED), -1);
}

TEST(SlurmRules, GpusFrom) {
    // allocated, TRES allocated, TRES requested, GRES allocated
    EXPECT_EQ(gpr_gpus_from(true, true, true, true), GPR_GPUS_TRES_ALLOC);
    EXPECT_EQ(gpr_gpus_from(false, true, true, true), GPR_GPUS_TRES_REQ);
    EXPECT_EQ(gpr_gpus_from(true, false, true, true), GPR_GPUS_TRES_REQ);
    EXPECT_EQ(gpr_gpus_from(true, false, false, true), GPR_GPUS_GRES_ALLOC);
    EXPECT_EQ(gpr_gpus_from(false, false, false, true), GPR_GPUS_GRES_REQ);
    EXPECT_EQ(gpr_gpus_from(true, false, false, false), GPR_GPUS_GRES_REQ);
    EXPECT_EQ(gpr_gpus_value(4), 4u);
    EXPECT_EQ(gpr_gpus_value(NO_VAL64), 0u);
    EXPECT_EQ(gpr_gpus_value(NO_CONSUME_VAL64), 0u);
    EXPECT_EQ(gpr_gpus_clamp(7), 7u);
    EXPECT_EQ(gpr_gpus_clamp(uint64_t(UINT32_MAX) + 5), UINT32_MAX);
}

TEST(SlurmRules, ArrayPendingTasks) {
    EXPECT_EQ(gpr_array_pending_tasks(true, NO_VAL, 40), 40u);
    EXPECT_EQ(gpr_array_pending_tasks(true, NO_VAL, int64_t(UINT32_MAX) + 1), UINT32_MAX);
    // One task left (Slurm gives the record its id), a split-off task, an
    // ordinary job, a meta record no longer pending.
    EXPECT_EQ(gpr_array_pending_tasks(true, NO_VAL, 1), 0u);
    EXPECT_EQ(gpr_array_pending_tasks(true, 3, 40), 0u);
    EXPECT_EQ(gpr_array_pending_tasks(true, NO_VAL, 0), 0u);
    EXPECT_EQ(gpr_array_pending_tasks(false, NO_VAL, 40), 0u);
}

// An array record stands, in admission, for the tasks its user's throttle
// lets start, and at least the next one.
TEST(SlurmRules, ArrayStartableTasks) {
    struct Case {
        const char *sentence;
        uint32_t pending, user_max, running, want;
    };
    const std::vector<Case> cases = {
        {"no throttle: every pending task", 40, 0, 3, 40},
        {"%2 with none running: 2", 40, 2, 0, 2},
        {"%5 with 3 running: 2", 40, 5, 3, 2},
        {"%2 with 2 running: the next one only", 40, 2, 2, 1},
        {"more running than the throttle (lowered since): the next one", 40, 2, 4, 1},
        {"fewer pending than the throttle's free slots: those pending", 3, 10, 0, 3},
        {"an ordinary job stays one", 1, 2, 0, 1},
        {"and 0 stays 0", 0, 2, 0, 0},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(gpr_array_startable_tasks(c.pending, c.user_max, c.running), c.want);
    }
}

TEST(SlurmRules, RunLimitIsTheTimeLimitElseThePartitionsElseAYear) {
    EXPECT_EQ(gpr_run_limit(30, 600, 1), 1800);
    EXPECT_EQ(gpr_run_limit(NO_VAL, 600, 1), 36000);
    EXPECT_EQ(gpr_run_limit(INFINITE, 600, 1), 365 * 24 * 3600);
    EXPECT_EQ(gpr_run_limit(NO_VAL, INFINITE, 1), 365 * 24 * 3600);
    EXPECT_EQ(gpr_run_limit(NO_VAL, NO_VAL, 1), 365 * 24 * 3600);
    // Gang scheduling over OverSubscribe=FORCE:4: four slices a limit, not a year.
    EXPECT_EQ(gpr_run_limit(30, 600, 4), 7200);
    EXPECT_EQ(gpr_run_limit(INFINITE, 600, 4), 365 * 24 * 3600);
    EXPECT_EQ(gpr_run_limit(30, 600, 0), 1800);
}

TEST(SlurmRules, SubmitTime) {
    EXPECT_EQ(gpr_submit_time(1000, 5000), 1000);
    EXPECT_EQ(gpr_submit_time(0, 5000), 5000);
}

TEST(SlurmRules, Holds) {
    EXPECT_TRUE(gpr_hold_may_be_ours(true, 0, false, WAIT_HELD));
    EXPECT_TRUE(gpr_hold_may_be_ours(true, 0, false, WAIT_NO_REASON));
    EXPECT_FALSE(gpr_hold_may_be_ours(true, 0, false, WAIT_HELD_USER));
    EXPECT_FALSE(gpr_hold_may_be_ours(true, 0, true, WAIT_HELD));  // scontrol hold
    EXPECT_FALSE(gpr_hold_may_be_ours(true, 10, false, WAIT_HELD));
    EXPECT_FALSE(gpr_hold_may_be_ours(false, 0, false, WAIT_HELD));
    EXPECT_TRUE(gpr_hold_text_is_ours(GP_HOLD_PREFIX "QuotaFull"));
    EXPECT_FALSE(gpr_hold_text_is_ours("Held by admin"));
    EXPECT_TRUE(gpr_hold_text_is_ours(GP_HOLD_PREFIX "Limit:pool1/astro gpu 3/3"));
    EXPECT_TRUE(gpr_hold_text_is_ours(GP_HOLD_PREFIX "LendingLimit:pool1/genomics gpu 1"));
    EXPECT_FALSE(gpr_hold_text_is_ours(nullptr));

    EXPECT_TRUE(gpr_user_held(true, 0, false));
    EXPECT_FALSE(gpr_user_held(true, 0, true));
    EXPECT_FALSE(gpr_user_held(true, 5, false));
    EXPECT_FALSE(gpr_user_held(false, 0, false));
}

TEST(SlurmRules, NotEligible) {
    for (uint32_t r : {WAIT_DEPENDENCY, WAIT_DEP_INVALID, WAIT_TIME, WAIT_PART_DOWN, WAIT_PART_INACTIVE})
        EXPECT_TRUE(gpr_not_eligible(r)) << r;
    for (uint32_t r : {WAIT_NO_REASON, WAIT_HELD, WAIT_PRIORITY, WAIT_RESOURCES})
        EXPECT_FALSE(gpr_not_eligible(r)) << r;
}

// A preemptor's -C against a node's active features (its victim plan
// looks only at nodes that meet it): what Slurm's valid_feature_counts
// gives for one node, left to right; what is not read here is -1 (no plan).
TEST(SlurmRules, NodeHasFeatures) {
    struct Row {
        const char *sentence, *constraint, *node;
        int want;
    } rows[] = {
        {"no constraint: any node", "", "", 1},
        {"no constraint given at all", nullptr, "a100", 1},
        {"a feature the node has", "a100", "ib,a100", 1},
        {"a feature the node lacks", "a100", "h100,ib", 0},
        {"a node without features", "a100", nullptr, 0},
        {"names match whole, not as prefixes", "a10", "a100", 0},
        {"AND: both", "a100&ib", "ib,a100", 1},
        {"AND: one missing", "a100&ib", "a100", 0},
        {"a comma is Slurm's AND too", "a100,ib", "a100", 0},
        {"OR: either", "a100|h100", "h100", 1},
        {"OR: neither", "a100|h100", "v100", 0},
        {"left to right: (a100|h100)&ib", "a100|h100&ib", "h100", 0},
        {"left to right: (a100&ib)|h100", "a100&ib|h100", "h100", 1},
        {"a node count is not read", "a100*2", "a100", -1},
        {"brackets (matching OR) are not read", "[a100|h100]", "a100", -1},
        {"parentheses are not read", "(a100|h100)&ib", "a100,ib", -1},
        {"a trailing operator is dropped, as Slurm does", "a100&", "a100", 1},
        {"a trailing OR too", "a100|", "h100", 0},
        {"a leading operator is not read", "&a100", "a100", -1},
        {"a doubled one neither", "a100&&ib", "a100,ib", -1},
        {"a longer name is another", "a1000", "a100", 0},
        {"empty entries in the node's list match nothing", "a100", ",a100,", 1},
        {"three terms, left to right: ((v100|a100)&ib)|h100", "v100|a100&ib|h100", "h100", 1},
        {"three terms, left to right: ((v100|a100)&ib)|h100, a100 alone", "v100|a100&ib|h100", "a100", 0},
    };
    for (const Row &r : rows) EXPECT_EQ(gpr_node_has_features(r.constraint, r.node), r.want) << r.sentence;
}

// A job's partitions as its user listed them: whether a partition is one
// (an OverSubscribe=EXCLUSIVE one counts the job at whole nodes).
TEST(SlurmRules, NameListed) {
    struct Row {
        const char *sentence, *names, *name;
        bool want;
    } rows[] = {
        {"the only name", "excl", "excl", true},
        {"the last of several", "shared,excl", "excl", true},
        {"the first of several", "excl,shared", "excl", true},
        {"a prefix of a listed name is not listed", "exclusive,shared", "excl", false},
        {"a listed name that is a prefix of it is not it", "ex,shared", "excl", false},
        {"an empty entry lists nothing", "a,,b", "", false},
        {"an empty list names nothing", "", "excl", false},
        {"no list names nothing", nullptr, "excl", false},
        {"no name is never listed", "excl", nullptr, false},
    };
    for (const Row &r : rows) EXPECT_EQ(gpr_name_listed(r.names, r.name), r.want) << r.sentence;
}

// Whether a job lists one of the OverSubscribe=EXCLUSIVE partitions.
TEST(SlurmRules, ListsShare) {
    struct Row {
        const char *sentence, *some, *names;
        bool want;
    } rows[] = {
        {"one exclusive partition, listed", "excl", "shared,excl", true},
        {"two exclusive partitions, the second listed", "ex1,ex2", "ex2", true},
        {"none listed", "ex1,ex2", "shared,gpu", false},
        {"a prefix is not the name", "ex", "ex1", false},
        {"no exclusive partition", nullptr, "shared", false},
        {"an empty list", "", "shared", false},
        {"a job with no partition string", "excl", nullptr, false},
    };
    for (const Row &r : rows) EXPECT_EQ(gpr_lists_share(r.some, r.names), r.want) << r.sentence;
}

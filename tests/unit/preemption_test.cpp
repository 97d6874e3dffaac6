// What preemption decides from facts only Slurm has (the C ABI of ABI 9):
// the job queue's order between tiers, how a victim is stopped (R7) and its
// grace time.  preempt/gpupool only gives the facts and applies the answer.
// Each case is keyed by the sentence it checks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpupool.h"

namespace {
gp_tier_info_t tier(const char *name, uint32_t priority, bool preemptible, int mode = GP_MODE_DEFAULT,
                    int32_t grace = -1) {
    gp_tier_info_t t{};
    std::strncpy(t.name, name, sizeof(t.name) - 1);
    t.priority = priority;
    t.preemptible = preemptible ? 1 : 0;
    t.preempt_mode = mode;
    t.grace_time = grace;
    return t;
}

// OSMO's tiers and Run:ai's preemptible priority classes.
const gp_tier_info_t kHigh = tier("high", 300, false);
const gp_tier_info_t kNormal = tier("normal", 200, false);
const gp_tier_info_t kLow = tier("low", 100, true);
const gp_tier_info_t kInteractive = tier("interactive-preemptible", 75, true);
const gp_tier_info_t kTrain = tier("train", 50, true);
}  // namespace

TEST(TierPreempts, AHigherTierSortsFirstOnlyOverAPreemptibleTier) {
    struct Case {
        const char *sentence;
        gp_tier_info_t preemptor, preemptee;
        int sorts_first;
    };
    const std::vector<Case> cases = {
        {"A NORMAL job sorts before a LOW job it may preempt", kNormal, kLow, 1},
        {"A HIGH job sorts before a LOW job it may preempt", kHigh, kLow, 1},
        {"A HIGH job never outranks a NORMAL job that is not preemptible", kHigh, kNormal, 0},
        {"A NORMAL job never outranks a HIGH job", kNormal, kHigh, 0},
        {"A LOW job never sorts before a NORMAL job", kLow, kNormal, 0},
        {"A LOW job does not sort before another LOW job", kLow, kLow, 0},
        {"A NORMAL job does not sort before another NORMAL job", kNormal, kNormal, 0},
        {"A preemptible tier sorts before a lower preemptible tier (Run:ai 75 over 50)", kInteractive, kTrain, 1},
        {"A preemptible tier never sorts before a higher preemptible tier (Run:ai 50 under 75)", kTrain,
         kInteractive, 0},
        {"A LOW job sorts before a lower preemptible tier", kLow, kTrain, 1},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(gp_tier_preempts(&c.preemptor, &c.preemptee), c.sorts_first);
    }
}

TEST(TierPreempts, ReadsOnlyPriorityAndPreemptibleSoTheShimMayRebuildThem) {
    // preempt/gpupool rebuilds these two fields from its per-QOS cache.
    gp_tier_info_t a{}, b{};
    a.priority = 200;
    b.priority = 100;
    b.preemptible = 1;
    b.preempt_mode = 99;  // whatever else is there does not matter
    b.grace_time = -7;
    EXPECT_EQ(gp_tier_preempts(&a, &b), 1);
    EXPECT_EQ(gp_tier_preempts(&b, &a), 0);
}

TEST(TierPreempts, NeverBothWaysSoTheQueueSortStaysConsistent) {
    const std::vector<gp_tier_info_t> tiers = {kHigh, kNormal, kLow, kInteractive, kTrain};
    for (const gp_tier_info_t &a : tiers)
        for (const gp_tier_info_t &b : tiers) {
            SCOPED_TRACE(std::string(a.name) + " vs " + b.name);
            EXPECT_FALSE(gp_tier_preempts(&a, &b) && gp_tier_preempts(&b, &a));
        }
}

TEST(TierPreempts, NoTierNeverSortsFirst) {
    EXPECT_EQ(gp_tier_preempts(nullptr, &kLow), 0);
    EXPECT_EQ(gp_tier_preempts(&kHigh, nullptr), 0);
    EXPECT_EQ(gp_tier_preempts(nullptr, nullptr), 0);
}

TEST(PreemptMode, TheTiersModeOrSlurmConfsWithR7sNoRequeue) {
    struct Case {
        const char *sentence;
        gp_tier_info_t t;
        int site_mode;
        int requeueable;
        int mode;
    };
    const std::vector<Case> cases = {
        {"A NORMAL job is never preempted", kNormal, GP_MODE_REQUEUE, 1, GP_MODE_OFF},
        {"An NP tier with a PreemptMode is still never preempted", tier("normal", 200, false, GP_MODE_CANCEL),
         GP_MODE_CANCEL, 1, GP_MODE_OFF},
        {"A requeueable LOW job is requeued", tier("low", 100, true, GP_MODE_REQUEUE), GP_MODE_CANCEL, 1,
         GP_MODE_REQUEUE},
        {"A LOW job with --no-requeue is cancelled (R7)", tier("low", 100, true, GP_MODE_REQUEUE), GP_MODE_REQUEUE,
         0, GP_MODE_CANCEL},
        {"A tier with PreemptMode=cancel cancels whatever slurm.conf says", tier("low", 100, true, GP_MODE_CANCEL),
         GP_MODE_REQUEUE, 1, GP_MODE_CANCEL},
        {"A tier with PreemptMode=suspend suspends", tier("low", 100, true, GP_MODE_SUSPEND), GP_MODE_REQUEUE, 1,
         GP_MODE_SUSPEND},
        {"A job that cannot be requeued is still suspended, not cancelled", tier("low", 100, true, GP_MODE_SUSPEND),
         GP_MODE_REQUEUE, 0, GP_MODE_SUSPEND},
        {"A tier with PreemptMode unset takes slurm.conf's", kLow, GP_MODE_CANCEL, 1, GP_MODE_CANCEL},
        {"A tier with PreemptMode unset takes slurm.conf's REQUEUE", kLow, GP_MODE_REQUEUE, 1, GP_MODE_REQUEUE},
        {"R7 applies to slurm.conf's REQUEUE too: a job with --no-requeue is cancelled", kLow, GP_MODE_REQUEUE, 0,
         GP_MODE_CANCEL},
        {"A tier with PreemptMode unset takes slurm.conf's SUSPEND", kLow, GP_MODE_SUSPEND, 0, GP_MODE_SUSPEND},
        {"With PreemptMode unset and slurm.conf's OFF the job is never preempted", kLow, GP_MODE_OFF, 1,
         GP_MODE_OFF},
        {"A slurm.conf mode gpupool does not know is OFF", kLow, 42, 1, GP_MODE_OFF},
        {"slurm.conf's mode cannot be 'slurm.conf's' (GP_MODE_DEFAULT): OFF", kLow, GP_MODE_DEFAULT, 1, GP_MODE_OFF},
        {"A tier mode the core does not know falls back to slurm.conf's", tier("low", 100, true, 42),
         GP_MODE_CANCEL, 1, GP_MODE_CANCEL},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(gp_preempt_mode(&c.t, c.site_mode, c.requeueable), c.mode);
    }
    SCOPED_TRACE("A job without a tier (no configuration yet) is never preempted");
    EXPECT_EQ(gp_preempt_mode(nullptr, GP_MODE_REQUEUE, 1), GP_MODE_OFF);
}

TEST(GraceTime, TheTiersGraceTimeElseTheQOSs) {
    struct Case {
        const char *sentence;
        int32_t tier_grace;  // -2: no tier (NULL)
        uint32_t qos_grace;
        int from_qos;
        uint32_t grace;
    };
    const std::vector<Case> cases = {
        {"A tier with GraceTime takes its own, not the QOS's", 30, 120, 0, 30},
        {"A tier with GraceTime=0 gives none, even where the QOS has one", 0, 120, 0, 0},
        {"A tier's longest GraceTime is kept whole", 2147483647, 5, 0, 2147483647u},
        {"A tier without GraceTime takes the QOS's", -1, 120, 1, 120},
        {"A tier without GraceTime and a QOS without one: none", -1, 0, 1, 0},
        {"A job without a tier (no configuration yet) takes the QOS's", -2, 60, 1, 60},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        const gp_tier_info_t t = tier("low", 100, true, GP_MODE_DEFAULT, c.tier_grace);
        const gp_tier_info_t *tp = c.tier_grace == -2 ? nullptr : &t;
        EXPECT_EQ(gp_grace_time_from_qos(tp), c.from_qos);
        EXPECT_EQ(gp_grace_time(tp, c.qos_grace), c.grace);
    }
}

// The same answers for tiers as gpupool.conf defines them.
TEST(PreemptMode, TiersOfALoadedConfiguration) {
    gp_engine_t *e = gp_engine_create();
    ASSERT_NE(e, nullptr);
    char err[256] = "";
    const char *conf =
        "Tier=high   QOS=high   Priority=300 Preemptible=no\n"
        "Tier=normal QOS=normal Priority=200 Preemptible=no PreemptMode=cancel GraceTime=10\n"
        "Tier=low    QOS=low    Priority=100 Preemptible=yes GraceTime=2:00\n"
        "Tier=scavenger QOS=scav Priority=50 Preemptible=yes PreemptMode=cancel\n"
        "DefaultTier=normal\n"
        "Pool=pool1 Quota=2\n";
    ASSERT_EQ(gp_engine_load_config_text(e, conf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_tier_info_t high, normal, low, scav;
    ASSERT_EQ(gp_engine_tier_of_qos(e, "high", &high), GP_OK);
    ASSERT_EQ(gp_engine_tier_of_qos(e, "normal", &normal), GP_OK);
    ASSERT_EQ(gp_engine_tier_of_qos(e, "low", &low), GP_OK);
    ASSERT_EQ(gp_engine_tier_of_qos(e, "scav", &scav), GP_OK);

    EXPECT_EQ(gp_tier_preempts(&normal, &low), 1);
    EXPECT_EQ(gp_tier_preempts(&low, &scav), 1);
    EXPECT_EQ(gp_tier_preempts(&high, &normal), 0);
    EXPECT_EQ(gp_tier_preempts(&scav, &low), 0);

    EXPECT_EQ(gp_preempt_mode(&normal, GP_MODE_REQUEUE, 1), GP_MODE_OFF);
    EXPECT_EQ(gp_preempt_mode(&low, GP_MODE_REQUEUE, 1), GP_MODE_REQUEUE);
    EXPECT_EQ(gp_preempt_mode(&low, GP_MODE_REQUEUE, 0), GP_MODE_CANCEL);
    EXPECT_EQ(gp_preempt_mode(&scav, GP_MODE_REQUEUE, 1), GP_MODE_CANCEL);

    EXPECT_EQ(gp_grace_time_from_qos(&low), 0);
    EXPECT_EQ(gp_grace_time(&low, 5), 120u);
    EXPECT_EQ(gp_grace_time_from_qos(&scav), 1);
    EXPECT_EQ(gp_grace_time(&scav, 5), 5u);
    gp_engine_destroy(e);
}

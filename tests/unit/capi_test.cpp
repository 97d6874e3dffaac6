// The C ABI: what the plugins see, including errors and no exceptions.
#include <array>
#include <functional>
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <fstream>
#include <string>

#include "gpupool.h"
#include "gpupool_rules.h"

namespace {
const char *kConf =
    "Tier=high QOS=high Priority=300 Preemptible=no\n"
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low QOS=low Priority=100 Preemptible=yes PreemptMode=cancel GraceTime=30\n"
    "DefaultTier=normal\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n";

gp_job_t job(uint32_t id, int state, const char *part, const char *qos, uint32_t gpus, int64_t t) {
    gp_job_t j{};
    j.job_id = id;
    j.state = state;
    j.partitions = part;
    j.qos = qos;
    j.gpus = gpus;
    j.submit_time = t;
    j.start_time = state == GP_JOB_RUNNING ? t : 0;
    return j;
}
// Four 1-GPU nodes, each partition in `parts` over all of them.
gp_snapshot_t *four_nodes(std::initializer_list<const char *> parts) {
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t idx[4];
    for (int i = 0; i < 4; ++i) idx[i] = gp_snapshot_add_node(s, ("node" + std::to_string(i + 1)).c_str(), 1);
    for (const char *p : parts) EXPECT_EQ(gp_snapshot_add_partition(s, p, idx, 4), GP_OK);
    return s;
}

// An engine on kConf and a snapshot of node1 and node2 with `gpus` GPUs
// each, free_gpus[i] of them free, and `room_cpus` CPUs for jobs (0: not
// given); both go with it.
struct TwoNodes {
    gp_engine_t *e = gp_engine_create();
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t idx[2] = {-1, -1};
    TwoNodes(uint32_t gpus, std::array<uint32_t, 2> free_gpus, uint32_t room_cpus) {
        char err[256];
        EXPECT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
        for (int i = 0; i < 2; ++i) {
            idx[i] = gp_snapshot_add_node(s, ("node" + std::to_string(i + 1)).c_str(), gpus);
            EXPECT_EQ(gp_snapshot_set_node_usage(s, idx[i], free_gpus[size_t(i)], 0), GP_OK);
            if (room_cpus) {
                EXPECT_EQ(gp_snapshot_set_node_room(s, idx[i], room_cpus, 0), GP_OK);
            }
        }
    }
    ~TwoNodes() {
        gp_snapshot_destroy(s);
        gp_engine_destroy(e);
    }
    TwoNodes(const TwoNodes &) = delete;
    TwoNodes &operator=(const TwoNodes &) = delete;
    // `j` runs on node i, holding `gpus` GPUs and `cpus` CPUs there.
    void run_on(const gp_job_t &j, int i, uint32_t gpus, uint32_t cpus) {
        EXPECT_EQ(gp_snapshot_add_job(s, &j), GP_OK);
        EXPECT_EQ(gp_snapshot_set_job_nodes(s, &idx[i], &gpus, 1), GP_OK);
        EXPECT_EQ(gp_snapshot_set_job_node_resources(s, &cpus, nullptr, 1), GP_OK);
    }
};
}  // namespace

TEST(CApi, OsmoReclaimThroughTheAbi) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = four_nodes({"pool1", "pool2"});
    gp_job_t wf1 = job(1, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    gp_job_t wf2 = job(2, GP_JOB_RUNNING, "pool1", "low", 1, 101);
    gp_job_t wf3 = job(3, GP_JOB_RUNNING, "pool1", "low", 1, 105);
    gp_job_t wf4 = job(4, GP_JOB_RUNNING, "pool2", "normal", 1, 102);
    gp_job_t wf5 = job(5, GP_JOB_PENDING, "pool2", "normal", 1, 106);
    for (const gp_job_t *j : {&wf1, &wf2, &wf3, &wf4, &wf5}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);

    gp_verdict_t v;
    ASSERT_EQ(gp_engine_preemptable(e, &wf3, &wf5, 110, &v), GP_OK);
    EXPECT_EQ(v.allowed, 1);
    EXPECT_EQ(v.rule, GP_RULE_RECLAIM);
    EXPECT_STREQ(v.victim_pool, "pool1");
    EXPECT_STREQ(v.preemptor_pool, "pool2");
    EXPECT_EQ(v.victim_pool_used, 3u);
    EXPECT_EQ(v.victim_pool_quota, 2u);
    ASSERT_EQ(gp_engine_preemptable(e, &wf2, &wf5, 110, &v), GP_OK);
    EXPECT_EQ(v.allowed, 0);
    EXPECT_STREQ(v.why, "victim pool pool1 is not over its quota for this job (3/2)");

    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 5, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(gp_engine_pending_result(e, 77, &r), GP_ERR_ARG);

    gp_tier_info_t t;
    ASSERT_EQ(gp_engine_tier_of_qos(e, "low", &t), GP_OK);
    EXPECT_STREQ(t.name, "low");
    EXPECT_EQ(t.preemptible, 1);
    EXPECT_EQ(t.preempt_mode, GP_MODE_CANCEL);
    EXPECT_EQ(t.grace_time, 30);
    ASSERT_EQ(gp_engine_tier_of_qos(e, nullptr, &t), GP_OK);
    EXPECT_STREQ(t.name, "normal");

    gp_pool_report_t pr;
    ASSERT_EQ(gp_engine_pool_count(e), 2u);
    ASSERT_EQ(gp_engine_pool_report(e, 0, &pr), GP_OK);
    EXPECT_STREQ(pr.name, "pool1");
    EXPECT_EQ(pr.borrowed, 1u);
    char *json = gp_engine_report_json(e);
    ASSERT_NE(json, nullptr);
    EXPECT_NE(std::strstr(json, "\"victim_class\": \"over-fairshare\""), nullptr);
    gp_free(json);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

TEST(CApi, BadConfigKeepsThePreviousOne) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK);
    EXPECT_EQ(gp_engine_load_config_text(e, "Tier=x Priority=abc\n", "gpupool.conf", err, sizeof err),
              GP_ERR_CONFIG);
    EXPECT_EQ(std::strncmp(err, "gpupool.conf:1: ", 16), 0) << err;
    gp_tier_info_t t;
    ASSERT_EQ(gp_engine_tier_of_qos(e, "high", &t), GP_OK);
    EXPECT_STREQ(t.name, "high");
    EXPECT_EQ(gp_engine_load_config_file(e, "/nonexistent/gpupool.conf", err, sizeof err), GP_ERR_CONFIG);
    gp_engine_destroy(e);
}

TEST(CApi, NoConfigAndNullArgumentsAreErrorsNotCrashes) {
    gp_engine_t *e = gp_engine_create();
    gp_snapshot_t *s = gp_snapshot_create();
    EXPECT_EQ(gp_engine_evaluate(e, s, 1), GP_ERR_NOCONFIG);
    EXPECT_EQ(gp_engine_evaluate(nullptr, s, 1), GP_ERR_ARG);
    EXPECT_EQ(gp_snapshot_add_job(s, nullptr), GP_ERR_ARG);
    int32_t bad = 7;
    EXPECT_EQ(gp_snapshot_add_partition(s, "p", &bad, 1), GP_ERR_ARG);
    gp_verdict_t v;
    gp_job_t j = job(1, GP_JOB_RUNNING, nullptr, nullptr, 1, 1);
    EXPECT_EQ(gp_engine_preemptable(e, &j, &j, 1, &v), GP_ERR_NOCONFIG);
    EXPECT_EQ(v.allowed, 0);
    char err[128];
    EXPECT_EQ(gp_engine_load_state(e, "/nonexistent/state.json", err, sizeof err), GP_ERR_STATE);
    EXPECT_EQ(gp_engine_job_ended(nullptr, 1, 1), -GP_ERR_ARG);
    EXPECT_STREQ(gp_status_str(GP_ERR_CONFIG), "invalid configuration");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Names may be 255 bytes (slurmdbd keeps that much): tiers, pools and a
// verdict's pools come through the ABI whole, for preemption records and
// reports (they were cut at 63 bytes).
TEST(CApi, NamesOf255BytesComeThroughWhole) {
    const std::string tier(255, 't'), pool1(255, 'a'), pool2 = std::string(254, 'a') + "b";
    const std::string conf = "Tier=" + tier + " QOS=low Priority=100 Preemptible=yes\n"
                             "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                             "DefaultTier=normal\nPool=" + pool1 + " Quota=2\nPool=" + pool2 + " Quota=2\n";
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, conf.c_str(), "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = four_nodes({pool1.c_str(), pool2.c_str()});
    gp_job_t borrower = job(1, GP_JOB_RUNNING, pool1.c_str(), "low", 3, 100);
    gp_job_t owner = job(2, GP_JOB_PENDING, pool2.c_str(), "normal", 1, 106);
    for (const gp_job_t *j : {&borrower, &owner}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);

    gp_verdict_t v;
    ASSERT_EQ(gp_engine_preemptable(e, &borrower, &owner, 110, &v), GP_OK);
    EXPECT_EQ(v.allowed, 1);
    EXPECT_EQ(std::string(v.victim_pool), pool1);
    EXPECT_EQ(std::string(v.preemptor_pool), pool2);
    gp_tier_info_t t;
    ASSERT_EQ(gp_engine_tier_of_qos(e, "low", &t), GP_OK);
    EXPECT_EQ(std::string(t.name), tier);
    gp_pool_report_t pr;
    ASSERT_EQ(gp_engine_pool_report(e, 1, &pr), GP_OK);
    EXPECT_EQ(std::string(pr.name), pool2);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// The library says which ABI it was built with: what a plugin compares with
// the GP_ABI_VERSION it was compiled against before it uses anything else.
TEST(CApi, LibraryReportsItsAbiVersion) {
    EXPECT_EQ(gp_abi_version(), static_cast<uint32_t>(GP_ABI_VERSION));
    EXPECT_EQ(gp_abi_version(), 28u);
    // Makefile.am's libtool -version-info follows the ABI (it passes
    // GPUPOOL_LT_CURRENT to the tests).
    EXPECT_EQ(GPUPOOL_LT_CURRENT, GP_ABI_VERSION);
}

// preempt/gpupool caches tier answers per QOS under the configuration
// serial: it must change exactly when another configuration takes effect
// (at once before the first pass; a reload after it at the next pass).
TEST(CApi, ConfigSerialAndTheWaitingPreemptorsPriorityChangeWhenAConfigurationTakesEffect) {
    const char *other =
        "Tier=normal QOS=normal Priority=200 Preemptible=yes\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nReclaimBy=all\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n";
    gp_engine_t *e = gp_engine_create();
    char err[256];
    EXPECT_EQ(gp_engine_config_serial(nullptr), 0u);
    EXPECT_EQ(gp_engine_config_serial(e), 0u);
    EXPECT_EQ(gp_engine_waiting_preemptor_priority(nullptr), 0u);
    EXPECT_EQ(gp_engine_waiting_preemptor_priority(e), 0u) << "no configuration";
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    const uint64_t first = gp_engine_config_serial(e);
    EXPECT_NE(first, 0u);
    EXPECT_EQ(gp_engine_waiting_preemptor_priority(e), 0u) << "ReclaimBy=nonpreemptible: low never reclaims";
    // A refused file changes nothing.
    EXPECT_EQ(gp_engine_load_config_text(e, "Tier=x Priority=abc\n", "gpupool.conf", err, sizeof err),
              GP_ERR_CONFIG);
    EXPECT_EQ(gp_engine_config_serial(e), first);
    gp_snapshot_t *s = four_nodes({"pool1", "pool2"});
    gp_job_t a = job(1, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    ASSERT_EQ(gp_snapshot_add_job(s, &a), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    EXPECT_EQ(gp_engine_config_serial(e), first);
    // Staged after a pass: the old tiers and serial until the next pass.
    ASSERT_EQ(gp_engine_load_config_text(e, other, "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_tier_info_t t;
    ASSERT_EQ(gp_engine_tier_of_qos(e, "normal", &t), GP_OK);
    EXPECT_EQ(t.preemptible, 0);
    EXPECT_EQ(gp_engine_config_serial(e), first);
    EXPECT_EQ(gp_engine_waiting_preemptor_priority(e), 0u);
    ASSERT_EQ(gp_engine_evaluate(e, s, 120), GP_OK);
    const uint64_t second = gp_engine_config_serial(e);
    EXPECT_NE(second, first);
    EXPECT_EQ(gp_engine_waiting_preemptor_priority(e), 200u) << "ReclaimBy=all, normal preemptible now";
    ASSERT_EQ(gp_engine_tier_of_qos(e, "normal", &t), GP_OK);
    EXPECT_EQ(t.preemptible, 1);
    // A pass with nothing staged keeps it.
    ASSERT_EQ(gp_engine_evaluate(e, s, 130), GP_OK);
    EXPECT_EQ(gp_engine_config_serial(e), second);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

TEST(CApi, JobArraysThroughTheAbi) {
    static_assert(GP_ABI_VERSION >= 2, "array fields are ABI 2");
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = four_nodes({"pool1"});
    gp_job_t task = job(21, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    task.array_job_id = 20;
    gp_job_t meta = job(20, GP_JOB_PENDING, "pool1", "normal", 1, 99);
    meta.array_tasks = 3;
    gp_job_t other = job(30, GP_JOB_PENDING, "pool1", "normal", 1, 101);
    for (const gp_job_t *j : {&task, &meta, &other}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);

    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 20, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(r.admitted_tasks, 1u);
    EXPECT_EQ(r.array_running, 1u);
    ASSERT_EQ(gp_engine_pending_result(e, 30, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_EQ(r.admitted_tasks, 0u);
    EXPECT_EQ(r.array_running, 0u);

    // The running task ends: the array may start one more.
    EXPECT_EQ(gp_engine_job_ended(e, 21, 120), 1);
    ASSERT_EQ(gp_engine_pending_result(e, 20, &r), GP_OK);
    EXPECT_EQ(r.admitted_tasks, 2u);
    EXPECT_EQ(r.array_running, 0u);
    char *json = gp_engine_report_json(e);
    ASSERT_NE(json, nullptr);
    EXPECT_NE(std::strstr(json, "\"admitted_tasks\": 2"), nullptr);
    gp_free(json);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

namespace {
// An engine on kConf with pool1's quota 4; nullptr if it does not load.
gp_engine_t *engine_pool1_quota4() {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    std::string conf = kConf;
    conf.replace(conf.find("Pool=pool1 Quota=2"), 18, "Pool=pool1 Quota=4");
    if (gp_engine_load_config_text(e, conf.c_str(), "gpupool.conf", err, sizeof err) == GP_OK) return e;
    ADD_FAILURE() << err;
    gp_engine_destroy(e);
    return nullptr;
}
}  // namespace

// A job array whose user's throttle (%2) is full stands for its next task
// only (the plugins pass array_tasks 1): it sets aside one task's GPUs, not
// six, so another job within the quota is admitted; its running tasks are
// still counted, so its throttle stays the user's, not one below them.
TEST(CApi, AnArrayAtItsOwnThrottleSetsAsideOneTask) {
    gp_engine_t *e = engine_pool1_quota4();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = four_nodes({"pool1"});
    gp_job_t t1 = job(21, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    gp_job_t t2 = job(22, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    t1.array_job_id = t2.array_job_id = 20;
    gp_job_t meta = job(20, GP_JOB_PENDING, "pool1", "normal", 1, 99);
    meta.array_tasks = gpr_array_startable_tasks(98, 2, 2);
    ASSERT_EQ(meta.array_tasks, 1u);
    gp_job_t other = job(30, GP_JOB_PENDING, "pool1", "normal", 1, 101);
    for (const gp_job_t *j : {&t1, &t2, &meta, &other}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 30, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA) << "2 running + 1 set aside + 1 within 4";
    ASSERT_EQ(gp_engine_pending_result(e, 20, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(r.admitted_tasks, 1u);
    EXPECT_EQ(r.array_running, 2u) << "counted though the record stands for one task";
    gp_array_throttle_t t{};
    t.max_run_tasks = 2;
    EXPECT_EQ(gp_array_throttle(&t, &r, 98, 0), 0);
    EXPECT_EQ(t.max_run_tasks, 2u) << "the user's %2, not 1";
    EXPECT_EQ(t.capped, 0);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// A HIGH job that depends on a NORMAL one of its pool (pool1, quota 4):
// ahead of it in R1 it would set 1 GPU aside and hold the 4-GPU job it waits
// for, for good.  Waiting for another job (GP_JOB_DEPENDENT), it comes after
// every job that does not: the NORMAL job is admitted and the HIGH one held
// until there is room, in the pass and at submit.
// R1 step 0: a job Slurm holds back for a reason of its own (another job,
// its association's or QOS's limits) comes after the jobs it does not.
TEST(CApi, AJobSlurmHoldsBackSetsNoQuotaAsideAheadOfOthers) {
    struct Case {
        const char *sentence;
        uint32_t flags;
        int normal_admission, high_admission;
    };
    const std::vector<Case> cases = {
        {"no dependency: HIGH first, the NORMAL job held", 0, GP_HELD_QUOTA, GP_ADMIT_QUOTA},
        {"HIGH depends on NORMAL: NORMAL first", GP_JOB_DEPENDENT, GP_ADMIT_QUOTA, GP_HELD_QUOTA},
        {"HIGH is over its user's MaxTRESPerUser: NORMAL first", GP_JOB_OVER_LIMIT, GP_ADMIT_QUOTA, GP_HELD_QUOTA},
        {"HIGH both waits and is over a limit: NORMAL first", GP_JOB_DEPENDENT | GP_JOB_OVER_LIMIT, GP_ADMIT_QUOTA,
         GP_HELD_QUOTA},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        gp_engine_t *e = engine_pool1_quota4();
        ASSERT_NE(e, nullptr);
        gp_snapshot_t *s = four_nodes({"pool1"});
        gp_job_t normal = job(40, GP_JOB_PENDING, "pool1", "normal", 4, 100);
        gp_job_t high = job(41, GP_JOB_PENDING, "pool1", "high", 1, 101);
        high.flags = c.flags;
        for (const gp_job_t *j : {&normal, &high}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
        ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
        gp_pending_result_t r;
        ASSERT_EQ(gp_engine_pending_result(e, 40, &r), GP_OK);
        EXPECT_EQ(r.admission, c.normal_admission) << "NORMAL, in the pass";
        ASSERT_EQ(gp_engine_pending_result(e, 41, &r), GP_OK);
        EXPECT_EQ(r.admission, c.high_admission) << "HIGH, in the pass";
        EXPECT_EQ(r.position, c.flags ? 1u : 0u);
        // Placed again between passes (an update: priority_p_set, which
        // tests no limit): the last pass's answer on its limits stands.
        gp_job_t again = high;
        again.flags &= ~GP_JOB_OVER_LIMIT;
        ASSERT_EQ(gp_engine_provisional(e, &again, 111, &r), GP_OK);
        const bool stays_behind = (c.flags & GP_JOB_OVER_LIMIT) != 0;
        EXPECT_EQ(r.admission, stays_behind ? GP_HELD_QUOTA : c.high_admission) << "HIGH, placed again";
        gp_snapshot_destroy(s);
        gp_engine_destroy(e);
    }
}

// Since ABI 28: Slurm starts a heterogeneous job's components together or
// not at all, so a pass admits them together, where the first comes in R1,
// or holds them all.  pool1 has quota 4 and runs a NORMAL 2-GPU job; the
// heterogeneous job 60 (components 60 and 61, submitted first) comes before
// job 70 (2 GPUs).
TEST(CApi, AHeterogeneousJobIsAdmittedWholeOrHeldWhole) {
    struct Case {
        const char *sentence;
        const char *part61;
        uint32_t gpus61, flags61;
        int het_admission, other_admission;
        const char *het_reason;
        uint32_t other_position;
    };
    const std::vector<Case> cases = {
        {"its components fit together (2 + 1 + 1): both admitted, the later job held", "pool1", 1, 0, GP_ADMIT_QUOTA,
         GP_HELD_QUOTA, "", 2},
        {"they pass the quota together (2 + 1 + 2): both held, and the later job within quota admitted", "pool1", 2, 0,
         GP_HELD_QUOTA, GP_ADMIT_QUOTA, "GpuPoolQuota:pool1 3/4", 2},
        {"one component's pool is full (pool2 2/2): both held, though the other fits alone", "pool2", 1, 0,
         GP_HELD_QUOTA, GP_ADMIT_QUOTA, "GpuPoolQuota:pool2 2/2", 1},  // 61 after it: pool2's standing
        {"a 2-GPU component in pool2 (2/2) holds the 1-GPU one: both show pool2's reason", "pool2", 2, 0,
         GP_HELD_QUOTA, GP_ADMIT_QUOTA, "GpuPoolQuota:pool2 2/2", 1},
        {"Slurm holds one component back (a limit): the whole job comes after the later one", "pool1", 1,
         GP_JOB_OVER_LIMIT, GP_HELD_QUOTA, GP_ADMIT_QUOTA, "GpuPoolQuota:pool1 4/4", 0},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        gp_engine_t *e = engine_pool1_quota4();
        ASSERT_NE(e, nullptr);
        gp_snapshot_t *s = four_nodes({"pool1", "pool2"});
        gp_job_t run1 = job(50, GP_JOB_RUNNING, "pool1", "normal", 2, 90);
        gp_job_t run2 = job(51, GP_JOB_RUNNING, "pool2", "normal", 2, 90);
        gp_job_t lead = job(60, GP_JOB_PENDING, "pool1", "normal", 1, 100);
        gp_job_t part = job(61, GP_JOB_PENDING, c.part61, "normal", c.gpus61, 100);
        lead.het_job_id = part.het_job_id = 60;
        part.flags = c.flags61;
        gp_job_t other = job(70, GP_JOB_PENDING, "pool1", "normal", 2, 101);
        for (const gp_job_t *j : {&run1, &run2, &lead, &part, &other}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
        ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
        gp_pending_result_t r;
        for (uint32_t id : {60u, 61u}) {
            ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
            EXPECT_EQ(r.admission, c.het_admission) << "component " << id;
            EXPECT_STREQ(r.reason, c.het_reason) << "component " << id;
            EXPECT_EQ(r.priority == 0, c.het_admission == GP_HELD_QUOTA) << "component " << id;
        }
        ASSERT_EQ(gp_engine_pending_result(e, 70, &r), GP_OK);
        EXPECT_EQ(r.admission, c.other_admission) << "the later job";
        EXPECT_EQ(r.position, c.other_position);
        gp_snapshot_destroy(s);
        gp_engine_destroy(e);
    }
}

// At a job end (job_ended(), between passes) a held heterogeneous job's
// components are admitted together too, where the first comes in R1: the
// room goes to it, not to the 3-GPU job submitted after it.
TEST(CApi, AJobEndAdmitsAHeldHeterogeneousJobWholeAheadOfLaterJobs) {
    gp_engine_t *e = engine_pool1_quota4();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = four_nodes({"pool1"});
    gp_job_t run = job(50, GP_JOB_RUNNING, "pool1", "normal", 2, 90);
    gp_job_t lead = job(60, GP_JOB_PENDING, "pool1", "normal", 1, 100);
    gp_job_t part = job(61, GP_JOB_PENDING, "pool1", "normal", 2, 100);
    lead.het_job_id = part.het_job_id = 60;
    gp_job_t later = job(70, GP_JOB_PENDING, "pool1", "normal", 3, 101);
    for (const gp_job_t *j : {&run, &lead, &part, &later}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    for (uint32_t id : {60u, 61u, 70u}) {
        ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
        EXPECT_EQ(r.admission, GP_HELD_QUOTA) << "job " << id << ", 2 GPUs in use";
    }
    EXPECT_EQ(gp_engine_job_ended(e, 50, 120), 2) << "both components";
    for (uint32_t id : {60u, 61u}) {
        ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
        EXPECT_EQ(r.admission, GP_ADMIT_QUOTA) << "component " << id << ", after the job end";
    }
    ASSERT_EQ(gp_engine_pending_result(e, 70, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA) << "the later job: 3 set aside + 3 > 4";
    gp_snapshot_destroy(s);
    s = four_nodes({"pool1"});
    for (const gp_job_t *j : {&lead, &part, &later}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 121), GP_OK);
    for (uint32_t id : {60u, 61u}) {
        ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
        EXPECT_EQ(r.admission, GP_ADMIT_QUOTA) << "component " << id << ", the next pass";
    }
    ASSERT_EQ(gp_engine_pending_result(e, 70, &r), GP_OK);
    EXPECT_STREQ(r.reason, "GpuPoolQuota:pool1 3/4");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// A job end that frees too little for the whole heterogeneous job changes
// nothing: no component admitted alone, the hold counted once, in the pool
// that refused it.  A component placed again between passes (an update)
// waits for the pass; the other then shows which component it waits with.
TEST(CApi, AHeterogeneousJobTooBigForTheRoomStaysHeldWhole) {
    gp_engine_t *e = engine_pool1_quota4();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = four_nodes({"pool1", "pool2"});
    gp_job_t run1 = job(50, GP_JOB_RUNNING, "pool1", "normal", 2, 90);
    gp_job_t run2 = job(51, GP_JOB_RUNNING, "pool2", "normal", 1, 90);
    gp_job_t run3 = job(52, GP_JOB_RUNNING, "pool2", "normal", 1, 90);
    gp_job_t lead = job(60, GP_JOB_PENDING, "pool1", "normal", 2, 100);
    gp_job_t part = job(61, GP_JOB_PENDING, "pool2", "normal", 2, 100);
    lead.het_job_id = part.het_job_id = 60;
    for (const gp_job_t *j : {&run1, &run2, &run3, &lead, &part}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    gp_pool_report_t pr;
    auto held_in = [&](size_t pool) {
        EXPECT_EQ(gp_engine_pool_report(e, pool, &pr), GP_OK);
        return pr.held_jobs;
    };
    for (uint32_t id : {60u, 61u}) {
        ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
        EXPECT_EQ(r.admission, GP_HELD_QUOTA) << "component " << id;
        EXPECT_STREQ(r.reason, "GpuPoolQuota:pool2 2/2") << "component " << id;
    }
    EXPECT_EQ(held_in(0), 0u) << "pool1: 60 held for 61's refusal";
    EXPECT_EQ(held_in(1), 1u) << "pool2";

    EXPECT_EQ(gp_engine_job_ended(e, 51, 120), 0) << "pool2 1/2: 2 more do not fit";
    for (uint32_t id : {60u, 61u}) {
        ASSERT_EQ(gp_engine_pending_result(e, id, &r), GP_OK);
        EXPECT_EQ(r.admission, GP_HELD_QUOTA) << "component " << id << ", after the job end";
    }
    EXPECT_EQ(held_in(0), 0u);
    EXPECT_EQ(held_in(1), 1u);

    gp_job_t smaller = part;
    smaller.gpus = 1;
    ASSERT_EQ(gp_engine_provisional(e, &smaller, 121, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA) << "placed again: waits for the pass";
    EXPECT_STREQ(r.reason, "GpuPoolStarting");
    ASSERT_EQ(gp_engine_pending_result(e, 60, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_STREQ(r.reason, "GpuPoolQuota:component 61");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// A component its user holds (scontrol hold) keeps the whole job from
// starting, as one Slurm holds back: the other component comes after the
// jobs that can start (it is admitted after them where room is left).
TEST(CApi, AUserHeldComponentPutsItsHeterogeneousJobBehind) {
    gp_engine_t *e = engine_pool1_quota4();
    ASSERT_NE(e, nullptr);
    gp_snapshot_t *s = four_nodes({"pool1"});
    gp_job_t run = job(50, GP_JOB_RUNNING, "pool1", "normal", 2, 90);
    gp_job_t lead = job(60, GP_JOB_PENDING, "pool1", "normal", 1, 100);
    gp_job_t part = job(61, GP_JOB_PENDING, "pool1", "normal", 1, 100);
    lead.het_job_id = part.het_job_id = 60;
    part.user_held = 1;
    gp_job_t later = job(70, GP_JOB_PENDING, "pool1", "normal", 2, 101);
    for (const gp_job_t *j : {&run, &lead, &part, &later}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 70, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_EQ(r.position, 0u);
    ASSERT_EQ(gp_engine_pending_result(e, 60, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_STREQ(r.reason, "GpuPoolQuota:pool1 4/4");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Account queues through the ABI: a flat configuration needs nothing beyond GPUs;
// with Account= entries counting CPUs, a project's job is held by its
// department's CPU quota from the accounts, CPUs and tree the plugins pass.
TEST(CApi, AccountsCpusAndTheAccountTreeReachTheCore) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_snapshot_needs(e), 0u);
    std::string conf = std::string(kConf) +
                       "QuotaTRES=gres/gpu,cpu\n"
                       "Account=dept Pool=pool1 Quota=gres/gpu=2,cpu=4\n"
                       "Account=proj Pool=pool1 Quota=gres/gpu=2,cpu=4\n";
    ASSERT_EQ(gp_engine_load_config_text(e, conf.c_str(), "gpupool.conf", err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_snapshot_needs(e), uint32_t(GP_NEEDS_ACCOUNTS | GP_NEEDS_CPU));

    gp_snapshot_t *s = four_nodes({"pool1"});
    for (int32_t n = 0; n < 4; ++n) ASSERT_EQ(gp_snapshot_set_node_resources(s, n, 8, 16384), GP_OK);
    EXPECT_EQ(gp_snapshot_set_node_resources(s, 4, 8, 16384), GP_ERR_ARG);
    ASSERT_EQ(gp_snapshot_add_account(s, "dept", "root"), GP_OK);
    ASSERT_EQ(gp_snapshot_add_account(s, "proj", "dept"), GP_OK);
    ASSERT_EQ(gp_snapshot_add_account(s, "other", nullptr), GP_OK);
    EXPECT_EQ(gp_snapshot_add_account(s, "", "dept"), GP_ERR_ARG);
    gp_job_t run = job(1, GP_JOB_RUNNING, "pool1", "normal", 1, 100);
    run.account = "other";  // moved under dept below: then dept's CPUs are used up
    run.cpus = 4;
    gp_job_t wait = job(2, GP_JOB_PENDING, "pool1", "normal", 1, 101);
    wait.account = "proj";
    wait.cpus = 1;
    wait.mem_mb = 512;
    for (const gp_job_t *j : {&run, &wait}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 2, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);

    ASSERT_EQ(gp_snapshot_add_account(s, "other", "dept"), GP_OK);  // the last parent counts
    ASSERT_EQ(gp_engine_evaluate(e, s, 120), GP_OK);
    ASSERT_EQ(gp_engine_pending_result(e, 2, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_STREQ(r.reason, "GpuPoolQuota:pool1/dept cpu 4/4");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Limit= through the ABI: a preemptible job is held as an NP job
// held by quota is (GP_HELD_QUOTA, priority 0, a GpuPool reason that the
// plugins take as their own hold), so Slurm does not start it.
TEST(CApi, APreemptibleJobHeldAtItsLimitComesOutHeldWithPriorityZero) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    std::string conf = std::string(kConf) + "Account=proj Pool=pool1 Quota=gres/gpu=1 Limit=gres/gpu=2\n";
    ASSERT_EQ(gp_engine_load_config_text(e, conf.c_str(), "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = four_nodes({"pool1"});
    ASSERT_EQ(gp_snapshot_add_account(s, "proj", "root"), GP_OK);
    gp_job_t run = job(1, GP_JOB_RUNNING, "pool1", "low", 2, 100);
    run.account = "proj";
    gp_job_t wait = job(2, GP_JOB_PENDING, "pool1", "low", 1, 101);
    wait.account = "proj";
    for (const gp_job_t *j : {&run, &wait}) ASSERT_EQ(gp_snapshot_add_job(s, j), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 110), GP_OK);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(e, 2, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);
    EXPECT_EQ(r.priority, 0u);
    EXPECT_STREQ(r.reason, "GpuPoolLimit:pool1/proj gpu 2/2");
    EXPECT_EQ(std::strncmp(r.reason, GP_HOLD_PREFIX, std::strlen(GP_HOLD_PREFIX)), 0);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Since ABI 15: where Slurm places a one-node job by Weight alone (26.05),
// a spreading pool's nodes get Weights, the node with the most free GPUs
// first; a later snapshot without the flag gives the Weights back.
TEST(CApi, OneNodeByWeightSpreadsByWeightsAndALaterSnapshotWithoutItGivesThemBack) {
    EXPECT_EQ(gp_snapshot_set_one_node_by_weight(nullptr), GP_ERR_ARG);
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e,
                                         "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                                         "DefaultTier=normal\nPool=ws Quota=8 Placement=spread\n",
                                         "test.conf", err, sizeof err),
              GP_OK)
        << err;
    auto pass = [&](bool by_weight) {
        gp_snapshot_t *s = gp_snapshot_create();
        int32_t idx[2] = {gp_snapshot_add_node(s, "n1", 4), gp_snapshot_add_node(s, "n2", 4)};
        EXPECT_EQ(gp_snapshot_add_partition(s, "ws", idx, 2), GP_OK);
        EXPECT_EQ(gp_snapshot_set_partition_lln(s), GP_OK);
        if (by_weight) {
            EXPECT_EQ(gp_snapshot_set_one_node_by_weight(s), GP_OK);
        }
        EXPECT_EQ(gp_snapshot_set_node_usage(s, idx[0], 3, 0), GP_OK);
        EXPECT_EQ(gp_snapshot_set_node_usage(s, idx[1], 4, 0), GP_OK);
        EXPECT_EQ(gp_engine_evaluate(e, s, 1000), GP_OK);
        gp_snapshot_destroy(s);
    };
    uint32_t current[2] = {1, 1}, want[2] = {0, 0};
    pass(true);
    EXPECT_EQ(gp_engine_node_weights(e, current, want, 2), 2u);
    EXPECT_EQ(want[0], 4096u + 1);  // one GPU fewer free than n2
    EXPECT_EQ(want[1], 4096u + 0);
    pass(false);
    EXPECT_EQ(gp_engine_node_weights(e, want, current, 2), 2u);
    EXPECT_EQ(current[0], 1u);
    EXPECT_EQ(current[1], 1u);
    gp_engine_destroy(e);
}

// A preemptor that may use only node1 (its GPU model, as the plugin reads
// it from gres.conf's types): gp_job_t.allowed_nodes reaches the victim
// plan, which frees node1 though pool1's job there ran longest.  Without
// the names the job gets no plan (the rules alone: pool1's newest
// borrowers, on node3 and node4, which Slurm could not use).
TEST(CApi, AllowedNodesReachTheVictimPlan) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = four_nodes({"pool1", "pool2"});
    gp_job_t low[4];
    for (int i = 0; i < 4; ++i) {
        low[i] = job(uint32_t(i + 1), GP_JOB_RUNNING, "pool1", "low", 1, 100 + 10 * i);
        ASSERT_EQ(gp_snapshot_add_job(s, &low[i]), GP_OK);
        const int32_t node = i;
        const uint32_t gpus = 1;
        ASSERT_EQ(gp_snapshot_set_job_nodes(s, &node, &gpus, 1), GP_OK);
    }
    for (int32_t n = 0; n < 4; ++n) ASSERT_EQ(gp_snapshot_set_node_usage(s, n, 0, 0), GP_OK);
    gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", 1, 150);
    pre.flags = GP_JOB_NODES_GIVEN;
    ASSERT_EQ(gp_snapshot_add_job(s, &pre), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, 200), GP_OK);

    auto allowed = [&](const char *nodes) {
        pre.allowed_nodes = nodes;
        std::string out;
        gp_verdict_t v;
        for (const gp_job_t &l : low) {
            EXPECT_EQ(gp_engine_preemptable(e, &l, &pre, 200, &v), GP_OK);
            if (v.allowed) out += std::to_string(l.job_id) + " ";
        }
        return out;
    };
    EXPECT_EQ(allowed("node1"), "1 ");
    EXPECT_EQ(allowed(nullptr), "3 4 ");
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// node1: 4 GPUs free, 8 CPUs; node2: its 4 GPUs held by pool2's LOW job
// (job 1, 1 CPU).  `reserve` adds reservations to the snapshot; then
// whether pool2's NORMAL job of 1 GPU and 2 CPUs, running `run_limit`
// seconds, may take the LOW job at time 200 (its plan's answer).
bool takes_node2s_low(const std::function<void(gp_snapshot_t *, const int32_t *)> &reserve, int64_t run_limit) {
    TwoNodes w(4, {4, 0}, 8);
    reserve(w.s, w.idx);
    EXPECT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
    gp_job_t low = job(1, GP_JOB_RUNNING, "pool2", "low", 4, 100);
    low.cpus = 1;
    w.run_on(low, 1, 4, 1);
    gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", 1, 150);
    pre.cpus = 2;
    pre.run_limit = run_limit;
    EXPECT_EQ(gp_snapshot_add_job(w.s, &pre), GP_OK);
    EXPECT_EQ(gp_engine_evaluate(w.e, w.s, 200), GP_OK);
    gp_verdict_t v;
    EXPECT_EQ(gp_engine_preemptable(w.e, &low, &pre, 200, &v), GP_OK);
    return v.allowed != 0;
}

// A reservation of 7 of node1's 8 CPUs' cores (gp_snapshot_set_node_reserved):
// the NORMAL job fits node1's free GPUs, not its free CPUs, so its plan
// takes the LOW job.  Before ABI 20 node1 counted as fitting, so no victim,
// and the job waited as long as the reservation.
TEST(CApi, ReservedCpusAreNotFree) {
    EXPECT_TRUE(takes_node2s_low([](gp_snapshot_t *s, const int32_t *idx) {
        ASSERT_EQ(gp_snapshot_set_node_reserved(s, idx[0], 7), GP_OK);
        EXPECT_EQ(gp_snapshot_set_node_reserved(s, 5, 7), GP_ERR_ARG);
    }, 0));
    EXPECT_FALSE(takes_node2s_low([](gp_snapshot_t *, const int32_t *) {}, 0));
}

// Reservations not started yet (gp_snapshot_add_node_reserved_ahead): Slurm
// keeps their nodes, cores and GPUs from a job that would still run at
// their start.  Before ABI 21 node1 counted as fitting whatever came, so
// the job got no victim and waited for the reservation to end.
TEST(CApi, ReservationsAheadKeepNodesFromJobsThatWouldRunPastTheirStart) {
    struct Case {
        const char *sentence;
        std::vector<std::array<int64_t, 5>> ahead;  // node, from, whole, cpus, gpus
        int64_t run_limit;
        bool takes;
    };
    const std::vector<Case> cases = {
        {"node1 is held whole from 800, the job would run until 3800: node2's LOW job is taken",
         {{0, 800, 1, 0, 0}}, 3600, true},
        {"the job would end at 500, before node1's reservation starts: it fits node1, no victim",
         {{0, 800, 1, 0, 0}}, 300, false},
        {"the job would end at 800, as the reservation starts: it fits node1, no victim",
         {{0, 800, 1, 0, 0}}, 600, false},
        {"its time limit is not known: reservations ahead are not read, no victim",
         {{0, 800, 1, 0, 0}}, 0, false},
        {"node1's 4 GPUs reserved from 800: node2's LOW job is taken", {{0, 800, 0, 0, 4}}, 3600, true},
        {"3 of node1's GPUs reserved from 800: one left fits, no victim", {{0, 800, 0, 0, 3}}, 3600, false},
        {"7 of node1's CPUs reserved from 800: node2's LOW job is taken", {{0, 800, 0, 7, 0}}, 3600, true},
        {"node2 held whole from 800: nothing there to take, node1 fits", {{1, 800, 1, 0, 0}}, 3600, false},
        {"1 CPU from 800, 7 from 2000, the job would end at 1100: the first counts, it fits",
         {{0, 800, 0, 1, 0}, {0, 2000, 0, 7, 0}}, 900, false},
        {"1 CPU from 800, 7 from 2000, the job would end at 3800: the second counts",
         {{0, 800, 0, 1, 0}, {0, 2000, 0, 7, 0}}, 3600, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        auto reserve = [&](gp_snapshot_t *s, const int32_t *idx) {
            for (const auto &a : c.ahead)
                ASSERT_EQ(gp_snapshot_add_node_reserved_ahead(s, idx[a[0]], a[1], int(a[2]), uint32_t(a[3]),
                                                              uint32_t(a[4])),
                          GP_OK);
            EXPECT_EQ(gp_snapshot_add_node_reserved_ahead(s, 7, 800, 1, 0, 0), GP_ERR_ARG);
        };
        const bool takes = takes_node2s_low(reserve, c.run_limit);
        EXPECT_EQ(takes, c.takes);
    }
}

namespace {

// The world of ReservedCoresAVictimHoldsGoBackToTheReservation, with
// `held` (job 1 on node1: from, cpus, gpus) and one pending NORMAL job of
// pool2 of `gpus` GPUs and 2 CPUs per run limit in `run_limits` (ids 9,
// 10, ...), all in one snapshot: per preemptor, in that order, the LOW
// jobs its plan takes.
std::vector<std::string> taken_past_held(const std::vector<std::array<int64_t, 3>> &held,
                                         const std::vector<int64_t> &run_limits, uint32_t gpus = 2) {
    std::vector<std::string> out;
    TwoNodes w(2, {0, 0}, 8);
    EXPECT_EQ(gp_snapshot_add_job_reserved(w.s, w.idx[0], 0, 1, 0), GP_ERR_ARG);  // no job yet
    EXPECT_EQ(gp_snapshot_add_partition(w.s, "pool1", w.idx, 2), GP_OK);
    EXPECT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
    gp_job_t low[2] = {job(1, GP_JOB_RUNNING, "pool1", "low", 2, 150),
                       job(2, GP_JOB_RUNNING, "pool1", "low", 2, 100)};
    for (int i = 0; i < 2; ++i) {
        low[i].cpus = 8;
        w.run_on(low[i], i, 2, 8);
        for (const auto &h : held) {
            if (i == 0) {
                EXPECT_EQ(gp_snapshot_add_job_reserved(w.s, w.idx[0], h[0], uint32_t(h[1]), uint32_t(h[2])), GP_OK);
            }
        }
    }
    EXPECT_EQ(gp_snapshot_add_job_reserved(w.s, 5, 0, 1, 0), GP_ERR_ARG);
    std::vector<gp_job_t> pre;
    for (size_t k = 0; k < run_limits.size(); ++k) {
        pre.push_back(job(uint32_t(9 + k), GP_JOB_PENDING, "pool2", "normal", gpus, 160));
        pre.back().cpus = 2;
        pre.back().run_limit = run_limits[k];
    }
    for (const gp_job_t &p : pre) EXPECT_EQ(gp_snapshot_add_job(w.s, &p), GP_OK);
    EXPECT_EQ(gp_snapshot_add_job_reserved(w.s, w.idx[0], 0, 1, 0), GP_ERR_ARG);  // a pending job holds nothing
    EXPECT_EQ(gp_engine_evaluate(w.e, w.s, 200), GP_OK);
    for (const gp_job_t &p : pre) {
        std::string taken;
        for (const gp_job_t &l : low) {
            gp_verdict_t v;
            EXPECT_EQ(gp_engine_preemptable(w.e, &l, &p, 200, &v), GP_OK);
            if (v.allowed) taken += std::to_string(l.job_id);
        }
        out.push_back(taken);
    }
    return out;
}

}  // namespace

// What a victim holds that a reservation reserves goes back to the
// reservation when it is preempted, not to the preemptor outside it
// (gp_snapshot_add_job_reserved).  Two nodes of 2 GPUs and 8 CPUs, each
// held whole by a borrowed LOW job of pool1 (quota 2): job 1 on node1, the
// newer (least work lost), job 2 on node2.  pool2's NORMAL job of 2 GPUs
// and 2 CPUs, within its quota, running `run_limit` seconds from 200.
// Before ABI 22 the plan took job 1 whatever it held: Slurm then could not
// start the preemptor on node1, and job 1 was lost for nothing.
TEST(CApi, ReservedCoresAVictimHoldsGoBackToTheReservation) {
    struct Case {
        const char *sentence;
        std::vector<std::array<int64_t, 3>> held;  // job 1 on node1: from, cpus, gpus
        int64_t run_limit;
        const char *taken;
    };
    const std::vector<Case> cases = {
        {"nothing reserved: node1's newer job is taken", {}, 3600, "1"},
        {"7 of job 1's 8 CPUs reserved now: 1 left for the preemptor, node2's job is taken", {{0, 7, 0}}, 3600, "2"},
        {"6 of job 1's CPUs reserved now: 2 left fit, job 1 is taken", {{0, 6, 0}}, 3600, "1"},
        {"1 of job 1's GPUs reserved now: 1 left, node2's job is taken", {{0, 0, 1}}, 3600, "2"},
        {"its time limit not known: reservations in force still count", {{0, 7, 0}}, 0, "2"},
        {"7 CPUs reserved from 800, the preemptor would run until 3800: node2's job is taken",
         {{800, 7, 0}}, 3600, "2"},
        {"7 CPUs reserved from 800, the preemptor ends at 500: job 1 is taken", {{800, 7, 0}}, 300, "1"},
        {"1 CPU from 800, 7 from 2000, the preemptor ends at 1100: the first counts, job 1 is taken",
         {{800, 1, 0}, {2000, 7, 0}}, 900, "1"},
        {"1 CPU from 800, 7 from 2000, the preemptor ends at 3800: the second counts, node2's job is taken",
         {{800, 1, 0}, {2000, 7, 0}}, 3600, "2"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(taken_past_held(c.held, {c.run_limit}), std::vector<std::string>{c.taken});
    }
}

// Two preemptors of 1 GPU (both within pool2's quota), alike but for
// their time limits, in one pass: the plan made for the one ending before
// the reservation starts is not reused for the one that would run past it
// (their views of job 1 differ, though no reservation ahead holds anything
// free: no gp_snapshot_add_node_reserved_ahead entry tells them apart).
TEST(CApi, PreemptorsAlikeButForTheirLimitsSeeVictimsReservedCoresApart) {
    EXPECT_EQ(taken_past_held({{800, 7, 0}}, {300, 3600}, 1), (std::vector<std::string>{"1", "2"}));
    EXPECT_EQ(taken_past_held({{800, 7, 0}}, {3600, 300}, 1), (std::vector<std::string>{"2", "1"}));
}

// Two nodes of 4 GPUs and 8 CPUs; pool2 runs a LOW job of 1 GPU and all 8
// CPUs on each.  Its NORMAL job of 1 GPU and 1 CPU fits neither node,
// though each has 3 GPUs free: with the nodes' room
// (gp_snapshot_set_node_room) and the jobs' CPUs per node
// (gp_snapshot_set_job_node_resources) its plan takes one LOW job.  Without
// them GPUs alone decide: free GPUs fit, so no victim (as in ABI 18).
TEST(CApi, NodeCpusReachTheVictimPlan) {
    for (bool with_room : {true, false}) {
        SCOPED_TRACE(with_room ? "with the nodes' CPUs" : "GPUs alone");
        TwoNodes w(4, {3, 3}, with_room ? 8 : 0);
        ASSERT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
        gp_job_t low[2];
        for (int i = 0; i < 2; ++i) {
            low[i] = job(uint32_t(i + 1), GP_JOB_RUNNING, "pool2", "low", 1, 100 + 10 * i);
            low[i].cpus = 8;
            w.run_on(low[i], i, 1, 8);
            const uint32_t cpus = 8;
            EXPECT_EQ(gp_snapshot_set_job_node_resources(w.s, &cpus, nullptr, 2), GP_ERR_ARG) << "two nodes given, one held";
        }
        gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", 1, 150);
        pre.cpus = 1;
        ASSERT_EQ(gp_snapshot_add_job(w.s, &pre), GP_OK);
        ASSERT_EQ(gp_engine_evaluate(w.e, w.s, 200), GP_OK);
        std::string out;
        gp_verdict_t v;
        for (const gp_job_t &l : low) {
            EXPECT_EQ(gp_engine_preemptable(w.e, &l, &pre, 200, &v), GP_OK);
            if (v.allowed) out += std::to_string(l.job_id) + " ";
        }
        EXPECT_EQ(out, with_room ? "2 " : "");
    }
}

// --exclusive (GP_JOB_WHOLE_NODE): two nodes of 2 GPUs and 8 CPUs; node1
// runs pool2's LOW jobs 1 (1 GPU) and 2 (no GPU, 1 CPU), node2 pool1's
// NORMAL job 3 (2 GPUs, within pool1's quota).  pool2's NORMAL job of 1
// GPU (2 with a whole node), within its quota, fits node1's free GPU and CPUs as it is; asking
// for a whole node, it can have only node1, with both LOW jobs gone, and
// only where nothing else holds node1's CPUs or GPUs (Slurm starts a whole
// node's job only where no job holds any).
TEST(CApi, WholeNodePreemptorFreesEveryJobOnItsNode) {
    enum Extra { kNone, kNpCpuJob, kSuspendedGpuJob, kNoRoom };
    struct Case {
        const char *sentence;
        bool whole;
        Extra extra;
        const char *taken;
    };
    const std::vector<Case> cases = {
        {"not whole: node1's free GPUs and CPUs fit, no victim", false, kNone, ""},
        {"whole: node1's LOW jobs go, the one without GPUs too", true, kNone, "1 2 "},
        {"whole, and pool1's NORMAL CPU job on node1 too: no node can be freed", true, kNpCpuJob, ""},
        {"whole, and a suspended job holds one of node1's GPUs (no CPU): no node can be freed", true,
         kSuspendedGpuJob, ""},
        {"whole, the nodes' CPUs not given: no plan, the rules alone (R4: pool2's own LOW jobs)", true, kNoRoom,
         "1 2 "},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        const bool suspended = c.extra == kSuspendedGpuJob;
        TwoNodes w(2, {suspended ? 0u : 1u, 0}, c.extra == kNoRoom ? 0 : 8);
        ASSERT_EQ(gp_snapshot_add_partition(w.s, "pool1", w.idx, 2), GP_OK);
        ASSERT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
        gp_job_t low1 = job(1, GP_JOB_RUNNING, "pool2", "low", 1, 100);
        gp_job_t low2 = job(2, GP_JOB_RUNNING, "pool2", "low", 0, 110);
        gp_job_t np3 = job(3, GP_JOB_RUNNING, "pool1", "normal", 2, 90);
        gp_job_t np4 = job(4, GP_JOB_RUNNING, "pool1", "normal", 0, 95);
        gp_job_t sus5 = job(5, GP_JOB_SUSPENDED, "pool1", "normal", 1, 80);
        low1.cpus = low2.cpus = np4.cpus = 1;
        np3.cpus = 2;
        w.run_on(low1, 0, 1, 1);
        w.run_on(low2, 0, 0, 1);
        w.run_on(np3, 1, 2, 2);
        if (c.extra == kNpCpuJob) w.run_on(np4, 0, 0, 1);
        if (suspended) w.run_on(sus5, 0, 1, 0);
        gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", 1, 150);
        pre.cpus = 1;
        if (c.whole) pre.flags |= GP_JOB_WHOLE_NODE;
        ASSERT_EQ(gp_snapshot_add_job(w.s, &pre), GP_OK);
        ASSERT_EQ(gp_engine_evaluate(w.e, w.s, 200), GP_OK);
        std::string out;
        gp_verdict_t v;
        for (const gp_job_t *j : {&low1, &low2, &np3}) {
            EXPECT_EQ(gp_engine_preemptable(w.e, j, &pre, 200, &v), GP_OK);
            if (v.allowed) out += std::to_string(j->job_id) + " ";
        }
        EXPECT_EQ(out, c.taken);
    }
}

// QuotaTRES=gres/gpu:a counts GPUs of type a; a job asking for GPUs of no
// type (--gres=gpu:3) has none of them in its requested TRES, yet Slurm may
// give it a's.  node1 has 4 GPUs of type a (as the plugins count them),
// node2 none (its GPUs are of another type): pool2 over node1 counts the
// job's untyped GPUs (quota 2), pool1 over node2 cannot give it an a, and
// counts none; a job listing both counts none (in pool1 it costs nothing,
// and R2 counts a job alike in every pool it lists).
TEST(CApi, UntypedGpusCountWhereTheQuotaTypeIs) {
    struct Case {
        const char *sentence, *part;
        uint32_t gpus;
        uint32_t flags;
        int admission;
        const char *reason;
    };
    const std::vector<Case> cases = {
        {"3 untyped GPUs where nodes have type a: held", "pool2", 3, GP_JOB_GPUS_UNTYPED, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 3 quota 2"},
        {"1 untyped GPU where nodes have type a: within quota", "pool2", 1, GP_JOB_GPUS_UNTYPED, GP_ADMIT_QUOTA, ""},
        {"3 untyped GPUs where no node has type a: none counted", "pool1", 3, GP_JOB_GPUS_UNTYPED, GP_ADMIT_FREE, ""},
        {"3 untyped GPUs in both pools, pool1 without type a: none counted (free to start in pool1)", "pool2,pool1",
         3, GP_JOB_GPUS_UNTYPED, GP_ADMIT_FREE, ""},
        {"--exclusive, untyped, where no node has type a: none counted", "pool1", 1,
         GP_JOB_GPUS_UNTYPED | GP_JOB_WHOLE_NODE, GP_ADMIT_FREE, ""},
        {"--exclusive, untyped, where nodes have type a: the node's 4", "pool2", 1,
         GP_JOB_GPUS_UNTYPED | GP_JOB_WHOLE_NODE, GP_HELD_QUOTA, "GpuPoolQuotaTooSmall:pool2 needs 4 quota 2"},
        {"3 GPUs of type a (the plugins count them as asked): held", "pool2", 3, 0, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 3 quota 2"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        gp_engine_t *e = gp_engine_create();
        gp_snapshot_t *s = gp_snapshot_create();
        char err[256];
        ASSERT_EQ(gp_engine_load_config_text(e, kConf, "gpupool.conf", err, sizeof err), GP_OK) << err;
        const int32_t n1 = gp_snapshot_add_node(s, "node1", 4), n2 = gp_snapshot_add_node(s, "node2", 0);
        ASSERT_EQ(gp_snapshot_add_partition(s, "pool2", &n1, 1), GP_OK);
        ASSERT_EQ(gp_snapshot_add_partition(s, "pool1", &n2, 1), GP_OK);
        gp_job_t pre = job(9, GP_JOB_PENDING, c.part, "normal", c.gpus, 150);
        pre.flags = c.flags;
        ASSERT_EQ(gp_snapshot_add_job(s, &pre), GP_OK);
        ASSERT_EQ(gp_engine_evaluate(e, s, 200), GP_OK);
        gp_pending_result_t r;
        ASSERT_EQ(gp_engine_pending_result(e, 9, &r), GP_OK);
        EXPECT_EQ(r.admission, c.admission) << "in the pass";
        EXPECT_STREQ(r.reason, c.reason);
        gp_job_t later = pre;
        later.job_id = 10;
        later.submit_time = 190;
        ASSERT_EQ(gp_engine_provisional(e, &later, 200, &r), GP_OK);
        EXPECT_EQ(r.admission, c.admission) << "at submit";
        gp_snapshot_destroy(s);
        gp_engine_destroy(e);
    }
}

namespace {
// `pre` (job 9, submitted at 150) is admitted as `admission` with `reason`
// in a pass at 200, and a job like it submitted at 190, after that pass,
// alike at submit.
void expect_admitted_alike(TwoNodes &w, const gp_job_t &pre, int admission, const char *reason) {
    ASSERT_EQ(gp_snapshot_add_job(w.s, &pre), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(w.e, w.s, 200), GP_OK);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_pending_result(w.e, pre.job_id, &r), GP_OK);
    EXPECT_EQ(r.admission, admission) << "in the pass";
    EXPECT_STREQ(r.reason, reason);
    gp_job_t later = pre;
    later.job_id = pre.job_id + 1;
    later.submit_time = 190;
    ASSERT_EQ(gp_engine_provisional(w.e, &later, 200, &r), GP_OK);
    EXPECT_EQ(r.admission, admission) << "at submit";
}
}  // namespace

// Slurm gives a job of whole nodes every GPU on them, whatever it asked
// (_handle_exclusive_gres): pool2 (quota 2) on nodes of 4 GPUs admits a
// NORMAL job of 1 GPU, or of none, and holds either with --exclusive (4
// GPUs past its quota), in the pass and at submit alike.
TEST(CApi, WholeNodeJobCountsItsNodesGpusForQuota) {
    struct Case {
        const char *sentence;
        uint32_t gpus;
        bool whole;
        int admission;
        const char *reason;
    };
    const std::vector<Case> cases = {
        {"1 GPU: admitted within quota", 1, false, GP_ADMIT_QUOTA, ""},
        {"1 GPU, --exclusive: the node's 4, held", 1, true, GP_HELD_QUOTA, "GpuPoolQuotaTooSmall:pool2 needs 4 quota 2"},
        {"no GPU: not subject to quota", 0, false, GP_ADMIT_FREE, ""},
        {"no GPU, --exclusive: the node's 4 still, held", 0, true, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 4 quota 2"},
        {"6 GPUs: what it asks", 6, false, GP_HELD_QUOTA, "GpuPoolQuotaTooSmall:pool2 needs 6 quota 2"},
        {"6 GPUs, --exclusive: Slurm spreads it over 2 nodes, 8", 6, true, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 8 quota 2"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        TwoNodes w(4, {4, 4}, 8);
        ASSERT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
        gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", c.gpus, 150);
        if (c.whole) pre.flags |= GP_JOB_WHOLE_NODE;
        expect_admitted_alike(w, pre, c.admission, c.reason);
    }
}

// On Slurm 23.11 and later GPUs of gres.conf Flags=explicit go to a job only
// as it asks (_handle_exclusive_gres skips them): a job of whole nodes there
// counts what it asked, not the node's GPUs.  pool2 (quota 2), nodes of 4
// GPUs; which of them are explicit varies.
TEST(CApi, WholeNodeJobCountsWhatItAskedWhereGpusAreExplicit) {
    struct Case {
        const char *sentence;
        std::array<bool, 2> explicit_gpus;
        uint32_t gpus;
        int admission;
        const char *reason;
    };
    const std::vector<Case> cases = {
        {"1 GPU, --exclusive, every node explicit: 1, within quota", {true, true}, 1, GP_ADMIT_QUOTA, ""},
        {"no GPU, --exclusive, every node explicit: not subject to quota", {true, true}, 0, GP_ADMIT_FREE, ""},
        {"3 GPUs, --exclusive, every node explicit: 3, held", {true, true}, 3, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 3 quota 2"},
        {"1 GPU, --exclusive, node2 not explicit: its 4 may come with it, held", {true, false}, 1, GP_HELD_QUOTA,
         "GpuPoolQuotaTooSmall:pool2 needs 4 quota 2"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        TwoNodes w(4, {4, 4}, 8);
        for (size_t i = 0; i < 2; ++i)
            if (c.explicit_gpus[i]) {
                ASSERT_EQ(gp_snapshot_set_node_gpus_explicit(w.s, w.idx[i]), GP_OK);
            }
        ASSERT_EQ(gp_snapshot_add_partition(w.s, "pool2", w.idx, 2), GP_OK);
        gp_job_t pre = job(9, GP_JOB_PENDING, "pool2", "normal", c.gpus, 150);
        pre.flags |= GP_JOB_WHOLE_NODE;
        expect_admitted_alike(w, pre, c.admission, c.reason);
    }
    EXPECT_EQ(gp_snapshot_set_node_gpus_explicit(nullptr, 0), GP_ERR_ARG);
    gp_snapshot_t *s = gp_snapshot_create();
    EXPECT_EQ(gp_snapshot_set_node_gpus_explicit(s, 0), GP_ERR_ARG) << "no such node";
    gp_snapshot_destroy(s);
}

// Slurm saves the throttle gpupool put on a pending array record as the
// record's own: the cap goes to the state file so that a restarted
// slurmctld puts the user's throttle back, not the cap, when the quota
// frees.
TEST(CApi, AnArrayCapOutlivesARestartInTheStateFile) {
    gp_engine_t *e = gp_engine_create();
    gp_array_throttle_t t{};
    t.capped = 1, t.user_max = 5, t.our_max = 2, t.max_run_tasks = 2;
    EXPECT_EQ(gp_engine_note_array_cap(e, 7, &t), 1) << "a record capped: worth a save";
    t.our_max = 3, t.max_run_tasks = 3;
    EXPECT_EQ(gp_engine_note_array_cap(e, 7, &t), 0) << "only the cap moved";
    t.user_max = 6;
    EXPECT_EQ(gp_engine_note_array_cap(e, 7, &t), 1) << "the user's throttle moved";
    t.user_max = 5;
    EXPECT_EQ(gp_engine_note_array_cap(e, 7, &t), 1);
    gp_array_throttle_t none{};
    none.capped = 1, none.user_max = 0, none.our_max = 1, none.max_run_tasks = 1;
    EXPECT_EQ(gp_engine_note_array_cap(e, 8, &none), 1) << "a record without a throttle of its own";
    EXPECT_EQ(gp_engine_note_array_cap(e, 9, &none), 1);
    EXPECT_EQ(gp_engine_note_array_cap(e, 9, nullptr), 1) << "its cap went";

    const std::string path = std::string(::testing::TempDir()) + "gpupool_array_caps_" + std::to_string(::getpid());
    char err[256] = "";
    ASSERT_EQ(gp_engine_save_state(e, path.c_str(), 1000, err, sizeof err), GP_OK) << err;
    gp_engine_destroy(e);

    gp_engine_t *after = gp_engine_create();
    ASSERT_EQ(gp_engine_load_state(after, path.c_str(), err, sizeof err), GP_OK) << err;
    gp_array_throttle_t out{};
    EXPECT_EQ(gp_engine_restore_array_cap(after, 7, 3, &out), 1) << "its throttle is the cap: gpupool's";
    EXPECT_EQ(out.capped, 1);
    EXPECT_EQ(out.user_max, 5u);
    EXPECT_EQ(out.our_max, 3u);
    EXPECT_EQ(out.max_run_tasks, 3u);
    EXPECT_EQ(gp_engine_restore_array_cap(after, 8, 0, &out), 0) << "throttle 0 (none): the user's, never a cap";
    EXPECT_EQ(gp_engine_note_array_cap(after, 8, nullptr), 1) << "so the plugin drops the saved cap";
    EXPECT_EQ(gp_engine_restore_array_cap(after, 8, 1, &out), 0) << "gone";
    EXPECT_EQ(gp_engine_restore_array_cap(after, 9, 1, &out), 0) << "uncapped before the save";
    EXPECT_EQ(gp_engine_restore_array_cap(after, 10, 1, &out), 0) << "never capped";
    gp_engine_destroy(after);

    gp_engine_t *raised = gp_engine_create();
    ASSERT_EQ(gp_engine_load_state(raised, path.c_str(), err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_restore_array_cap(raised, 7, 6, &out), 0) << "above the user's 5: set by hand since";
    EXPECT_EQ(gp_engine_note_array_cap(raised, 7, nullptr), 1);
    EXPECT_EQ(gp_engine_restore_array_cap(raised, 7, 3, &out), 0) << "and dropped";
    EXPECT_EQ(gp_engine_restore_array_cap(raised, 7, 5, &out) + gp_engine_restore_array_cap(raised, 8, 1, &out), 1)
        << "the user's throttle itself may be the cap (at most the user's)";
    gp_engine_destroy(raised);
    std::remove(path.c_str());
}

// gpupool sim's replay (src/sim/replay.*, policy_*, metrics, report):
// - the live scenarios of tests/integration/tests.sh, replayed on the same
//   cluster (scripts/cluster.sh) with the same gpupool.conf, end the same
//   way: same start order, same victims;
// - what tells each baseline apart;
// - metrics on tiny workloads, computed by hand;
// - requeue and cred_expire, MinRuntime;
// - the fast walk starts exactly what the reference walk starts.
// A "cancel" of the live test is the end of the job's duration here.
#include <gtest/gtest.h>
#include <jansson.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "sim_metrics.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "sim_command.hpp"
#include "snapshot.hpp"

using namespace gpupool;
using namespace gpupool::sim;

namespace {

std::string srcdir() {
    const char *d = std::getenv("srcdir");
    return d ? d : ".";
}

// scripts/cluster.sh: node[1-6], one GPU each; pool1, pool2 and plain over
// node[1-4], pool3 over node[5-6].
SimCluster live_cluster() {
    SimCluster c;
    for (int i = 1; i <= 6; ++i) c.nodes.push_back(SimNode{"node" + std::to_string(i), 1});
    c.partitions.push_back(SimPartition{"pool1", {0, 1, 2, 3}});
    c.partitions.push_back(SimPartition{"pool2", {0, 1, 2, 3}});
    c.partitions.push_back(SimPartition{"pool3", {4, 5}});
    c.partitions.push_back(SimPartition{"plain", {0, 1, 2, 3}});
    return c;
}

struct J {
    std::string label;
    int64_t submit;
    int64_t duration;
    std::string parts;  // comma-separated
    std::string qos;
    uint32_t gpus = 1;
};

Workload workload_of(const std::vector<J> &jobs) {
    Workload w;
    uint32_t id = 1;
    for (const J &j : jobs) {
        SimJob s;
        s.id = id++;
        s.label = j.label;
        s.submit = j.submit;
        s.duration = j.duration;
        s.gpus = j.gpus;
        s.pools = split_list(j.parts);
        s.qos = j.qos;
        w.jobs.push_back(s);
    }
    return w;
}

// "label@time[partition]-victim-victim", one per start, space-separated.
std::string starts_of(const ReplayResult &r, const SimCluster &c, const Workload &w, size_t first = SIZE_MAX,
                      bool with_part = false) {
    std::string out;
    size_t n = 0;
    for (const StartRecord &s : r.starts) {
        if (n++ == first) break;
        if (!out.empty()) out += ' ';
        out += w.jobs[s.job].label + "@" + std::to_string(s.time);
        if (with_part) out += "[" + c.partitions[static_cast<size_t>(s.partition)].name + "]";
        for (uint32_t v : s.victims) out += "-" + w.jobs[v].label;
    }
    return out;
}

Config example(const std::string &name) { return load_config_file(srcdir() + "/etc/" + name); }

ReplayResult run(const SimCluster &c, const Workload &w, const Config &cfg, PolicyKind k, ReplayOptions o = {}) {
    return replay(c, w, cfg, k, o);
}

struct LiveScenario {
    const char *sentence;     // what the live test asserts
    const char *live_test;    // its name in tests/integration/tests.sh
    const char *conf;         // etc/ file
    std::vector<J> jobs;
    const char *starts;       // the first starts, in order, with victims
    bool with_part = false;
};

const std::vector<LiveScenario> &live_scenarios() {
    static const std::vector<LiveScenario> s = {
        {"as GPUs free, held jobs start HIGH, HIGH, NORMAL, then LOW, and nobody is preempted",
         "test_queue_order", "gpupool.conf.example",
         {{"n1", 0, 10, "pool3", "normal"}, {"n2", 0, 20, "pool3", "normal"}, {"low", 1, 1000, "pool3", "low"},
          {"high1", 2, 20, "pool3", "high"}, {"normal", 3, 1000, "pool3", "normal"}, {"high2", 4, 20, "pool3", "high"}},
         "n1@0 n2@0 high1@10 high2@20 normal@30 low@40"},
        {"WF5 NORMAL preempts and requeues WF1 LOW; when WF2 ends, WF1 starts before WF3 and WF4",
         "test_osmo_preemption", "gpupool.conf.example",
         {{"wf1", 0, 600, "pool3", "low"}, {"wf2", 1, 19, "pool3", "normal"}, {"wf3", 2, 600, "pool3", "low"},
          {"wf4", 2, 600, "pool3", "low"}, {"wf5", 3, 600, "pool3", "normal"}},
         "wf1@0 wf2@1 wf5@3-wf1 wf1@20 wf3@603 wf4@620"},
        {"WF5 NORMAL of pool2 reclaims the GPU pool1's WF3 LOW borrowed; WF2 is untouched",
         "test_borrow_reclaim", "gpupool.conf.example",
         {{"wf1", 0, 1000, "pool1", "normal"}, {"wf2", 1, 1000, "pool1", "low"}, {"wf4", 2, 1000, "pool2", "normal"},
          {"wf3", 3, 1000, "pool1", "low"}, {"wf5", 4, 1000, "pool2", "normal"}},
         "wf1@0 wf2@1 wf4@2 wf3@3 wf5@4-wf3 wf3@1000"},
        {"a third NORMAL job of quota-2 pool1 waits while GPUs are free, LOW still starts on them, and the "
         "held job starts the moment a NORMAL job ends",
         "test_quota_hold", "gpupool.conf.example",
         {{"n1", 0, 50, "pool1", "normal"}, {"n2", 0, 1000, "pool1", "normal"}, {"n3", 1, 1000, "pool1", "normal"},
          {"l1", 2, 1000, "pool1", "low"}},
         "n1@0 n2@0 l1@2 n3@50"},
        {"LOW jobs of a pool at its quota are never preempted for another pool's job, which waits",
         "test_protection", "gpupool.conf.example",
         {{"l1", 0, 1000, "pool1", "low"}, {"l2", 0, 1000, "pool1", "low"}, {"n1", 0, 1000, "pool2", "normal"},
          {"p1", 0, 100, "plain", "normal"}, {"n2", 1, 1000, "pool2", "normal"}},
         "n1@0 p1@0 l1@0 l2@0 n2@100"},
        {"a job listing a full and a free pool starts in the free one; one listing two full pools waits and "
         "starts in the first whose quota frees",
         "test_multi_pool", "gpupool.conf.example",
         {{"n1", 0, 30, "pool1", "normal"}, {"n2", 0, 1000, "pool1", "normal"},
          {"m1", 1, 1000, "pool1,pool2", "normal"}, {"m2", 2, 1000, "pool2", "normal"},
          {"m3", 3, 1000, "pool1,pool2", "normal"}},
         "n1@0[pool1] n2@0[pool1] m1@1[pool2] m2@2[pool2] m3@30[pool1]", true},
        {"listing pool1 (at quota, GPUs free) and pool3 (its GPUs held by LOW jobs), a NORMAL job preempts a LOW "
         "job of pool3 rather than take a free GPU of pool1",
         "test_multi_pool", "gpupool.conf.example",
         {{"n1", 0, 1000, "pool1", "normal"}, {"n2", 0, 1000, "pool1", "normal"}, {"l1", 0, 1000, "pool3", "low"},
          {"l2", 0, 1000, "pool3", "low"}, {"m4", 1, 1000, "pool1,pool3", "normal"}},
         "n1@0[pool1] n2@0[pool1] l1@0[pool3] l2@0[pool3] m4@1[pool3]-l2", true},
        {"OSMO: WF5 of pool2 takes back its GPU from the newest borrower WF3, WF6 NORMAL evicts pool1's own LOW "
         "WF2, and at pool1's quota HIGH WF8 starts before NORMAL WF7",
         "test_example_osmo", "gpupool-osmo.conf",
         {{"wf1", 0, 100, "pool1", "normal"}, {"wf2", 1, 1000, "pool1", "low"}, {"wf4", 2, 1000, "pool2", "normal"},
          {"wf3", 3, 1000, "pool1", "low"}, {"wf5", 4, 1000, "pool2", "normal"}, {"wf6", 5, 1000, "pool1", "normal"},
          {"wf7", 6, 1000, "pool1", "normal"}, {"wf8", 7, 1000, "pool1", "high"}},
         "wf1@0 wf2@1 wf4@2 wf3@3 wf5@4-wf3 wf6@5-wf2 wf8@100"},
        {"Run:ai: an Interactive job of pool2 reclaims pool1's newest Train job; a Build job of pool1 then "
         "evicts pool1's newest remaining Train job, never pool2's",
         "test_example_runai", "gpupool-runai.conf",
         {{"t1", 0, 1000, "pool1", "train"}, {"t2", 1, 1000, "pool1", "train"}, {"t3", 2, 1000, "pool1", "train"},
          {"t4", 3, 1000, "pool1", "train"}, {"p2", 4, 1000, "pool2", "interactive"},
          {"b1", 5, 1000, "pool1", "build"}},
         "t1@0 t2@1 t3@2 t4@3 p2@4-t4 b1@5-t3"},
        {"Backend.AI: of two batch jobs the older is preempted and cancelled; of an older batch job and a newer "
         "scavenger job, the scavenger job goes first",
         "test_example_backendai", "gpupool-backendai.conf",
         {{"b1", 0, 1000, "pool3", "low"}, {"b2", 1, 1000, "pool3", "low"}, {"d1", 2, 8, "pool3", "normal"},
          {"s1", 11, 1000, "pool3", "scavenger"}, {"d2", 12, 1000, "pool3", "normal"}},
         "b1@0 b2@1 d1@2-b1 s1@11 d2@12-s1"},
    };
    return s;
}

}  // namespace

TEST(SimLiveScenarios, SameStartOrderAndVictimsAsTheLiveCluster) {
    const SimCluster c = live_cluster();
    for (const LiveScenario &sc : live_scenarios()) {
        SCOPED_TRACE(std::string(sc.live_test) + ": " + sc.sentence);
        const Workload w = workload_of(sc.jobs);
        const Config cfg = example(sc.conf);
        const std::string want = sc.starts;
        const size_t n = static_cast<size_t>(std::count(want.begin(), want.end(), ' ') + 1);
        for (bool reference : {false, true}) {
            ReplayOptions o;
            o.reference_walk = reference;
            const ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool, o);
            EXPECT_EQ(starts_of(r, c, w, n, sc.with_part), want) << (reference ? "reference walk" : "class walk");
            EXPECT_EQ(r.metrics.np_over_quota_seconds, 0);
        }
    }
}

TEST(SimLiveScenarios, BackendAiVictimsAreCancelledNotRequeued) {
    const SimCluster c = live_cluster();
    const LiveScenario &sc = live_scenarios().back();
    const Workload w = workload_of(sc.jobs);
    const ReplayResult r = run(c, w, example(sc.conf), PolicyKind::Gpupool);
    EXPECT_EQ(r.jobs[0].state, JobEnd::Cancelled);  // b1
    EXPECT_EQ(r.jobs[0].end, 2);
    EXPECT_EQ(r.jobs[3].state, JobEnd::Cancelled);  // s1
    EXPECT_EQ(r.metrics.cancelled, 2u);
    EXPECT_EQ(r.jobs[1].state, JobEnd::Completed);  // b2 ran on
    EXPECT_EQ(r.jobs[1].preemptions, 0u);
}

// Without a cluster: the sacct dump that
// test_sim_replays_sacct took on the live cluster under the example
// gpupool.conf (tests/unit/data/README.md) replays without error, preempts
// the jobs the cluster preempted, and makes every start, first starts and
// starts again after a requeue, in the order the cluster made them.
namespace {

// One of test_sim_replays_sacct's dumps in tests/unit/data; false: not there.
bool live_dump(const char *name, Workload &w) {
    const std::string path = srcdir() + "/tests/unit/data/" + name;
    if (!std::ifstream(path)) return false;
    w = read_sacct(path);
    return true;
}

// The ids of the jobs the replay preempted.
std::set<uint32_t> replay_victims(const Workload &w, const ReplayResult &r) {
    std::set<uint32_t> victims;
    for (const StartRecord &s : r.starts)
        for (uint32_t v : s.victims) victims.insert(w.jobs[v].id);
    return victims;
}

}  // namespace

TEST(SimLiveScenarios, ALiveDumpUnderOneConfigReplaysInTheRecordedStartOrder) {
    Workload w;
    if (!live_dump("sacct-sim-replay.txt", w)) GTEST_SKIP() << "sacct-sim-replay.txt not found";
    ASSERT_EQ(w.jobs.size(), 11u);
    EXPECT_EQ(w.notes, (std::vector<std::string>{
                           "3 jobs with several records (requeued): submit and recorded start from the first, run "
                           "time from the last run (e.g. 50161403, 50161404, 50161405)",
                       }));
    std::set<uint32_t> recorded_victims;
    for (const SimJob &j : w.jobs)
        if (!j.recorded_restarts.empty()) recorded_victims.insert(j.id);
    EXPECT_EQ(recorded_victims.size(), 3u);
    for (bool reference : {false, true}) {
        SCOPED_TRACE(reference ? "reference walk" : "class walk");
        ReplayOptions o;
        o.reference_walk = reference;
        const ReplayResult r = run(live_cluster(), w, example("gpupool.conf.example"), PolicyKind::Gpupool, o);
        EXPECT_EQ(replay_victims(w, r), recorded_victims);
        EXPECT_EQ(r.metrics.completed, 11u);
        const StartOrderCheck &c = r.order_check;
        EXPECT_EQ(c.jobs, 11u);
        EXPECT_EQ(c.starts, 14u);  // every first start and every start again
        EXPECT_EQ(c.unmatched_restarts, 0u);
        EXPECT_EQ(c.pairs, 74u);
        EXPECT_EQ(c.discordant, 0u);
        EXPECT_EQ(c.first_mismatch, -1);
    }
    // The check tells policies apart: without borrowing (strict quotas) or
    // without quotas (borrow), the same dump starts out of order.
    const StartOrderCheck strict =
        run(live_cluster(), w, example("gpupool.conf.example"), PolicyKind::Strict).order_check;
    EXPECT_EQ(strict.unmatched_restarts, 3u);  // nothing preempted
    EXPECT_EQ(strict.discordant, 3u);
    const StartOrderCheck borrow =
        run(live_cluster(), w, example("gpupool.conf.example"), PolicyKind::Borrow).order_check;
    EXPECT_EQ(borrow.discordant, 2u);
}

// Slurm 22.05 sometimes records no start for a run preempted in the second it
// started (Start None, resources allocated).  That run keeps its place:
// the job's second recorded start is paired with the replay's second start,
// and the lost one is compared with nothing.
TEST(SimLiveScenarios, ARunWhoseStartSlurmLostKeepsItsPlace) {
    Workload w;
    if (!live_dump("sacct-sim-replay-lost-start.txt", w)) GTEST_SKIP() << "sacct-sim-replay-lost-start.txt not found";
    ASSERT_EQ(w.jobs.size(), 11u);
    const SimJob *lost = nullptr;
    for (const SimJob &j : w.jobs)
        if (j.id == 58461976u) lost = &j;
    ASSERT_NE(lost, nullptr);
    EXPECT_EQ(lost->recorded_start, -1);
    EXPECT_EQ(lost->recorded_restarts, std::vector<int64_t>{1795904197});
    const ReplayResult r = run(live_cluster(), w, example("gpupool.conf.example"), PolicyKind::Gpupool);
    EXPECT_EQ(replay_victims(w, r), (std::set<uint32_t>{58461974u, 58461975u, 58461976u}));
    const StartOrderCheck &c = r.order_check;
    EXPECT_EQ(c.jobs, 11u);
    EXPECT_EQ(c.starts, 13u);  // 14 runs, one without a recorded start
    EXPECT_EQ(c.unmatched_restarts, 0u);
    EXPECT_EQ(c.discordant, 0u);
    EXPECT_EQ(c.first_mismatch, -1);
}

// --- what tells the baselines apart ------------------------------------------------

struct BaselineCase {
    const char *sentence;
    PolicyKind policy;
    std::vector<J> jobs;
    const char *starts;
};

TEST(SimBaselines, EachBaselinesDistinguishingBehaviour) {
    const SimCluster c = live_cluster();
    const Config cfg = example("gpupool.conf.example");
    const std::vector<J> protection = {{"l1", 0, 1000, "pool1", "low"},
                                       {"l2", 0, 1000, "pool1", "low"},
                                       {"n1", 0, 1000, "pool2", "normal"},
                                       {"p1", 0, 100, "plain", "normal"},
                                       {"n2", 1, 1000, "pool2", "normal"}};
    const std::vector<J> osmo = {{"wf1", 0, 600, "pool3", "low"},
                                 {"wf2", 1, 19, "pool3", "normal"},
                                 {"wf3", 2, 600, "pool3", "low"},
                                 {"wf4", 2, 600, "pool3", "low"},
                                 {"wf5", 3, 600, "pool3", "normal"}};
    const std::vector<J> three_low = {{"l1", 0, 100, "pool1", "low"},
                                      {"l2", 0, 200, "pool1", "low"},
                                      {"l3", 1, 100, "pool1", "low"}};
    const std::vector<J> tiers = {{"n1", 0, 10, "pool3", "normal"},    {"n2", 0, 20, "pool3", "normal"},
                                  {"low", 1, 1000, "pool3", "low"},    {"high1", 2, 20, "pool3", "high"},
                                  {"normal", 3, 1000, "pool3", "normal"}, {"high2", 4, 20, "pool3", "high"}};
    const std::vector<BaselineCase> cases = {
        {"gpupool: a LOW job borrows the free GPUs beyond its pool's quota", PolicyKind::Gpupool, three_low,
         "l1@0 l2@0 l3@1"},
        {"strict: a LOW job waits at its pool's quota (GrpTRES counts every tier) though GPUs are free",
         PolicyKind::Strict, three_low, "l1@0 l2@0 l3@100"},
        {"strict: nothing is preempted; the NORMAL job waits for the LOW job to end", PolicyKind::Strict, osmo,
         "wf1@0 wf2@1 wf5@20 wf3@600 wf4@620"},
        {"borrow: a NORMAL job preempts another pool's LOW job although that pool is within its quota (preempt/qos: "
         "lower QOS, fewer nodes, older job first)",
         PolicyKind::Borrow, protection, "n1@0 p1@0 l1@0 l2@0 n2@1-l1 l1@100"},
        {"borrow: a requeued job goes behind the jobs of its tier that became eligible before it (multifactor age "
         "restarts)",
         PolicyKind::Borrow, osmo, "wf1@0 wf2@1 wf5@3-wf1 wf3@20 wf4@603 wf1@620"},
        {"fifo: jobs start in submit order whatever their tier and quota, and nothing is preempted", PolicyKind::Fifo,
         tiers, "n1@0 n2@0 low@10 high1@20 normal@40 high2@1010"},
        {"strict: by tier, then age, within the quota", PolicyKind::Strict, tiers,
         "n1@0 n2@0 high1@10 high2@20 normal@30 low@40"},
    };
    for (const BaselineCase &bc : cases) {
        SCOPED_TRACE(bc.sentence);
        const Workload w = workload_of(bc.jobs);
        for (bool reference : {false, true}) {
            ReplayOptions o;
            o.reference_walk = reference;
            EXPECT_EQ(starts_of(run(c, w, cfg, bc.policy, o), c, w), bc.starts);
        }
    }
}

// --- requeue, cred_expire, MinRuntime ---------------------------------------------------

TEST(SimMechanics, RequeuedJobWaitsCredExpirePlusOneSecond) {
    // WF1 is preempted at 3.  With cred_expire 5 it may start at 9: a GPU
    // freed at 8 goes to WF3, one freed at 9 to WF1.
    const SimCluster c = live_cluster();
    const Config cfg = example("gpupool.conf.example");
    auto jobs = [](int64_t wf2_end) {
        return workload_of({{"wf1", 0, 600, "pool3", "low"},
                            {"wf2", 1, wf2_end - 1, "pool3", "normal"},
                            {"wf3", 2, 600, "pool3", "low"},
                            {"wf5", 3, 600, "pool3", "normal"}});
    };
    ReplayOptions o;
    o.cred_expire = 5;
    Workload w = jobs(8);
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 4), "wf1@0 wf2@1 wf5@3-wf1 wf3@8");
    w = jobs(9);
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 4), "wf1@0 wf2@1 wf5@3-wf1 wf1@9");
    o.cred_expire = 1200;  // Slurm's default: 1201 s
    ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool, o);
    EXPECT_EQ(starts_of(r, c, w, 5), "wf1@0 wf2@1 wf5@3-wf1 wf3@9 wf1@1204");
    // Its progress is lost: it runs its whole duration again, and the
    // requeue's wait counts.
    EXPECT_EQ(r.jobs[0].end, 1204 + 600);
    EXPECT_EQ(r.jobs[0].wait, 1204 - 3);
    EXPECT_EQ(r.jobs[0].lost_gpu_seconds, 3);
    EXPECT_EQ(r.jobs[0].first_start, 0);
}

// NORMAL over a preemptible LOW, no usage weight, and these pools.
Config normal_and_low(const std::string &pools) {
    return parse_config("Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
                        "DefaultTier=normal\nUsageWeight=0\n" +
                            pools,
                        "normal_and_low.conf");
}

TEST(SimMechanics, MinRuntimeDelaysTheReclaimToTheMomentItEnds) {
    // pool1's LOW jobs borrow pool2's GPU; pool1's MinRuntime (100 s)
    // protects them: pool2's NORMAL job, submitted at 10, reclaims at 100.
    SimCluster c;
    c.nodes = {{"a", 1}, {"b", 1}};
    c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=1 MinRuntime=01:40\nPool=pool2 Quota=1\n");
    const Workload w = workload_of(
        {{"x", 0, 1000, "pool1", "low"}, {"y", 0, 1000, "pool1", "low"}, {"n", 10, 1000, "pool2", "normal"}});
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
        SCOPED_TRACE(policy_name(k));
        const ReplayResult r = run(c, w, cfg, k);
        // x and y started in the same second: gpupool's newest-first takes
        // the later id (R6), the borrow baseline its own first candidate.
        EXPECT_EQ(starts_of(r, c, w, 3), k == PolicyKind::Gpupool ? "x@0 y@0 n@100-y" : "x@0 y@0 n@100-x");
        // pool2 had an NP job waiting that fit its quota from 10 to 100.
        EXPECT_EQ(r.metrics.below_quota_seconds, 90);
        EXPECT_EQ(r.metrics.pools[1].below_quota_seconds, 90);
        EXPECT_EQ(r.metrics.pools[0].below_quota_seconds, 0);
    }
}

TEST(SimMechanics, AKillDelayHoldsTheVictimsGpusAndThePreemptorStartsWhenItEnds) {
    // As MinRuntime's case without it: n preempts y at 10; with a kill
    // delay of 2 s y's GPU is completing until 12, when n starts.
    SimCluster c;
    c.nodes = {{"a", 1}, {"b", 1}};
    c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=1\nPool=pool2 Quota=1\n");
    const Workload w = workload_of(
        {{"x", 0, 1000, "pool1", "low"}, {"y", 0, 1000, "pool1", "low"}, {"n", 10, 1000, "pool2", "normal"}});
    ReplayOptions o;
    o.kill_delay = 2;
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
        SCOPED_TRACE(policy_name(k));
        const ReplayResult r = run(c, w, cfg, k, o);
        EXPECT_EQ(starts_of(r, c, w, 3), k == PolicyKind::Gpupool ? "x@0 y@0 n@12-y" : "x@0 y@0 n@12-x");
        EXPECT_EQ(r.metrics.pools[1].below_quota_seconds, 2);
        // The victim lost 10 s of work and may start again at 16 (cred_expire 5).
        const size_t v = k == PolicyKind::Gpupool ? 1 : 0;
        EXPECT_EQ(r.jobs[v].lost_gpu_seconds, 10);
        EXPECT_EQ(r.jobs[v].last_start, 1000);  // again when the other LOW job ends
    }
}

namespace {
// a has 2 GPUs, b 1.  pool1's LOW x (2 GPUs, all borrowed) runs on a;
// pool2's n2 (2 GPUs) comes at 10, n1 (1 GPU) at 11, when b is free.
struct MisfitWorld {
    SimCluster c;
    Config cfg = normal_and_low("Pool=pool1 Quota=0\nPool=pool2 Quota=3\n");
    Workload w = workload_of({{"x", 0, 1000, "pool1", "low", 2},
                              {"n2", 10, 1000, "pool2", "normal", 2},
                              {"n1", 11, 1000, "pool2", "normal", 1}});
    MisfitWorld() {
        c.nodes = {{"a", 2}, {"b", 1}};
        c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}};
    }
};
}  // namespace

TEST(SimMechanics, OnlyBackfillCyclesPreemptAndTheMainWalkStopsAPartitionAtItsFirstMisfit) {
    // a has 2 GPUs, b 1.  pool1's LOW x (2 GPUs, all borrowed) runs on a.
    // pool2's n2 (2 GPUs) comes at 10, n1 (1 GPU) at 11, when b is free.
    const MisfitWorld world;
    const SimCluster &c = world.c;
    const Config &cfg = world.cfg;
    const Workload &w = world.w;
    ReplayOptions o;
    // At once: n2 preempts x at 10, n1 takes b at 11.
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 3), "x@0 n2@10-x n1@11");
    // Backfill every 4 s: at 10 and 11 the main walk stops at n2, so n1
    // waits although b is free; the cycle at 12 preempts x for n2 and
    // starts n1; x's kill ends at 14 and n2 starts.
    o.kill_delay = 2;
    o.backfill_interval = 4;
    const ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool, o);
    EXPECT_EQ(starts_of(r, c, w, 3), "x@0 n1@12 n2@14-x");
    EXPECT_EQ(r.jobs[0].lost_gpu_seconds, 2 * 12);
}

TEST(SimMechanics, TheMainWalksFirstMisfitKeepsItsPartitionsNodesFromEveryPartition) {
    // Slurm's main scheduler takes a failed partition's nodes out of the
    // cycle for every later job, of any partition (job_scheduler.c,
    // fail_by_part, 22.05 to 26.05).  a has 2 GPUs, b and c 1; pool1 and
    // pool2 share a and b, pool3 has c.  pool1's LOW x (2 GPUs, 1 of them
    // borrowed) runs on a; pool2's n2 (2 GPUs) comes at 10; pool1's m and
    // pool3's k (1 GPU each, within quota) at 11, when b and c are free.
    SimCluster c;
    c.nodes = {{"a", 2}, {"b", 1}, {"c", 1}};
    c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}, {"pool3", {2}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=1\nPool=pool2 Quota=2\nPool=pool3 Quota=1\n");
    const Workload w = workload_of({{"x", 0, 1000, "pool1", "low", 2},
                                    {"n2", 10, 1000, "pool2", "normal", 2},
                                    {"m", 11, 1000, "pool1", "normal", 1},
                                    {"k", 11, 1000, "pool3", "normal", 1}});
    ReplayOptions o;
    // At once: n2 preempts x at 10; m and k start at 11.
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 4), "x@0 n2@10-x m@11 k@11");
    // Backfill every 4 s: at 11 the main walk fails pool2 at n2, so m
    // (pool1, on the same nodes) waits for the cycle at 12 although b is
    // free, and k (pool3, other nodes) starts; at 12 x is preempted for
    // n2 and m starts on b; x's kill ends at 14 and n2 starts.
    o.kill_delay = 2;
    o.backfill_interval = 4;
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 4), "x@0 k@11 m@12 n2@14-x");
}

TEST(SimMechanics, AJobThatCouldNeverFitAPartitionDoesNotFailIt) {
    // Slurm fails a partition only for a job that would fit its nodes were
    // they idle (ESLURM_NODES_BUSY).  a, c and d have 1 GPU each; pool1
    // and pool3 have a, pool2 c and d.  x holds pool2's two GPUs; big (2
    // GPUs) lists pool1, which it can never fit, and pool2, where it waits;
    // k (pool3) comes at 6.  Only pool2's nodes leave the main walk, so k
    // starts at once on a, not at the backfill cycle at 30.
    SimCluster c;
    c.nodes = {{"a", 1}, {"c", 1}, {"d", 1}};
    c.partitions = {{"pool1", {0}}, {"pool2", {1, 2}}, {"pool3", {0}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=1\nPool=pool2 Quota=2\nPool=pool3 Quota=1\n");
    const Workload w = workload_of({{"x", 0, 1000, "pool2", "normal", 2},
                                    {"big", 5, 1000, "pool1,pool2", "normal", 2},
                                    {"k", 6, 1000, "pool3", "normal", 1}});
    ReplayOptions o;
    o.kill_delay = 2;
    o.backfill_interval = 30;
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Borrow, o), c, w, 2), "x@0 k@6");
}

// preempt-bench's scenario, small: 4 x 8 GPUs busy with 32 LOW jobs of
// pool1 (16 of them borrowed from pool2), then NORMAL jobs of pool2
// submitted at `normal_at`, in order.
// Slurm's timing: a 2 s kill, a backfill cycle every 2 s.
struct BenchWorld {
    SimCluster cluster;
    Config cfg;
    Workload workload;
    ReplayOptions timing;
    ReplayResult run(PolicyKind k, const ReplayOptions &o) const { return replay(cluster, workload, cfg, k, o); }
};
BenchWorld bench_world(const std::vector<int64_t> &normal_at) {
    BenchWorld b;
    for (int i = 1; i <= 4; ++i) b.cluster.nodes.push_back(SimNode{"node" + std::to_string(i), 8});
    b.cluster.partitions = {{"pool1", {0, 1, 2, 3}}, {"pool2", {0, 1, 2, 3}}};
    b.cfg = normal_and_low("Pool=pool1 Quota=16\nPool=pool2 Quota=16\n");
    std::vector<J> jobs;
    for (int i = 0; i < 32; ++i) jobs.push_back({"l" + std::to_string(i), 0, 100000, "pool1", "low"});
    for (size_t k = 0; k < normal_at.size(); ++k)
        jobs.push_back({"n" + std::to_string(k), normal_at[k], 100000, "pool2", "normal"});
    b.workload = workload_of(jobs);
    b.timing.kill_delay = 2;
    b.timing.backfill_interval = 2;
    return b;
}
// How many NORMAL jobs of a bench world first started at each instant;
// none of them is preempted.
std::map<int64_t, int> normal_starts(const ReplayResult &r) {
    std::map<int64_t, int> starts;
    for (size_t j = 32; j < r.jobs.size(); ++j) {
        starts[r.jobs[j].first_start]++;
        EXPECT_EQ(r.jobs[j].preemptions, 0);
    }
    return starts;
}

TEST(SimMechanics, PreemptBenchsScenarioStartsInTwoBackfillWavesPlusTheKillDelay) {
    // scripts/preempt-bench-sim.sh's scenario, small: 4 x 8 GPUs busy with
    // pool1's LOW jobs (16 borrowed from pool2), 16 NORMAL jobs of pool2
    // come at 100 (10) and 101 (6).  As Slurm times it (kill 2 s, backfill
    // every 2 s).  A cycle preempts for four, one per node, each wave 2 s
    // after the last: backfill holds a preemptor's node for the rest of its
    // cycle, whatever the preempt plugin offers (native, borrow), and two
    // gpupool preemptors never plan the same node anyway.  Live at 32 x 13
    // (DebugFlags=Backfill, tests/unit/data/preempt-bench/22.05-4gpu-c):
    // each preemptor of a cycle finds one node fewer "avail", 32 in the
    // first cycle, both modes.
    std::vector<int64_t> submits(16, 100);
    std::fill(submits.begin() + 10, submits.end(), 101);
    const BenchWorld b = bench_world(submits);
    ReplayOptions o = b.timing;
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
        SCOPED_TRACE(policy_name(k));
        const ReplayResult r = b.run(k, o);
        EXPECT_EQ(normal_starts(r), (std::map<int64_t, int>{{102, 4}, {104, 4}, {106, 4}, {108, 4}}));
        // One victim per preemptor, named at its start.
        for (const StartRecord &s : r.starts)
            if (s.job >= 32) {
                EXPECT_EQ(s.victims.size(), 1u) << b.workload.jobs[s.job].label;
            }
    }
    // A backfill cycle that may preempt for 3 jobs at most (Slurm's cycle
    // yields its locks): native's waves are 3 a cycle.
    o.backfill_preemptions = 3;
    EXPECT_EQ(normal_starts(b.run(PolicyKind::Borrow, o)),
              (std::map<int64_t, int>{{102, 3}, {104, 3}, {106, 3}, {108, 3}, {110, 3}, {112, 1}}));
}

TEST(SimMechanics, ABackfillCyclesLaterPreemptorsPreemptLaterByTheSpacing) {
    // 4 x 8 GPUs busy with pool1's LOW jobs, four NORMAL jobs of pool2 at
    // 100: the cycle at 100 preempts for all four, one a node.  A live
    // cycle tests its jobs in turn, so its k-th preemptor preempts k x the
    // spacing after its start: with 1 s each kill (2 s) ends a second
    // after the last, with 0.5 s at 0, 0.5, 1 and 1.5 s (whole seconds,
    // half up).
    const BenchWorld b = bench_world(std::vector<int64_t>(4, 100));
    ReplayOptions o = b.timing;
    for (const auto &[spacing, want] : {std::pair<int64_t, std::map<int64_t, int>>{0, {{102, 4}}},
                                        {1000, {{102, 1}, {103, 1}, {104, 1}, {105, 1}}},
                                        {500, {{102, 1}, {103, 2}, {104, 1}}}}) {
        SCOPED_TRACE(spacing);
        o.backfill_spacing_milli = spacing;
        for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
            SCOPED_TRACE(policy_name(k));
            EXPECT_EQ(normal_starts(b.run(k, o)), want);
        }
    }
}

// --- metrics, by hand --------------------------------------------------------------------

namespace {
SimCluster one_partition(int nodes, uint32_t gpus) {
    SimCluster c;
    SimPartition p{"p", {}};
    for (int i = 0; i < nodes; ++i) {
        c.nodes.push_back(SimNode{"n" + std::to_string(i), gpus});
        p.nodes.push_back(static_cast<uint32_t>(i));
    }
    c.partitions.push_back(p);
    return c;
}
Config one_pool(uint32_t quota) { return normal_and_low("Pool=p Quota=" + std::to_string(quota) + "\n"); }
}  // namespace

TEST(SimMetrics, UtilisationIsBusyGpuSecondsOverGpusTimesSpan) {
    // 2 GPUs for 100 s; jobs hold 1 GPU for 100 s and 1 for 50 s.
    const SimCluster c = one_partition(2, 1);
    const Workload w = workload_of({{"a", 0, 100, "p", "normal"}, {"b", 0, 50, "p", "normal"}});
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Strict, PolicyKind::Borrow, PolicyKind::Fifo}) {
        const Metrics m = run(c, w, one_pool(2), k).metrics;
        EXPECT_EQ(m.begin, 0);
        EXPECT_EQ(m.end, 100);
        EXPECT_DOUBLE_EQ(m.busy_gpu_seconds, 150);
        EXPECT_DOUBLE_EQ(m.utilisation, 0.75) << policy_name(k);
        EXPECT_DOUBLE_EQ(m.utilisation_useful, 0.75) << policy_name(k);  // nothing preempted
    }
}

TEST(SimMetrics, UtilisationWhileJobsWaitCountsOnlyTheSecondsSomeJobIsPending) {
    // 2 GPUs, quota 1: b waits for a's end under gpupool (0..100, one GPU
    // of two busy) and runs at once under borrowing (no quota): nothing
    // waits.
    const SimCluster c = one_partition(2, 1);
    const Workload w = workload_of({{"a", 0, 100, "p", "normal"}, {"b", 0, 50, "p", "normal"}});
    const Metrics held = run(c, w, one_pool(1), PolicyKind::Gpupool).metrics;
    EXPECT_EQ(held.waiting_seconds, 100);
    EXPECT_DOUBLE_EQ(held.utilisation_waiting, 0.5);
    EXPECT_DOUBLE_EQ(held.utilisation, 150.0 / (2 * 150));
    const Metrics borrowed = run(c, w, one_pool(1), PolicyKind::Borrow).metrics;
    EXPECT_EQ(borrowed.waiting_seconds, 0);
    EXPECT_DOUBLE_EQ(borrowed.utilisation_waiting, 0);
}

TEST(SimMetrics, UtilisationWhileTheWorkloadArrivesEndsAtTheLastSubmit) {
    // 2 GPUs: a holds one 0..100, b (submitted at 40) the other 40..50.
    // Up to the last submit (40) one GPU of two is busy; over the whole
    // replay 110 of 200 GPU-seconds.
    const SimCluster c = one_partition(2, 1);
    const Workload w = workload_of({{"a", 0, 100, "p", "normal"}, {"b", 40, 10, "p", "normal"}});
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
        const Metrics m = run(c, w, one_pool(2), k).metrics;
        EXPECT_EQ(m.arriving_seconds, 40) << policy_name(k);
        EXPECT_DOUBLE_EQ(m.utilisation_arriving, 0.5) << policy_name(k);
        EXPECT_DOUBLE_EQ(m.utilisation, 0.55) << policy_name(k);
    }
    // Every job submitted at once: no span to measure.
    const Workload at_once = workload_of({{"a", 0, 100, "p", "normal"}, {"b", 0, 10, "p", "normal"}});
    const Metrics m = run(c, at_once, one_pool(2), PolicyKind::Gpupool).metrics;
    EXPECT_EQ(m.arriving_seconds, 0);
    EXPECT_DOUBLE_EQ(m.utilisation_arriving, 0);
}

TEST(SimMetrics, AJobThatCanNeverStartDoesNotCountAsWaitingAJobOfAPartitionWithNoPoolDoes) {
    // One GPU, partition p (a pool) and q (none) over it: a runs 0..100 in
    // p, c (q) waits for it and runs 100..110; big asks 2 GPUs and never
    // starts.
    SimCluster c = one_partition(1, 1);
    c.partitions.push_back(SimPartition{"q", {0}});
    Workload w = workload_of({{"a", 0, 100, "p", "normal"}, {"c", 0, 10, "q", "normal"}, {"big", 0, 10, "p", "normal"}});
    w.jobs[2].gpus = 2;
    const Metrics m = run(c, w, one_pool(1), PolicyKind::Fifo).metrics;
    EXPECT_EQ(m.never_started, 1u);
    EXPECT_EQ(m.waiting_seconds, 100);
    EXPECT_DOUBLE_EQ(m.utilisation_waiting, 1.0);
}

TEST(SimMetrics, WaitPercentilesByNearestRank) {
    // One GPU: a 0..10, b 10..20, c 20..30, d (submitted at 5) 30..40:
    // waits 0, 10, 20, 25.
    const SimCluster c = one_partition(1, 1);
    const Workload w = workload_of({{"a", 0, 10, "p", "normal"},
                                    {"b", 0, 10, "p", "normal"},
                                    {"c", 0, 10, "p", "normal"},
                                    {"d", 5, 10, "p", "normal"}});
    const Metrics m = run(c, w, one_pool(1), PolicyKind::Gpupool).metrics;
    EXPECT_EQ(m.wait.jobs, 4u);
    EXPECT_EQ(m.wait.p50, 10);
    EXPECT_EQ(m.wait.p95, 25);
    EXPECT_EQ(m.wait.p99, 25);
    EXPECT_EQ(m.wait.max, 25);
    EXPECT_DOUBLE_EQ(m.wait.mean, 13.75);
    ASSERT_EQ(m.tiers.size(), 2u);
    EXPECT_EQ(m.tiers[0].jobs, 4u);
    EXPECT_EQ(m.tiers[0].wait.p50, 10);
    EXPECT_EQ(m.tiers[1].jobs, 0u);
    ASSERT_EQ(m.pools.size(), 1u);
    EXPECT_EQ(m.pools[0].wait.p95, 25);

    std::vector<int64_t> v;
    for (int i = 100; i >= 1; --i) v.push_back(i);
    const Percentiles p = percentiles(v);
    EXPECT_EQ(p.p50, 50);
    EXPECT_EQ(p.p95, 95);
    EXPECT_EQ(p.p99, 99);
    EXPECT_EQ(p.max, 100);
}

TEST(SimMetrics, EachJobSizeKeepsItsOwnWaitFromTheMomentItFitsItsQuota) {
    // One node of 3 GPUs; x (partition q, no pool) holds 2 of them 0..100.
    // two (2 GPUs, pool p, quota 3) fits its quota at 1 and waits for x's
    // GPUs until 100 (99 s); late (1 GPU) comes at 200 and starts at once.
    // The longer wait is recorded first: split by size after all the waits
    // were sorted, it went to the 1-GPU job (found 2026-12-03).
    SimCluster c = one_partition(1, 3);
    c.partitions.push_back(SimPartition{"q", {0}});
    Workload w = workload_of({{"x", 0, 100, "q", "normal", 2},
                              {"two", 1, 500, "p", "normal", 2},
                              {"late", 200, 10, "p", "normal", 1}});
    const Metrics m = run(c, w, one_pool(3), PolicyKind::Gpupool).metrics;
    EXPECT_EQ(m.within_quota_wait.jobs, 2u);
    EXPECT_EQ(m.within_quota_wait.max, 99);
    ASSERT_EQ(m.within_quota_wait_by_gpus.size(), 2u);
    EXPECT_EQ(m.within_quota_wait_by_gpus.at(2).jobs, 1u);
    EXPECT_EQ(m.within_quota_wait_by_gpus.at(2).max, 99);
    EXPECT_EQ(m.within_quota_wait_by_gpus.at(1).jobs, 1u);
    EXPECT_EQ(m.within_quota_wait_by_gpus.at(1).max, 0);
    EXPECT_EQ(m.within_quota_prompt, 1u);
}

TEST(SimMetrics, AJobThatStartsPastALargerOneAheadOfItWasNotWithinQuota) {
    // One node of 8 GPUs; partition q (no pool) holds 7 with x (0..100) and
    // 1 with y (0..50).  Pool p (quota 8): big (8 GPUs, at 0) fits its
    // quota and waits for the node; small (1 GPU, at 10) does not fit
    // after big, yet borrowing starts it on y's GPU at 50.  It is not a
    // within-quota job (it was recorded as one that started at once).
    SimCluster c = one_partition(1, 8);
    c.partitions.push_back(SimPartition{"q", {0}});
    Workload w = workload_of({{"x", 0, 100, "q", "normal", 7},
                              {"y", 0, 50, "q", "normal", 1},
                              {"big", 0, 30, "p", "normal", 8},
                              {"small", 10, 20, "p", "normal", 1}});
    const Metrics m = run(c, w, one_pool(8), PolicyKind::Borrow).metrics;
    EXPECT_EQ(m.within_quota_wait.jobs, 1u);
    ASSERT_EQ(m.within_quota_wait_by_gpus.count(8), 1u);
    EXPECT_EQ(m.within_quota_wait_by_gpus.at(8).max, 100);
    EXPECT_EQ(m.within_quota_wait_by_gpus.count(1), 0u);
    EXPECT_EQ(m.within_quota_prompt, 0u);
}

TEST(SimMetrics, AJobNoPartitionCanHoldIsNeitherWithinQuotaNorDemandItsPoolWaitsOn) {
    // Two nodes of 1 GPU, quota 5: a runs 0..100 and b 0..110; three (3
    // GPUs, more than the partition has) comes at 100 and never starts.
    // It is no within-quota job and no demand: the pool never waits under
    // its quota (it did for 10 s, 100..110, when three counted).
    const SimCluster c = one_partition(2, 1);
    Workload w = workload_of(
        {{"a", 0, 100, "p", "normal"}, {"b", 0, 110, "p", "normal"}, {"three", 100, 10, "p", "normal", 3}});
    ReplayOptions o;
    o.kill_delay = 20;
    const Metrics m = run(c, w, one_pool(5), PolicyKind::Gpupool, o).metrics;
    EXPECT_EQ(m.never_started, 1u);
    EXPECT_EQ(m.within_quota_wait.jobs, 2u);
    EXPECT_EQ(m.within_quota_prompt, 2u);
    EXPECT_EQ(m.below_quota_seconds, 0);
    EXPECT_EQ(m.pools[0].below_quota_seconds, 0);
}

TEST(SimMetrics, AJobIsNoDemandInAPoolWhosePartitionCannotHoldIt) {
    // p has one 1-GPU node, q one 4-GPU node; big (2 GPUs) lists both and
    // can only ever run in q, where fill holds q's quota until 100.  p
    // never waits under its quota for big, and big is within quota (in q)
    // from 100, when it starts (p counted 99 s below quota, and big waited
    // 99 s within quota, when every listed pool counted).
    SimCluster c;
    c.nodes = {SimNode{"n0", 1}, SimNode{"n1", 4}};
    c.partitions = {SimPartition{"p", {0}}, SimPartition{"q", {1}}};
    const Workload w = workload_of({{"fill", 0, 100, "q", "normal", 4}, {"big", 1, 10, "p,q", "normal", 2}});
    const ReplayResult r = run(c, w, normal_and_low("Pool=p Quota=5\nPool=q Quota=4\n"), PolicyKind::Gpupool);
    EXPECT_EQ(starts_of(r, c, w), "fill@0 big@100");
    EXPECT_EQ(r.metrics.pools[0].below_quota_seconds, 0);
    EXPECT_EQ(r.metrics.below_quota_seconds, 0);
    EXPECT_EQ(r.metrics.within_quota_wait.jobs, 2u);
    EXPECT_EQ(r.metrics.within_quota_wait.max, 0);
}

TEST(SimMetrics, WorkLostCountsInThePoolWhosePartitionPreemptedTheJob) {
    // n0 is in p and q, n1 in p only; p's quota is 2, q's 0.  low (q
    // first, then p) borrows n0 in q; at 100 p's two NORMAL jobs take n1
    // and reclaim n0.  low starts again at 200 in p, on n1, and ends there:
    // the 100 GPU-seconds it lost were q's, not p's.
    SimCluster c;
    c.nodes = {SimNode{"n0", 1}, SimNode{"n1", 1}};
    c.partitions = {SimPartition{"p", {0, 1}}, SimPartition{"q", {0}}};
    const Config cfg = normal_and_low("Pool=p Quota=2\nPool=q Quota=0\n");
    const Workload w = workload_of({{"low", 0, 1000, "q,p", "low"},
                                    {"nrm1", 100, 100, "p", "normal"},
                                    {"nrm2", 100, 400, "p", "normal"}});
    const ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool);
    EXPECT_EQ(starts_of(r, c, w, SIZE_MAX, true), "low@0[q] nrm1@100[p] nrm2@100[p]-low low@200[p]");
    EXPECT_EQ(r.metrics.preemptions, 1u);
    EXPECT_DOUBLE_EQ(r.metrics.lost_gpu_hours, 100.0 / 3600.0);
    EXPECT_EQ(r.metrics.pools[0].preemptions, 0u);
    EXPECT_DOUBLE_EQ(r.metrics.pools[0].lost_gpu_hours, 0.0);
    EXPECT_EQ(r.metrics.pools[1].preemptions, 1u);
    EXPECT_DOUBLE_EQ(r.metrics.pools[1].lost_gpu_hours, 100.0 / 3600.0);
    EXPECT_EQ(r.metrics.pools[0].jobs, 3u);  // low ran last in p
}

TEST(SimMetrics, PreemptionCountAndGpuHoursLost) {
    // A 2-GPU LOW job runs an hour, then a 2-GPU NORMAL job preempts it:
    // 2 GPU-hours lost.  It comes back when the NORMAL job ends.
    const SimCluster c = one_partition(1, 2);
    const Workload w = workload_of({{"low", 0, 10000, "p", "low", 2}, {"nrm", 3600, 100, "p", "normal", 2}});
    for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Borrow}) {
        SCOPED_TRACE(policy_name(k));
        const ReplayResult r = run(c, w, one_pool(2), k);
        EXPECT_EQ(starts_of(r, c, w), "low@0 nrm@3600-low low@3700");
        EXPECT_EQ(r.metrics.preemptions, 1u);
        EXPECT_DOUBLE_EQ(r.metrics.lost_gpu_hours, 2.0);
        EXPECT_EQ(r.jobs[0].lost_gpu_seconds, 7200);
        EXPECT_EQ(r.jobs[0].wait, 100);
        EXPECT_EQ(r.jobs[0].end, 3700 + 10000);
        EXPECT_DOUBLE_EQ(r.metrics.pools[0].lost_gpu_hours, 2.0);
        // Both GPUs busy for 13,700 s, 7,200 GPU-seconds of it thrown away.
        EXPECT_DOUBLE_EQ(r.metrics.utilisation, 1.0);
        EXPECT_DOUBLE_EQ(r.metrics.utilisation_useful, 20200.0 / 27400.0);
    }
}

TEST(SimMetrics, NonPreemptibleUsageOverQuotaSeconds) {
    // Quota 1, two NORMAL jobs of 100 s on 2 GPUs: FIFO and borrow run
    // both (100 s over quota); gpupool and strict run them one after the
    // other (0 s).
    const SimCluster c = one_partition(2, 1);
    const Workload w = workload_of({{"a", 0, 100, "p", "normal"}, {"b", 0, 100, "p", "normal"}});
    EXPECT_EQ(run(c, w, one_pool(1), PolicyKind::Fifo).metrics.np_over_quota_seconds, 100);
    EXPECT_EQ(run(c, w, one_pool(1), PolicyKind::Borrow).metrics.pools[0].np_over_quota_seconds, 100);
    EXPECT_EQ(run(c, w, one_pool(1), PolicyKind::Gpupool).metrics.np_over_quota_seconds, 0);
    EXPECT_EQ(run(c, w, one_pool(1), PolicyKind::Strict).metrics.np_over_quota_seconds, 0);
    // The second waits 100 s, but never below quota: the first fills it.
    EXPECT_EQ(run(c, w, one_pool(1), PolicyKind::Gpupool).metrics.below_quota_seconds, 0);
}

TEST(SimMetrics, ShareAgainstFairshareAndJain) {
    EXPECT_DOUBLE_EQ(jain_index({1, 1}), 1.0);
    EXPECT_DOUBLE_EQ(jain_index({1, 0}), 0.5);
    EXPECT_DOUBLE_EQ(jain_index({2, 1}), 0.9);
    EXPECT_DOUBLE_EQ(jain_index({}), 0.0);

    // Two pools of quota 1 over 2 GPUs.  From 0 to 100 pool a runs 2 LOW
    // jobs and pool b asks nothing: one pool asking, no Jain sample; a's
    // share is 2/min(fairshare 2, demand 2) = 1.  From 100 to 200 both run
    // one job: shares 1 and 1, Jain 1.
    SimCluster c;
    c.nodes = {{"n0", 1}, {"n1", 1}};
    c.partitions = {{"a", {0, 1}}, {"b", {0, 1}}};
    const Config cfg = normal_and_low("Pool=a Quota=1\nPool=b Quota=1\n");
    const Workload w = workload_of({{"a1", 0, 200, "a", "low"},
                                    {"a2", 0, 100, "a", "low"},
                                    {"b1", 100, 100, "b", "normal"}});
    ReplayOptions o;
    o.sample_interval = 50;
    const ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool, o);
    EXPECT_EQ(starts_of(r, c, w), "a1@0 a2@0 b1@100");
    ASSERT_EQ(r.samples.size(), 8u);  // 0, 50, 100, 150 for both pools
    EXPECT_EQ(r.samples[0].used, 2u);
    EXPECT_EQ(r.samples[0].fairshare, 2u);
    EXPECT_EQ(r.samples[1].fairshare, 0u + 1u);  // b: its quota, asking nothing
    EXPECT_EQ(r.metrics.samples, 4u);
    EXPECT_DOUBLE_EQ(r.metrics.pools[0].mean_share, 1.0);
    EXPECT_DOUBLE_EQ(r.metrics.pools[1].mean_share, 1.0);
    EXPECT_DOUBLE_EQ(r.metrics.jain, 1.0);
    EXPECT_DOUBLE_EQ(r.metrics.pools[0].mean_used, 1.5);
}

TEST(SimMetrics, StartOrderAgainstTheRecordedOne) {
    // Recorded a@0 b@10 c@20; replayed a@0 b@20 c@10: b and c swapped.
    Workload w = workload_of({{"a", 0, 10, "p", "normal"}, {"b", 0, 10, "p", "normal"}, {"c", 0, 10, "p", "normal"}});
    std::vector<JobOutcome> out(3);
    out[0].first_start = 0;
    out[1].first_start = 20;
    out[2].first_start = 10;
    w.jobs[0].recorded_start = 0;
    w.jobs[1].recorded_start = 10;
    w.jobs[2].recorded_start = 20;
    StartOrderCheck chk = check_start_order(w, out, {}, 0);
    EXPECT_EQ(chk.jobs, 3u);
    EXPECT_EQ(chk.pairs, 3u);
    EXPECT_EQ(chk.discordant, 1u);
    EXPECT_EQ(chk.first_mismatch, 2);
    // Recorded in the same second: no order to keep.
    w.jobs[2].recorded_start = 10;
    chk = check_start_order(w, out, {}, 0);
    EXPECT_EQ(chk.pairs, 2u);
    EXPECT_EQ(chk.discordant, 0u);
    // With a tolerance of 10 s, starts 10 s apart are simultaneous.
    w.jobs[2].recorded_start = 20;
    chk = check_start_order(w, out, {}, 10);
    EXPECT_EQ(chk.pairs, 1u);  // a, c
    EXPECT_EQ(chk.discordant, 0u);
    EXPECT_EQ(chk.first_mismatch, -1);
    out[0].first_start = 21;  // a replayed 11 s after c, recorded 20 s before it
    chk = check_start_order(w, out, {}, 10);
    EXPECT_EQ(chk.discordant, 1u);
    EXPECT_EQ(chk.first_mismatch, 2);
}

TEST(SimMetrics, RestartsAreComparedWithTheRecordedRestartsInTurn) {
    // Recorded: a@0, b@10, a again@30, c@40; replayed: a@0, b@10, c@20, a
    // again@50: a's restart and c swapped.
    Workload w = workload_of({{"a", 0, 10, "p", "low"}, {"b", 0, 10, "p", "normal"}, {"c", 0, 10, "p", "normal"}});
    std::vector<JobOutcome> out(3);
    out[0].first_start = 0;
    out[1].first_start = 10;
    out[2].first_start = 20;
    w.jobs[0].recorded_start = 0;
    w.jobs[0].recorded_restarts = {30};
    w.jobs[1].recorded_start = 10;
    w.jobs[2].recorded_start = 40;
    StartOrderCheck chk = check_start_order(w, out, {{0, 50}}, 0);
    EXPECT_EQ(chk.jobs, 3u);
    EXPECT_EQ(chk.starts, 4u);
    EXPECT_EQ(chk.unmatched_restarts, 0u);
    EXPECT_EQ(chk.pairs, 6u);
    EXPECT_EQ(chk.discordant, 1u);
    EXPECT_EQ(chk.first_mismatch, 2);  // c
    // Replayed again at 15, before c: in order.
    chk = check_start_order(w, out, {{0, 15}}, 0);
    EXPECT_EQ(chk.discordant, 0u);
    // A restart only the replay has, and one only the record has, are not
    // compared but counted.
    chk = check_start_order(w, out, {{0, 15}, {1, 60}}, 0);
    EXPECT_EQ(chk.starts, 4u);
    EXPECT_EQ(chk.unmatched_restarts, 1u);
    chk = check_start_order(w, out, {}, 0);
    EXPECT_EQ(chk.starts, 3u);
    EXPECT_EQ(chk.unmatched_restarts, 1u);
    EXPECT_EQ(chk.discordant, 0u);
}

// --- the fast walk against the reference walk --------------------------------------------

TEST(SimProperty, ClassWalkStartsWhatTheReferenceWalkStarts) {
    // Random small clusters and workloads: overlapping pools, a pool of its
    // own, an unmanaged partition, multi-pool jobs, jobs spanning nodes,
    // MinRuntime; every policy.
    for (uint32_t seed = 1; seed <= 100; ++seed) {
        std::mt19937 rng(seed);
        SimCluster c;
        const int nodes = 3 + static_cast<int>(rng() % 4);
        for (int i = 0; i < nodes; ++i) c.nodes.push_back(SimNode{"n" + std::to_string(i), static_cast<uint32_t>(1 + rng() % 4)});
        std::vector<uint32_t> all, some;
        for (int i = 0; i < nodes; ++i) {
            all.push_back(static_cast<uint32_t>(i));
            if (i >= nodes / 2) some.push_back(static_cast<uint32_t>(i));
        }
        c.partitions = {{"a", all}, {"b", all}, {"c", some}, {"free", all}};
        const Config cfg = parse_config(
            std::string("Tier=high QOS=high Priority=300 Preemptible=no\n"
                        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
                        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
                        "DefaultTier=normal\nUsageWeight=0\n") +
                (seed % 2 ? "ReclaimBy=all\nPreemptionOrder=oldest\n" : "") + "Pool=a Quota=" +
                std::to_string(1 + rng() % 4) + "\nPool=b Quota=" + std::to_string(1 + rng() % 4) +
                " MinRuntime=00:30\nPool=c Quota=" + std::to_string(1 + rng() % 3) + "\n",
            "prop.conf");
        std::vector<J> jobs;
        const char *parts[] = {"a", "b", "c", "free", "a,b", "a,c"};
        const char *qos[] = {"high", "normal", "mid", "low", "low"};
        int64_t t = 0;
        for (int k = 0; k < 150; ++k) {
            t += rng() % 20;
            jobs.push_back(J{"j" + std::to_string(k), t, 1 + static_cast<int64_t>(rng() % 300), parts[rng() % 6],
                             qos[rng() % 5], static_cast<uint32_t>(1 + rng() % 5)});
        }
        const Workload w = workload_of(jobs);
        for (PolicyKind k : {PolicyKind::Gpupool, PolicyKind::Strict, PolicyKind::Borrow, PolicyKind::Fifo}) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " " + policy_name(k));
            ReplayOptions fast, ref;
            if (seed % 5 == 0) {
                // The caps of huge replays: fewer passes, batched walks.
                fast.pass_interval = ref.pass_interval = 30;
                fast.sched_interval = ref.sched_interval = 10;
            }
            if (seed % 3 == 0 && seed % 5 != 0) {
                // Preemption as Slurm times it (not with the caps: refused).
                fast.kill_delay = ref.kill_delay = 2;
                fast.backfill_interval = ref.backfill_interval = 2 + seed % 2;
                fast.backfill_preemptions = ref.backfill_preemptions = seed % 4;
                // Cycles end soon (see below).
                fast.max_requeues = ref.max_requeues = 20;
            }
            ref.reference_walk = true;
            // Least loaded nodes (LLN) in a quarter of the worlds.  With
            // pack the walks part in one timed world (seed 69: a job that
            // preempted before sits behind a failed member of its class,
            // and trying it moves the plans of the jobs after it): open.
            if (seed % 4 == 2) fast.placement = ref.placement = ReplayOptions::Placement::Spread;
            const ReplayResult a = run(c, w, cfg, k, fast), b = run(c, w, cfg, k, ref);
            ASSERT_EQ(starts_of(a, c, w, SIZE_MAX, true), starts_of(b, c, w, SIZE_MAX, true));
            if (k != PolicyKind::Borrow && k != PolicyKind::Fifo) {
                EXPECT_EQ(a.metrics.np_over_quota_seconds, 0);
            }
            // No preemption cycle, also timed as Slurm times it (ReclaimBy=all:
            // engine_test ReclaimCycle).  Timed worlds used to cycle with
            // ReclaimBy=all, 4 of 27 and 8 once the main walk took a failed
            // partition's nodes from every partition: a LOW job reclaimed
            // from a MID borrower, a MID job ordered before it took the GPUs
            // it freed and was reclaimed in turn.  A waiting preemptible
            // preemptor now goes before every preemptible tier (R1.1).
            if (k == PolicyKind::Gpupool) {
                EXPECT_EQ(a.metrics.requeue_limit, 0u);
            }
        }
    }
}

// --- reports and the command ----------------------------------------------------------------

TEST(SimReport, JsonHasTheDocumentedFields) {
    const SimCluster c = live_cluster();
    const LiveScenario &sc = live_scenarios()[1];
    const Workload w = workload_of(sc.jobs);
    const Config cfg = example(sc.conf);
    std::vector<ReplayResult> results;
    for (PolicyKind k : parse_policies("all")) results.push_back(run(c, w, cfg, k));
    RunInfo info;
    std::ostringstream js;
    write_json(js, c, w, cfg, info, results);
    for (const char *key : {"\"version\": 1", "\"cluster\"", "\"workload\"", "\"options\"", "\"config\"",
                            "\"policies\"", "\"policy\": \"gpupool\"", "\"policy\": \"fifo\"", "\"utilisation\"",
                            "\"wait\"", "\"p50\"", "\"p95\"", "\"p99\"", "\"preemptions\"", "\"lost_gpu_hours\"",
                            "\"np_over_quota_seconds\"", "\"below_quota_seconds\"", "\"jain\"", "\"tiers\"",
                            "\"pools\"", "\"mean_share\"", "\"start_order\"", "\"stats\""})
        EXPECT_NE(js.str().find(key), std::string::npos) << key;
    std::ostringstream text, jobs, log;
    write_text(text, c, w, cfg, info, results);
    EXPECT_NE(text.str().find("POLICY"), std::string::npos);
    write_jobs_csv(jobs, c, w, cfg, results);
    EXPECT_EQ(jobs.str().substr(0, jobs.str().find('\n')),
              "policy,job_id,label,pool,tier,gpus,submit,first_start,last_start,end,wait,preemptions,"
              "lost_gpu_seconds,state");
    EXPECT_NE(jobs.str().find("\ngpupool,1,wf1,pool3,low,1,0,0,20,620,17,1,3,completed\n"), std::string::npos)
        << jobs.str();
    ReplayOptions o;
    o.start_log = true;
    std::vector<ReplayResult> one{run(c, w, cfg, PolicyKind::Gpupool, o)};
    write_start_log(log, c, w, one);
    EXPECT_NE(log.str().find("gpupool,3,3,5,wf5,pool3,1,node5\n"), std::string::npos) << log.str();
    EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
}

namespace {
void collect_keys(json_t *j, std::set<std::string> &keys) {
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach(j, k, v) {
            keys.insert(k);
            collect_keys(v, keys);
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) collect_keys(v, keys);
    }
}
}  // namespace

TEST(SimReport, GpupoolManPageDocumentsEveryJsonField) {
    const SimCluster c = live_cluster();
    const LiveScenario &sc = live_scenarios()[1];
    Workload w = workload_of(sc.jobs);
    w.jobs[0].recorded_start = 0;
    w.jobs[1].recorded_start = 1;
    const Config cfg = example(sc.conf);
    std::vector<ReplayResult> results;
    for (PolicyKind k : parse_policies("all")) results.push_back(run(c, w, cfg, k));
    std::ostringstream js;
    write_json(js, c, w, cfg, RunInfo{}, results);
    json_error_t jerr;
    json_t *root = json_loads(js.str().c_str(), 0, &jerr);
    ASSERT_TRUE(root) << jerr.text;
    std::set<std::string> keys;
    collect_keys(root, keys);
    json_decref(root);
    ASSERT_GE(keys.size(), 59u);
    std::ifstream in(srcdir() + "/doc/gpupool.1");
    ASSERT_TRUE(in) << srcdir() << "/doc/gpupool.1 not found";
    std::stringstream ss;
    ss << in.rdbuf();
    std::string man = ss.str();
    man = man.substr(man.find(".SH SIMULATOR"));
    man = man.substr(0, man.find("\n.SH ", 1));
    man = std::regex_replace(man, std::regex(R"(\\f[BIRP])"), "");
    man = std::regex_replace(man, std::regex(R"(\\-)"), "-");
    for (const std::string &k : keys)
        EXPECT_TRUE(std::regex_search(man, std::regex("(^|[^a-z_])" + k + "([^a-z_]|$)")))
            << "gpupool(1) SIMULATOR does not document the JSON field " << k;
}

TEST(SimCommand, UsageErrorsAndAReplayFromFiles) {
    auto cmd = [](std::vector<std::string> args, std::string *out, std::string *err) {
        std::vector<char *> argv;
        args.insert(args.begin(), "sim");
        for (std::string &a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::ostringstream o, e;
        int rc = run_sim_command(static_cast<int>(args.size()), argv.data(), o, e);
        *out = o.str();
        *err = e.str();
        return rc;
    };
    std::string out, err;
    EXPECT_EQ(cmd({"--nodes=2x1", "--pools=p"}, &out, &err), 2);
    EXPECT_NE(err.find("give one workload"), std::string::npos) << err;
    EXPECT_EQ(cmd({"--generate=Seed=1", "--conf=x"}, &out, &err), 2);
    EXPECT_NE(err.find("give the cluster"), std::string::npos) << err;
    EXPECT_EQ(cmd({"--nodes=2x1", "--pools=p", "--generate=x", "--conf=x", "--pass-interval=0"}, &out, &err), 2);
    EXPECT_NE(err.find("--pass-interval"), std::string::npos) << err;
    // Slurm's timing needs a walk at every event: refused with batched walks.
    EXPECT_EQ(cmd({"--nodes=2x1", "--pools=p", "--generate=Seed=1", "--conf=x", "--sched-interval=10", "--kill-delay=2"},
                  &out, &err),
              2);
    EXPECT_NE(err.find("use one or the other"), std::string::npos) << err;
    // Kill timing: a range, a live run's list.
    const std::vector<std::string> world = {"--nodes=2x1", "--pools=p", "--generate=Seed=1", "--conf=x"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = world;
        a.insert(a.end(), extra.begin(), extra.end());
        return cmd(a, &out, &err);
    };
    // A cluster the replay's counts or tables cannot hold: refused by name.
    EXPECT_EQ(cmd({"--nodes=5000x1000000", "--pools=p", "--generate=Seed=1", "--conf=x"}, &out, &err), 1);
    EXPECT_NE(err.find("--nodes=5000x1000000 --pools=p: its nodes hold 5000000000 GPUs; the replay takes at most "
                       "2147483648"),
              std::string::npos)
        << err;
    EXPECT_EQ(with({"--kill-delay=3-1"}), 2);
    EXPECT_NE(err.find("--kill-delay=3-1: the range's MAX is below its MIN"), std::string::npos) << err;
    EXPECT_EQ(with({"--kill-delay=0-2"}), 2);
    EXPECT_NE(err.find("MIN at least 1"), std::string::npos) << err;
    const std::string kills = ::testing::TempDir() + "/kills.txt";
    std::ofstream(kills) << "# a live run's kills\n2\n3\nsoon\n";
    EXPECT_EQ(with({"--kill-delay=2", "--kill-delays=" + kills}), 2);
    EXPECT_NE(err.find(kills + ":4: "), std::string::npos) << err;
    std::ofstream(kills) << "2\n3\n";
    EXPECT_EQ(with({"--kill-delays=" + kills}), 2);
    EXPECT_NE(err.find("--kill-delays times kills: give --kill-delay too"), std::string::npos) << err;
    std::ofstream(kills) << "100\n1e3\n";
    EXPECT_EQ(with({"--backfill-interval=2", "--backfill-times=" + kills}), 2);
    EXPECT_NE(err.find(kills + ":2: "), std::string::npos) << err;
    std::ofstream(kills) << "100\n";
    EXPECT_EQ(with({"--backfill-times=" + kills}), 2);
    EXPECT_NE(err.find("--backfill-times times backfill's cycles: give --backfill-interval too"), std::string::npos)
        << err;
    EXPECT_EQ(with({"--kill-delay=2", "--backfill-spacing=40"}), 2);
    EXPECT_NE(err.find("--backfill-spacing spreads a backfill cycle's preemptions: give --backfill-interval and "
                       "--kill-delay too"),
              std::string::npos)
        << err;
    EXPECT_EQ(with({"--backfill-spacing=-1"}), 2);
    EXPECT_NE(err.find("--backfill-spacing: expected a whole number 0..3600000, not '-1'"), std::string::npos) << err;
    EXPECT_EQ(with({"--kill-delay=2", "--kill-delays=/nonexistent/kills.txt"}), 2);
    EXPECT_NE(err.find("--kill-delays: /nonexistent/kills.txt: cannot read"), std::string::npos) << err;
    const std::string conf = srcdir() + "/etc/gpupool.conf.example";
    EXPECT_EQ(cmd({"--nodes=4x1", "--pools=pool1,pool2,pool3", "--generate=Seed=1", "--conf=" + conf,
                   "--policy=gpupool,nope"},
                  &out, &err),
              1);
    EXPECT_NE(err.find("unknown policy 'nope'"), std::string::npos) << err;
    EXPECT_EQ(cmd({"--nodes=4x1", "--pools=pool1,pool2,pool3",
                   "--generate=Seed=3 Jobs=50 Pools=pool1,pool2,pool3 Tiers=normal,low Gpus=1 Duration=fixed:10m",
                   "--conf=" + conf, "--no-progress"},
                  &out, &err),
              0)
        << err;
    EXPECT_NE(out.find("POLICY"), std::string::npos);
    for (const char *p : {"gpupool", "strict", "borrow", "fifo"}) EXPECT_NE(out.find(p), std::string::npos) << p;
    EXPECT_EQ(cmd({"--nodes=4x1", "--pools=pool1,pool2,pool3",
                   "--generate=Seed=3 Jobs=50 Pools=pool1,pool2,pool3 Tiers=normal,low Gpus=1 Duration=fixed:10m",
                   "--conf=" + conf, "--json", "--policy=gpupool", "--jobs-csv=/nonexistent/dir/jobs.csv"},
                  &out, &err),
              1);
    EXPECT_NE(err.find("/nonexistent/dir/jobs.csv: cannot write"), std::string::npos) << err;
}

// Placement (ReplayOptions::placement): two 4-GPU nodes n1, n2 of pool1.
// A (3 GPUs, ends at 10) and C fill n1, B n2; once A ends, n1 has 3 free
// and n2 1.  D (1 GPU) then goes where the strategy says, and E (3 GPUs)
// starts at once only if D left n1 whole enough.
namespace {

SimCluster two_nodes_of_4(bool lln = false) {
    SimCluster c;
    c.nodes = {SimNode{"n1", 4}, SimNode{"n2", 4}};
    c.partitions.push_back(SimPartition{"pool1", {0, 1}, lln});
    return c;
}

Config one_pool(const std::string &pool_line) {
    return parse_config("Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                        "Tier=low QOS=low Priority=100 Preemptible=yes\nDefaultTier=normal\n" +
                            pool_line + "\n",
                        "test.conf");
}

// "label@time:node" for each start.
std::string placed(const ReplayResult &r, const SimCluster &c, const Workload &w) {
    std::string out;
    for (const StartRecord &s : r.starts) {
        if (!out.empty()) out += ' ';
        out += w.jobs[s.job].label + "@" + std::to_string(s.time) + ":" +
               (s.node >= 0 ? c.nodes[size_t(s.node)].name : std::string("*"));
    }
    return out;
}

}  // namespace

TEST(SimPlacement, PackFirstFitAndSpreadChooseTheNodesSlurmWould) {
    const Workload w = workload_of({{"A", 0, 10, "pool1", "normal", 3},
                                    {"B", 1, 1000, "pool1", "normal", 3},
                                    {"C", 2, 1000, "pool1", "normal", 1},
                                    {"D", 11, 1000, "pool1", "normal", 1},
                                    {"E", 12, 100, "pool1", "normal", 3}});
    struct Row {
        const char *sentence;
        const char *pool_line;
        ReplayOptions::Placement placement;
        PolicyKind policy;
        bool lln;
        const char *starts;
    };
    using P = ReplayOptions::Placement;
    const std::vector<Row> rows = {
        {"Placement=pack: D goes to n2, the fullest node that fits, and E starts at once on n1",
         "Pool=pool1 Quota=8 Placement=pack", P::Conf, PolicyKind::Gpupool, false,
         "A@0:n1 B@1:n2 C@2:n1 D@11:n2 E@12:n1"},
        {"without Placement=, gpupool leaves Slurm's first fit: D on n1, and E waits until B ends",
         "Pool=pool1 Quota=8", P::Conf, PolicyKind::Gpupool, false, "A@0:n1 B@1:n2 C@2:n1 D@11:n1 E@1001:n2"},
        {"Slurm alone (borrow) puts D first fit on n1, and E waits until B ends",
         "Pool=pool1 Quota=8", P::Conf, PolicyKind::Borrow, false, "A@0:n1 B@1:n2 C@2:n1 D@11:n1 E@1001:n2"},
        {"--placement=first makes gpupool place as Slurm alone",
         "Pool=pool1 Quota=8 Placement=pack", P::First, PolicyKind::Gpupool, false, "A@0:n1 B@1:n2 C@2:n1 D@11:n1 E@1001:n2"},
        {"Placement=spread on an LLN=YES partition puts each job on the node with the most free GPUs",
         "Pool=pool1 Quota=8 Placement=spread", P::Conf, PolicyKind::Gpupool, true,
         "A@0:n1 B@1:n2 C@2:n1 D@11:n1 E@1001:n2"},
        {"--placement=pack makes borrow pack too", "Pool=pool1 Quota=8", P::Pack, PolicyKind::Borrow, false,
         "A@0:n1 B@1:n2 C@2:n1 D@11:n2 E@12:n1"},
    };
    for (const Row &r : rows) {
        SCOPED_TRACE(r.sentence);
        const SimCluster c = two_nodes_of_4(r.lln);
        ReplayOptions o;
        o.placement = r.placement;
        EXPECT_EQ(placed(run(c, w, one_pool(r.pool_line), r.policy, o), c, w), r.starts);
    }
}

// Slurm 22.05's own choice (--placement=bestfit), measured live: with n5
// and n7 full, a 1-GPU job goes to n6, the first of the shortest runs of
// consecutive nodes with room ({n1-n4}, {n6}, {n8}); 26.05 puts it on n1,
// first fit (--placement=first).  Eight 2-GPU nodes, filled in order by
// eight 2-GPU jobs; those on n5 and n7 run on.
TEST(SimPlacement, BestFitTakesTheShortestRunOfNodesWithRoomAsSlurm2205) {
    SimCluster c;
    std::vector<uint32_t> all;
    for (uint32_t i = 0; i < 8; ++i) {
        c.nodes.push_back(SimNode{"n" + std::to_string(i + 1), 2});
        all.push_back(i);
    }
    c.partitions.push_back(SimPartition{"pool1", all, false});
    auto fill = [](std::vector<std::pair<int, int64_t>> long_nodes) {
        std::vector<J> rows;
        for (int i = 1; i <= 8; ++i) {
            int64_t dur = 10;
            for (const auto &[n, d] : long_nodes)
                if (n == i) dur = d;
            rows.push_back({"f" + std::to_string(i), 0, dur, "pool1", "normal", 2});
        }
        rows.push_back({"X", 11, 1000, "pool1", "normal", 1});
        rows.push_back({"Y", 12, 1000, "pool1", "normal", 1});
        return workload_of(rows);
    };
    struct Row {
        const char *sentence;
        std::vector<std::pair<int, int64_t>> full;  // nodes that stay full
        ReplayOptions::Placement placement;
        const char *xy;  // where X and Y start
    };
    using P = ReplayOptions::Placement;
    const std::vector<Row> rows = {
        {"with n5 and n7 full, 22.05 puts X and then Y on n6, alone between them", {{5, 5000}, {7, 5000}},
         P::BestFit, "X@11:n6 Y@12:n6"},
        {"with n5 and n7 full, first fit (26.05) puts both on n1", {{5, 5000}, {7, 5000}}, P::First,
         "X@11:n1 Y@12:n1"},
        {"with n2, n3, n4 and n6 full, the shortest runs are n1 and n5, and n1 comes first",
         {{2, 5000}, {3, 5000}, {4, 5000}, {6, 5000}}, P::BestFit, "X@11:n1 Y@12:n1"},
        {"with no node full, one run: first fit", {}, P::BestFit, "X@11:n1 Y@12:n1"},
    };
    for (const Row &r : rows) {
        SCOPED_TRACE(r.sentence);
        const Workload w = fill(r.full);
        ReplayOptions o;
        o.placement = r.placement;
        const std::string all_starts = placed(run(c, w, one_pool("Pool=pool1 Quota=16"), PolicyKind::Borrow, o), c, w);
        EXPECT_EQ(all_starts.substr(all_starts.find("X@")), r.xy) << all_starts;
    }
}

TEST(SimPlacement, SpreadPutsFourJobsOnFourNodes) {
    SimCluster c;
    for (int i = 1; i <= 4; ++i) c.nodes.push_back(SimNode{"n" + std::to_string(i), 8});
    c.partitions.push_back(SimPartition{"pool1", {0, 1, 2, 3}, true});
    const Workload w = workload_of({{"a", 0, 100, "pool1", "normal", 1},
                                    {"b", 0, 100, "pool1", "normal", 1},
                                    {"c", 0, 100, "pool1", "normal", 1},
                                    {"d", 0, 100, "pool1", "normal", 1}});
    EXPECT_EQ(placed(run(c, w, one_pool("Pool=pool1 Quota=32"), PolicyKind::Gpupool), c, w),
              "a@0:n1 b@0:n2 c@0:n3 d@0:n4");
    // Packing, all four go to n1 (equal Weights: first fit).
    c.partitions[0].lln = false;
    EXPECT_EQ(placed(run(c, w, one_pool("Pool=pool1 Quota=32 Placement=pack"), PolicyKind::Gpupool), c, w),
              "a@0:n1 b@0:n1 c@0:n1 d@0:n1");
}

// Pack counts GPUs of non-preemptible jobs first: of two nodes with 2 GPUs
// free, the one whose other GPUs run NORMAL jobs gets the next job, and the
// node of LOW jobs stays clearable.
TEST(SimPlacement, PackFillsTheNodesOfNonPreemptibleJobsFirst) {
    const SimCluster c = two_nodes_of_4();
    const Workload w = workload_of({{"low", 0, 1000, "pool1", "low", 2},
                                    {"x", 0, 5, "pool1", "normal", 2},
                                    {"np", 1, 1000, "pool1", "normal", 2},
                                    {"next", 10, 1000, "pool1", "normal", 1}});
    // low on n1, x on n1 (ends at 5), np on n2: at 10 n1 has 2 free beside a
    // LOW job, n2 2 free beside a NORMAL one.
    EXPECT_EQ(placed(run(c, w, one_pool("Pool=pool1 Quota=8 Placement=pack"), PolicyKind::Gpupool), c, w),
              "x@0:n1 low@0:n1 np@1:n2 next@10:n2");
}

// --- kills as a live run times them ------------------------------------------------------

TEST(SimKills, AListGivesTheNthVictimTheNthKillAndARangeDrawsTheSameKillsForTheSameSeed) {
    // a and b run pool1's LOW x and y (both borrowed); pool2's n1 and n2
    // come at 10 and preempt one each.
    SimCluster c;
    c.nodes = {{"a", 1}, {"b", 1}};
    c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=0\nPool=pool2 Quota=2\n");
    const Workload w = workload_of({{"x", 0, 1000, "pool1", "low"},
                                    {"y", 0, 1000, "pool1", "low"},
                                    {"n1", 10, 1000, "pool2", "normal"},
                                    {"n2", 10, 1000, "pool2", "normal"}});
    ReplayOptions o;
    o.kill_delay = 1;
    // n1 preempts x, n2 y, both at 10.  The first victim's kill takes 5 s,
    // the second's 2 s: y's GPU is free at 12 and goes to n1, first in
    // line, and n2 waits for x's until 15.
    o.kill_delays = {5, 2};
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Borrow, o), c, w, 4), "x@0 y@0 n1@12-x n2@15-y");
    // Past the list, kill_delay again.
    o.kill_delays = {5};
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Borrow, o), c, w, 4), "x@0 y@0 n1@11-x n2@15-y");
    // A range: each kill drawn in [1, 3] by the seed, the job and its run;
    // the same seed, the same replay.
    o.kill_delays.clear();
    o.kill_delay_max = 3;
    std::set<int64_t> seen;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        o.kill_seed = seed;
        const ReplayResult r = run(c, w, cfg, PolicyKind::Borrow, o);
        EXPECT_EQ(starts_of(r, c, w, 4), starts_of(run(c, w, cfg, PolicyKind::Borrow, o), c, w, 4));
        for (size_t j : {2, 3}) {
            EXPECT_GE(r.jobs[j].first_start, 11);
            EXPECT_LE(r.jobs[j].first_start, 13);
            seen.insert(r.jobs[j].first_start);
        }
    }
    EXPECT_EQ(seen, (std::set<int64_t>{11, 12, 13}));
}

namespace {
// a and b have 2 GPUs each, busy with pool1's borrowed LOW x1 x2 (a) and
// y1 y2 (b); with_z: a has a third, busy with pool1's LOW z, and pool2's
// p3 (2 GPUs) comes at 13.  pool2's p1 and p2 (2 GPUs each) come at 10.
// The first victim's kill takes 8 s, the others' 3, 2 and 2; victims may
// start again at 13 (cred_expire 2); every instant is a backfill cycle.
struct KillEndWorld {
    SimCluster c;
    Config cfg;
    Workload w;
    ReplayOptions o;
    explicit KillEndWorld(bool with_z)
        : cfg(normal_and_low(with_z ? "Pool=pool1 Quota=0\nPool=pool2 Quota=6\n"
                                    : "Pool=pool1 Quota=0\nPool=pool2 Quota=4\n")) {
        c.nodes = {{"a", with_z ? 3u : 2u}, {"b", 2}};
        c.partitions = {{"pool1", {0, 1}}, {"pool2", {0, 1}}};
        std::vector<J> jobs = {{"x1", 0, 1000, "pool1", "low"}, {"x2", 0, 1000, "pool1", "low"}};
        if (with_z) jobs.push_back({"z", 0, 1000, "pool1", "low"});
        for (const char *y : {"y1", "y2"}) jobs.push_back({y, 0, 1000, "pool1", "low"});
        for (const char *n : {"p1", "p2"}) jobs.push_back({n, 10, 1000, "pool2", "normal", 2});
        if (with_z) jobs.push_back({"p3", 13, 1000, "pool2", "normal", 2});
        w = workload_of(jobs);
        o.kill_delay = 2;
        o.kill_delays = {8, 3, 2, 2};
        o.backfill_interval = 1;
        o.cred_expire = 2;
    }
};
}  // namespace

TEST(SimKills, ABackfillCyclePlansAWaitingPreemptorWhereAKillIsFreeingGpusSoRequeuedVictimsDoNotTakeThem) {
    // a and b have 2 GPUs each, busy with pool1's borrowed LOW x1 x2 (a)
    // and y1 y2 (b).  pool2's p1 and p2 (2 GPUs each) come at 10: p1
    // preempts x1 x2, p2 y1 y2.  x1's kill takes 8 s, the others' 2 or 3:
    // b is free at 12 and goes to p1, first in line; a has one GPU free at
    // 13 and the other at 18.  The victims may start again at 13
    // (cred_expire 2).  Every instant is a backfill cycle.
    const KillEndWorld world(false);
    const SimCluster &c = world.c;
    const Workload &w = world.w;
    // At 13 the cycle plans the preemptor left on a for the end of the
    // long kill (cons_tres counts a killed job's GPUs free), so no victim
    // takes a's free GPU, and it starts at 18; were a open, a victim would
    // take it and the preemptor would wait for its guard (25) to preempt
    // again.  (gpupool puts p2 first in line: it preempted first.)
    for (const auto &[k, starts] : std::vector<std::pair<PolicyKind, std::string>>{
             {PolicyKind::Gpupool, "x1@0 x2@0 y1@0 y2@0 p2@12-x2-x1 p1@18-y2-y1"},
             {PolicyKind::Borrow, "x1@0 x2@0 y1@0 y2@0 p1@12-x1-x2 p2@18-y1-y2"}}) {
        const ReplayResult r = run(c, w, world.cfg, k, world.o);
        EXPECT_EQ(starts_of(r, c, w, 6), starts) << policy_name(k);
        uint32_t preempted = 0;  // one round: each victim once
        for (size_t v = 0; v < 4; ++v) preempted += r.jobs[v].preemptions;
        EXPECT_EQ(preempted, 4u) << policy_name(k);
    }
}

TEST(SimKills, ALaterJobOfTheCyclePreemptsNothingOnANodeThePlanHoldsForAJobBeforeIt) {
    // As above, but a has 3 GPUs, the third busy with pool1's LOW z (not a
    // victim), and pool2's p3 (2 GPUs) comes at 13.  Native (preempt/qos):
    // p1 preempts x1 x2 on a, p2 y1 y2 on b; b is free at 12 and goes to
    // p1.  At 13 the cycle plans p2 on a (one GPU free, one being killed
    // until 18), so p3, behind it, may not preempt z there (backfill's
    // _start_job excludes the nodes planned for jobs before it): p2 starts
    // at 18, and p3 only when p1 ends (1012).  Were a open to p3, it would
    // preempt z at 13 for a start it never gets (p2, first in line, would
    // take a at 15).
    const KillEndWorld world(true);
    const SimCluster &c = world.c;
    const Workload &w = world.w;
    const ReplayResult r = run(c, w, world.cfg, PolicyKind::Borrow, world.o);
    EXPECT_EQ(starts_of(r, c, w, 8), "x1@0 x2@0 z@0 y1@0 y2@0 p1@12-x1-x2 p2@18-y1-y2 x1@1000");
    EXPECT_EQ(r.jobs[2].preemptions, 0u);
    EXPECT_EQ(r.jobs[7].first_start, 1012);
}

TEST(SimKills, AWaitingPreemptorWhoseFreedGpusAnotherTookLeavesItsNodeToALaterPreemptor) {
    // a (4 GPUs), b (2) and c (4) are busy with pool1's borrowed LOW jobs
    // l0-l3 (a), l4 l5 (b) and l6-l9 (c).  pool2's p1 and p2 (2 GPUs each)
    // come at 10: gpupool plans p1 on b (l4 l5, whose kill takes 8 s) and p2
    // on c (l8 l9, 2 s).  At 12 c's two GPUs are free and go to p1, first
    // in line; p2 waits for b's kill, its freed GPUs gone.  pool2's p3
    // comes at 13.  The cycle at 13 plans p2 anew where a kill frees GPUs
    // (b), as live backfill plans a waiting preemptor in every cycle on
    // the first such node (not on the nodes it freed), so c is open: p3
    // preempts l6 l7 there, and p2, first in line, takes them at 15; p3
    // gets b at 18.  Were c still held for p2, p3 would preempt only once
    // p2 started on b (18), and start at 20.
    SimCluster c;
    c.nodes = {{"a", 4}, {"b", 2}, {"c", 4}};
    c.partitions = {{"pool1", {0, 1, 2}}, {"pool2", {0, 1, 2}}};
    const Config cfg = normal_and_low("Pool=pool1 Quota=0\nPool=pool2 Quota=8\n");
    std::vector<J> jobs;
    for (int i = 0; i < 10; ++i) jobs.push_back({"l" + std::to_string(i), 0, 1000, "pool1", "low"});
    for (const char *n : {"p1", "p2"}) jobs.push_back({n, 10, 1000, "pool2", "normal", 2});
    jobs.push_back({"p3", 13, 1000, "pool2", "normal", 2});
    const Workload w = workload_of(jobs);
    ReplayOptions o;
    o.kill_delay = 2;
    o.kill_delays = {8, 8, 2, 2};
    o.backfill_interval = 1;
    o.cred_expire = 2;
    const ReplayResult r = run(c, w, cfg, PolicyKind::Gpupool, o);
    std::string got;
    for (const StartRecord &s : r.starts)
        if (s.job >= 10) got += w.jobs[s.job].label + "@" + std::to_string(s.time) + "-" + c.nodes[size_t(s.node)].name + " ";
    EXPECT_EQ(got, "p1@12-c p2@15-c p3@18-b ");
}

namespace {
// One figure of a preempt-bench output line: "MODE ... started 50/50 NORMAL
// of G GPU in  MS ms" (the live bench) or "sim MODE started ..." (the
// replay); -1 if absent.
long started_all_ms(const std::string &text, const std::string &mode) {
    std::istringstream in(text);
    std::string line;
    const std::regex re("^(sim +)?" + mode + " .*started [0-9]+/[0-9]+ NORMAL of [0-9]+ GPU in +([0-9]+) ms");
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, re)) return std::stol(m[2]);
    return -1;
}
}  // namespace

TEST(SimCalibration, PreemptBenchLiveRunsReplayWithTheirOwnCyclesAndKillsWithinAQuarter) {
    // Recorded live runs of scripts/preempt-bench.sh (32 x 13 GPUs, 50
    // reclaiming jobs; BENCH_RECORD, tests/unit/data/preempt-bench), each
    // replayed by scripts/preempt-bench-sim.sh with its own cycles and kills
    // on the 100 ms clock (doc/evaluation.md, "Preemption as Slurm times
    // it").  The replay is deterministic: the exact figure, then the
    // calibration it stands for.
    const char *top = std::getenv("top_builddir");
    const std::string cli = std::string(top ? top : srcdir().c_str()) + "/src/cli/gpupool";
    if (std::system(("test -x '" + cli + "'").c_str()) != 0) GTEST_SKIP() << cli << " not built";
    struct Run {
        const char *dir;
        int gpus;
        long native, gpupool;  // the replay's start-all time, ms
    };
    for (const Run &r : {Run{"22.05-1gpu", 1, 5200, 4300}, Run{"22.05-4gpu-a", 4, 10500, 9200},
                         Run{"22.05-4gpu-b", 4, 9900, 8500}, Run{"22.05-4gpu-c", 4, 7600, 7700},
                         Run{"26.05-1gpu", 1, 4000, 3200}, Run{"26.05-4gpu", 4, 8300, 8400},
                         // With the spacing of preemptors within a cycle
                         // (SIM_BACKFILL_SPACING_MS, from each run's log):
                         // 22.05-1gpu-c was 0.74 of live without it.
                         Run{"22.05-1gpu-b", 1, 4000, 3800}, Run{"26.05-4gpu-b", 4, 9300, 9300},
                         Run{"22.05-1gpu-c", 1, 3500, 3500}}) {
        const std::string d = srcdir() + "/tests/unit/data/preempt-bench/" + r.dir;
        std::ifstream in(d + "/live.txt");
        const std::string live((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (const auto &[mode, policy, want] : {std::tuple<std::string, std::string, long>{"native", "borrow", r.native},
                                                 {"gpupool", "gpupool", r.gpupool}}) {
            SCOPED_TRACE(std::string(r.dir) + " " + mode);
            const std::string cmd = "GPUPOOL_CLI='" + cli + "' BENCH_RECLAIM_GPUS=" + std::to_string(r.gpus) +
                                    " SIM_TICK_MS=100 BENCH_TIMING='" + d + "/" + mode + "-timing.env' BENCH_SUBMITS='" +
                                    d + "/" + mode + "-submits.txt' BENCH_CYCLES='" + d + "/" + mode +
                                    "-cycles.txt' BENCH_KILLS='" + d + "/" + mode + "-kills.txt' bash '" + srcdir() +
                                    "/scripts/preempt-bench-sim.sh' --policy=" + policy + " 2>&1";
            FILE *p = popen(cmd.c_str(), "r");
            ASSERT_NE(p, nullptr);
            std::string out;
            char buf[4096];
            for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
            ASSERT_EQ(pclose(p), 0) << out;
            const long replayed = started_all_ms(out, mode), measured = started_all_ms(live, mode);
            EXPECT_EQ(replayed, want) << out;
            ASSERT_GT(measured, 0) << live;
            EXPECT_NEAR(double(replayed) / double(measured), 1.0, 0.25) << replayed << " ms against " << measured;
        }
    }
}

// A scratch file for scripts/sim-sweep-compare.sh, and the script run on
// it with `args` (its output, stderr too; *rc its status).
struct SweepFile {
    static constexpr const char *kHeader =
        "GPUS  MIX  SEED  TIMING  PLACE  | POLICY   UTIL% UTILW% USEFUL   BELOW_H     KILL   CANNOT  NO_NODE  "
        "PROTECT    OTHER PROMPT%  W95_8  LOST_H";
    std::string dir, path;
    explicit SweepFile(const std::string &name)
        : dir(std::string(::testing::TempDir()) + "gpupool_" + name + "_" + std::to_string(::getpid())),
          path(dir + "/sweep.txt") {
        EXPECT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
    }
    ~SweepFile() { EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0); }
    std::string compare(const std::string &args, int *rc) const {
        const std::string cmd = "bash '" + srcdir() + "/scripts/sim-sweep-compare.sh' " + args + " 2>&1";
        std::string out;
        FILE *p = popen(cmd.c_str(), "r");
        if (!p) return out;
        char buf[4096];
        for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
        *rc = pclose(p);
        return out;
    }
};

TEST(SimSweepCompare, PairsTheWorldsOfTwoConditionsAndSaysHowOftenAndHowSurelyOneIsLower) {
    // scripts/sim-sweep-compare.sh on a sweep's rows: seeds 1-3 under
    // bestfit and pack, a borrow row that belongs to neither condition, and
    // seed 4 under pack only.  BELOW_H: 10/20/30 against 8/25/20; W95_8:
    // 5/5/5 against 4/6/5 (a tie, left out of the sign test).
    const SweepFile sweep("sweep_compare");
    const std::string &file = sweep.path;
    {
        std::ofstream out(file);
        out << SweepFile::kHeader << "\n";
        const char *rows[][4] = {{"1", "bestfit", "gpupool", "10.0 5.0"}, {"1", "bestfit", "borrow", "70.9 147.3"},
                                 {"2", "bestfit", "gpupool", "20.0 5.0"}, {"3", "bestfit", "gpupool", "30.0 5.0"},
                                 {"3", "pack", "gpupool", "20.0 5.0"},    {"2", "pack", "gpupool", "25.0 6.0"},
                                 {"1", "pack", "gpupool", "8.0 4.0"},     {"4", "pack", "gpupool", "8.0 4.0"}};
        for (const auto &r : rows) {
            std::istringstream f(r[3]);
            std::string below, w95;
            f >> below >> w95;
            out << "64    1248 " << r[0] << "     slurm   " << r[1] << " | " << r[2] << "   97.1   98.4   81.5      "
                << below << "      1.1      0.0     77.4      0.5      0.4    95.4  " << w95 << "    2060\n";
        }
        out << "(BELOW_H and the causes: hours a pool waited under its quota with NP demand, summed over the pools)\n";
    }
    auto compare = [&](const std::string &a, const std::string &b, int *rc) {
        return sweep.compare("'" + file + "' '" + a + "' '" + file + "' '" + b + "'", rc);
    };
    int rc = -1;
    EXPECT_EQ(compare("bestfit gpupool", "pack gpupool", &rc),
              "3 worlds, A = bestfit gpupool, B = pack gpupool (1 in one condition only, left out)\n"
              "BELOW_H  sum A 60.0, B 53.0 (0.88x); B lower in 2, higher in 1; sign test p = 1.000; "
              "mean B - A -2.3 (se 4.3)\n"
              "W95_8    sum A 15.0, B 15.0 (1.00x); B lower in 1, higher in 1; sign test p = 1.000; "
              "mean B - A 0.0 (se 0.6)\n");
    EXPECT_EQ(rc, 0);
    // Six worlds, each lower under pack: two-sided p = 2 / 2^6.
    {
        std::ofstream out(file);
        for (int seed = 1; seed <= 6; ++seed)
            for (const char *place : {"bestfit", "pack"})
                out << "512   1248 " << seed << "     slurm   " << place << " | gpupool   88.0   99.1   73.9      "
                    << (place[0] == 'p' ? 10 + seed : 12 + 2 * seed) << ".0      6.3      0.0     11.1      0.2      2.0"
                    << "    97.6    " << (place[0] == 'p' ? 1 : 3) << ".0    8247\n";
    }
    EXPECT_EQ(compare("bestfit gpupool", "pack gpupool", &rc),
              "6 worlds, A = bestfit gpupool, B = pack gpupool\n"
              "BELOW_H  sum A 114.0, B 81.0 (0.71x); B lower in 6, higher in 0; sign test p = 0.031; "
              "mean B - A -5.5 (se 0.8)\n"
              "W95_8    sum A 18.0, B 6.0 (0.33x); B lower in 6, higher in 0; sign test p = 0.031; "
              "mean B - A -2.0 (se 0.0)\n");
    // No world in both: said, and a failure.
    EXPECT_EQ(compare("first gpupool", "pack gpupool", &rc), "sim-sweep-compare: no world in both conditions\n");
    EXPECT_NE(rc, 0);
}

TEST(SimSweepCompare, PerWorldCountsTheWorldsWhereEachOfIssue27sConditionsHoldsAndNamesTheWorst) {
    // --per-world, gpupool (pack) against borrowing (22.05's placement),
    // three worlds.  Seed 1: lower under quota, PROMPT 96, UTIL -0.5, USEFUL
    // -2.0, UTILA -0.5.  Seed 2: higher (55 against 50), PROMPT 94, UTIL
    // -1.5, USEFUL -0.5, UTILA +0.5.  Seed 3: equal, PROMPT 97, UTIL +0.5,
    // USEFUL 0, UTILA -1.5.  So each condition holds in two of three.
    const SweepFile sweep("sweep_perworld");
    const std::string &file = sweep.path;
    {
        std::ofstream out(file);
        out << SweepFile::kHeader << " UTILA%\n";
        // SEED PLACE POLICY: UTIL USEFUL BELOW_H PROMPT W95_8 UTILA
        const char *rows[][4] = {
            {"1", "bestfit", "borrow", "97.0 83.0 70.0 88.0 10.0 98.0"},
            {"1", "pack", "gpupool", "96.5 81.0 60.0 96.0 5.0 97.5"},
            {"2", "bestfit", "borrow", "96.0 82.0 50.0 90.0 10.0 98.0"},
            {"2", "pack", "gpupool", "94.5 81.5 55.0 94.0 5.0 98.5"},
            {"3", "bestfit", "borrow", "95.0 80.0 40.0 91.0 10.0 97.0"},
            {"3", "pack", "gpupool", "95.5 80.0 40.0 97.0 5.0 95.5"},
        };
        for (const auto &r : rows) {
            std::istringstream f(r[3]);
            std::string util, useful, below, prompt, w95, arriving;
            f >> util >> useful >> below >> prompt >> w95 >> arriving;
            out << "64    1248 " << r[0] << "     slurm   " << r[1] << " | " << r[2] << "   " << util << "   98.4   "
                << useful << "      " << below << "      1.1      0.0     40.0      0.0      0.4    " << prompt << "  "
                << w95 << "    2000   " << arriving << "\n";
        }
    }
    int rc = -1;
    EXPECT_EQ(sweep.compare("--per-world '" + file + "' 'bestfit borrow' '" + file + "' 'pack gpupool'", &rc),
              "3 worlds, A = bestfit borrow, B = pack gpupool\n"
              "BELOW_H  sum A 160.0, B 155.0 (0.97x); B lower in 1, higher in 1; sign test p = 1.000; "
              "mean B - A -1.7 (se 4.4)\n"
              "W95_8    sum A 30.0, B 15.0 (0.50x); B lower in 3, higher in 0; sign test p = 0.250; "
              "mean B - A -5.0 (se 0.0)\n"
              "per world, B against A: BELOW_H at most A's in 2 of 3\n"
              "  PROMPT% at least 95 in 2 (least 94.0: 64 1248 2 slurm)\n"
              "  UTIL% at most a point under A's in 2 (least -1.5: 64 1248 2 slurm)\n"
              "  USEFUL at most a point under A's in 2 (least -2.0: 64 1248 1 slurm)\n"
              "  UTILA% at most a point under A's in 2 (least -1.5: 64 1248 3 slurm)\n");
    EXPECT_EQ(rc, 0);
    // A world with no within-quota NP job prints PROMPT% "-": it holds
    // there, and the least is of the others.
    {
        std::ofstream out(file, std::ios::app);
        out << "64    1248 4     slurm   bestfit | borrow   95.0   98.4   80.0      0.0      1.1      0.0     0.0      "
               "0.0      0.4    -  -    2000   97.0\n"
            << "64    1248 4     slurm   pack | gpupool   95.0   98.4   80.0      0.0      1.1      0.0     0.0      "
               "0.0      0.4    -  -    2000   97.0\n";
    }
    const std::string four =
        sweep.compare("--per-world '" + file + "' 'bestfit borrow' '" + file + "' 'pack gpupool'", &rc);
    EXPECT_NE(four.find("per world, B against A: BELOW_H at most A's in 3 of 4\n"
                        "  PROMPT% at least 95 in 3 (least 94.0: 64 1248 2 slurm) (1 with no within-quota NP job)\n"),
              std::string::npos)
        << four;
    EXPECT_EQ(rc, 0);
}

TEST(SimKills, BackfillCyclesAtALiveRunsOwnInstantsThenEveryInterval) {
    // MisfitWorld, as OnlyBackfillCyclesPreempt...
    const MisfitWorld world;
    const SimCluster &c = world.c;
    const Config &cfg = world.cfg;
    const Workload &w = world.w;
    ReplayOptions o;
    o.kill_delay = 2;
    o.backfill_interval = 4;
    // Every 4 s: the cycle at 12 preempts x and starts n1; n2 at 14.
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 3), "x@0 n1@12 n2@14-x");
    // A live run's cycle at 11: n2 preempts then and n1 starts; n2 at 13.
    o.backfill_times = {11};
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 3), "x@0 n1@11 n2@13-x");
    // Cycles at 3 and 9 only, both before the jobs come: then every 4 s.
    o.backfill_times = {9, 3};
    EXPECT_EQ(starts_of(run(c, w, cfg, PolicyKind::Gpupool, o), c, w, 3), "x@0 n1@12 n2@14-x");
}


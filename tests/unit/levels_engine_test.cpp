// Account queues in the pass: queues from Slurm's accounts (departments over
// projects) per pool, R2 against every queue on a job's path and per
// counted resource, and the fairshare divided down each pool's tree.  The
// configuration's Account= entries are built here directly (Config::accounts).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "explain.hpp"
#include "levels.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

AccountQuota entry(const std::string &account, const std::string &pool, const std::string &quota) {
    AccountQuota a;
    a.account = account;
    a.pool = pool;
    a.quota = parse_resource_amounts(quota, "gres/gpu");
    return a;
}

// pool1: 8 GPUs on 2 nodes, Quota=8.  Departments physics and chemistry
// (4 GPUs each), projects phys-a and phys-b (3 each: their department's
// quota caps their sum), chem-a (4).  `extra` is appended to gpupool.conf.
Config two_departments(const std::string &extra = "") {
    Config cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=8\n" + extra, "test.conf");
    cfg.accounts = {entry("physics", "*", "gres/gpu=4"), entry("chemistry", "*", "gres/gpu=4"),
                    entry("phys-a", "pool1", "gres/gpu=3"), entry("phys-b", "*", "gres/gpu=3"),
                    entry("chem-a", "pool1", "gres/gpu=4")};
    return cfg;
}

Snapshot two_department_cluster() {
    Snapshot s = cluster(2, 4);
    partition(s, "pool1", 0, 1);
    s.account_parent = {{"physics", "root"}, {"chemistry", "root"}, {"phys-a", "physics"},
                        {"phys-b", "physics"}, {"phys-c", "physics"}, {"chem-a", "chemistry"}};
    return s;
}

Engine engine_of(Config cfg) {
    Engine e;
    e.set_config(std::move(cfg));
    return e;
}

SnapJob with_account(SnapJob j, const std::string &account, uint32_t cpus = 0) {
    j.account = account;
    j.cpus = cpus;
    return j;
}


}  // namespace

TEST(LevelsEngine, AProjectsNormalJobIsHeldByItsDepartmentsQuotaAlthoughTheProjectHasRoom) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-a"));
    s.add_job(with_account(pending(2, "pool1", "normal", 2, 200), "phys-b"));  // phys-b: 0/3
    s.add_job(with_account(pending(3, "pool1", "normal", 2, 300), "chem-a"));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_EQ(reason(e, 2), "GpuPoolQuota:pool1/physics gpu 3/4");
    EXPECT_EQ(admission_of(e, 3), Admission::Quota);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);  // chem-a's job only
}

TEST(LevelsEngine, AJobIsHeldByTheCpuQuotaWhileGpusAreFree) {
    Config cfg = two_departments();
    cfg.counted = {{true, true, false}};
    cfg.accounts[0] = entry("physics", "*", "gres/gpu=4,cpu=32");
    Engine e = engine_of(cfg);
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 1, 100), "phys-a", 30));
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "phys-b", 4));
    s.add_job(with_account(pending(3, "pool1", "normal", 1, 300), "phys-b", 2));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_EQ(reason(e, 2), "GpuPoolQuota:pool1/physics cpu 30/32");
    EXPECT_EQ(admission_of(e, 3), Admission::Quota);  // 2 CPUs fit
    // More CPUs than the department's whole quota: too small, not full.
    s.add_job(with_account(pending(4, "pool1", "normal", 1, 400), "phys-a", 40));
    e.evaluate(s, 1001);
    EXPECT_EQ(e.pending_result(4)->hold, Hold::QuotaTooSmall);
    EXPECT_EQ(reason(e, 4), "GpuPoolQuotaTooSmall:pool1/physics cpu needs 40 quota 32");
}

TEST(LevelsEngine, AnAccountWithNoEntryDrawsOnItsParentsQuota) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-c"));  // no entry: physics'
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "phys-c"));
    s.add_job(with_account(pending(3, "pool1", "normal", 1, 300), "phys-a"));
    s.add_job(with_account(pending(4, "pool1", "normal", 1, 400), "nobody"));  // in no tree: the pool's
    e.evaluate(s, 1000);
    // phys-a holds nothing, physics's own jobs (phys-c's) hold 3: job 3
    // comes first (R1.2 with levels) and takes physics's last GPU.
    EXPECT_EQ(admission_of(e, 3), Admission::Quota);
    EXPECT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_EQ(reason(e, 2), "GpuPoolQuota:pool1/physics gpu 4/4");  // 3 running + job 3's 1 admitted
    EXPECT_EQ(admission_of(e, 4), Admission::Quota);
}

TEST(LevelsEngine, MovingAnAccountToAnotherDepartmentTakesEffectAtTheNextPass) {
    Config cfg = two_departments();
    cfg.accounts[2] = entry("phys-a", "pool1", "gres/gpu=4");
    Engine e = engine_of(cfg);
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 4, 100), "phys-a"));
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "phys-b"));
    e.evaluate(s, 1000);
    EXPECT_EQ(reason(e, 2), "GpuPoolQuota:pool1/physics gpu 4/4");
    s.account_parent["phys-b"] = "chemistry";  // sacctmgr modify account phys-b set parent=chemistry
    e.evaluate(s, 1010);
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
    EXPECT_EQ(reason(e, 2), "");
}

TEST(LevelsEngine, AFlatConfigurationGivesTheSameDecisionsWithAndWithoutAnAccountTreeInTheSnapshot) {
    std::mt19937 rng(20);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const char *accounts[] = {"physics", "phys-a", "phys-b", "chemistry", "chem-a"};
    uint64_t held = 0;
    for (int world = 0; world < 300; ++world) {
        std::string conf = kOsmoTiers;
        Snapshot flat = cluster(8, 2);
        for (int p = 0; p < 3; ++p) {
            const int a = pick(0, 7), b = pick(a, 7);
            partition(flat, "p" + std::to_string(p), a, b);
            conf += "Pool=p" + std::to_string(p) + " Quota=" + std::to_string(pick(0, 2 * (b - a + 1))) + "\n";
        }
        const char *qos[] = {"high", "normal", "low"};
        for (uint32_t id = 1; id <= 40; ++id) {
            const std::string part = "p" + std::to_string(pick(0, 2));
            SnapJob j = pick(0, 3) == 0 ? running(id, part, qos[pick(0, 2)], uint32_t(pick(1, 2)), 100)
                                        : pending(id, part, qos[pick(0, 2)], uint32_t(pick(0, 3)), pick(100, 200));
            flat.add_job(j);
        }
        Snapshot tree = flat;
        tree.account_parent = two_department_cluster().account_parent;
        for (SnapJob &j : tree.jobs) {
            j.account = accounts[j.id % 5];
            j.cpus = 8;
            j.mem_mb = 1024;
        }
        Engine a = engine_with(conf), b = engine_with(conf);
        a.evaluate(flat, 1000);
        b.evaluate(tree, 1000);
        ASSERT_EQ(a.last().pending.size(), b.last().pending.size());
        for (size_t i = 0; i < a.last().pending.size(); ++i) {
            const PendingResult &x = a.last().pending[i], &y = b.last().pending[i];
            ASSERT_EQ(x.job_id, y.job_id) << "world " << world;
            ASSERT_EQ(x.admission, y.admission) << "world " << world << " job " << x.job_id;
            ASSERT_EQ(x.priority, y.priority) << "world " << world << " job " << x.job_id;
            ASSERT_EQ(x.admitted_tasks, y.admitted_tasks) << "world " << world;
            ASSERT_EQ(a.reason_of(x), b.reason_of(y)) << "world " << world;
            held += x.admission == Admission::Held;
        }
        EXPECT_TRUE(b.last().account_ids.empty());  // no Account= entries: no tree, no look-ups
        for (const PoolState &ps : b.last().pools) EXPECT_FALSE(ps.queues.tree);
    }
    EXPECT_GT(held, 100u);  // the worlds do hold jobs
}

TEST(LevelsEngine, ALoopInSlurmsAccountTreeTakesTheAccountsOnItAsTopLevel) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.account_parent["physics"] = "phys-a";  // physics -> phys-a -> physics
    s.account_parent["unknown-child"] = "never-heard-of";
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-b"));
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "phys-a"));
    s.add_job(with_account(pending(3, "pool1", "normal", 1, 300), "unknown-child"));
    e.evaluate(s, 1000);
    // phys-b's chain loops too (phys-b -> physics -> phys-a -> physics):
    // those three are top level, so phys-b's 3 GPUs are not physics'.
    std::vector<std::pair<std::string, int32_t>> got;
    for (const QueueSpec &q : pool(e, "pool1").queues.tree->queues) got.emplace_back(q.name, q.parent);
    EXPECT_EQ(got, (std::vector<std::pair<std::string, int32_t>>{
                       {"pool1", -1}, {"physics", 0}, {"chemistry", 0}, {"phys-a", 0}, {"phys-b", 0}, {"chem-a", 2}}));
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
    EXPECT_EQ(admission_of(e, 3), Admission::Quota);
}

TEST(LevelsEngine, TheQueueTreeListsDepartmentsBeforeTheirProjectsAndAnExplicitPoolEntryWins) {
    Config cfg = two_departments("Pool=pool2 Quota=2\n");
    cfg.accounts.push_back(entry("phys-b", "pool2", "gres/gpu=1"));
    Engine e = engine_of(cfg);
    Snapshot s = two_department_cluster();
    partition(s, "pool2", 1, 1);
    e.evaluate(s, 1000);
    std::vector<std::pair<std::string, int32_t>> got;
    for (const QueueSpec &q : pool(e, "pool1").queues.tree->queues) got.emplace_back(q.name, q.parent);
    EXPECT_EQ(got, (std::vector<std::pair<std::string, int32_t>>{
                       {"pool1", -1}, {"physics", 0}, {"chemistry", 0}, {"phys-a", 1}, {"phys-b", 1}, {"chem-a", 2}}));
    got.clear();
    for (const QueueSpec &q : pool(e, "pool2").queues.tree->queues) got.emplace_back(q.name, q.parent);
    // phys-a and chem-a have entries for pool1 only.
    EXPECT_EQ(got, (std::vector<std::pair<std::string, int32_t>>{
                       {"pool2", -1}, {"physics", 0}, {"chemistry", 0}, {"phys-b", 1}}));
    EXPECT_EQ(pool(e, "pool2").queues.tree->queues[3].quota.get(kGpu), 1u);
    EXPECT_EQ(pool(e, "pool2").queues.capacity[kGpu], 4u);
}

TEST(LevelsEngine, WhysQuotaLineNamesTheAccountQueueThatHoldsTheJob) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-a"));
    s.add_job(with_account(pending(2, "pool1", "normal", 2, 200), "phys-b"));
    e.evaluate(s, 1000);
    ExplainInput in;
    const Explanation x = explain(e, s, in, 1000);
    const PendingExplain *pe = x.find_pending(2);
    ASSERT_NE(pe, nullptr);
    EXPECT_EQ(pe->reason, WaitReason::QuotaFull);
    ASSERT_EQ(pe->quota.size(), 1u);
    const QuotaLine &q = pe->quota[0];
    EXPECT_FALSE(q.fits());
    EXPECT_EQ(q.needed, 0u);  // the pool's GPU quota has room
    EXPECT_EQ(pool(e, "pool1").queues.tree->queues[size_t(q.queue)].name, "physics");
    EXPECT_EQ(q.resource, kGpu);
    EXPECT_EQ(q.queue_used, 3u);
    EXPECT_EQ(q.queue_quota, 4u);
}

TEST(LevelsEngine, AJobEndFreesItsDepartmentsQuotaForTheHeldJob) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-a"));
    s.add_job(with_account(pending(2, "pool1", "normal", 2, 200), "phys-b"));
    e.evaluate(s, 1000);
    ASSERT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_TRUE(e.job_ended(1, 1005));
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
}

TEST(LevelsEngine, AJobSubmittedBetweenPassesIsHeldByItsDepartmentsQuota) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 3, 100), "phys-a"));
    e.evaluate(s, 1000);
    const PendingResult r = e.provisional(with_account(pending(2, "pool1", "normal", 2, 1001), "phys-b"), 1001);
    EXPECT_EQ(r.admission, Admission::Held);
    EXPECT_EQ(e.reason_of(r), "GpuPoolQuota:pool1/physics gpu 3/4");
    const PendingResult ok = e.provisional(with_account(pending(3, "pool1", "normal", 1, 1002), "phys-b"), 1002);
    EXPECT_EQ(ok.admission, Admission::Quota);
    const PendingResult full = e.provisional(with_account(pending(4, "pool1", "normal", 1, 1003), "phys-c"), 1003);
    EXPECT_EQ(e.reason_of(full), "GpuPoolQuota:pool1/physics gpu 4/4");
}

TEST(LevelsEngine, AJobArrayGetsAsManyTasksAsItsDepartmentHasRoomFor) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    s.add_job(with_account(running(1, "pool1", "normal", 1, 100), "phys-a"));
    SnapJob array = with_account(pending(2, "pool1", "normal", 1, 200), "phys-b");
    array.array_tasks = 5;  // phys-b has room for 3, physics for 3 more
    s.add_job(array);
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
    EXPECT_EQ(e.pending_result(2)->admitted_tasks, 3u);
    EXPECT_EQ(pool(e, "pool1").queues.np_taken[1][kGpu], 4u);  // physics: 1 running, 3 admitted
}

TEST(LevelsEngine, ThePassDividesThePoolsFairshareDownItsQueues) {
    Config cfg = two_departments();
    cfg.counted = {{true, true, false}};
    Engine e = engine_of(cfg);
    Snapshot s = two_department_cluster();
    for (SnapNode &n : s.nodes) n.cpus = 64;
    // physics asks for 8 GPUs, chemistry for none: physics gets the pool's 8.
    s.add_job(with_account(running(1, "pool1", "low", 2, 100), "phys-a", 10));
    s.add_job(with_account(pending(2, "pool1", "low", 6, 200), "phys-b", 20));
    e.evaluate(s, 1000);
    const PoolState &ps = pool(e, "pool1");
    const std::vector<QueueSpec> &q = ps.queues.tree->queues;
    ASSERT_EQ(q[1].name, "physics");
    EXPECT_EQ(ps.fairshare, 8u);
    EXPECT_EQ(ps.queues.fairshare[1][kGpu], 8u);
    EXPECT_EQ(ps.queues.fairshare[2][kGpu], 0u);  // chemistry
    EXPECT_EQ(ps.queues.fairshare[3][kGpu], 2u);  // phys-a: its demand
    EXPECT_EQ(ps.queues.fairshare[4][kGpu], 6u);  // phys-b
    EXPECT_EQ(ps.queues.demand[1][kCpu], 30u);
    EXPECT_EQ(ps.queues.fairshare[1][kCpu], 30u);
    EXPECT_EQ(ps.queues.capacity[kCpu], 128u);
    EXPECT_EQ(ps.queues.allocated[0][kGpu], 2u);
    EXPECT_EQ(ps.queues.allocated[1][kGpu], 2u);
    EXPECT_EQ(ps.queues.np_running[1][kGpu], 0u);  // low is preemptible
}

namespace {

// A random site: one or two pools over 8 nodes (4 GPUs, 32 CPUs each),
// departments over projects over users (users have no entries), entries
// for some of them, for every pool or one, GPU and CPU quotas.
struct LevelWorld {
    Config cfg;
    Snapshot snap;
    std::vector<std::string> accounts;
    std::vector<std::string> pools;
};

LevelWorld random_level_world(std::mt19937 &rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    LevelWorld w;
    w.snap = cluster(8, 4);
    for (SnapNode &n : w.snap.nodes) n.cpus = 32;
    std::string conf = kOsmoTiers;
    for (int p = 0, n = pick(1, 2); p < n; ++p) {
        const int a = pick(0, 5), b = pick(a, 7);
        w.pools.push_back("p" + std::to_string(p));
        partition(w.snap, w.pools.back(), a, b);
        conf += "Pool=" + w.pools.back() + " Quota=" + std::to_string(pick(0, 4 * (b - a + 1))) + "\n";
    }
    w.cfg = parse_config(conf, "test.conf");
    const bool cpus = pick(0, 1);
    w.cfg.counted = {{true, cpus, false}};
    auto add_entry = [&](const std::string &account) {
        if (pick(0, 9) < 3) return;
        std::string quota = "gres/gpu=" + std::to_string(pick(0, 10));
        if (pick(0, 1)) quota += ",cpu=" + std::to_string(pick(0, 64));
        const std::string pool = pick(0, 1) ? "*" : w.pools[size_t(pick(0, int(w.pools.size()) - 1))];
        w.cfg.accounts.push_back(entry(account, pool, quota));
    };
    for (int d = 0, nd = pick(1, 3); d < nd; ++d) {
        const std::string dept = "d" + std::to_string(d);
        w.snap.account_parent[dept] = "root";
        w.accounts.push_back(dept);
        add_entry(dept);
        for (int p = 0, np = pick(0, 3); p < np; ++p) {
            const std::string project = dept + "p" + std::to_string(p);
            w.snap.account_parent[project] = dept;
            w.accounts.push_back(project);
            add_entry(project);
            for (int u = 0, nu = pick(0, 2); u < nu; ++u) {
                w.snap.account_parent[project + "u" + std::to_string(u)] = project;
                w.accounts.push_back(project + "u" + std::to_string(u));
            }
        }
    }
    return w;
}

SnapJob random_job(std::mt19937 &rng, const LevelWorld &w, uint32_t id, bool run) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const char *qos[] = {"high", "normal", "low"};
    const std::string pool = w.pools[size_t(pick(0, int(w.pools.size()) - 1))];
    SnapJob j = run ? running(id, pool, qos[pick(0, 2)], uint32_t(pick(1, 3)), 100)
                    : pending(id, pool, qos[pick(0, 2)], uint32_t(pick(0, 3)), pick(100, 200));
    if (!run && w.pools.size() > 1 && pick(0, 4) == 0) j.partitions = w.pools;
    if (!run && pick(0, 5) == 0) j.array_tasks = uint32_t(pick(2, 5));
    j.account = w.accounts[size_t(pick(0, int(w.accounts.size()) - 1))];
    j.cpus = uint32_t(pick(1, 16));
    return j;
}

// Each queue's (and each pool's) NP amounts, worked out here from the jobs:
// running NP jobs and what admitted ones reserve, up the tree.  Reserved
// amounts only ever go where running and reserved stay within quota.
void expect_within_quotas(const Engine &e, const std::map<uint32_t, SnapJob> &jobs, const std::string &when) {
    const Evaluation &ev = e.last();
    for (size_t p = 0; p < ev.pools.size(); ++p) {
        const PoolState &ps = ev.pools[p];
        const size_t n = ps.queues.tree ? ps.queues.tree->queues.size() : 1;
        std::vector<Amounts> running(n, Amounts{}), reserved(n, Amounts{});
        auto add = [&](std::vector<Amounts> &to, const SnapJob &j, uint64_t tasks) {
            const int32_t own = queue_in(ps, account_id(ev, j.account));
            const Amounts one = task_amounts(e.config(), j.gpus, j.cpus, j.mem_mb);
            for (int32_t q = own; q >= 0; q = q ? ps.queues.tree->queues[size_t(q)].parent : -1)
                for (size_t r = 0; r < kResources; ++r) to[size_t(q)][r] += one[r] * tasks;
        };
        for (const auto &[id, j] : jobs) {
            const int tier = e.tier_of_qos(j.qos);
            if (e.config().tiers[size_t(tier)].preemptible) continue;
            if (j.state == JobState::Running && j.partitions.front() == ps.name) add(running, j, 1);
            const PendingResult *r = j.state == JobState::Pending ? e.pending_result(id) : nullptr;
            if (r && r->admission == Admission::Quota && r->pools.contains(int(p)) && !r->refuses(int(p)))
                add(reserved, j, r->admitted_tasks);
        }
        for (size_t q = 0; q < n; ++q)
            for (size_t r = 0; r < kResources; ++r) {
                const uint64_t quota = q == 0 ? (r == kGpu ? ps.quota : UINT64_MAX)
                                              : ps.queues.tree->queues[q].quota.has(Resource(r))
                                                    ? ps.queues.tree->queues[q].quota.value[r]
                                                    : UINT64_MAX;
                if (reserved[q][r] > 0) {
                    ASSERT_LE(running[q][r] + reserved[q][r], quota)
                        << when << ": pool " << ps.name << " queue " << q << " resource " << r;
                }
            }
    }
}

}  // namespace

// Over random trees, NP use never exceeds
// any queue's quota after a pass, job ends and submits between passes; a
// job end decides with levels what a walk over the whole queue decides.
TEST(LevelsEngine, AdmissionNeverTakesAQueueOverItsQuotaAndJobEndsAgreeWithAFullWalk) {
    std::mt19937 rng(2020);
    uint64_t held_by_queue = 0, admitted = 0;
    for (int world = 0; world < 2000; ++world) {
        LevelWorld w = random_level_world(rng);
        std::map<uint32_t, SnapJob> jobs;
        uint32_t id = 1;
        for (int k = std::uniform_int_distribution<int>(0, 10)(rng); k > 0; --k, ++id) jobs[id] = random_job(rng, w, id, true);
        for (int k = std::uniform_int_distribution<int>(0, 30)(rng); k > 0; --k, ++id) jobs[id] = random_job(rng, w, id, false);
        for (const auto &[jid, j] : jobs) w.snap.add_job(j);
        Engine inc = engine_of(w.cfg), full = engine_of(w.cfg);
        inc.evaluate(w.snap, 1000);
        full.evaluate(w.snap, 1000);
        // Running jobs may start over a quota (Slurm's, before gpupool):
        // what is admitted never adds to a queue that is over.
        expect_within_quotas(inc, jobs, "world " + std::to_string(world) + " pass");
        // `gpupool why`'s quota lines say what admission decided, queue and all.
        const Explanation x = explain(inc, w.snap, ExplainInput{}, 1000);
        for (const PendingExplain &pe : x.pending) {
            const PendingResult *r = inc.pending_result(pe.job_id);
            if (!r) continue;
            for (const QuotaLine &q : pe.quota) {
                ASSERT_EQ(q.fits(), !r->refuses(q.pool)) << "world " << world << " job " << pe.job_id;
                for (const Refusal &f : r->refused)
                    if (f.pool == q.pool) {
                        ASSERT_EQ(f.queue(), q.queue) << "world " << world << " job " << pe.job_id;
                        if (q.queue_blocked) {
                            ASSERT_EQ(f.resource(), q.resource);
                            ASSERT_EQ(f.taken, q.queue_used);
                        }
                    }
            }
        }
        for (int op = 0; op < 12 && !HasFailure(); ++op) {
            const int64_t now = 1001 + op;
            if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
                SnapJob j = random_job(rng, w, id++, false);
                jobs[j.id] = j;
                const PendingResult a = inc.provisional(j, now), b = full.provisional(j, now);
                ASSERT_EQ(a.admission, b.admission);
            } else if (!jobs.empty()) {
                auto it = std::next(jobs.begin(), std::uniform_int_distribution<int>(0, int(jobs.size()) - 1)(rng));
                const uint32_t gone = it->first;
                jobs.erase(it);
                inc.job_ended(gone, now);
                full.job_ended_full(gone, now);
            }
            for (const auto &[jid, j] : jobs) {
                if (j.state != JobState::Pending) continue;
                const PendingResult *a = inc.pending_result(jid), *b = full.pending_result(jid);
                ASSERT_EQ(a == nullptr, b == nullptr);
                if (!a) continue;
                ASSERT_EQ(a->admission, b->admission) << "world " << world << " job " << jid << " op " << op;
                ASSERT_EQ(a->admitted_tasks, b->admitted_tasks) << "world " << world << " job " << jid;
                // (A job that stays held keeps its reason's counts until the next pass.)
                admitted += a->admission == Admission::Quota;
                held_by_queue += a->admission == Admission::Held && a->refused.front().queue() > 0;
            }
            expect_within_quotas(inc, jobs, "world " + std::to_string(world) + " op " + std::to_string(op));
        }
    }
    EXPECT_GT(held_by_queue, 1000u);  // the worlds do hold jobs by account queues
    EXPECT_GT(admitted, 1000u);
}

namespace {

// pool1 (8 GPUs, no NP quota) shared by two projects with no quota and the
// same weight; both ask for 8 GPUs with LOW jobs.  K: UsageWeight.
Config two_projects_no_quota(const std::string &usage_weight = "1") {
    std::string tiers = kOsmoTiers;
    tiers.replace(tiers.find("UsageWeight=0"), 13, "UsageWeight=" + usage_weight);
    Config cfg = parse_config(tiers + "Pool=pool1 Quota=0\n", "test.conf");
    cfg.accounts = {entry("proj-a", "pool1", "gres/gpu=0"), entry("proj-b", "pool1", "gres/gpu=0")};
    return cfg;
}

Snapshot both_projects_asking() {
    Snapshot s = cluster(2, 4);
    partition(s, "pool1", 0, 1);
    s.account_parent = {{"proj-a", "root"}, {"proj-b", "root"}};
    s.add_job(with_account(pending(10, "pool1", "low", 8, 3000), "proj-a"));
    s.add_job(with_account(pending(11, "pool1", "low", 8, 3000), "proj-b"));
    return s;
}

// Fairshare of each queue of pool1, by name.
std::map<std::string, uint64_t> queue_fairshare(const Engine &e) {
    const PoolState &ps = pool(e, "pool1");
    std::map<std::string, uint64_t> out;
    for (size_t q = 1; q < ps.queues.tree->queues.size(); ++q)
        out[ps.queues.tree->queues[q].name] = ps.queues.fairshare[q][kGpu];
    return out;
}

// proj-a held all 8 GPUs for the hour before both ask.
Engine after_an_hour_of_proj_a(Config cfg) {
    Engine e = engine_of(std::move(cfg));
    Snapshot busy = cluster(2, 4);
    partition(busy, "pool1", 0, 1);
    busy.account_parent = {{"proj-a", "root"}, {"proj-b", "root"}};
    busy.add_job(with_account(running(1, "pool1", "low", 8, 100), "proj-a"));
    e.evaluate(busy, 1000);
    e.evaluate(busy, 4600);
    e.evaluate(both_projects_asking(), 4601);
    return e;
}

}  // namespace

TEST(LevelsEngine, AProjectThatUsedThePoolForAnHourGetsLessOfItThanOneThatDidNot) {
    Engine e = after_an_hour_of_proj_a(two_projects_no_quota());
    // U: proj-a 1 (all of the decayed capacity), proj-b 0; W 1/2 each, K 1:
    // max(0, W + K (W - U)) is 0 for proj-a and 1 for proj-b.
    EXPECT_EQ(queue_fairshare(e), (std::map<std::string, uint64_t>{{"proj-a", 0}, {"proj-b", 8}}));
}

TEST(LevelsEngine, WithUsageWeightZeroPastUsageDoesNotChangeTheProjectsShares) {
    Engine e = after_an_hour_of_proj_a(two_projects_no_quota("0"));
    EXPECT_EQ(queue_fairshare(e), (std::map<std::string, uint64_t>{{"proj-a", 4}, {"proj-b", 4}}));
}

TEST(LevelsEngine, AProjectsUsageHistoryIsKeptInTheStateFileAndSurvivesARestart) {
    Engine before = after_an_hour_of_proj_a(two_projects_no_quota());
    const std::string text = Engine::encode_state(before.persistent_state(), 4601);
    EXPECT_NE(text.find("\"accounts\":{\"proj-a\":"), std::string::npos);
    Engine after = engine_of(two_projects_no_quota());
    after.load_state_json(text);
    after.evaluate(both_projects_asking(), 4602);
    EXPECT_EQ(queue_fairshare(after), (std::map<std::string, uint64_t>{{"proj-a", 0}, {"proj-b", 8}}));
}

TEST(LevelsEngine, AStateFileWithABadAccountHistoryIsRefusedNamingThePoolAndAccount) {
    Engine e = engine_of(two_projects_no_quota());
    const std::string text =
        "{\"format\":\"gpupool-state\",\"version\":1,\"saved_at\":10,\"last_account\":10,\"jobs\":[],"
        "\"pools\":{\"pool1\":{\"last_used\":0,\"last_capacity\":8,"
        "\"usage\":{\"tail\":0,\"tail_time\":0,\"buckets\":[]},\"capacity\":{\"tail\":0,\"tail_time\":0,\"buckets\":[]},"
        "\"accounts\":{\"proj-a\":{\"last_used\":-1,\"usage\":{\"tail\":0,\"tail_time\":0,\"buckets\":[]}}}}}}";
    try {
        e.load_state_json(text);
        FAIL() << "loaded";
    } catch (const std::runtime_error &err) {
        EXPECT_STREQ(err.what(), "pool pool1 account proj-a: last_used out of range");
    }
}

TEST(LevelsEngine, APoolsOwnCpuQuotaHoldsANormalJobWithoutAnyAccountEntry) {
    Config cfg = parse_config(kOsmoTiers + "QuotaTRES=gres/gpu,cpu\nPool=pool1 Quota=gres/gpu=8,cpu=8\n", "test.conf");
    Engine e = engine_of(cfg);
    Snapshot s = cluster(2, 4);
    for (SnapNode &n : s.nodes) n.cpus = 16;
    partition(s, "pool1", 0, 1);
    s.add_job(with_account(running(1, "pool1", "normal", 1, 100), "anyone", 6));
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "anyone", 4));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Held);
    EXPECT_EQ(reason(e, 2), "GpuPoolQuota:pool1 cpu 6/8");
    const std::vector<QuotaLine> lines = e.admission_trace().lines;
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_FALSE(lines[0].fits());
    EXPECT_EQ(lines[0].queue, 0);
    EXPECT_EQ(lines[0].resource, kCpu);
}

TEST(LevelsEngine, APoolWithOnlyAGpuQuotaBuildsNoTreeWhenQuotaTresCountsCpus) {
    Config cfg = parse_config(kOsmoTiers + "QuotaTRES=gres/gpu,cpu\nPool=pool1 Quota=8\n", "test.conf");
    Engine e = engine_of(cfg);
    Snapshot s = cluster(2, 4);
    partition(s, "pool1", 0, 1);
    s.add_job(with_account(pending(2, "pool1", "normal", 1, 200), "anyone", 400));
    e.evaluate(s, 1000);
    EXPECT_EQ(admission_of(e, 2), Admission::Quota);
    EXPECT_FALSE(pool(e, "pool1").queues.tree);
}

TEST(LevelsEngine, AJobOfTheProjectFurthestBelowItsFairshareComesFirstInItsTier) {
    Config cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=0\n", "test.conf");
    cfg.accounts = {entry("proj-a", "pool1", "gres/gpu=0"), entry("proj-b", "pool1", "gres/gpu=0")};
    Engine e = engine_of(cfg);
    Snapshot s = cluster(2, 4);
    partition(s, "pool1", 0, 1);
    s.account_parent = {{"proj-a", "root"}, {"proj-b", "root"}};
    s.add_job(with_account(running(1, "pool1", "low", 6, 100), "proj-a"));
    s.add_job(with_account(pending(2, "pool1", "low", 2, 200), "proj-a"));   // older
    s.add_job(with_account(pending(3, "pool1", "low", 2, 300), "proj-b"));   // newer, proj-b holds nothing
    s.add_job(with_account(pending(4, "pool1", "normal", 1, 400), "proj-a"));  // a higher tier first
    e.evaluate(s, 1000);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{4, 3, 2}));
    EXPECT_GT(e.pending_result(3)->factor_fairshare, e.pending_result(2)->factor_fairshare);
}

TEST(LevelsEngine, ADepartmentsStandingDecidesBeforeItsProjects) {
    Engine e = engine_of(two_departments());
    Snapshot s = two_department_cluster();
    // physics holds 4 of its 4 (phys-a 4), chemistry 2 of 4: every
    // chemistry job before physics's, even one of a physics project
    // (phys-b) that holds nothing.
    s.add_job(with_account(running(1, "pool1", "low", 4, 100), "phys-a"));
    s.add_job(with_account(running(2, "pool1", "low", 2, 100), "chem-a"));
    s.add_job(with_account(pending(3, "pool1", "low", 4, 200), "phys-b"));
    s.add_job(with_account(pending(4, "pool1", "low", 4, 300), "chem-a"));
    e.evaluate(s, 1000);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{4, 3}));
}

TEST(LevelsEngine, JobsOfAnAccountWithNoEntryStandByWhatTheyHoldNotBeforeEveryProject) {
    Config cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=0\n", "test.conf");
    cfg.accounts = {entry("proj-a", "pool1", "gres/gpu=0")};
    Engine e = engine_of(cfg);
    Snapshot s = cluster(2, 4);
    partition(s, "pool1", 0, 1);
    s.account_parent = {{"proj-a", "root"}, {"misc", "root"}};
    // misc (no entry: the pool's own queue) holds all 8 GPUs.
    s.add_job(with_account(running(1, "pool1", "low", 8, 100), "misc"));
    s.add_job(with_account(pending(2, "pool1", "low", 2, 200), "proj-a"));
    s.add_job(with_account(pending(3, "pool1", "low", 2, 100), "misc"));  // older
    e.evaluate(s, 1000);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{2, 3}));
}

// A preemptor the last pass did not see (submitted since, no placement
// yet) is admitted by R2 as any job is: its queue's quota holds it too,
// not only its pool's.
TEST(LevelsEngine, APreemptorUnknownToThePassIsHeldByItsQueuesQuota) {
    Config cfg = parse_config(kOsmoTiers + "Pool=pool1 Quota=4\n", "test.conf");
    cfg.accounts = {entry("physics", "pool1", "gres/gpu=1")};
    Engine e;
    e.set_config(cfg);
    Snapshot s = cluster(1, 4);
    partition(s, "pool1", 0, 0);
    s.account_parent = {{"physics", "root"}};
    s.add_job(running(1, "pool1", "low", 4, 100));
    e.evaluate(s, 1000);
    SnapJob p = pending(2, "pool1", "normal", 2, 900);
    p.account = "physics";
    std::string parts;
    const Verdict v = e.preemptable(ref(s.jobs[0]), job_ref(p, parts), 1000);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(v.why, std::string("preemptor is held by quota"));
    // Within its queue's quota it may take the LOW job.
    p.gpus = 1;
    EXPECT_TRUE(e.preemptable(ref(s.jobs[0]), job_ref(p, parts), 1000).allowed);
}

// A pool's own figures are its row 0, with account queues or without: NP
// running and reserved GPUs, all running GPUs, and the preemptible part.
TEST(LevelsEngine, APoolsOwnFiguresAreItsRootRowWithQueuesOrWithout) {
    for (bool queues : {false, true}) {
        Config cfg = queues ? two_departments() : parse_config(kOsmoTiers + "Pool=pool1 Quota=8\n", "test.conf");
        Engine e = engine_of(cfg);
        Snapshot s = two_department_cluster();
        s.add_job(with_account(running(1, "pool1", "normal", 2, 100), "phys-a"));
        s.add_job(with_account(running(2, "pool1", "low", 1, 110), "chem-a"));
        s.add_job(with_account(pending(3, "pool1", "normal", 2, 200), "chem-a"));
        e.evaluate(s, 1000);
        const PoolState &ps = pool(e, "pool1");
        SCOPED_TRACE(queues ? "with queues" : "flat");
        EXPECT_EQ(ps.queues.np_running.at(0)[kGpu], 2u);
        EXPECT_EQ(ps.queues.np_taken.at(0)[kGpu], 4u);
        EXPECT_EQ(ps.queues.allocated.at(0)[kGpu], 3u);
        EXPECT_EQ(ps.np_used(), 2u);
        EXPECT_EQ(ps.np_reserved(), 2u);
        EXPECT_EQ(ps.p_used(), 1u);
        EXPECT_EQ(ps.used(), 3u);
        EXPECT_EQ(ps.quota_room(), 4u);
    }
}

// A reservation given back takes nothing that running jobs hold, in the
// pool's row and in every queue's.
TEST(LevelsEngine, AReservationGivenBackNeverTakesWhatRunningJobsHold) {
    PoolQueues pq;
    add_np(pq, 0, Amounts{4, 0, 0}, 1, +1, true);   // a running NP job of 4
    add_np(pq, 0, Amounts{2, 0, 0}, 1, +1, false);  // an admitted one of 2
    add_np(pq, 0, Amounts{3, 0, 0}, 1, -1, false);  // 3 given back: only 2 were reserved
    EXPECT_EQ(pq.np_taken[0][kGpu], 4u);
    EXPECT_EQ(pq.np_running[0][kGpu], 4u);
}

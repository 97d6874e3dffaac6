// The victim plan: a preemptor's victims on one node, the cheapest set
// (fewest GPU-seconds lost, then R6's order), none while free GPUs on a node
// that is not completing fit it; two preemptors never plan the same node;
// a job that preempted goes first in its tier until it starts.
#include <gtest/gtest.h>

#include <random>

#include "engine.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

// One pool of two 4-GPU nodes: NORMAL jobs take LOW ones by R4.
struct TwoNodes {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=8\n");
    Snapshot snap = cluster(2, 4);
    TwoNodes() { partition(snap, "pool1", 0, 1); }
    void pass(int64_t now = 1000) {
        settle(snap);
        e.evaluate(snap, now);
    }
    // The jobs preemptable() lets `pre` take, in plan_rank() order.
    std::vector<uint32_t> victims(const SnapJob &pre, int64_t now = 1000) {
        std::vector<std::pair<uint32_t, uint32_t>> ranked;
        JobRef p = ref(pre);
        p.nodes = pre.node_count;
        for (const SnapJob &j : snap.jobs)
            if (j.state == JobState::Running && e.preemptable(ref(j), p, now).allowed)
                ranked.emplace_back(e.plan_rank(pre.id, j.id), j.id);
        std::sort(ranked.begin(), ranked.end());
        std::vector<uint32_t> out;
        for (const auto &r : ranked) out.push_back(r.second);
        return out;
    }
};

// Both nodes full of one 4-GPU LOW job each (n1's ran less), and two
// NORMAL 4-GPU preemptors alike, 8 and 9, after one pass.
struct TwoFullNodes : TwoNodes {
    const SnapJob a = pending(8, "pool1", "normal", 4, 700), b = pending(9, "pool1", "normal", 4, 701);
    TwoFullNodes() {
        snap.add_job(on(running(1, "pool1", "low", 4, 500), 0));
        snap.add_job(on(running(2, "pool1", "low", 4, 600), 1));
        snap.add_job(a);
        snap.add_job(b);
        pass();
    }
};

// A pending job that may use only `nodes` (its GPU model, -w, -x).
SnapJob bound(SnapJob j, const char *nodes) {
    j.nodes_given = true;
    j.allowed_nodes = nodes;
    return j;
}

struct Row {
    const char *sentence;
    std::vector<SnapJob> running;
    std::vector<bool> completing;  // per node
    SnapJob preemptor;
    std::vector<uint32_t> victims;  // in plan order
    std::vector<bool> closed = {};  // per node
};

}  // namespace

TEST(VictimPlan, TakesTheCheapestSetOnOneNode) {
    const std::vector<Row> rows = {
        {"free GPUs on n1 fit the 2-GPU job: no victim",
         {on(running(1, "pool1", "low", 4, 100), 0), on(running(2, "pool1", "low", 2, 100), 1)},
         {},
         pending(9, "pool1", "normal", 2, 500),
         {}},
        {"two 2-GPU LOW jobs on n1 that started late cost less than n0's 4-GPU one: the plan takes both on n1, "
         "where the 4-GPU job then fits, newest first (no fallback node in a first plan)",
         {on(running(1, "pool1", "low", 4, 100), 0), on(running(2, "pool1", "low", 2, 500), 1),
          on(running(3, "pool1", "low", 2, 600), 1)},
         {},
         pending(9, "pool1", "normal", 4, 700),
         {3, 2}},
        {"one 2-GPU job that started late loses fewer GPU-seconds than two 1-GPU jobs running long: "
         "it alone goes, the others are not asked for",
         {on(running(1, "pool1", "low", 2, 900), 0), on(running(2, "pool1", "low", 1, 100), 0),
          on(running(3, "pool1", "low", 1, 100), 0), on(running(4, "pool1", "normal", 4, 100), 1)},
         {},
         pending(9, "pool1", "normal", 2, 950),
         {1}},
        {"n0 is completing with its GPUs free: Slurm starts nothing there, so the plan frees n1",
         {on(running(2, "pool1", "low", 4, 500), 1)},
         {true, false},
         pending(9, "pool1", "normal", 4, 700),
         {2}},
        {"n0 drains with 4 GPUs free: Slurm starts nothing there, so they do not count as fitting the job, and "
         "the plan frees n1",
         {on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         pending(9, "pool1", "normal", 4, 700),
         {2},
         {true, false}},
        {"n0's LOW job would lose less work, but n0 is in a reservation: the plan frees n1",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         pending(9, "pool1", "normal", 4, 950),
         {2},
         {true, false}},
        {"every node of the partition is closed: no plan, never a block; the rules alone offer every job they "
         "allow, in R6's order (Slurm preempts nothing it cannot start the job with)",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         pending(9, "pool1", "normal", 4, 950),
         {1, 2},
         {true, true}},
        {"a job that may use only some nodes the core is not told (-C, --exclusive, a reservation) gets no "
         "plan: every job the rules allow is offered, in R6's order, and Slurm takes those on the nodes it may use",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         [] {
             SnapJob j = pending(9, "pool1", "normal", 4, 950);
             j.nodes_given = true;
             return j;
         }(),
         {1, 2}},
        {"n0's LOW job would lose less work, but the job may use only n1 (its GPU model, -w, -x): the plan "
         "frees n1",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         bound(pending(9, "pool1", "normal", 4, 950), "n1"),
         {2}},
        {"n0 has 4 GPUs free, but the job may use only n1: they do not fit it, and the plan frees n1",
         {on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         bound(pending(9, "pool1", "normal", 4, 950), "n1"),
         {2}},
        {"the job may use only n1, where nothing can be freed (a NORMAL job): the rules alone, never a block, "
         "as its list may miss a node Slurm can use",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "normal", 4, 100), 1)},
         {},
         bound(pending(9, "pool1", "normal", 4, 950), "n1"),
         {1}},
        {"the job may use only nodes outside its partitions: no plan, the rules alone (never a block)",
         {on(running(1, "pool1", "low", 4, 900), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         bound(pending(9, "pool1", "normal", 4, 950), "n7"),
         {1, 2}},
        {"a job of 8 GPUs on 2 nodes takes a whole-node set on each",
         {on(running(1, "pool1", "low", 4, 100), 0), on(running(2, "pool1", "low", 2, 500), 1),
          on(running(3, "pool1", "low", 2, 600), 1)},
         {},
         [] {
             SnapJob j = pending(9, "pool1", "normal", 8, 700);
             j.node_count = 2;
             return j;
         }(),
         {3, 2, 1}},
        {"a job of 8 GPUs that asks for one node (--gpus=8 without -N) on nodes of 4: Slurm spreads it, so "
         "the plan cannot say where; the rules alone offer every job they allow, in R6's order (before, no node "
         "could hold 8 and it got no victim: it waited for good)",
         {on(running(1, "pool1", "low", 4, 100), 0), on(running(2, "pool1", "low", 4, 500), 1)},
         {},
         pending(9, "pool1", "normal", 8, 700),
         {2, 1}},
        {"nothing on any node can free enough: no victim at all",
         {on(running(1, "pool1", "low", 2, 100), 0), on(running(2, "pool1", "normal", 2, 100), 0),
          on(running(3, "pool1", "normal", 2, 100), 1), on(running(4, "pool1", "low", 2, 100), 1)},
         {},
         pending(9, "pool1", "normal", 4, 700),
         {}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.sentence);
        TwoNodes w;
        for (const SnapJob &j : row.running) w.snap.add_job(j);
        w.snap.add_job(row.preemptor);
        settle(w.snap);
        for (size_t n = 0; n < row.completing.size(); ++n) w.snap.nodes[n].completing = row.completing[n];
        for (size_t n = 0; n < row.closed.size(); ++n) w.snap.nodes[n].closed = row.closed[n];
        w.e.evaluate(w.snap, 1000);
        EXPECT_EQ(w.victims(row.preemptor), row.victims);
    }
}

namespace {
// A job holding (running) or asking for (pending) `cpus` CPUs and `mem_mb`
// MiB besides its GPUs.
SnapJob holding(SnapJob j, uint32_t cpus, uint64_t mem_mb = 0) {
    j.cpus = cpus;
    j.mem_mb = mem_mb;
    for (NodeShare &n : j.nodes) {
        n.cpus = cpus;
        n.mem_mb = mem_mb;
    }
    return j;
}
}  // namespace

// Slurm starts a job on a node only where its CPUs and memory fit as well
// as its GPUs: n0 and n1 have 4 GPUs, 8 CPUs and 64,000 MiB each.
TEST(VictimPlan, FreesCpusAndMemoryWhereFreeGpusAloneDoNotFit) {
    const std::vector<Row> rows = {
        {"each node has 3 GPUs free, but a LOW job holds all its CPUs: the plan frees the one that lost less "
         "work (before, free GPUs counted as fitting and the job waited for good)",
         {holding(on(running(1, "pool1", "low", 1, 100), 0), 8), holding(on(running(2, "pool1", "low", 1, 500), 1), 8)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 1),
         {2}},
        {"n0's free GPUs and CPUs fit the job: no victim",
         {holding(on(running(1, "pool1", "low", 1, 100), 0), 4), holding(on(running(2, "pool1", "low", 1, 500), 1), 8)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 4),
         {}},
        {"n0 has GPUs and CPUs free but too little memory, n1 none of its GPUs free to take: the plan frees the "
         "job holding n0's memory",
         {holding(on(running(1, "pool1", "low", 1, 100), 0), 2, 60000), on(running(2, "pool1", "normal", 4, 500), 1)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 1, 8000),
         {1}},
        {"a LOW job without GPUs holds n0's CPUs, a NORMAL job fills n1: the plan takes the job without GPUs",
         {holding(on(running(1, "pool1", "low", 0, 100), 0), 8), on(running(2, "pool1", "normal", 4, 500), 1)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 1),
         {1}},
        {"the 2-GPU job, the one set of one job that frees n0's GPUs, leaves its CPUs short: n0's 1-GPU job "
         "joins it",
         {holding(on(running(1, "pool1", "low", 2, 600), 0), 2), holding(on(running(2, "pool1", "low", 1, 100), 0), 6),
          on(running(3, "pool1", "normal", 4, 500), 1)},
         {},
         holding(pending(9, "pool1", "normal", 3, 900), 4),
         {1, 2}},
        {"n0's newer LOW job holds 2 CPUs, its older one 6: the older one alone frees the 5 the job asks for, "
         "so the newer one is not taken as well",
         {holding(on(running(1, "pool1", "low", 1, 600), 0), 2), holding(on(running(2, "pool1", "low", 1, 100), 0), 6),
          on(running(3, "pool1", "normal", 4, 500), 1)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 5),
         {2}},
        {"the job asks for more CPUs than a node has (-n16 without -N: Slurm may spread it): CPUs cannot say "
         "which node, GPUs alone decide, and free GPUs fit",
         {holding(on(running(1, "pool1", "low", 1, 100), 0), 8), holding(on(running(2, "pool1", "low", 1, 500), 1), 8)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 16),
         {}},
        {"--mem=0 asks for another node's memory, more than these have: memory cannot say, GPUs alone decide",
         {holding(on(running(1, "pool1", "low", 1, 100), 0), 1, 60000),
          holding(on(running(2, "pool1", "low", 1, 500), 1), 1, 60000)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 1, 128000),
         {}},
        {"NORMAL jobs hold every node's CPUs: nothing can free them, no victim",
         {holding(on(running(1, "pool1", "normal", 1, 100), 0), 8),
          holding(on(running(2, "pool1", "normal", 1, 500), 1), 8)},
         {},
         holding(pending(9, "pool1", "normal", 1, 900), 1),
         {}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.sentence);
        TwoNodes w;
        for (SnapNode &n : w.snap.nodes) {
            n.room_cpus = 8;
            n.room_mem_mb = 64000;
        }
        for (const SnapJob &j : row.running) w.snap.add_job(j);
        w.snap.add_job(row.preemptor);
        w.pass();
        EXPECT_EQ(w.victims(row.preemptor), row.victims);
    }
}

namespace {
// pool1 (quota 4) runs its own LOW job 1 on n0, started at own_start;
// pool2 (quota 0) borrows n1 with LOW job 2, started at borrowed_start.
// The victims of pool1's NORMAL job of 4 at 1000.
std::vector<uint32_t> own_or_borrower(const std::string &extra, int64_t own_start, int64_t borrowed_start) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=0\n" + extra);
    Snapshot snap = cluster(2, 4);
    partition(snap, "pool1", 0, 1);
    partition(snap, "pool2", 0, 1);
    snap.add_job(on(running(1, "pool1", "low", 4, own_start), 0));
    snap.add_job(on(running(2, "pool2", "low", 4, borrowed_start), 1));
    const SnapJob pre = pending(9, "pool1", "normal", 4, 950);
    snap.add_job(pre);
    settle(snap);
    e.evaluate(snap, 1000);
    const VictimPlan &plan = e.victim_plan(ref(pre), 1000);
    EXPECT_EQ(plan.outcome, VictimPlan::Outcome::Victims);
    return plan.victims;
}
}  // namespace

TEST(VictimPlan, BetweenNodesTheSetThatLosesLeastWorkComesBeforeReclaim) {
    // The own job ran 100 s, the borrower 900 s: pool1's NORMAL job takes
    // its own, which once it starts is past pool1's quota as the borrower
    // is, and throws away less work.
    EXPECT_EQ(own_or_borrower("", 900, 100), (std::vector<uint32_t>{1}))
        << "the own job on n0 (400 GPU-s), not the borrower (3,600)";
}

TEST(VictimPlan, BetweenNodesOfEqualRoomAndWorkReclaimComesBeforeThePoolsOwnLowerTiers) {
    EXPECT_EQ(own_or_borrower("", 500, 500), (std::vector<uint32_t>{2})) << "the borrower on n1, not the own job on n0";
}

TEST(VictimPlan, WithReclaimToFairshareReclaimComesBeforeThePoolsOwnLowerTiersBetweenNodes) {
    // Reclaim to fairshare is not what a swap of places keeps whole, so R5
    // comes first there (as with levels): the borrower, though it lost more.
    EXPECT_EQ(own_or_borrower("ReclaimTo=fairshare\n", 900, 100), (std::vector<uint32_t>{2}));
}

TEST(VictimPlan, WhereNoSwapIsPossibleReclaimComesBeforeOwnLowerTiersWhateverSwapSays) {
    // A job over two nodes may not swap (R5 "A swap": one node), so even
    // Swap=least-work, which orders by work alone only in its first try for
    // a one-node job while some pool is past its quota, leaves R5 before R4
    // here.  pool1 (quota 8) runs its own LOW job 1 on n0 (run 100 s)
    // beside pool2's borrowed job 2 (run 900 s); n1 holds pool2's borrowed
    // jobs 3 and 4 (4 ran less).  pool1's NORMAL job of 4 on 2 nodes takes
    // job 2 on n0 and job 4 on n1 (2 GPUs each).
    for (const char *swap : {"needed", "least-work"}) {
        SCOPED_TRACE(swap);
        Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=8\nPool=pool2 Quota=0\nConsolidation=no\nSwap=" +
                               swap + "\n");
        Snapshot snap = cluster(2, 4);
        partition(snap, "pool1", 0, 1);
        partition(snap, "pool2", 0, 1);
        snap.add_job(on(running(1, "pool1", "low", 2, 900), 0));
        snap.add_job(on(running(2, "pool2", "low", 2, 100), 0));
        snap.add_job(on(running(3, "pool2", "low", 2, 100), 1));
        snap.add_job(on(running(4, "pool2", "low", 2, 200), 1));
        SnapJob pre = pending(9, "pool1", "normal", 4, 950);
        pre.node_count = 2;
        snap.add_job(pre);
        settle(snap);
        e.evaluate(snap, 1000);
        JobRef p = ref(pre);
        p.nodes = 2;
        const VictimPlan &plan = e.victim_plan(p, 1000);
        ASSERT_EQ(plan.outcome, VictimPlan::Outcome::Victims);
        std::vector<uint32_t> victims = plan.victims;
        std::sort(victims.begin(), victims.end());
        EXPECT_EQ(victims, (std::vector<uint32_t>{2, 4})) << "pool2's borrowed jobs, not pool1's own job 1";
    }
}

TEST(VictimPlan, WithoutNodeUsageEveryR4CandidateIsOffered) {
    TwoNodes w;
    w.snap.add_job(on(running(1, "pool1", "low", 4, 100), 0));
    w.snap.add_job(on(running(2, "pool1", "low", 2, 100), 1));
    const SnapJob pre = pending(9, "pool1", "normal", 2, 500);
    w.snap.add_job(pre);
    w.e.evaluate(w.snap, 1000);  // no settle(): node usage unknown
    EXPECT_EQ(w.victims(pre), (std::vector<uint32_t>{2, 1}));
}

TEST(VictimPlan, TwoPreemptorsNeverPlanTheSameNode) {
    TwoFullNodes w;
    const SnapJob &a = w.a, &b = w.b;
    EXPECT_EQ(w.victims(a), (std::vector<uint32_t>{2})) << "n1's job ran less";
    w.e.note_preempted(a.id, 2);  // Slurm carried a's plan out
    // Job 2 is completing on n1: a waits for it; b plans n0 alone.
    w.snap.nodes[1].completing = true;
    w.e.refresh_running(w.snap, 1001);
    EXPECT_EQ(w.victims(a, 1001), (std::vector<uint32_t>{})) << "no second round for a";
    EXPECT_EQ(w.victims(b, 1001), (std::vector<uint32_t>{1}));
    // Job 2 gone and n1 done: a's GPUs are free there; a plans again and
    // finds them.
    w.snap.jobs.erase(w.snap.jobs.begin() + 1);
    settle(w.snap);
    w.snap.nodes[1].completing = false;
    w.e.refresh_running(w.snap, 1002);
    EXPECT_EQ(w.e.victim_plan(ref(a), 1002).outcome, VictimPlan::Outcome::FitsFree);
}

// A job bound to n1 (its GPU model, -w) whose node another preemptor's
// carried-out plan holds while its victim goes: no victim, not the rules'
// (which would preempt on n1 a second time).
TEST(VictimPlan, ABoundPreemptorWaitsForANodeAnotherPlanHolds) {
    TwoFullNodes w;
    const SnapJob &a = w.a;
    const SnapJob b = bound(w.b, "n1");
    EXPECT_EQ(w.victims(a), (std::vector<uint32_t>{2})) << "n1's job ran less";
    w.e.note_preempted(a.id, 2);  // job 2 is being signalled, still there
    w.e.refresh_running(w.snap, 1001);
    EXPECT_EQ(w.victims(b, 1001), (std::vector<uint32_t>{})) << "n1 is a's";
    EXPECT_EQ(w.e.victim_plan(ref(b), 1001).outcome, VictimPlan::Outcome::NoNode);
    EXPECT_TRUE(w.e.victim_plan(ref(b), 1001).held_elsewhere);
}

TEST(VictimPlan, AVictimRequeuedAndStartedAgainIsNotWaitedFor) {
    TwoFullNodes w;
    const SnapJob &a = w.a;
    EXPECT_EQ(w.victims(a), (std::vector<uint32_t>{2}));
    w.e.note_preempted(a.id, 2);
    // Job 2 was requeued and, before a started, started again on n1 (its
    // GPUs went to it): a no longer waits for it and plans again.
    w.snap.jobs[1] = on(running(2, "pool1", "low", 4, 1008), 1);
    settle(w.snap);
    w.e.refresh_running(w.snap, 1010);
    EXPECT_EQ(w.e.victim_plan(ref(a), 1010).outcome, VictimPlan::Outcome::Victims);
    EXPECT_EQ(w.victims(a, 1010), (std::vector<uint32_t>{2})) << "the new run ran less than job 1";
}

TEST(VictimPlan, AJobThatPreemptedStartsOnlyInThePartitionItPreemptedIn) {
    // pool1 and pool2 over the same two full nodes; job 9 lists both.
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=4\n");
    Snapshot snap = cluster(2, 4);
    partition(snap, "pool1", 0, 1);
    partition(snap, "pool2", 0, 1);
    snap.add_job(on(running(1, "pool1", "low", 4, 500), 0));
    snap.add_job(on(running(2, "pool1", "low", 4, 600), 1));
    const SnapJob pre = pending(9, "pool1,pool2", "normal", 4, 700);
    snap.add_job(pre);
    settle(snap);
    e.evaluate(snap, 1000);
    EXPECT_EQ(e.start_partitions(9, "pool1,pool2"), "pool1,pool2");
    JobRef in_pool2 = ref(pre);
    in_pool2.partitions = "pool2";
    ASSERT_EQ(e.victim_plan(in_pool2, 1000).outcome, VictimPlan::Outcome::Victims);
    e.note_preempted(9, e.victim_plan(in_pool2, 1000).victims.front());
    EXPECT_EQ(e.start_partitions(9, "pool1,pool2"), "pool2") << "in pool1 it would borrow";
    EXPECT_EQ(e.start_partitions(9, "pool1"), "pool1") << "a list without that partition is left as it is";
}

TEST(VictimPlan, AJobThatPreemptedGoesFirstInItsTierUntilItStarts) {
    TwoNodes w;
    w.e = engine_with(kOsmoTiers + "Pool=pool1 Quota=16\n");  // every NORMAL job admitted
    w.snap.add_job(on(running(1, "pool1", "low", 4, 500), 0));
    w.snap.add_job(on(running(2, "pool1", "normal", 4, 600), 1));
    w.snap.add_job(pending(8, "pool1", "normal", 4, 700));
    w.snap.add_job(pending(9, "pool1", "normal", 4, 701));
    w.snap.add_job(pending(10, "pool1", "high", 4, 702));
    w.pass();
    auto order = [&] {
        std::vector<uint32_t> ids;
        for (const PendingResult &r : w.e.last().pending) ids.push_back(r.job_id);
        return ids;
    };
    EXPECT_EQ(order(), (std::vector<uint32_t>{10, 8, 9}));
    EXPECT_EQ(w.victims(w.snap.jobs[3], 1000), (std::vector<uint32_t>{1}));
    w.e.note_preempted(9, 1);
    w.snap.jobs.erase(w.snap.jobs.begin());  // job 1 requeued: gone from the running
    w.pass(1002);
    EXPECT_EQ(order(), (std::vector<uint32_t>{10, 9, 8})) << "first in its tier, never above a higher one";
    EXPECT_GT(w.e.pending_result(9)->priority, w.e.pending_result(8)->priority);
    // Started: back to its place by R1 if it is ever pending again.
    w.snap.jobs[2] = on(running(9, "pool1", "normal", 4, 1003), 0);
    w.pass(1004);
    w.snap.jobs[2] = pending(9, "pool1", "normal", 4, 701);
    w.pass(1005);
    EXPECT_EQ(order(), (std::vector<uint32_t>{10, 8, 9}));
}

TEST(VictimPlan, APreemptibleJobThatReclaimedGoesBeforeEveryPreemptibleTierUntilItStarts) {
    // ReclaimBy=all: pool2's LOW job 9 reclaims from pool1's MID borrower.
    // Until 9 starts, pool1's waiting MID job 8 must not go first: it would
    // take the GPUs 9 freed, borrow them, and be reclaimed in turn.
    Engine e = engine_with(
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nReclaimBy=all\nPool=pool1 Quota=4\nPool=pool2 Quota=4\n");
    Snapshot snap = cluster(2, 4);
    partition(snap, "pool1", 0, 1);
    partition(snap, "pool2", 0, 1);
    snap.add_job(on(running(1, "pool1", "mid", 4, 500), 0));
    snap.add_job(on(running(2, "pool1", "mid", 4, 600), 1));  // borrowed from pool2
    snap.add_job(pending(8, "pool1", "mid", 4, 650));
    snap.add_job(pending(9, "pool2", "low", 4, 700));
    snap.add_job(pending(10, "pool2", "normal", 4, 800));
    settle(snap);
    e.evaluate(snap, 1000);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{10, 8, 9}));
    const VictimPlan &plan = e.victim_plan(ref(snap.jobs[3]), 1000);
    ASSERT_EQ(plan.outcome, VictimPlan::Outcome::Victims);
    ASSERT_EQ(plan.victims, (std::vector<uint32_t>{2}));
    e.note_preempted(9, 2);
    snap.jobs.erase(snap.jobs.begin() + 1);  // job 2 requeued: gone from the running
    settle(snap);
    e.evaluate(snap, 1002);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{10, 9, 8})) << "before every preemptible tier, never above an NP one";
    EXPECT_GT(e.pending_result(9)->priority, e.pending_result(8)->priority);
    // Started: a LOW job again if it is ever pending again.
    snap.jobs[2] = on(running(9, "pool2", "low", 4, 1003), 1);
    settle(snap);
    e.evaluate(snap, 1004);
    snap.jobs[2] = pending(9, "pool2", "low", 4, 700);
    settle(snap);
    e.evaluate(snap, 1005);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{10, 8, 9}));
    EXPECT_EQ(e.waiting_preemptor_priority(), 150u) << "mid's";
}

TEST(VictimPlan, NoPreemptibleTierMovesUpWhereAnNpTierIsBelowAPreemptibleOneOrNoneReclaims) {
    // A waiting LOW preemptor at MID's priority would go before the jobs
    // of the NP tier between them: it keeps its own.
    Engine e = engine_with(
        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
        "Tier=normal QOS=normal Priority=120 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nReclaimBy=all\nPool=pool1 Quota=4\n");
    EXPECT_EQ(e.waiting_preemptor_priority(), 0u);
    PendingResult r;
    r.tier = 2;
    r.preempted = true;
    EXPECT_EQ(e.order_priority(r), 100u);
    // Nor where preemptible jobs never reclaim (they preempt only in their
    // own pool, R4): MID would hand nothing back.
    Engine in_pool = engine_with(
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nPool=pool1 Quota=4\n");
    EXPECT_EQ(in_pool.waiting_preemptor_priority(), 0u);
}

// Random layouts: a planned set always frees enough on its node, and no job
// is offered while free GPUs on a node that is not completing fit; a job of
// more GPUs than any node has gets no plan (the rules alone).
TEST(VictimPlan, PropertyOverRandomNodeLayouts) {
    std::mt19937 rng(27);
    int planned = 0, free_fits = 0;
    for (int world = 0; world < 3000; ++world) {
        const int nodes = 1 + int(rng() % 6);
        TwoNodes w;
        w.snap = Snapshot{};
        for (int n = 0; n < nodes; ++n) w.snap.add_node("n" + std::to_string(n), 1 + rng() % 8);
        partition(w.snap, "pool1", 0, nodes - 1);
        uint32_t id = 1;
        for (int n = 0; n < nodes; ++n) {
            uint32_t left = w.snap.nodes[size_t(n)].gpus;
            while (left > 0 && rng() % 4 != 0) {
                const uint32_t g = 1 + rng() % left;
                w.snap.add_job(on(running(id++, "pool1", rng() % 3 ? "low" : "normal", g, 100 + rng() % 800), n));
                left -= g;
            }
        }
        const SnapJob pre = pending(999, "pool1", "normal", 1 + rng() % 8, 950);
        w.snap.add_job(pre);
        settle(w.snap);
        for (SnapNode &n : w.snap.nodes) n.completing = rng() % 5 == 0;
        w.e.evaluate(w.snap, 1000);
        const std::vector<uint32_t> v = w.victims(pre);
        bool fits = false;
        for (const SnapNode &n : w.snap.nodes) fits |= !n.completing && n.free_gpus >= pre.gpus;
        if (fits) {
            ++free_fits;
            EXPECT_TRUE(v.empty()) << "world " << world;
            continue;
        }
        const VictimPlan &plan = w.e.victim_plan(ref(pre), 1000);
        if (plan.outcome == VictimPlan::Outcome::Unplanned) {
            // More GPUs than any node has: Slurm would spread it, the rules alone.
            for (const SnapNode &n : w.snap.nodes) EXPECT_LT(n.gpus, pre.gpus) << "world " << world;
            continue;
        }
        if (plan.outcome != VictimPlan::Outcome::Victims) {
            EXPECT_TRUE(v.empty()) << "world " << world;
            continue;
        }
        ++planned;
        const int32_t node = plan.nodes.front();
        uint32_t freed = w.snap.nodes[size_t(node)].free_gpus;
        for (uint32_t k = 0; k < plan.group_end.front(); ++k)
            for (const SnapJob &j : w.snap.jobs)
                if (j.id == plan.victims[k]) {
                    EXPECT_EQ(j.nodes.front().node, node);
                    EXPECT_EQ(j.qos, "low");
                    freed += j.gpus;
                }
        EXPECT_GE(freed, pre.gpus) << "world " << world;
        EXPECT_FALSE(w.snap.nodes[size_t(node)].completing);
        EXPECT_EQ(v.size(), plan.victims.size());
    }
    EXPECT_GT(planned, 300);
    EXPECT_GT(free_fits, 300);
}

TEST(VictimPlan, PreemptorsGoInTheOrderOfTheNodesTheyFreed) {
    // n0 (8 GPUs): a NORMAL job of 4 and a LOW job of 4; n1 (4 GPUs): LOW
    // jobs of 1, 2 and 1.  Job 9 (1 GPU) frees n1 by its newest 1-GPU job,
    // job 11 (4 GPUs) frees n0.  Slurm gives a one-node job the first node
    // with room: were job 9 tried first it would land on n0 and leave job
    // 11 short there.  So job 11, whose node comes first, goes first.
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=12\n");
    Snapshot snap;
    snap.add_node("n0", 8);
    snap.add_node("n1", 4);
    partition(snap, "pool1", 0, 1);
    snap.add_job(on(running(1, "pool1", "normal", 4, 100), 0));
    snap.add_job(on(running(2, "pool1", "low", 4, 300), 0));
    snap.add_job(on(running(3, "pool1", "low", 1, 200), 1));
    snap.add_job(on(running(4, "pool1", "low", 2, 200), 1));
    snap.add_job(on(running(5, "pool1", "low", 1, 900), 1));
    const SnapJob small = pending(9, "pool1", "normal", 1, 950), big = pending(11, "pool1", "normal", 4, 960);
    snap.add_job(small);
    snap.add_job(big);
    settle(snap);
    e.evaluate(snap, 1000);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{9, 11})) << "by submit time before either preempted";
    EXPECT_EQ(e.victim_plan(ref(small), 1000).victims.front(), 5u);
    e.note_preempted(9, 5);
    EXPECT_EQ(e.victim_plan(ref(big), 1000).victims.front(), 2u);
    e.note_preempted(11, 2);
    snap.jobs.erase(snap.jobs.begin() + 4);  // jobs 2 and 5 requeued
    snap.jobs.erase(snap.jobs.begin() + 1);
    settle(snap);
    e.evaluate(snap, 1002);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{11, 9})) << "job 11 freed n0, which comes first";
}

TEST(VictimPlan, APreemptorAlikeReusesTheChoicesButNotAHeldNode) {
    // Jobs 8 and 9 are alike (pool, tier, size): 9's plan reuses the node
    // choices made for 8 in the same layout and second, and still skips
    // n1, which 8's carried-out plan holds.
    TwoFullNodes w;
    const SnapJob &a = w.a, &b = w.b;
    EXPECT_EQ(w.e.victim_plan(ref(a), 1000).victims, (std::vector<uint32_t>{2}));
    w.e.note_preempted(a.id, 2);
    const VictimPlan &pb = w.e.victim_plan(ref(b), 1000);
    EXPECT_EQ(pb.outcome, VictimPlan::Outcome::Victims);
    EXPECT_EQ(pb.nodes, (std::vector<int32_t>{0}));
    EXPECT_EQ(pb.victims, (std::vector<uint32_t>{1}));
}

namespace {

// pool1 (quota `quota1`) borrows from pool2 (quota 8) on two 4-GPU nodes:
// eight 1-GPU LOW jobs of pool1, 1 the oldest, 1-4 on n0 and 5-8 on n1.
// R5's walk (newest first) puts 8, 7, ... in pool1's excess.
struct BorrowedTwoNodes : TwoNodes {
    explicit BorrowedTwoNodes(int quota1) {
        e = engine_with(kOsmoTiers + "Pool=pool1 Quota=" + std::to_string(quota1) + "\nPool=pool2 Quota=8\n");
        partition(snap, "pool2", 0, 1);
        for (uint32_t id = 1; id <= 8; ++id)
            snap.add_job(on(running(id, "pool1", "low", 1, 100 * int64_t(id)), id <= 4 ? 0 : 1));
    }
};

}  // namespace

TEST(VictimPlan, R5AsACountTakesABorrowerPastTheWalkWhereTheWalksJobsAreOnAHeldNode) {
    // pool1's excess is 3: the walk's 8, 7 and 6, all on n1.  Job 20 plans
    // n1 and takes 8; n1 is then held.  Job 21 may still take one borrowed
    // GPU of pool1, as a count: on n0, its newest borrower, 4.  Before R5
    // was a count it found no node (the bench's slow tail: one reclaim per
    // scheduler cycle, on the node the previous one freed).
    BorrowedTwoNodes w(5);
    const SnapJob a = pending(20, "pool2", "normal", 1, 900), b = pending(21, "pool2", "normal", 1, 901);
    w.snap.add_job(a);
    w.snap.add_job(b);
    w.pass();
    const std::vector<uint32_t> va = w.victims(a);
    ASSERT_FALSE(va.empty());
    EXPECT_EQ(va.front(), 8u);
    w.e.note_preempted(a.id, 8);
    EXPECT_EQ(w.victims(b), (std::vector<uint32_t>{4}));
    const Verdict v = w.e.preemptable(ref(w.snap.jobs[3]), ref(b), 1000);
    EXPECT_TRUE(v.allowed);
    EXPECT_EQ(v.rule, Rule::Reclaim);
    EXPECT_FALSE(w.e.preemptable(ref(w.snap.jobs[2]), ref(b), 1000).allowed) << "job 3: not in the plan";
}

TEST(VictimPlan, ASetTakesAtMostThePoolsExcessPlusTheJobThatStraddlesIt) {
    struct Case {
        const char *sentence;
        int quota1;
        std::vector<uint32_t> victims;
    };
    const std::vector<Case> cases = {
        {"excess 1: two 1-GPU borrowers would take pool1 below its quota", 7, {}},
        {"excess 2: the two newest, on n1 (least work lost)", 6, {8, 7}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        BorrowedTwoNodes w(c.quota1);
        const SnapJob p = pending(30, "pool2", "normal", 2, 900);
        w.snap.add_job(p);
        w.pass();
        std::vector<uint32_t> got = w.victims(p);
        if (got.size() > c.victims.size()) got.resize(c.victims.size());  // fallback nodes' after
        EXPECT_EQ(got, c.victims);
    }
}

TEST(VictimPlan, APreemptorStillPending30sAfterItsFirstVictimsAlsoGetsFallbackNodes) {
    // Job 9's plans offer n1's newest jobs alone.  Slurm takes none (CPUs or
    // memory may not fit on n1): 30 s after the first offer its plan adds
    // n0's set as a fallback.  Once it starts, it is forgotten.
    TwoNodes w;
    w.snap.add_job(on(running(1, "pool1", "low", 4, 100), 0));
    w.snap.add_job(on(running(2, "pool1", "low", 2, 500), 1));
    w.snap.add_job(on(running(3, "pool1", "low", 2, 600), 1));
    const SnapJob pre = pending(9, "pool1", "normal", 4, 700);
    w.snap.add_job(pre);
    w.pass(1000);
    EXPECT_EQ(w.victims(pre, 1000), (std::vector<uint32_t>{3, 2}));
    EXPECT_EQ(w.victims(pre, 1029), (std::vector<uint32_t>{3, 2}));
    EXPECT_EQ(w.victims(pre, 1030), (std::vector<uint32_t>{3, 2, 1})) << "30 s after the first offer";
    w.snap.jobs.back().state = JobState::Running;  // it started
    w.snap.jobs.back().nodes = {NodeShare{1, 4}};
    w.snap.jobs.erase(w.snap.jobs.begin() + 1, w.snap.jobs.begin() + 3);
    w.pass(1031);
    const SnapJob again = pending(9, "pool1", "normal", 4, 700);  // requeued, same id
    w.snap.jobs.pop_back();
    w.snap.add_job(again);
    w.snap.add_job(on(running(4, "pool1", "low", 4, 900), 1));
    w.pass(1032);
    EXPECT_EQ(w.victims(again, 1032), (std::vector<uint32_t>{4})) << "forgotten once it left the queue";
}

TEST(VictimPlan, ASwapTakesAPoolsInQuotaJobOnlyForAsManyGpusThePreemptorsPoolGivesBack) {
    // pool1 and pool2 (quota 4 each) and pool3 (quota 0) over n0 and n1 (4
    // GPUs each); pool1's NORMAL 2-GPU job 9 is admitted (NP 2 + 2 <= 4).
    struct Case {
        const char *sentence;
        std::vector<SnapJob> running;
        std::vector<uint32_t> victims;
        Rule rule;
    };
    const std::vector<Case> cases = {
        {"pool1's own LOW GPUs, one on each node, free neither node, and pool2's LOW job of 2 on n1 is within "
         "pool2's quota: a swap takes it, and pool1's two LOW GPUs become its borrowed excess (4 + 2 - 4 = 2)",
         {on(running(1, "pool1", "normal", 2, 100), 0), on(running(2, "pool1", "low", 1, 200), 0),
          on(running(3, "pool2", "normal", 1, 100), 0), on(running(4, "pool1", "low", 1, 200), 1),
          on(running(5, "pool2", "low", 2, 300), 1), on(running(6, "pool2", "normal", 1, 100), 1)},
         {5},
         Rule::Reclaim},
        {"pool1's own LOW jobs sit together on n1: R4 alone frees it, no swap",
         {on(running(1, "pool1", "normal", 2, 100), 0), on(running(3, "pool2", "normal", 2, 100), 0),
          on(running(2, "pool1", "low", 1, 200), 1), on(running(4, "pool1", "low", 1, 200), 1),
          on(running(5, "pool2", "low", 2, 300), 1)},
         {4, 2},
         Rule::InPool},
        {"pool1 has no preemptible job to give (2 + 2 - 4 = 0): pool2's jobs within its quota stay, and job 9 "
         "waits for a node (one GPU free on each)",
         {on(running(1, "pool1", "normal", 2, 100), 0), on(running(2, "pool2", "low", 1, 200), 0),
          on(running(3, "pool2", "normal", 2, 100), 1), on(running(4, "pool2", "low", 1, 200), 1)},
         {},
         Rule::None},
        {"pool1 gives nothing (2 + 2 - 4 = 0), but pool3 (quota 0) borrows a GPU on n0, which pool2 can "
         "reclaim: a swap takes one GPU of pool2's, on n1 where one is free (n0 would need pool3's job as well)",
         {on(running(1, "pool1", "normal", 2, 100), 0), on(running(2, "pool2", "low", 1, 200), 0),
          on(running(7, "pool3", "low", 1, 200), 0), on(running(3, "pool2", "normal", 2, 100), 1),
          on(running(4, "pool2", "low", 1, 200), 1)},
         {4},
         Rule::Reclaim},
        {"pool1 would give one GPU (3 + 2 - 4 = 1) and n1 keeps one free once job 9 starts there: 1 + 1 = 2, "
         "a swap takes pool2's 2-GPU job (pool2 may take the free GPU back)",
         {on(running(1, "pool1", "normal", 2, 100), 0), on(running(2, "pool1", "low", 1, 200), 0),
          on(running(3, "pool2", "normal", 1, 100), 0), on(running(5, "pool2", "low", 2, 300), 1),
          on(running(6, "pool2", "normal", 1, 100), 1)},
         {5},
         Rule::Reclaim},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        TwoNodes w;
        // Consolidation=no: the swap alone (a move would take the third row's
        // LOW job of n0 to n1; consolidation_test.cpp).
        w.e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=4\nPool=pool3 Quota=0\nConsolidation=no\n");
        partition(w.snap, "pool2", 0, 1);
        partition(w.snap, "pool3", 0, 1);
        for (const SnapJob &j : c.running) w.snap.add_job(j);
        const SnapJob pre = pending(9, "pool1", "normal", 2, 900);
        w.snap.add_job(pre);
        w.pass();
        std::vector<uint32_t> got = w.victims(pre);
        EXPECT_EQ(got, c.victims);
        if (got.empty()) continue;
        for (const SnapJob &j : w.snap.jobs)
            if (j.id == got.front()) {
                const Verdict v = w.e.preemptable(ref(j), ref(pre), 1000);
                EXPECT_EQ(v.rule, c.rule);
                if (c.rule == Rule::Reclaim) {
                    EXPECT_NE(std::string(v.why.c_str()).find("swap: pool2"), std::string::npos) << v.why.c_str();
                }
            }
    }
}

TEST(VictimPlan, WhereQuotasAddUpToMoreThanTheGpusASwapStillNeedsRoomPastQuotasOrLeftFree) {
    // Quotas 4 + 6 over 8 GPUs.  Both nodes full; pool1's NORMAL job of 2
    // fits its quota (2 + 2 = 4) but its one LOW GPU frees no node.  n1's
    // only way is pool2's LOW job of 2 (pool2 holds 5 of its 6): pool1 is
    // then one GPU past its quota (3 + 2 - 4 = 1) and no GPU is left free,
    // 1 < 2: no swap (pool2 could not take its GPUs back).  With pool2's
    // NORMAL job on n1 one GPU smaller, one is left free, 1 + 1 = 2: the swap.
    for (const uint32_t n1_normal : {2u, 1u}) {
        SCOPED_TRACE(n1_normal);
        TwoNodes w;
        w.e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=6\nConsolidation=no\n");
        partition(w.snap, "pool2", 0, 1);
        w.snap.add_job(on(running(1, "pool1", "normal", 2, 100), 0));
        w.snap.add_job(on(running(2, "pool1", "low", 1, 200), 0));
        w.snap.add_job(on(running(3, "pool2", "normal", 1, 100), 0));
        w.snap.add_job(on(running(5, "pool2", "low", 2, 300), 1));
        w.snap.add_job(on(running(6, "pool2", "normal", n1_normal, 100), 1));
        const SnapJob pre = pending(9, "pool1", "normal", 2, 900);
        w.snap.add_job(pre);
        w.pass();
        EXPECT_EQ(w.victims(pre), n1_normal == 2 ? std::vector<uint32_t>{} : std::vector<uint32_t>{5});
    }
}

TEST(VictimPlan, WithSwapLeastWorkThePreemptorTakesTheSetThatLosesLeastWorkWhoeverItIs) {
    // pool1 and pool2 at their quotas of 4.  pool1's NORMAL job of 2 may take
    // its own LOW job of 2 on n0 (run 900 s) by R4, or, by a swap, pool2's
    // LOW job of 2 on n1 (run 100 s): pool1 is then 2 past its quota, room
    // for 2.  Swap=needed takes its own (a swap only where nothing else
    // frees a node); Swap=least-work takes pool2's, which loses 200
    // GPU-seconds against 1,800, and pool2 reclaims them in turn.
    for (const char *swap : {"needed", "least-work"}) {
        SCOPED_TRACE(swap);
        TwoNodes w;
        w.e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=4\nConsolidation=no\nSwap=" + swap + "\n");
        partition(w.snap, "pool2", 0, 1);
        w.snap.add_job(on(running(1, "pool1", "normal", 2, 100), 0));
        w.snap.add_job(on(running(2, "pool1", "low", 2, 100), 0));
        w.snap.add_job(on(running(5, "pool2", "low", 2, 900), 1));
        w.snap.add_job(on(running(6, "pool2", "normal", 2, 100), 1));
        const SnapJob pre = pending(9, "pool1", "normal", 2, 950);
        w.snap.add_job(pre);
        w.pass();
        const bool least_work = std::string(swap) == "least-work";
        EXPECT_EQ(w.victims(pre), std::vector<uint32_t>{least_work ? 5u : 2u});
        const Verdict v = w.e.preemptable(ref(w.snap.jobs[least_work ? 2 : 1]), ref(pre), 1000);
        EXPECT_EQ(v.rule, least_work ? Rule::Reclaim : Rule::InPool);
    }
}

TEST(VictimPlan, NonPreemptibleJobsGatherSoThatANodeOfPreemptibleJobsStaysWhole) {
    // A NORMAL job of 1 GPU may take a LOW job on either node.  n1's started
    // later (less work lost), but NORMAL jobs hold 3 GPUs of n0 and 2 of n1:
    // the plan takes n0's, and n1 stays freeable for a job of 4.
    TwoNodes w;
    w.snap.add_job(on(running(1, "pool1", "normal", 3, 100), 0));
    w.snap.add_job(on(running(2, "pool1", "low", 1, 100), 0));
    w.snap.add_job(on(running(3, "pool1", "normal", 2, 100), 1));
    w.snap.add_job(on(running(4, "pool1", "low", 1, 900), 1));
    w.snap.add_job(on(running(5, "pool1", "low", 1, 900), 1));
    const SnapJob pre = pending(9, "pool1", "normal", 1, 950);
    w.snap.add_job(pre);
    w.pass();
    EXPECT_EQ(w.victims(pre), (std::vector<uint32_t>{2}));
}

TEST(VictimPlan, AnHourOfWorkLostWeighsAsOneGpuOfRoomInTheNodeChoice) {
    // As above at t = 10000: n0 leaves 1 GPU of room, n1 leaves 2 and its
    // LOW jobs 4 and 5 have run 100 s (7,200 + 100).  n0's LOW job 2 has
    // run `ran` seconds (3,600 + ran): the plan takes n1's newest job once
    // n0's set loses over an hour more than n1's.
    struct Case {
        const char *sentence;
        int64_t ran;
        uint32_t victim;
    };
    const Case cases[] = {
        {"less than an hour more lost on n0: its room decides", 3500, 2},
        {"just over an hour more lost on n0: n1 loses less", 3800, 5},
        {"hours more lost on n0: n1 loses less", 9900, 5},
    };
    for (const Case &c : cases) {
        TwoNodes w;
        w.snap.add_job(on(running(1, "pool1", "normal", 3, 100), 0));
        w.snap.add_job(on(running(2, "pool1", "low", 1, 10000 - c.ran), 0));
        w.snap.add_job(on(running(3, "pool1", "normal", 2, 100), 1));
        w.snap.add_job(on(running(4, "pool1", "low", 1, 9900), 1));
        w.snap.add_job(on(running(5, "pool1", "low", 1, 9900), 1));
        const SnapJob pre = pending(9, "pool1", "normal", 1, 9950);
        w.snap.add_job(pre);
        w.pass(10000);
        EXPECT_EQ(w.victims(pre, 10000), (std::vector<uint32_t>{c.victim})) << c.sentence;
    }
}

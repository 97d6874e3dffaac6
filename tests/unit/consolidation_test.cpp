// Consolidation (Run:ai): a non-preemptible job within its quota that fits
// on no node, although enough GPUs are free across nodes, moves preemptible
// jobs that can start again at once elsewhere, where R4 and R5 free no node
// for it; never a job that would be lost or would wait.
#include <gtest/gtest.h>

#include "engine.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

struct Row {
    const char *sentence;
    std::string conf;                                 // after the tiers
    // Partitions: over nodes 0..N, or (N = -1) over n1 alone.
    std::vector<std::pair<std::string, int>> parts;
    std::vector<SnapJob> running;
    SnapJob preemptor;
    std::vector<uint32_t> victims;  // in plan order
    std::vector<std::string> moved_to;
    Rule rule = Rule::None;
    std::vector<ReservedAhead> ahead{};  // reservations not started yet
    std::vector<HeldReserved> held{};    // reserved CPUs and GPUs running jobs hold
};

// Two 4-GPU nodes; pool1 (Quota=4) over both; pool2 over both unless a
// row's partitions say otherwise.
struct World {
    Engine e;
    Snapshot snap = cluster(2, 4);
    // A row's own tiers where its configuration starts with them.
    explicit World(const std::string &conf)
        : e(engine_with(conf.rfind("Tier=", 0) == 0 ? conf : kOsmoTiers + conf)) {}
    std::vector<uint32_t> victims(const SnapJob &pre, int64_t now = 1000) {
        std::vector<std::pair<uint32_t, uint32_t>> ranked;
        for (const SnapJob &j : snap.jobs)
            if (j.state == JobState::Running && e.preemptable(ref(j), ref(pre), now).allowed)
                ranked.emplace_back(e.plan_rank(pre.id, j.id), j.id);
        std::sort(ranked.begin(), ranked.end());
        std::vector<uint32_t> out;
        for (const auto &r : ranked) out.push_back(r.second);
        return out;
    }
};

const std::string kTwoPools = "Pool=pool1 Quota=4\nPool=pool2 Quota=4\n";

SnapJob limited(SnapJob j, int64_t run_limit) {
    j.run_limit = run_limit;
    return j;
}

}  // namespace

TEST(Consolidation, MovesAJobThatCanStartAgainAtOnce) {
    const std::vector<Row> rows = {
        {"pool2 runs one LOW 2-GPU job on each node, within its quota: pool1's NORMAL 4-GPU job moves "
         "the newer one to the other node, where 2 GPUs are free",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool2", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {2},
         {"n0"},
         Rule::Consolidate},
        {"Consolidation=no: nothing is taken (pool2 is within its quota, and nothing is borrowed)",
         kTwoPools + "Consolidation=no\n",
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool2", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {},
         {},
         Rule::None},
        {"each LOW job's partition has only its own node: neither could start again at once, so none moves",
         "Pool=pool1 Quota=4\nPool=pool2 Quota=2\nPool=pool3 Quota=2\n",
         {{"pool1", 1}, {"pool2", 0}, {"pool3", -1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool3", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {},
         {},
         Rule::None},
        {"n0's LOW job could start again only on n0 (its partition), n1's on n0: n1's moves",
         "Pool=pool1 Quota=4\nPool=pool2 Quota=2\nPool=pool3 Quota=2\n",
         {{"pool1", 1}, {"pool2", 0}, {"pool3", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool3", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {2},
         {"n0"},
         Rule::Consolidate},
        {"the same with ConsolidationTries=1: n0, weighed first, fails, and n1 is not weighed",
         "Pool=pool1 Quota=4\nPool=pool2 Quota=2\nPool=pool3 Quota=2\nConsolidationTries=1\n",
         {{"pool1", 1}, {"pool2", 0}, {"pool3", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool3", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {},
         {},
         Rule::None},
        {"the newer LOW job is within MinRuntime: the older one moves instead",
         kTwoPools + "MinRuntime=10\n",  // minutes
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool2", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {1},
         {"n1"},
         Rule::Consolidate},
        {"a LOW tier with PreemptMode=cancel is never moved (it would be lost)",
         "Tier=high QOS=high Priority=300 Preemptible=no\nTier=normal QOS=normal Priority=200 Preemptible=no\n"
         "Tier=low QOS=low Priority=100 Preemptible=yes PreemptMode=cancel\nDefaultTier=normal\nUsageWeight=0\n"
         "Pool=pool1 Quota=4\nPool=pool2 Quota=4\n",
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool2", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {},
         {},
         Rule::None},
        {"the newer LOW job would start again only on its own node (-w, -x, -C or --no-requeue): the older one "
         "moves instead",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), [] {
              SnapJob j = on(running(2, "pool2", "low", 2, 500), 1);
              j.stays = true;
              return j;
          }()},
         pending(9, "pool1", "normal", 4, 700),
         {1},
         {"n1"},
         Rule::Consolidate},
        {"pool1's NORMAL job is past its quota (it runs 2 NORMAL GPUs already): it is not entitled, nothing moves",
         "Pool=pool1 Quota=4\nPool=pool2 Quota=2\n",
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool1", "normal", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {},
         {},
         Rule::None},
        {"pool2 borrows 2 GPUs; its newest job, 1 GPU on n1, could move to n0's free GPU, but pool1 reclaims it "
         "instead (reclaim comes first: moving first made pools wait longer in the simulator)",
         "Pool=pool1 Quota=6\nPool=pool2 Quota=2\n",
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 3, 100), 0), on(running(2, "pool2", "low", 1, 500), 1),
          on(running(3, "pool1", "normal", 2, 100), 1)},
         pending(9, "pool1", "normal", 2, 700),
         {2},
         {},
         Rule::Reclaim},
        {"n0 is reserved whole from 2000: the newer LOW job would run past it there (until 5500), so the "
         "older one moves to n1, and the job, ending at 1500, takes n0",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(limited(running(1, "pool2", "low", 2, 100), 4500), 0), on(limited(running(2, "pool2", "low", 2, 500), 4500), 1)},
         limited(pending(9, "pool1", "normal", 4, 700), 500),
         {1},
         {"n1"},
         Rule::Consolidate,
         {ReservedAhead{0, 2000, true, 0, 0}}},
        {"2 of n0's GPUs are reserved from 2000; the newer LOW job, limited to 900, would end at 1900, before: "
         "it moves to n0 as without the reservation",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(limited(running(1, "pool2", "low", 2, 100), 4500), 0), on(limited(running(2, "pool2", "low", 2, 500), 900), 1)},
         limited(pending(9, "pool1", "normal", 4, 700), 5000),
         {2},
         {"n0"},
         Rule::Consolidate,
         {ReservedAhead{0, 2000, false, 0, 2}}},
        {"n0 is reserved whole from 2000 and the job would run until 6000: only n1 could hold it, and n1's "
         "LOW job could go only to n0: nothing moves",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(limited(running(1, "pool2", "low", 2, 100), 4500), 0), on(limited(running(2, "pool2", "low", 2, 500), 4500), 1)},
         limited(pending(9, "pool1", "normal", 4, 700), 5000),
         {},
         {},
         Rule::None,
         {ReservedAhead{0, 2000, true, 0, 0}}},
        {"the newer LOW job holds 1 GPU of a reservation on n1 (its own, or IGNORE_JOBS): moved, it would give "
         "back 1 GPU there, not 2, so the older one moves to n1 instead",
         kTwoPools,
         {{"pool1", 1}, {"pool2", 1}},
         {on(running(1, "pool2", "low", 2, 100), 0), on(running(2, "pool2", "low", 2, 500), 1)},
         pending(9, "pool1", "normal", 4, 700),
         {1},
         {"n1"},
         Rule::Consolidate,
         {},
         {HeldReserved{2, 1, 0, 0, 1}}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.sentence);
        World w(row.conf);
        for (const auto &p : row.parts) {
            if (p.second < 0)
                partition(w.snap, p.first, 1, 1);
            else
                partition(w.snap, p.first, 0, p.second);
        }
        for (const SnapJob &j : row.running) w.snap.add_job(j);
        w.snap.add_job(row.preemptor);
        w.snap.reserved_ahead = row.ahead;
        w.snap.held_reserved = row.held;
        settle(w.snap);
        w.e.evaluate(w.snap, 1000);
        EXPECT_EQ(w.victims(row.preemptor), row.victims);
        const VictimPlan &plan = w.e.victim_plan(ref(row.preemptor), 1000);
        EXPECT_EQ(plan.consolidation, !row.moved_to.empty());
        std::vector<std::string> to;
        for (int32_t n : plan.moved_to) to.push_back(w.snap.nodes[size_t(n)].name);
        EXPECT_EQ(to, row.moved_to);
        for (const SnapJob &j : w.snap.jobs)
            if (!row.victims.empty() && j.id == row.victims.front()) {
                const Verdict v = w.e.preemptable(ref(j), ref(row.preemptor), 1000);
                EXPECT_EQ(v.rule, row.rule);
                if (row.rule == Rule::Consolidate) {
                    EXPECT_NE(std::string(v.why.c_str()).find("consolidation: it can start again at once on node " +
                                                              row.moved_to.front()),
                              std::string::npos)
                        << v.why.c_str();
                }
            }
    }
}

TEST(Consolidation, TwoPreemptorsNeverCountOnTheSameFreeGpus) {
    // Three 4-GPU nodes: pool2's LOW 2-GPU jobs on n0 and n1, n2 has 2 GPUs
    // free (pool3's NORMAL job holds the rest).  Preemptor 8 moves n1's
    // job to n2; once Slurm carried that out, preemptor 9 alike finds no
    // free GPUs left for n0's job and moves nothing.
    World w("Pool=pool1 Quota=8\nPool=pool2 Quota=4\nPool=pool3 Quota=2\n");
    w.snap = cluster(3, 4);
    partition(w.snap, "pool1", 0, 2);
    partition(w.snap, "pool2", 0, 2);
    partition(w.snap, "pool3", 2, 2);
    w.snap.add_job(on(running(1, "pool2", "low", 2, 100), 0));
    w.snap.add_job(on(running(2, "pool2", "low", 2, 500), 1));
    w.snap.add_job(on(running(3, "pool3", "normal", 2, 100), 2));
    const SnapJob a = pending(8, "pool1", "normal", 4, 700), b = pending(9, "pool1", "normal", 4, 701);
    w.snap.add_job(a);
    w.snap.add_job(b);
    settle(w.snap);
    w.e.evaluate(w.snap, 1000);
    EXPECT_EQ(w.victims(a), (std::vector<uint32_t>{2}));
    w.e.note_preempted(a.id, 2);
    EXPECT_EQ(w.victims(b), (std::vector<uint32_t>{})) << "n2's free GPUs wait for job 2";
}

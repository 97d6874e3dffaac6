// The victim plan's properties over random node layouts, with a small Slurm
// that preempts as select/cons_tres does (issue 27, acceptance 4): pools
// over overlapping node ranges, 1- to 8-GPU jobs in two tiers arriving over
// several passes.  Each pass is checked:
// - a job that fits the free GPUs of a node not completing is offered no
//   victim;
// - the victims of a preemption are exactly the first node group of the
//   preemptor's plan, all on one node, and they free enough there: the
//   preemptor starts at the next pass;
// - no thrash: the world comes to rest (a pass that starts and evicts
//   nothing) within a bounded number of passes, and five more passes evict
//   nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "engine.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

// One pass of a one-node-job Slurm: pending jobs in R1 order (held ones
// wait).  A job that fits a node's free GPUs (not completing) starts on the
// first such node, as cons_tres's first fit does.  Else, as cons_tres's
// _run_now, the candidates preemptable() allows are removed one at a time in
// plan_rank() order until the job fits some node; the removed jobs on that
// node are requeued, the node completes until the next pass, and the job
// starts at a later pass when the GPUs are free.
class NodeLoop {
public:
    struct Pass {
        uint32_t started = 0;
        std::vector<uint32_t> evicted;
        std::map<uint32_t, std::vector<uint32_t>> preempted_for;  // preemptor -> its victims
        uint32_t moves = 0;  // preemptions that were consolidations
    };

    NodeLoop(Engine &e, Snapshot &s) : e_(e), s_(s) {}

    Pass pass(int64_t now) {
        Pass out;
        for (SnapNode &n : s_.nodes) n.completing = false;
        dying_.clear();
        settle_free();
        e_.evaluate(s_, now);
        for (uint32_t id : unheld_order(e_)) {
            SnapJob &j = job(id);
            if (j.state != JobState::Pending) continue;
            const int32_t node = first_fit(j, s_);
            if (node >= 0) {
                expect_no_victim_offered(j, now);
                start(j, node, now);
                ++out.started;
                continue;
            }
            std::vector<uint32_t> victims = run_now(j, now);
            if (victims.empty()) continue;
            {
                std::string pp;
                out.moves += e_.victim_plan(job_ref(j, pp), now).consolidation;
            }
            for (uint32_t v : victims) {
                e_.note_preempted(j.id, v);
                for (const NodeShare &g : job(v).nodes) {
                    dying_.push_back(g);
                    s_.nodes[size_t(g.node)].completing = true;
                }
                evict(job(v));
                out.evicted.push_back(v);
            }
            out.preempted_for[j.id] = victims;
            settle_free();
            e_.refresh_running(s_, now);
        }
        return out;
    }

    SnapJob &job(uint32_t id) {
        for (SnapJob &j : s_.jobs)
            if (j.id == id) return j;
        ADD_FAILURE() << "no job " << id;
        return s_.jobs.front();
    }

private:
    // The nodes of a job's (first) partition.
    const std::vector<int32_t> &nodes_of(const SnapJob &j) const {
        for (const SnapPartition &p : s_.partitions)
            if (p.name == j.partitions.front()) return p.nodes;
        static const std::vector<int32_t> none;
        return none;
    }

    int32_t first_fit(const SnapJob &j, const Snapshot &s) const {
        for (int32_t n : nodes_of(j))
            if (!s.nodes[size_t(n)].completing && s.nodes[size_t(n)].free_gpus >= j.gpus) return n;
        return -1;
    }

    void settle_free() {
        s_.node_usage = true;
        for (SnapNode &n : s_.nodes) n.free_gpus = n.gpus;
        for (const SnapJob &j : s_.jobs)
            if (j.state == JobState::Running)
                for (const NodeShare &g : j.nodes) s_.nodes[size_t(g.node)].free_gpus -= g.gpus;
        for (const NodeShare &g : dying_) s_.nodes[size_t(g.node)].free_gpus -= g.gpus;
    }

    void start(SnapJob &j, int32_t node, int64_t now) {
        j.state = JobState::Running;
        j.start_time = now;
        j.nodes = {NodeShare{node, j.gpus}};
        settle_free();
        e_.refresh_running(s_, now);
    }

    static void evict(SnapJob &v) {
        v.state = JobState::Pending;
        v.start_time = 0;
        v.nodes.clear();
        ++v.restart_cnt;
    }

    // No running job may be taken for a job that fits free GPUs.
    void expect_no_victim_offered(const SnapJob &j, int64_t now) {
        std::string vp, pp;
        const JobRef pre = job_ref(j, pp);
        for (const SnapJob &v : s_.jobs)
            if (v.state == JobState::Running)
                EXPECT_FALSE(e_.preemptable(job_ref(v, vp), pre, now).allowed)
                    << "job " << v.id << " offered to job " << j.id << ", which fits free GPUs";
    }

    // cons_tres's cumulative search; the victims on the node it fits, which
    // must be the plan's first group.
    std::vector<uint32_t> run_now(const SnapJob &j, int64_t now) {
        std::string vp, pp;
        const JobRef pre = job_ref(j, pp);
        std::vector<std::pair<uint32_t, uint32_t>> ranked;  // (plan_rank, id)
        for (const SnapJob &v : s_.jobs)
            if (v.state == JobState::Running && e_.preemptable(job_ref(v, vp), pre, now).allowed)
                ranked.emplace_back(e_.plan_rank(j.id, v.id), v.id);
        std::sort(ranked.begin(), ranked.end());
        Snapshot trial = s_;
        std::vector<uint32_t> removed;
        for (const auto &r : ranked) {
            const SnapJob &v = job(r.second);
            for (const NodeShare &g : v.nodes) trial.nodes[size_t(g.node)].free_gpus += g.gpus;
            removed.push_back(v.id);
            const int32_t node = first_fit(j, trial);
            if (node < 0) continue;
            std::vector<uint32_t> victims;
            for (uint32_t id : removed)
                if (job(id).nodes.front().node == node) victims.push_back(id);
            expect_plan_group(j, node, victims, now);
            return victims;
        }
        return {};
    }

    void expect_plan_group(const SnapJob &j, int32_t node, const std::vector<uint32_t> &victims, int64_t now) {
        std::string pp;
        const VictimPlan &plan = e_.victim_plan(job_ref(j, pp), now);
        ASSERT_EQ(plan.outcome, VictimPlan::Outcome::Victims) << "job " << j.id;
        EXPECT_EQ(plan.nodes.front(), node) << "job " << j.id << ": Slurm fits it on the planned node";
        std::vector<uint32_t> group(plan.victims.begin(), plan.victims.begin() + plan.group_end.front());
        std::vector<uint32_t> got = victims;
        std::sort(group.begin(), group.end());
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, group) << "job " << j.id << ": the victims are the plan's first group";
        uint32_t freed = s_.nodes[size_t(node)].free_gpus;
        for (uint32_t v : victims) freed += job(v).gpus;
        EXPECT_GE(freed, j.gpus) << "job " << j.id << ": the set frees enough on its node";
    }

    Engine &e_;
    Snapshot &s_;
    // GPUs of jobs preempted this pass: held until they end (the next pass),
    // their nodes completing until then.
    std::vector<NodeShare> dying_;
};

struct NodeWorld {
    std::string conf;
    Snapshot snap;
    std::vector<std::pair<int, SnapJob>> arrivals;  // (pass it arrives at, job)
};

// 2-6 nodes of 4 or 8 GPUs; 1-3 pools, each a partition over a random
// node range (so pools share some nodes), quotas within the GPUs; 4-24 jobs
// of 1, 2, 4 or 8 GPUs, NORMAL or LOW, arriving over the first 6 passes.
NodeWorld random_node_world(std::mt19937 &rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    NodeWorld w;
    const int nodes = pick(2, 6);
    for (int n = 0; n < nodes; ++n) w.snap.add_node("n" + std::to_string(n), pick(0, 1) ? 8 : 4);
    w.conf = kOsmoTiers;
    const int pools = pick(1, 3);
    for (int p = 1; p <= pools; ++p) {
        const int first = pick(0, nodes - 1), last = pick(first, nodes - 1);
        partition(w.snap, "pool" + std::to_string(p), first, last);
        uint32_t gpus = 0;
        for (int n = first; n <= last; ++n) gpus += w.snap.nodes[size_t(n)].gpus;
        w.conf += "Pool=pool" + std::to_string(p) + " Quota=" + std::to_string(pick(0, int(gpus))) + "\n";
    }
    const uint32_t sizes[] = {1, 2, 4, 8};
    const int jobs = pick(4, 24);
    for (int k = 0; k < jobs; ++k) {
        const std::string part = "pool" + std::to_string(pick(1, pools));
        const char *qos = pick(0, 2) ? "low" : "normal";
        w.arrivals.emplace_back(pick(0, 5), pending(uint32_t(k + 1), part, qos, sizes[pick(0, 3)], 100 + k));
    }
    return w;
}

}  // namespace

namespace {

struct LoopCounts {
    int preemptions = 0, worlds_with_preemption = 0, moves = 0;
    int other_pools = 0;  // victims of another pool than their preemptor's
};

// 800 random node worlds under `w.conf` plus `extra`: every preemptor starts
// in the pass after it preempted (its set freed enough), and each world comes
// to rest within 40 passes and stays so for 5 more.
LoopCounts run_node_worlds(const std::string &extra, int64_t seconds_per_pass = 1) {
    std::mt19937 rng(2027);
    LoopCounts n;
    int &preemptions = n.preemptions, &worlds_with_preemption = n.worlds_with_preemption, &moves = n.moves;
    for (int world = 0; world < 800; ++world) {
        SCOPED_TRACE("world " + std::to_string(world));
        NodeWorld w = random_node_world(rng);
        Engine e = engine_with(w.conf + extra);
        NodeLoop loop(e, w.snap);
        std::map<uint32_t, int> waiting_since;  // preemptor -> pass it preempted at
        int64_t now = 1000;
        int at_rest = -1;
        bool any = false;
        for (int pass = 0; pass < 40; ++pass) {
            for (const auto &a : w.arrivals)
                if (a.first == pass) w.snap.add_job(a.second);
            const NodeLoop::Pass p = loop.pass(now);
            now += seconds_per_pass;
            for (const auto &pw : waiting_since) {
                EXPECT_EQ(loop.job(pw.first).state, JobState::Running)
                    << "job " << pw.first << " preempted at pass " << pw.second << " and has not started at pass " << pass;
            }
            waiting_since.clear();
            for (const auto &pf : p.preempted_for) {
                waiting_since[pf.first] = pass;
                for (uint32_t v : pf.second)
                    n.other_pools += loop.job(v).partitions != loop.job(pf.first).partitions;
            }
            preemptions += int(p.preempted_for.size());
            moves += int(p.moves);
            any |= !p.preempted_for.empty();
            if (pass >= 6 && p.started == 0 && p.evicted.empty()) {
                at_rest = pass;
                break;
            }
        }
        worlds_with_preemption += any;
        EXPECT_GE(at_rest, 0) << "no pass at rest in 40";
        if (at_rest < 0) continue;
        for (int k = 0; k < 5; ++k) {
            const NodeLoop::Pass p = loop.pass(now++);
            EXPECT_TRUE(p.evicted.empty()) << "pass " << k << " after rest evicted " << p.evicted.size();
            EXPECT_EQ(p.started, 0u) << "pass " << k << " after rest";
        }
    }
    std::printf("node worlds%s: %d with a preemption, %d preemptions (%d consolidations), %d victims of other pools\n",
                extra.empty() ? "" : (" with " + extra.substr(0, extra.size() - 1)).c_str(), worlds_with_preemption,
                preemptions, moves, n.other_pools);
    return n;
}

}  // namespace

TEST(VictimPlanLoop, PlannedSetsFreeEnoughAndWorldsComeToRest) {
    const LoopCounts n = run_node_worlds("");
    // The worlds exercise the plan: many preempt, some several times.
    EXPECT_GT(n.worlds_with_preemption, 250);
    EXPECT_GT(n.preemptions, 350);
    EXPECT_GT(n.moves, 0) << "no world consolidated";
}

// The same worlds with swaps wherever they lose least work, a minute a pass
// (runs differ more in length).
TEST(VictimPlanLoop, WithSwapLeastWorkPlannedSetsFreeEnoughAndWorldsComeToRest) {
    const LoopCounts n = run_node_worlds("Swap=least-work\n", 60);
    EXPECT_GT(n.worlds_with_preemption, 250);
    EXPECT_GT(n.preemptions, 350);
}

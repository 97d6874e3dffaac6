// No thrashing between queues, as a property: over random queue
// trees (and, one world in five, flat pools) (depth up to 4 below the pool, up to 50 queues, in one pool or in
// two over the same nodes; random quotas, weights and limits in GPUs, CPUs
// and memory, random demand in three tiers, ReclaimTo and ReclaimBy both
// ways), a deterministic loop of passes
// (reclaim_loop.hpp) comes to rest, after which five more passes evict
// nothing; and after every pass no queue's non-preemptible use exceeds the
// quota of any queue above it.  In one world of ten, `gpupool why` names
// only victims the engine allows.  Each pass is a case.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "explain.hpp"
#include "levels.hpp"
#include "reclaim_loop.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

struct ThrashWorld {
    Config cfg;
    Snapshot snap;
    std::vector<std::pair<int, SnapJob>> arrivals;  // (pass it arrives at, job)
};

ThrashWorld random_thrash_world(std::mt19937 &rng, bool flat) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ThrashWorld w;
    const int nodes = pick(2, 4);
    w.snap = cluster(nodes, 4);
    for (SnapNode &n : w.snap.nodes) {
        n.cpus = 32;
        n.mem_mb = 256;
    }
    // One pool, or two over the same nodes (OSMO's overlapping pools, R5 between them).
    std::string conf = kOsmoTiers;
    const int pools = pick(1, 2);
    for (int p = 1; p <= pools; ++p) {
        partition(w.snap, "pool" + std::to_string(p), 0, nodes - 1);
        conf += "Pool=pool" + std::to_string(p) + " Quota=" + std::to_string(pick(0, 4 * nodes / pools)) + "\n";
    }
    if (pick(0, 1)) conf += "ReclaimTo=fairshare\n";
    if (pick(0, 2) == 0) conf += "ReclaimBy=all\n";
    w.cfg = parse_config(conf, "test.conf");
    w.cfg.counted = {{true, true, true}};
    const int accounts = pick(1, 49);
    const int per_resource_max[kResources] = {8, 64, 256};
    std::vector<int> depth;
    std::vector<std::string> names;
    for (int a = 0; a < accounts; ++a) {
        // A parent among the accounts above depth 4, or the top.
        int parent = pick(-1, a - 1);
        while (parent >= 0 && depth[size_t(parent)] >= 4) parent = pick(-1, parent - 1);
        depth.push_back(parent < 0 ? 1 : depth[size_t(parent)] + 1);
        names.push_back("a" + std::to_string(a));
        w.snap.account_parent[names.back()] = parent < 0 ? "root" : names[size_t(parent)];
        if (flat || (a > 0 && pick(0, 9) == 0)) continue;  // no entry: draws on its parent's
        AccountQuota e;
        e.account = names.back();
        e.pool = "*";
        for (size_t r = 0; r < kResources; ++r) {
            if (pick(0, 3) > 0) e.quota.set(Resource(r), uint64_t(pick(0, per_resource_max[r])));
            if (pick(0, 5) == 0) e.limit.set(Resource(r), uint64_t(pick(1, 2 * per_resource_max[r])));
        }
        e.weight = uint32_t(pick(1, 4));
        w.cfg.accounts.push_back(e);
    }
    const char *qos[] = {"high", "normal", "low", "low"};
    for (uint32_t id = 1, n = uint32_t(pick(8, 40)); id <= n; ++id) {
        // The first pass's jobs mostly LOW: they borrow what later ones reclaim.
        const int at = pick(0, 3);
        const char *tier = qos[at == 0 ? pick(1, 7) / 2 : pick(0, 3)];
        SnapJob j = pending(id, "pool" + std::to_string(pick(1, pools)), tier, uint32_t(pick(1, 2)), pick(100, 200));
        j.account = names[size_t(pick(0, accounts - 1))];
        j.cpus = uint32_t(pick(1, 16));
        j.mem_mb = uint64_t(pick(8, 64));
        w.arrivals.emplace_back(at, j);
    }
    return w;
}

// Each queue's NP amounts from the running jobs of pool `ps`, up the tree,
// against the quota of every queue that counts the resource (the pool: its
// GPUs).
void expect_np_within_quotas(const Engine &e, const PoolState &ps, const Snapshot &s, const std::string &when) {
    const Evaluation &ev = e.last();
    if (!ps.queues.tree) {
        ASSERT_LE(ps.np_used(), ps.quota) << when << ": pool " << ps.name;
        return;
    }
    const std::vector<QueueSpec> &queues = ps.queues.tree->queues;
    std::vector<Amounts> np(queues.size(), Amounts{});
    for (const SnapJob &j : s.jobs) {
        if (j.state != JobState::Running || j.partitions.front() != ps.name ||
            e.config().tiers[size_t(e.tier_of_qos(j.qos))].preemptible)
            continue;
        for (int32_t q = queue_in(ps, account_id(ev, j.account)); q >= 0; q = queues[size_t(q)].parent)
            for (size_t r = 0; r < kResources; ++r) np[size_t(q)][r] += held_by(j)[r];
    }
    for (size_t q = 0; q < queues.size(); ++q)
        for (size_t r = 0; r < kResources; ++r) {
            const uint64_t quota = queues[q].quota.has(Resource(r)) ? queues[q].quota.value[r] : UINT64_MAX;
            ASSERT_LE(np[q][r], quota) << when << ": queue " << queues[q].name << " resource " << r;
        }
}

// `gpupool why` with levels names only victims the engine lets the job
// take, by the same rule (Engine::candidacy decides both).  Returns the
// victims checked.
uint64_t expect_why_agrees(Engine &e, const Snapshot &s, int64_t now, const std::string &when) {
    e.evaluate(s, now);
    const Explanation x = explain(e, s, ExplainInput{}, now);
    std::unordered_map<uint32_t, const SnapJob *> by_id;
    for (const SnapJob &j : s.jobs) by_id[j.id] = &j;
    uint64_t checked = 0;
    for (const PendingExplain &pe : x.pending)
        for (const VictimRef &v : pe.victims) {
            std::string parts, vparts;
            JobRef preemptor = job_ref(*by_id.at(pe.job_id), parts);
            preemptor.partitions = e.last().pools[size_t(pe.reason_pool)].name;
            const Verdict vd = e.preemptable(job_ref(*by_id.at(v.job_id), vparts), preemptor, now);
            EXPECT_TRUE(vd.allowed) << when << ": why names job " << v.job_id << " for " << pe.job_id
                                    << "; the engine: " << vd.why;
            EXPECT_EQ(vd.rule, v.rule) << when;
            ++checked;
        }
    return checked;
}

}  // namespace

TEST(Property, ReclaimWithLevelsComesToRestAndFiveMorePassesEvictNothing) {
    const auto began = std::chrono::steady_clock::now();
    std::mt19937 rng(2026);
    uint64_t cases = 0, worlds = 0, evictions = 0, reclaims = 0, most_passes = 0, why_victims = 0;
    const int kMostPasses = 40;
    // One world in five flat (no account entries: R5 between pools, with
    // what one preemption frees counted), drawn from a stream of its own so
    // that the worlds with levels stay those drawn before flat ones came in.
    std::mt19937 flat_rng(2027);
    for (; cases < 100000 && !HasFailure(); ++worlds) {
        const bool flat = worlds % 5 == 4;
        ThrashWorld w = random_thrash_world(flat ? flat_rng : rng, flat);
        Engine e;
        e.set_config(w.cfg);
        ReclaimLoop loop(e, w.snap);
        const std::string world = "world " + std::to_string(worlds);
        int64_t now = 1000;
        int pass = 0;
        for (;; ++pass, ++cases) {
            for (const auto &[at, j] : w.arrivals)
                if (at == pass) w.snap.add_job(j);
            const std::string when = world + " pass " + std::to_string(pass);
            if (worlds % 10 == 0) why_victims += expect_why_agrees(e, w.snap, now, when);
            const ReclaimLoop::Pass p = loop.pass(now++);
            evictions += p.evicted.size();
            reclaims += p.reclaimed;
            for (const PoolState &ps : e.last().pools)
                expect_np_within_quotas(e, ps, w.snap, when);
            if (pass >= 3 && p.started == 0 && p.evicted.empty()) break;
            ASSERT_LT(pass, kMostPasses) << world << ": still evicting or starting after " << kMostPasses << " passes";
        }
        most_passes = std::max<uint64_t>(most_passes, uint64_t(pass));
        for (int more = 1; more <= 5; ++more, ++cases) {
            const ReclaimLoop::Pass p = loop.pass(now++);
            ASSERT_TRUE(p.evicted.empty()) << world << ": pass " << more << " after rest evicts " << p.evicted.front();
            ASSERT_EQ(p.started, 0u) << world;
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::printf("reclaim with levels: %llu cases (passes) over %llu worlds, %llu evictions (%llu reclaims), rest "
                "within %llu passes, %llu victims named by why agreed, %.1f s\n",
                static_cast<unsigned long long>(cases), static_cast<unsigned long long>(worlds),
                static_cast<unsigned long long>(evictions), static_cast<unsigned long long>(reclaims),
                static_cast<unsigned long long>(most_passes), static_cast<unsigned long long>(why_victims), seconds);
    EXPECT_GE(cases, 100000u);
    EXPECT_GT(evictions, 5000u);  // the worlds do reclaim and preempt
    EXPECT_GT(reclaims, 3000u);
    EXPECT_GT(why_victims, 500u);
}

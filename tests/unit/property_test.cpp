// Invariants over thousands of random snapshots (fixed seeds):
// - no admission lets a pool's NP GPUs exceed its quota;
// - nothing of a pool at or under quota is reclaimable by another pool, and
//   reclaim takes a pool under quota by at most the one straddling job;
// - the order is a strict total order, stable across passes and input
//   order, and priorities stay within uint32 with held jobs at 0;
// - what `gpupool why` says of each job is what the engine decided.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "explain.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

struct World {
    std::string conf;
    Snapshot snap;
    std::vector<std::string> pools;
    std::vector<uint32_t> quota;
};

// Pools over overlapping node ranges, NP use within quota (as admission
// keeps it), random P borrowing up to the nodes' GPUs, random pending jobs.
World random_world(std::mt19937 &rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    World w;
    // Array choices come from their own generator so that the rest of
    // each world stays as it was without arrays.
    std::mt19937 arrays(rng());
    arrays.discard(1);
    const int nodes = pick(2, 12);
    const int npools = pick(1, 5);
    w.snap = cluster(nodes, static_cast<uint32_t>(pick(1, 4)));
    w.conf = kOsmoTiers;
    w.conf += std::string("PreemptionOrder=") + (pick(0, 1) ? "newest" : "oldest") + "\n";
    if (pick(0, 1)) w.conf += "ReclaimBy=all\n";
    const uint32_t gpn = w.snap.nodes[0].gpus;
    for (int p = 0; p < npools; ++p) {
        std::string name = "p" + std::to_string(p);
        int a = pick(0, nodes - 1), b = pick(a, nodes - 1);
        partition(w.snap, name, a, b);
        uint32_t cap = static_cast<uint32_t>(b - a + 1) * gpn;
        uint32_t q = static_cast<uint32_t>(pick(0, static_cast<int>(cap)));
        w.pools.push_back(name);
        w.quota.push_back(q);
        w.conf += "Pool=" + name + " Quota=" + std::to_string(q) + " Weight=" + std::to_string(pick(0, 3)) + "\n";
    }
    uint32_t free_gpus = static_cast<uint32_t>(nodes) * gpn;
    uint32_t id = 1;
    const char *qos[] = {"high", "normal", "low"};
    for (int p = 0; p < npools; ++p) {
        uint32_t np_left = w.quota[static_cast<size_t>(p)];
        for (int k = pick(0, 6); k > 0 && free_gpus > 0; --k) {
            bool np = pick(0, 1);
            uint32_t g = static_cast<uint32_t>(pick(1, 3));
            if (np && g > np_left) continue;
            if (g > free_gpus) continue;
            free_gpus -= g;
            if (np) np_left -= g;
            SnapJob r = running(id++, w.pools[static_cast<size_t>(p)], np ? qos[pick(0, 1)] : "low", g,
                                1000 + pick(0, 500), 900);
            // Some are tasks of job arrays whose records still pend.
            if (std::uniform_int_distribution<int>(0, 3)(arrays) == 0) r.array_job_id = 100000 + static_cast<uint32_t>(pick(0, 3));
            w.snap.add_job(r);
        }
    }
    for (int k = pick(0, 40); k > 0; --k) {
        std::string parts = w.pools[static_cast<size_t>(pick(0, npools - 1))];
        if (pick(0, 5) == 0) parts += "," + w.pools[static_cast<size_t>(pick(0, npools - 1))];
        if (pick(0, 9) == 0) parts = "elsewhere";
        SnapJob j = pending(id++, parts, qos[pick(0, 2)], static_cast<uint32_t>(pick(0, 3)), 900 + pick(0, 50));
        j.user_held = pick(0, 20) == 0;
        // Job array records standing for several pending tasks.
        if (std::uniform_int_distribution<int>(0, 4)(arrays) == 0) j.array_tasks = std::uniform_int_distribution<uint32_t>(2, 8)(arrays);
        w.snap.add_job(j);
    }
    return w;
}

constexpr int kWorlds = 3000;

}  // namespace

TEST(Property, AdmissionNeverExceedsQuota) {
    std::mt19937 rng(20261121);
    int arrays_seen = 0;
    for (int i = 0; i < kWorlds; ++i) {
        World w = random_world(rng);
        Engine e = engine_with(w.conf);
        e.evaluate(w.snap, 2000);
        for (size_t p = 0; p < w.pools.size(); ++p) {
            const PoolState &ps = pool(e, w.pools[p]);
            ASSERT_LE(ps.np_used() + ps.np_reserved(), ps.quota) << "world " << i << " pool " << ps.name;
            uint32_t admitted = 0;
            for (const PendingResult &r : e.last().pending)
                if (r.admission == Admission::Quota && r.pools.contains(static_cast<int>(p)) &&
                    !r.refuses(static_cast<int>(p)))
                    admitted += r.admitted_tasks * r.gpus;
            ASSERT_EQ(admitted, ps.np_reserved()) << "world " << i;
            for (const PendingResult &r : e.last().pending) {
                ASSERT_LE(r.admitted_tasks, r.task_count());
                ASSERT_EQ(r.admitted_tasks == 0, r.admission == Admission::Held);
            }
        }
        for (const PendingResult &r : e.last().pending)
            if (r.admission == Admission::Quota && r.admitted_tasks < r.task_count()) {
                ++arrays_seen;  // an array admitted in part
                break;
            }
        // New arrays and jobs placed between passes keep the invariant.
        for (uint32_t k = 0; k < 3; ++k) {
            SnapJob j = pending(200000 + k, w.pools[k % w.pools.size()], k == 2 ? "high" : "normal", 1 + k % 2,
                                1990 + k);
            j.array_tasks = 2 + 3 * k;
            e.provisional(j, 1999);
            for (const PoolState &ps : e.last().pools) ASSERT_LE(ps.np_used() + ps.np_reserved(), ps.quota);
        }
        // Ending jobs one by one keeps the invariant.
        for (const SnapJob &j : w.snap.jobs) {
            e.job_ended(j.id, 2001);
            for (const PoolState &ps : e.last().pools) ASSERT_LE(ps.np_used() + ps.np_reserved(), ps.quota);
        }
    }
    EXPECT_GT(arrays_seen, 100);  // the worlds do exercise partial admission
}

TEST(Property, ReclaimOnlyFromBorrowedExcess) {
    std::mt19937 rng(7);
    int reclaims_seen = 0;
    for (int i = 0; i < kWorlds; ++i) {
        World w = random_world(rng);
        Engine e = engine_with(w.conf);
        e.evaluate(w.snap, 2000);
        for (size_t q = 0; q < w.pools.size(); ++q) {
            for (const char *qos : {"normal", "low"}) {
                SnapJob pre = pending(99999, w.pools[q], qos, 1, 1999);
                std::map<int, uint32_t> taken;  // pool -> GPUs reclaimable
                std::map<int, uint32_t> last;   // pool -> largest job taken
                for (const SnapJob &v : w.snap.jobs) {
                    if (v.state != JobState::Running) continue;
                    Verdict vd = e.preemptable(ref(v), ref(pre), 2000);
                    if (!vd.allowed || vd.rule != Rule::Reclaim) continue;
                    ++reclaims_seen;
                    const PoolState &vp = e.last().pools[static_cast<size_t>(vd.victim_pool)];
                    ASSERT_GT(vp.used(), vp.quota) << "world " << i << ": pool at or under quota lost a job";
                    ASSERT_NE(vd.victim_pool, static_cast<int>(q));
                    taken[vd.victim_pool] += v.gpus;
                    last[vd.victim_pool] = std::max(last[vd.victim_pool], v.gpus);
                }
                for (auto [p, g] : taken) {
                    const PoolState &vp = e.last().pools[static_cast<size_t>(p)];
                    // All but the straddling job leave the pool above quota.
                    ASSERT_GT(int64_t(vp.used()) - (int64_t(g) - last[p]), int64_t(vp.quota)) << "world " << i;
                }
            }
        }
    }
    EXPECT_GT(reclaims_seen, 100);  // the worlds do exercise reclaim
}

// What `gpupool why` says of every job equals the
// engine's own decisions, over 10,000 random worlds (a second preemptible
// tier, ReclaimBy both ways, MinRuntime in two worlds of three, arrays, jobs
// listing several pools): for each pending job, whether a quota holds it
// and whose; each victim it names is one the engine lets it take, by the
// same rule, now or (MinRuntime) from the moment `why` says; for each
// running job, whether MinRuntime protects it and until when, and whether
// it is in its pool's borrowed excess.  Each job is a case.
TEST(Property, WhyAgreesWithTheEngine) {
    std::mt19937 rng(2111);
    const int64_t now = 2000;
    uint64_t cases = 0, held = 0, victims = 0, protected_jobs = 0, borrowed = 0, quota_lines = 0;
    for (int i = 0; i < 10000; ++i) {
        World w = random_world(rng);
        w.conf += "Tier=mid QOS=mid Priority=150 Preemptible=yes\n";
        // Slurm's time format (a bare number is minutes): none, 400 s or
        // 800 s, against jobs started 500-1,000 s ago.
        const char *min_runtime[] = {nullptr, "00:06:40", "00:13:20"};
        if (const char *mr = min_runtime[rng() % 3]) w.conf += std::string("MinRuntime=") + mr + "\n";
        for (SnapJob &j : w.snap.jobs)
            if (j.qos == "low" && j.id % 2 == 0) j.qos = "mid";
        Engine e = engine_with(w.conf);
        e.evaluate(w.snap, now);
        ExplainInput in;
        in.all_details = true;
        const Explanation x = explain(e, w.snap, in, now);
        auto job = [&](uint32_t id) -> const SnapJob & {
            for (const SnapJob &j : w.snap.jobs)
                if (j.id == id) return j;
            ADD_FAILURE() << "world " << i << ": no job " << id;
            return w.snap.jobs.front();
        };
        for (const PendingExplain &pe : x.pending) {
            ++cases;
            const PendingResult *r = e.pending_result(pe.job_id);
            if (pe.position < 0) {  // held by its user: not in the pass
                ASSERT_TRUE(job(pe.job_id).user_held) << "world " << i;
                continue;
            }
            ASSERT_NE(r, nullptr) << "world " << i;
            const bool quota_reason = pe.reason == WaitReason::QuotaFull || pe.reason == WaitReason::QuotaTooSmall;
            ASSERT_EQ(quota_reason, r->admission == Admission::Held) << "world " << i << " job " << pe.job_id;
            if (quota_reason) {
                ASSERT_EQ(pe.reason_pool, r->hold_pool) << "world " << i << " job " << pe.job_id;
                ++held;
            }
            // R2's quota lines (its trace) say what admission decided: a
            // line fits exactly in the pools that did not refuse the job,
            // and a refused pool's line counts what its reason counts.
            if (r->admission != Admission::Free) {
                ASSERT_EQ(pe.quota.size(), r->pools.size()) << "world " << i << " job " << pe.job_id;
                for (const QuotaLine &q : pe.quota) {
                    ASSERT_EQ(q.fits(), !r->refuses(q.pool)) << "world " << i << " job " << pe.job_id;
                    for (const Refusal &x : r->refused)
                        if (x.pool == q.pool) ASSERT_EQ(uint64_t(q.np_used) + q.reserved, x.taken) << "world " << i;
                }
                ++quota_lines;
            } else {
                ASSERT_TRUE(pe.quota.empty()) << "world " << i << " job " << pe.job_id;
            }
            std::string parts;
            for (const VictimRef &v : pe.victims) {
                JobRef pr = job_ref(job(pe.job_id), parts);
                pr.partitions = e.last().pools[static_cast<size_t>(pe.reason_pool)].name;
                const RunningExplain *re = nullptr;
                for (const RunningExplain &k : x.running)
                    if (k.job_id == v.job_id) re = &k;
                ASSERT_NE(re, nullptr);
                const int64_t when = re->protected_until ? re->protected_until : now;
                const Verdict vd = e.preemptable(ref(job(v.job_id)), pr, when);
                ASSERT_TRUE(vd.allowed) << "world " << i << ": why names job " << v.job_id << " as a victim of "
                                        << pe.job_id << " from " << when << "; the engine: " << vd.why;
                ASSERT_EQ(vd.rule, v.rule) << "world " << i;
                if (re->protected_until) {
                    ASSERT_EQ(pe.reason, WaitReason::MinRuntime) << "world " << i;
                    ASSERT_FALSE(e.preemptable(ref(job(v.job_id)), pr, re->protected_until - 1).allowed)
                        << "world " << i << ": job " << v.job_id << " protected a second longer than why says";
                }
                ++victims;
            }
        }
        for (const RunningExplain &re : x.running) {
            ++cases;
            const SnapJob &vj = job(re.job_id);
            // MinRuntime: the engine refuses every preemptor while why
            // says the job is protected, and only then (a preemptor of a
            // higher tier in the job's own pool, the one R4 takes).
            if (re.preemptible && re.pool >= 0 && vj.gpus > 0) {
                SnapJob hi = pending(999999, e.last().pools[static_cast<size_t>(re.pool)].name, "high", 1, 900);
                std::string parts;
                const Verdict vd = e.preemptable(ref(vj), job_ref(hi, parts), now);
                const bool engine_protects = !vd.allowed && std::string(vd.why.c_str()).find("MinRuntime") != std::string::npos;
                ASSERT_EQ(re.protected_until != 0, engine_protects) << "world " << i << " job " << re.job_id << ": " << vd.why;
                protected_jobs += engine_protects;
            }
            // The borrowed excess `why` shows is what the engine's R5 walk
            // may reclaim.
            const bool excess = re.cls == VictimClass::OverFairshare || re.cls == VictimClass::OverQuota;
            if (re.preemptible && vj.gpus > 0) {
                ASSERT_EQ(re.borrowed > 0, excess) << "world " << i << " job " << re.job_id;
                borrowed += excess;
            }
        }
    }
    EXPECT_GE(cases, 100000u);
    // The worlds do reach every kind of answer.
    EXPECT_GT(held, 1000u);
    EXPECT_GT(quota_lines, held);
    EXPECT_GT(victims, 1000u);
    EXPECT_GT(protected_jobs, 1000u);
    EXPECT_GT(borrowed, 1000u);
    std::printf("why agrees with the engine: %llu cases (%llu held, %llu victims, %llu protected, %llu borrowed)\n",
                static_cast<unsigned long long>(cases), static_cast<unsigned long long>(held),
                static_cast<unsigned long long>(victims), static_cast<unsigned long long>(protected_jobs),
                static_cast<unsigned long long>(borrowed));
}

TEST(Property, OrderIsStrictStableAndBounded) {
    std::mt19937 rng(42);
    for (int i = 0; i < kWorlds; ++i) {
        World w = random_world(rng);
        Engine e = engine_with(w.conf);
        e.evaluate(w.snap, 2000);
        const auto &p = e.last().pending;
        for (size_t k = 0; k < p.size(); ++k) {
            ASSERT_EQ(p[k].position, k);
            ASSERT_EQ(p[k].factor_tier + p[k].factor_fairshare + p[k].factor_age, p[k].nominal);
            // One free number per tier between pass jobs: 3 tiers, slot 4.
            ASSERT_EQ(p[k].nominal % 4, 1u);
            ASSERT_EQ(p[k].priority, p[k].admission == Admission::Held ? 0u : p[k].nominal);
            if (k > 0) {
                ASSERT_GT(p[k - 1].nominal, p[k].nominal) << "world " << i;
                uint32_t a = e.config().tiers[static_cast<size_t>(p[k - 1].tier)].priority;
                uint32_t b = e.config().tiers[static_cast<size_t>(p[k].tier)].priority;
                ASSERT_GE(a, b);
                if (a == b && p[k - 1].group_standing == p[k].group_standing) {
                    ASSERT_LT(std::tie(p[k - 1].orig_submit, p[k - 1].job_id), std::tie(p[k].orig_submit, p[k].job_id));
                }
            }
        }
        // Same jobs in another input order, evaluated again: same order.
        std::vector<uint32_t> first = order_of(e);
        Snapshot shuffled = w.snap;
        std::shuffle(shuffled.jobs.begin(), shuffled.jobs.end(), rng);
        e.evaluate(shuffled, 2000);
        ASSERT_EQ(order_of(e), first) << "world " << i;
    }
}

// Priorities fit uint32 at any queue length the slurmctld can hold.
TEST(Property, PrioritiesAtLargeQueueLength) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=1000000\n");
    Snapshot s = cluster(1);
    partition(s, "p", 0, 0);
    const char *qos[] = {"high", "normal", "low"};
    for (uint32_t id = 1; id <= 200000; ++id) s.add_job(pending(id, "p", qos[id % 3], 1, 1000 + id % 977));
    e.evaluate(s, 5000);
    const auto &p = e.last().pending;
    ASSERT_EQ(p.size(), 200000u);
    EXPECT_EQ(p.front().priority, 4u * 199999 + 5);
    EXPECT_EQ(p.back().priority, 5u);
    for (size_t k = 1; k < p.size(); ++k) ASSERT_GT(p[k - 1].priority, p[k].priority);
}

// InlineList (every pending result's pools and refusals): against
// std::vector over random pushes, clears, copies and moves, across the
// inline room and the heap's growth; ASan checks the heap pointer that
// shares the inline room.
TEST(Property, InlineListMatchesVector) {
    std::mt19937 rng(11);
    InlineList<int, 4> a, b;
    std::vector<int> ra, rb;
    for (int step = 0; step < 20000; ++step) {
        const int v = std::uniform_int_distribution<int>(0, 99)(rng);
        switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
        case 0: a.clear(); ra.clear(); break;
        case 1: b = a; rb = ra; break;                    // copy
        case 2: a = std::move(b); ra = rb; b = InlineList<int, 4>(); rb.clear(); break;
        case 3: { InlineList<int, 4> c(a); a = std::move(c); break; }  // copy, then move back
        case 4: std::swap(a, b); std::swap(ra, rb); break;
        case 5:  // one of its own entries, as the list grows past its room
            if (!ra.empty()) {
                a.push_back(a.front());
                ra.push_back(ra.front());
            }
            break;
        default: a.push_back(v); ra.push_back(v); break;
        }
        ASSERT_EQ(std::vector<int>(a.begin(), a.end()), ra) << "step " << step;
        ASSERT_EQ(std::vector<int>(b.begin(), b.end()), rb) << "step " << step;
        ASSERT_EQ(a == b, ra == rb);
        if (!ra.empty()) ASSERT_EQ(a.contains(ra.back()), true);
    }
    static_assert(sizeof(InlineList<int, 4>) == 24, "a pointer's room, not a vector's");
}

// FlatIdMap (the engine's job memory and the provisional placements' index)
// against std::map over random adds and erases: ids crowd a few home slots
// so that erasing shifts probe chains.  Then the same for ProvisionalSet.
TEST(Property, FlatIdMapMatchesStdMap) {
    std::mt19937 rng(7);
    FlatIdMap<uint32_t> flat;
    std::map<uint32_t, uint32_t> ref;
    for (int step = 0; step < 200000; ++step) {
        uint32_t id = std::uniform_int_distribution<uint32_t>(1, 3000)(rng);
        switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
        case 0:
        case 1: {
            auto [v, added] = flat.try_emplace(id, id * 3);
            ASSERT_EQ(added, ref.emplace(id, id * 3).second) << "id " << id;
            ASSERT_EQ(*v, ref.at(id));
            break;
        }
        case 2:
            ASSERT_EQ(flat.erase(id), ref.erase(id) == 1) << "id " << id;
            break;
        default:
            if (std::uniform_int_distribution<int>(0, 1000)(rng) == 0) flat.reserve(ref.size() + 5000);
            break;
        }
        ASSERT_EQ(flat.size(), ref.size());
    }
    for (uint32_t id = 1; id <= 3000; ++id) {
        const uint32_t *v = flat.find(id);
        auto it = ref.find(id);
        ASSERT_EQ(v != nullptr, it != ref.end()) << "id " << id;
        if (v) EXPECT_EQ(*v, it->second);
    }
    size_t seen = 0;
    flat.for_each([&](uint32_t id, uint32_t v) {
        EXPECT_EQ(ref.at(id), v);
        ++seen;
    });
    EXPECT_EQ(seen, ref.size());

    ProvisionalSet set;
    std::map<uint32_t, uint32_t> prio;
    set.reserve(64);
    for (int step = 0; step < 20000; ++step) {
        uint32_t id = std::uniform_int_distribution<uint32_t>(1, 200)(rng);
        if (std::uniform_int_distribution<int>(0, 2)(rng)) {
            PendingResult r;
            r.job_id = id;
            r.priority = static_cast<uint32_t>(step);
            set.put(r);
            prio[id] = r.priority;
        } else {
            set.erase(id);
            prio.erase(id);
        }
        ASSERT_EQ(set.size(), prio.size());
    }
    for (uint32_t id = 1; id <= 200; ++id) {
        const PendingResult *r = set.find(id);
        ASSERT_EQ(r != nullptr, prio.count(id) == 1) << "id " << id;
        if (r) EXPECT_EQ(r->priority, prio.at(id));
    }
}

// libFuzzer target: the engine on random clusters.
//
// FuzzedDataProvider turns the input into a gpupool.conf (tiers, pools,
// decay), a snapshot (nodes, partitions over them, jobs in random states,
// tiers, GPU counts, submit/start times, arrays, requeues, holds) and a
// sequence of calls as the plugins make them: passes, jobs placed between
// passes (provisional), preemption verdicts over pairs of jobs, job ends,
// running-only refreshes, a reconfiguration and a state round trip.
//
// Besides no crash, leak or UB, it checks the invariants that
// tests/unit/property_test.cpp checks (doc/policy.md R1, R2, R4-R6):
// - admission never takes a pool's NP GPUs (running + reserved) over its
//   quota, and what a pool reserves is what its admitted jobs ask for;
// - the order is a strict total order by tier, standing, original submit
//   time, job id; priorities add up from their factors; held jobs are 0;
//   the same jobs in another input order give the same order;
// - victims are ranked 1..n; a verdict that allows preemption is InPool
//   (same pool, lower preemptible tier) or Reclaim (another pool's borrowed
//   excess: taking all reclaimable jobs but the straddling one leaves that
//   pool over its quota), and a preemptor held by quota preempts nothing.
// Those that need sane numbers (unique job ids, small GPU counts, times of
// one era) are checked only when the input has them; the rest always.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "canonical_state.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "min_runtime.hpp"
#include "fuzz_check.hpp"

using namespace gpupool;

namespace {

constexpr int64_t kEra = 1700000000;  // times of a sane input lie near this

struct World {
    // One world in four may hold what Slurm never hands over (the same job
    // id twice, absurd GPU counts or times): the rest keep every invariant.
    bool wild = false;
    std::string conf;
    Snapshot snap;
    std::vector<std::string> qos;        // every QOS of every tier
    std::vector<std::string> partitions; // pools and others, for jobs to name
    bool unique_ids = true, small_numbers = true, sane_times = true;
    bool sane() const { return unique_ids && small_numbers && sane_times; }
};

int64_t pick_duration(FuzzedDataProvider &f) {
    switch (f.ConsumeIntegralInRange<int>(0, 6)) {
    case 0: return 0;
    case 1: return 60;
    case 2: return 3600;
    case 3: return 86400;
    case 4: return 7 * 86400;
    case 5: return f.ConsumeIntegralInRange<int64_t>(1, 100000);
    // gpupool.conf takes durations up to 36500 days.
    default: return f.ConsumeIntegralInRange<int64_t>(0, int64_t(36500) * 86400);
    }
}

void add_config(FuzzedDataProvider &f, World &w) {
    const int ntiers = f.ConsumeIntegralInRange<int>(1, 4);
    const bool by_priority = f.ConsumeBool();  // PreemptiblePriority= instead of Preemptible=
    std::string &c = w.conf;
    for (int t = 0; t < ntiers; ++t) {
        std::string name = "t" + std::to_string(t);
        uint32_t prio;
        switch (f.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: prio = static_cast<uint32_t>(t); break;
        case 1: prio = std::numeric_limits<uint32_t>::max() - static_cast<uint32_t>(t); break;
        default: prio = f.ConsumeIntegralInRange<uint32_t>(0, 9) * 100 + static_cast<uint32_t>(t);
        }
        c += "Tier=" + name + " Priority=" + std::to_string(prio) + " QOS=" + name;
        w.qos.push_back(name);
        if (f.ConsumeBool()) {
            c += ",x" + std::to_string(t);
            w.qos.push_back("x" + std::to_string(t));
        }
        if (!by_priority) c += f.ConsumeBool() ? " Preemptible=yes" : " Preemptible=no";
        c += "\n";
    }
    if (by_priority) c += "PreemptiblePriority=" + std::to_string(f.ConsumeIntegralInRange<uint32_t>(0, 1000)) + "\n";
    c += "DefaultTier=t" + std::to_string(f.ConsumeIntegralInRange<int>(0, ntiers - 1)) + "\n";
    c += f.ConsumeBool() ? "PreemptionOrder=newest\n" : "PreemptionOrder=oldest\n";
    c += f.ConsumeBool() ? "ReclaimBy=all\n" : "ReclaimBy=nonpreemptible\n";
    c += "DecayHalfLife=" + format_duration(pick_duration(f)) + "\n";
    c += "UsageWindow=" + format_duration(pick_duration(f)) + "\n";
    static const char *const weights[] = {"0", "0.5", "1", "3", "1000000"};
    c += std::string("UsageWeight=") + weights[f.ConsumeIntegralInRange<int>(0, 4)] + "\n";
    c += "MinRuntime=" + format_duration(f.ConsumeIntegralInRange<int>(0, 2) * 300) + "\n";
    const int npools = f.ConsumeIntegralInRange<int>(1, 6);
    for (int p = 0; p < npools; ++p) {
        uint32_t quota = f.ConsumeIntegralInRange<uint32_t>(0, 16);
        if (f.ConsumeIntegralInRange<int>(0, 15) == 0) quota = std::numeric_limits<uint32_t>::max();
        c += "Pool=p" + std::to_string(p) + " Quota=" + std::to_string(quota) +
             " Weight=" + std::to_string(f.ConsumeIntegralInRange<uint32_t>(0, 4));
        if (f.ConsumeIntegralInRange<int>(0, 3) == 0)
            c += " MinRuntime=" + format_duration(f.ConsumeIntegralInRange<int>(0, 3600));
        c += "\n";
    }
}

void add_cluster(FuzzedDataProvider &f, World &w, int npools) {
    const int nnodes = f.ConsumeIntegralInRange<int>(1, 16);
    for (int i = 0; i < nnodes; ++i) {
        uint32_t gpus = f.ConsumeIntegralInRange<uint32_t>(0, 8);
        w.snap.add_node("n" + std::to_string(i), gpus);
    }
    auto nodes = [&]() {
        std::vector<int32_t> idx;
        if (f.ConsumeIntegralInRange<int>(0, 7) == 0) return idx;  // a partition without nodes
        if (f.ConsumeBool()) {
            int a = f.ConsumeIntegralInRange<int>(0, nnodes - 1), b = f.ConsumeIntegralInRange<int>(a, nnodes - 1);
            for (int i = a; i <= b; ++i) idx.push_back(i);
        } else {
            for (int i = 0; i < nnodes; ++i)
                if (f.ConsumeBool()) idx.push_back(i);
        }
        return idx;
    };
    for (int p = 0; p < npools; ++p) {
        std::string name = "p" + std::to_string(p);
        w.partitions.push_back(name);
        if (f.ConsumeIntegralInRange<int>(0, 7) != 0) w.snap.add_partition(name, nodes());  // else: no such partition
    }
    for (int k = f.ConsumeIntegralInRange<int>(0, 2); k > 0; --k) {
        std::string name = "other" + std::to_string(k);
        w.partitions.push_back(name);
        w.snap.add_partition(name, nodes());
    }
    w.partitions.push_back("nowhere");  // named by jobs, in no snapshot
}

int64_t pick_time(FuzzedDataProvider &f, World &w, int64_t base) {
    if (!w.wild || f.ConsumeIntegralInRange<int>(0, 7) != 0) return base - f.ConsumeIntegralInRange<int64_t>(0, 100000);
    w.sane_times = false;
    switch (f.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return 0;
    case 1: return std::numeric_limits<int64_t>::min();
    case 2: return std::numeric_limits<int64_t>::max();
    default: return f.ConsumeIntegral<int64_t>();
    }
}

uint32_t pick_gpus(FuzzedDataProvider &f, World &w) {
    switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return 0;
    case 1: return f.ConsumeIntegralInRange<uint32_t>(5, 64);
    case 2:
        if (!w.wild) return 2;
        w.small_numbers = false;
        return f.ConsumeIntegral<uint32_t>();
    default: return f.ConsumeIntegralInRange<uint32_t>(1, 4);
    }
}

SnapJob make_job(FuzzedDataProvider &f, World &w, uint32_t id) {
    SnapJob j;
    j.id = id;
    switch (f.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1: j.state = JobState::Running; break;
    case 2: j.state = JobState::Suspended; break;
    default: j.state = JobState::Pending;
    }
    const int nparts = j.state == JobState::Pending ? f.ConsumeIntegralInRange<int>(1, 3) : 1;
    for (int k = 0; k < nparts; ++k)
        j.partitions.push_back(w.partitions[f.ConsumeIntegralInRange<size_t>(0, w.partitions.size() - 1)]);
    const size_t q = f.ConsumeIntegralInRange<size_t>(0, w.qos.size() + 1);
    j.qos = q < w.qos.size() ? w.qos[q] : q == w.qos.size() ? "" : "unknown";
    j.gpus = pick_gpus(f, w);
    j.submit_time = pick_time(f, w, kEra);
    if (j.state != JobState::Pending) {
        int64_t run = f.ConsumeIntegralInRange<int64_t>(0, 7200);
        j.start_time = j.submit_time <= kEra ? std::min(kEra, j.submit_time + run) : j.submit_time;
    }
    j.user_held = f.ConsumeIntegralInRange<int>(0, 15) == 0;
    if (f.ConsumeIntegralInRange<int>(0, 7) == 0) {
        if (j.state == JobState::Pending) {
            j.array_tasks = f.ConsumeIntegralInRange<uint32_t>(0, 20);
            if (w.wild && f.ConsumeIntegralInRange<int>(0, 7) == 0) {
                j.array_tasks = f.ConsumeIntegral<uint32_t>();
                w.small_numbers = false;
            }
        } else {
            j.array_job_id = f.ConsumeIntegralInRange<uint32_t>(1, 4);
        }
    }
    if (f.ConsumeIntegralInRange<int>(0, 7) == 0) j.restart_cnt = f.ConsumeIntegralInRange<uint32_t>(1, 3);
    return j;
}

void add_jobs(FuzzedDataProvider &f, World &w) {
    std::set<uint32_t> ids;
    uint32_t next = 1;
    while (f.remaining_bytes() > 0) {
        uint32_t id = next;
        if (w.wild && f.ConsumeIntegralInRange<int>(0, 15) == 0 && !ids.empty()) {
            id = *ids.begin();  // the same id twice: never from Slurm, but must not break anything
        } else {
            next += f.ConsumeIntegralInRange<uint32_t>(1, 3);
        }
        if (!ids.insert(id).second) w.unique_ids = false;
        w.snap.add_job(make_job(f, w, id));
    }
}

const Tier &tier_of(const Engine &e, std::string_view qos) {
    return e.config().tiers[static_cast<size_t>(e.tier_of_qos(std::string(qos)))];
}

// R2: reservations never take a pool over quota; with `exact`, they are
// what the admitted jobs ask for: the pass's, and those placed since
// (job_ended() keeps the placements apart from the pass's results; a job
// placed again is counted as placed).
void check_admission(const Engine &e, bool exact) {
    const Evaluation &ev = e.last();
    std::vector<uint64_t> asked(ev.pools.size(), 0);
    std::vector<const PendingResult *> results;
    for (const PendingResult &r : ev.pending)
        if (!ev.provisional.contains(r.job_id)) results.push_back(&r);
    for (const PendingResult &r : ev.provisional) results.push_back(&r);
    for (const PendingResult *rp : results) {
        const PendingResult &r = *rp;
        FUZZ_CHECK(r.admitted_tasks <= r.task_count());
        FUZZ_CHECK((r.admitted_tasks == 0) == (r.admission == Admission::Held));
        for (const Refusal &x : r.refused) FUZZ_CHECK(r.pools.contains(x.pool));
        if (r.admission == Admission::Held) {
            FUZZ_CHECK(r.refused.size() == r.pools.size());  // held: it fits none of its pools
            FUZZ_CHECK(r.priority == 0);
            FUZZ_CHECK(!e.reason_of(r).empty());
        }
        if (r.admission == Admission::Quota) {
            // Admitted: it fits one at least (a pending job that went
            // away, job_ended(), lists none).
            FUZZ_CHECK(r.pools.empty() || r.refused.size() < r.pools.size());
            for (int p : r.pools)
                if (!r.refuses(p)) asked[static_cast<size_t>(p)] += uint64_t(r.admitted_tasks) * r.gpus;
        }
    }
    for (size_t p = 0; p < ev.pools.size(); ++p) {
        const PoolState &ps = ev.pools[p];
        FUZZ_CHECK(ps.np_reserved() == 0 || uint64_t(ps.np_used()) + ps.np_reserved() <= ps.quota);
        if (exact) FUZZ_CHECK(asked[p] == ps.np_reserved());
    }
}

// R1: a strict order by tier, standing, original submit time, job id.
void check_order(const Engine &e, bool sane_times) {
    const auto &p = e.last().pending;
    const uint64_t slot = e.config().tiers.size() + 1;
    for (size_t k = 0; k < p.size(); ++k) {
        FUZZ_CHECK(p[k].position == k);
        FUZZ_CHECK(uint64_t(p[k].factor_tier) + p[k].factor_fairshare + p[k].factor_age == p[k].nominal);
        FUZZ_CHECK(p[k].nominal % slot == 1);
        FUZZ_CHECK(p[k].priority == (p[k].admission == Admission::Held ? 0u : p[k].nominal));
        FUZZ_CHECK(e.pending_result(p[k].job_id) != nullptr);
        if (k == 0) continue;
        FUZZ_CHECK(p[k - 1].nominal > p[k].nominal);
        uint32_t a = e.config().tiers[static_cast<size_t>(p[k - 1].tier)].priority;
        uint32_t b = e.config().tiers[static_cast<size_t>(p[k].tier)].priority;
        FUZZ_CHECK(a >= b);
        if (a == b) FUZZ_CHECK(p[k - 1].group_standing <= p[k].group_standing);
        if (sane_times && a == b && p[k - 1].group_standing == p[k].group_standing)
            FUZZ_CHECK(std::tie(p[k - 1].orig_submit, p[k - 1].job_id) < std::tie(p[k].orig_submit, p[k].job_id));
    }
}

// R6: ranks 1..n over the running jobs of the last pass.
void check_ranks(const Engine &e) {
    const auto &running = e.last().running;
    std::vector<uint32_t> ranks;
    for (const auto &[id, r] : running) {
        ranks.push_back(r.rank);
        FUZZ_CHECK(e.victim_rank(id) == r.rank);
    }
    std::sort(ranks.begin(), ranks.end());
    for (size_t i = 0; i < ranks.size(); ++i) FUZZ_CHECK(ranks[i] == i + 1);
}

// R4/R5 for one preemptor against the running jobs; with `whole`, also the
// straddling rule over all reclaimable jobs of each pool (needs unique ids
// and the victims exactly as the last pass saw them).
void check_verdicts(Engine &e, const Snapshot &snap, const SnapJob &pre, int64_t now, bool whole, size_t max_victims) {
    std::string pre_parts, vic_parts;
    const JobRef pref = job_ref(pre, pre_parts);
    const Tier &ptier = tier_of(e, pref.qos);
    const PendingResult *known = e.pending_result(pre.id);
    const bool held = known && known->admission == Admission::Held && !ptier.preemptible && pre.gpus > 0;
    std::map<int, uint64_t> taken, largest;
    size_t asked = 0;
    for (const SnapJob &v : snap.jobs) {
        if (v.state != JobState::Running) continue;
        if (++asked > max_victims) break;
        const JobRef vref = job_ref(v, vic_parts);
        Verdict vd = e.preemptable(vref, pref, now);
        if (!vd.allowed) continue;
        FUZZ_CHECK(!held);
        FUZZ_CHECK(vd.victim_pool >= 0 && vd.preemptor_pool >= 0);
        // It never preempts for a pool whose quota it does not fit (an NP
        // job with GPUs: only those are subject to quota).
        FUZZ_CHECK(!known || ptier.preemptible || pre.gpus == 0 || !known->refuses(vd.preemptor_pool));
        const PoolState &vp = e.last().pools.at(static_cast<size_t>(vd.victim_pool));
        const PoolState &pp = e.last().pools.at(static_cast<size_t>(vd.preemptor_pool));
        auto rit = e.last().running.find(v.id);
        const Tier &vtier = rit != e.last().running.end() ? e.config().tiers[static_cast<size_t>(rit->second.tier)]
                                                          : tier_of(e, vref.qos);
        FUZZ_CHECK(vtier.preemptible);
        if (vd.rule == Rule::InPool) {
            FUZZ_CHECK(vd.victim_pool == vd.preemptor_pool);
            FUZZ_CHECK(vtier.priority < ptier.priority);
        } else {
            FUZZ_CHECK(vd.rule == Rule::Reclaim);
            FUZZ_CHECK(vd.victim_pool != vd.preemptor_pool);
            FUZZ_CHECK(vp.used() > vp.quota);
            // Entitled: its pool's use, less its own lower preemptible
            // tiers past MinRuntime (taken in the same preemption; an NP
            // preemptor only), plus the job, within quota.
            uint64_t freed = 0;
            if (!ptier.preemptible)
                for (const auto &[id, r] : e.last().running) {
                    const Tier &t = e.config().tiers[static_cast<size_t>(r.tier)];
                    if (r.pool == vd.preemptor_pool && t.preemptible && t.priority < ptier.priority &&
                        min_runtime_end(pp.min_runtime, r.start, now) == 0)
                        freed += r.gpus;
                }
            FUZZ_CHECK(uint64_t(pp.used()) - std::min<uint64_t>(pp.used(), freed) + pre.gpus <= pp.quota);
            FUZZ_CHECK(rit != e.last().running.end());
            taken[vd.victim_pool] += v.gpus;
            largest[vd.victim_pool] = std::max<uint64_t>(largest[vd.victim_pool], v.gpus);
        }
    }
    if (!whole) return;
    for (auto [p, g] : taken) {
        const PoolState &vp = e.last().pools[static_cast<size_t>(p)];
        FUZZ_CHECK(int64_t(vp.used()) - (int64_t(g) - int64_t(largest[p])) > int64_t(vp.quota));
    }
}

std::vector<uint32_t> order_of(const Engine &e) {
    std::vector<uint32_t> ids;
    for (const PendingResult &r : e.last().pending) ids.push_back(r.job_id);
    return ids;
}

void check_state_round_trip(const Engine &e, int64_t now) {
    const std::string state = e.state_json(now);
    Engine again;
    again.set_config(e.config());
    try {
        again.load_state_json(state);
    } catch (const std::runtime_error &err) {
        std::fprintf(stderr, "engine's own state rejected: %s\n", err.what());
        FUZZ_CHECK(!"engine's own state loads");
    }
    FUZZ_CHECK(same_state(state, again.state_json(now)));
}

// GPUPOOL_FUZZ_VERBOSE=1: what an input means, for reports.
void dump(const World &w, const std::vector<SnapJob> &extra, int64_t now, int64_t earlier,
          const std::vector<uint32_t> &ends, bool reconfigure) {
    std::fprintf(stderr, "--- gpupool.conf\n%s--- nodes:", w.conf.c_str());
    for (const SnapNode &n : w.snap.nodes) std::fprintf(stderr, " %s=%u", n.name.c_str(), n.gpus);
    std::fprintf(stderr, "\n--- partitions:\n");
    for (const SnapPartition &p : w.snap.partitions) {
        std::fprintf(stderr, "  %s:", p.name.c_str());
        for (int32_t n : p.nodes) std::fprintf(stderr, " n%d", n);
        std::fprintf(stderr, "\n");
    }
    auto job = [](const char *what, const SnapJob &j) {
        static const char *const states[] = {"pending", "running", "suspended"};
        std::string parts;
        for (const std::string &p : j.partitions) parts += (parts.empty() ? "" : ",") + p;
        std::fprintf(stderr,
                     "  %s id=%u %s part=%s qos='%s' gpus=%u submit=%lld start=%lld held=%d array_tasks=%u "
                     "array_job_id=%u restart_cnt=%u\n",
                     what, j.id, states[static_cast<int>(j.state)], parts.c_str(), j.qos.c_str(), j.gpus,
                     static_cast<long long>(j.submit_time), static_cast<long long>(j.start_time), j.user_held,
                     j.array_tasks, j.array_job_id, j.restart_cnt);
    };
    std::fprintf(stderr, "--- jobs:\n");
    for (const SnapJob &j : w.snap.jobs) job("job", j);
    for (const SnapJob &j : extra) job("provisional", j);
    std::fprintf(stderr, "--- earlier=%lld now=%lld reconfigure=%d job_ended:", static_cast<long long>(earlier),
                 static_cast<long long>(now), reconfigure);
    for (uint32_t id : ends) std::fprintf(stderr, " %u", id);
    std::fprintf(stderr, "\n--- wild=%d sane: unique_ids=%d small_numbers=%d sane_times=%d\n", w.wild,
                 w.unique_ids, w.small_numbers, w.sane_times);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzedDataProvider f(data, size);
    World w;
    w.wild = f.ConsumeIntegralInRange<int>(0, 3) == 0;
    add_config(f, w);
    Config cfg;
    try {
        cfg = parse_config(w.conf, "fuzz_engine.conf");
    } catch (const ConfigError &err) {
        std::fprintf(stderr, "harness wrote a bad config: %s\n%s", err.what(), w.conf.c_str());
        FUZZ_CHECK(!"harness config parses");
    }
    const int npools = static_cast<int>(cfg.pools.size());
    add_cluster(f, w, npools);
    const int64_t now = kEra + f.ConsumeIntegralInRange<int64_t>(0, 3600);
    const int64_t earlier = now - f.ConsumeIntegralInRange<int64_t>(1, 7 * 86400);
    const int nprov = f.ConsumeIntegralInRange<int>(0, 4);
    std::vector<SnapJob> extra;  // jobs submitted between passes
    for (int k = 0; k < nprov; ++k) {
        // New ids, or ids of the snapshot's jobs with other tiers or GPUs.
        uint32_t id = f.ConsumeBool() ? 1000000 + static_cast<uint32_t>(k) : f.ConsumeIntegralInRange<uint32_t>(1, 64);
        SnapJob j;
        j.id = id;
        extra.push_back(j);
    }
    const int nend = f.ConsumeIntegralInRange<int>(0, 8);
    std::vector<uint32_t> ends;
    for (int k = 0; k < nend; ++k) ends.push_back(f.ConsumeIntegralInRange<uint32_t>(0, 96));
    const bool reconfigure = f.ConsumeIntegralInRange<int>(0, 7) == 0;
    // JSON (report, state round trip) costs more than the rest together:
    // one input in 8 (fuzz_state covers the state file itself).
    const bool json = f.ConsumeIntegralInRange<int>(0, 7) == 0;
    for (SnapJob &j : extra) {
        uint32_t id = j.id;
        j = make_job(f, w, id);
        j.state = JobState::Pending;
    }
    add_jobs(f, w);
    const Snapshot &snap = w.snap;
    const bool sane = w.sane();
    static const bool verbose = std::getenv("GPUPOOL_FUZZ_VERBOSE") != nullptr;
    if (verbose) dump(w, extra, now, earlier, ends, reconfigure);

    Engine e;
    e.set_config(cfg);
    // Nothing happens before the first pass.
    for (const SnapJob &j : extra) {
        PendingResult r = e.provisional(j, earlier);
        FUZZ_CHECK(r.admitted_tasks <= r.task_count());
        FUZZ_CHECK((r.admitted_tasks == 0) == (r.admission == Admission::Held));
    }
    FUZZ_CHECK(!e.job_ended(1, earlier));
    e.refresh_running(snap, earlier);
    FUZZ_CHECK(!e.last().valid);

    // A pass some time ago (usage history), then the pass under test.
    e.evaluate(snap, earlier);
    e.evaluate(snap, now);
    check_admission(e, true);
    check_ranks(e);
    if (sane) check_order(e, true);
    // Preemption verdicts: each pending job (up to 8) against the running ones.
    size_t preemptors = 0;
    for (const SnapJob &j : snap.jobs) {
        if (j.state != JobState::Pending) continue;
        if (++preemptors > 8) break;
        check_verdicts(e, snap, j, now, sane, 64);
    }
    if (sane) {
        // The same jobs in another input order: the same order.
        std::vector<uint32_t> first = order_of(e);
        Snapshot turned = snap;
        std::reverse(turned.jobs.begin(), turned.jobs.end());
        if (!turned.jobs.empty())
            std::rotate(turned.jobs.begin(), turned.jobs.begin() + static_cast<long>(turned.jobs.size() / 3),
                        turned.jobs.end());
        e.evaluate(turned, now);
        FUZZ_CHECK(order_of(e) == first);
    }
    for (const PendingResult &r : e.last().pending) (void)e.reason_of(r);
    if (json) (void)e.report_json();
    (void)e.warnings();

    // Jobs submitted between passes reserve what they are admitted.
    for (const SnapJob &j : extra) {
        PendingResult r = e.provisional(j, now + 1);
        FUZZ_CHECK(r.admitted_tasks <= r.task_count());
        FUZZ_CHECK((r.admitted_tasks == 0) == (r.admission == Admission::Held));
        FUZZ_CHECK(e.pending_result(j.id) != nullptr);
        check_admission(e, false);
    }
    if (!extra.empty()) check_verdicts(e, snap, extra.front(), now + 1, false, 16);
    // Job ends give back and admit more, never over quota.  Exactly what
    // the admitted jobs ask for only with unique ids: a job end works on
    // the one result its id finds, and of two pass jobs with one id (never
    // from Slurm) the other's reservation stays until the next pass, which
    // errs on the side of the quota.
    for (uint32_t id : ends) {
        e.job_ended(id, now + 2);
        check_admission(e, w.unique_ids);
        for (const PendingResult &r : e.last().pending) FUZZ_CHECK(e.pending_result(r.job_id) != nullptr);
    }
    for (uint32_t a = 1; a <= 4; ++a) (void)e.array_running(a);

    // Running jobs only: half of them ended, the pending ones started.
    Snapshot later = snap;
    for (size_t k = 0; k < later.jobs.size(); ++k) {
        SnapJob &j = later.jobs[k];
        if (j.state == JobState::Running && k % 2) j.state = JobState::Suspended;
        else if (j.state == JobState::Pending && !j.partitions.empty() && k % 3 == 0) {
            j.state = JobState::Running;
            j.partitions.resize(1);
            j.start_time = now + 3;
        }
    }
    e.refresh_running(later, now + 3);
    check_ranks(e);
    preemptors = 0;
    for (const SnapJob &j : later.jobs) {
        if (j.state != JobState::Pending) continue;
        if (++preemptors > 4) break;
        check_verdicts(e, later, j, now + 3, false, 32);
    }

    // Reconfigured: fewer pools, one tier; then the next pass.
    if (reconfigure) {
        Config small = cfg;
        small.pools.resize(small.pools.size() / 2);
        small.tiers.resize(1);
        small.default_tier = small.tiers[0].name;
        e.set_config(small);
        Verdict v = e.preemptable(JobRef{}, JobRef{}, now + 4);
        FUZZ_CHECK(!v.allowed);
        e.refresh_running(later, now + 4);
    }
    e.evaluate(later, now + 60);
    check_admission(e, true);
    check_ranks(e);
    if (sane) check_order(e, true);
    if (json) check_state_round_trip(e, now + 60);
    return 0;
}

// Figures behind `gpupool status`, `queue` and `why`, read from the
// engine's last pass with the rules engine.cpp applies (see explain.hpp).
#include "explain.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace gpupool {

const char *wait_reason_code(WaitReason r) {
    switch (r) {
    case WaitReason::Starting: return "starting";
    case WaitReason::QuotaFull: return "quota_full";
    case WaitReason::QuotaTooSmall: return "quota_too_small";
    case WaitReason::WaitingForGpus: return "waiting_for_gpus";
    case WaitReason::BehindHigherTier: return "behind_higher_tier";
    case WaitReason::WaitingForReclaim: return "waiting_for_reclaim";
    case WaitReason::MinRuntime: return "min_runtime";
    case WaitReason::Held: return "held";
    case WaitReason::NotEligible: return "not_eligible";
    case WaitReason::NotManaged: return "not_managed";
    }
    return "unknown";
}

const char *wait_reason_text(WaitReason r) {
    switch (r) {
    case WaitReason::Starting: return "starting";
    case WaitReason::QuotaFull: return "quota full";
    case WaitReason::QuotaTooSmall: return "never fits the quota";
    case WaitReason::WaitingForGpus: return "waiting for GPUs";
    case WaitReason::BehindHigherTier: return "behind a higher tier";
    case WaitReason::WaitingForReclaim: return "waiting for a reclaim";
    case WaitReason::MinRuntime: return "protected by MinRuntime";
    case WaitReason::Held: return "held by user/admin";
    case WaitReason::NotEligible: return "not eligible yet";
    case WaitReason::NotManaged: return "not in a gpupool pool";
    }
    return "unknown";
}

const PendingExplain *Explanation::find_pending(uint32_t job_id) const {
    for (const PendingExplain &p : pending)
        if (p.job_id == job_id) return &p;
    return nullptr;
}

const RunningExplain *Explanation::find_running(uint32_t job_id) const {
    for (const RunningExplain &r : running)
        if (r.job_id == job_id) return &r;
    return nullptr;
}

namespace {

struct Ctx {
    const Engine &engine;
    const Config &cfg;
    const Evaluation &ev;
    int64_t now;

    uint32_t tier_priority(int t) const { return t >= 0 ? cfg.tiers[static_cast<size_t>(t)].priority : 0; }
    bool preemptible(int t) const { return t >= 0 && cfg.tiers[static_cast<size_t>(t)].preemptible; }
    const PoolState &pool(int p) const { return ev.pools[static_cast<size_t>(p)]; }
    // When MinRuntime stops protecting a job of pool p started at `start`;
    // 0 when it does not (any more).
    int64_t protected_until(int p, int64_t start) const {
        return p < 0 ? 0 : min_runtime_end(pool(p).min_runtime, start, now);
    }
};

// Node sets and the borrow matching: each node set's borrowed GPUs come
// first from GPUs in nobody's quota, then from the idle quota of its pools
// in gpupool.conf order (design.md "Lent"), borrowers taken in config
// order.  Returns, per borrower, its (lender, gpus) edges in that order.
std::vector<std::vector<PoolGpus>> node_sets_and_borrowing(const Ctx &c, Explanation &x) {
    const auto &pools = c.ev.pools;
    std::map<int, int> set_of_domain;
    for (size_t i = 0; i < pools.size(); ++i) {
        const PoolState &ps = pools[i];
        if (ps.domain < 0) continue;
        auto [it, fresh] = set_of_domain.emplace(ps.domain, static_cast<int>(x.node_sets.size()));
        if (fresh) {
            NodeSetExplain ns;
            ns.id = it->second;
            ns.capacity = ps.domain_capacity;
            x.node_sets.push_back(ns);
        }
        NodeSetExplain &ns = x.node_sets[static_cast<size_t>(it->second)];
        ns.pools.push_back(static_cast<int>(i));
        ns.quota += ps.quota;
        ns.used += ps.used();
        x.pools[i].node_set = it->second;
    }
    std::vector<std::vector<PoolGpus>> from(pools.size());
    for (NodeSetExplain &ns : x.node_sets) {
        ns.free_gpus = ns.capacity > ns.used ? ns.capacity - ns.used : 0;
        ns.unassigned = ns.capacity > ns.quota ? ns.capacity - ns.quota : 0;
        for (int p : ns.pools) x.pools[static_cast<size_t>(p)].shared = ns.pools.size() > 1;
        const std::vector<size_t> members(ns.pools.begin(), ns.pools.end());
        const auto edges = lending(pools, members, ns.capacity);
        for (size_t k = 0; k < members.size(); ++k) {
            const int b = static_cast<int>(members[k]);
            for (const PoolGpus &g : edges[k]) {
                from[members[k]].push_back(g);
                x.pools[members[k]].borrowed_from.push_back(g);
                if (g.pool >= 0) x.pools[static_cast<size_t>(g.pool)].lent_to.push_back(PoolGpus{b, g.gpus});
            }
        }
    }
    return from;
}

// Running jobs: R6 rank, MinRuntime, and which lender's GPUs the borrowed
// excess of each preemptible job is.  Place and excess are the engine's,
// from its own R5 walk (rank_victims); lenders are matched in that order.
void explain_running(const Ctx &c, std::vector<std::vector<PoolGpus>> from, Explanation &x) {
    std::vector<std::vector<const RunningInfo *>> by_pool(c.ev.pools.size());
    std::vector<const RunningInfo *> all;
    for (const auto &[id, r] : c.ev.running) {
        all.push_back(&r);
        if (r.pool >= 0 && c.preemptible(r.tier)) by_pool[static_cast<size_t>(r.pool)].push_back(&r);
    }
    std::sort(all.begin(), all.end(), [](auto *a, auto *b) { return std::tie(a->rank, a->job_id) < std::tie(b->rank, b->job_id); });
    std::unordered_map<uint32_t, size_t> at;
    for (const RunningInfo *r : all) {
        RunningExplain re;
        re.job_id = r->job_id;
        re.pool = r->pool;
        re.tier = r->tier;
        re.gpus = r->gpus;
        re.start = r->start;
        re.preemptible = c.preemptible(r->tier);
        re.cls = r->cls;
        re.rank = r->rank;
        if (re.preemptible) re.protected_until = c.protected_until(r->pool, r->start);
        at[r->job_id] = x.running.size();
        x.running.push_back(std::move(re));
    }
    for (size_t p = 0; p < by_pool.size(); ++p) {
        auto &v = by_pool[p];
        std::sort(v.begin(), v.end(), [](const RunningInfo *a, const RunningInfo *b) { return a->walk < b->walk; });
        std::vector<PoolGpus> &edges = from[p];
        size_t ei = 0;
        for (const RunningInfo *r : v) {
            uint32_t excess = r->excess;
            RunningExplain &re = x.running[at[r->job_id]];
            re.borrowed = excess;
            while (excess > 0 && ei < edges.size()) {
                uint32_t take = std::min(excess, edges[ei].gpus);
                re.lenders.push_back(PoolGpus{edges[ei].pool, take});
                if (edges[ei].pool >= 0 && re.protected_until == 0)
                    x.pools[static_cast<size_t>(edges[ei].pool)].reclaimable += take;
                excess -= take;
                edges[ei].gpus -= take;
                if (edges[ei].gpus == 0) ++ei;
            }
        }
    }
}

// The pending walk, in R1 order, with free GPUs of each node set handed
// out in that order.  Whether and by which quota a job is held is R2's
// (its result and Engine::admission_trace), never worked out here.
void explain_pending(const Ctx &c, const Snapshot &snap, const ExplainInput &in, Explanation &x) {
    const Evaluation &ev = c.ev;
    const size_t npools = ev.pools.size();
    const AdmissionTrace trace = c.engine.admission_trace();
    std::vector<std::vector<QuotaUser>> admitted(npools);
    std::vector<uint32_t> pool_count(npools, 0);
    std::vector<uint32_t> free_left(x.node_sets.size()), free_start(x.node_sets.size());
    std::vector<int64_t> took_prio(x.node_sets.size(), -1);  // highest tier that took free GPUs
    for (size_t s = 0; s < x.node_sets.size(); ++s) free_left[s] = free_start[s] = x.node_sets[s].free_gpus;
    std::unordered_set<uint32_t> claimed;             // victims counted for a job ahead

    auto detailed = [&](uint32_t id) { return in.all_details || id == in.detail_job; };
    auto set_of = [&](int p) { return x.pools[static_cast<size_t>(p)].node_set; };
    auto fits_now = [&](int p, uint32_t gpus) {
        int s = set_of(p);
        return s >= 0 && c.pool(p).capacity >= gpus && free_left[static_cast<size_t>(s)] >= gpus;
    };

    for (size_t pos = 0; pos < ev.pending.size(); ++pos) {
        const PendingResult &r = ev.pending[pos];
        PendingExplain pe;
        pe.job_id = r.job_id;
        pe.position = static_cast<int64_t>(pos);
        pe.tier = r.tier;
        pe.gpus = r.gpus;
        pe.tasks = r.task_count();
        for (int p : r.pools) {
            pe.pools.push_back(p);
            pe.pool_position.emplace_back(p, pool_count[static_cast<size_t>(p)]++);
        }
        pe.quota.assign(trace.lines.begin() + trace.first[pos], trace.lines.begin() + trace.first[pos + 1]);
        if (detailed(r.job_id)) {
            for (size_t k = 0; k < pos; ++k) {
                bool shares = false;
                for (int p : ev.pending[k].pools) shares |= r.pools.contains(p);
                if (shares) pe.ahead.push_back(ev.pending[k].job_id);
            }
        }

        if (r.admission == Admission::Held) {
            pe.reason = r.hold == Hold::QuotaTooSmall ? WaitReason::QuotaTooSmall : WaitReason::QuotaFull;
            pe.reason_pool = r.hold_pool;
        } else if (in.not_eligible.count(r.job_id)) {
            pe.reason = WaitReason::NotEligible;
        } else if (r.pools.empty()) {
            pe.reason = WaitReason::NotManaged;
        } else if (r.gpus == 0) {
            pe.reason = WaitReason::Starting;
            pe.reason_pool = r.pools.front();
        } else {
            const uint32_t prio = c.tier_priority(r.tier);
            // Slurm starts an admitted job only in the pools whose quota
            // admitted it (Engine::start_partitions).
            int fit = -1;
            for (int p : r.pools)
                if (!r.refuses(p) && fits_now(p, r.gpus)) {
                    fit = p;
                    break;
                }
            if (fit >= 0) {
                pe.reason = WaitReason::Starting;
                pe.reason_pool = fit;
                // An array record may start several tasks; each takes GPUs.
                uint32_t tasks = r.admission == Admission::Quota ? r.admitted_tasks : r.task_count();
                size_t s = static_cast<size_t>(set_of(fit));
                for (uint32_t t = 0; t < std::max(1u, tasks) && free_left[s] >= r.gpus; ++t) free_left[s] -= r.gpus;
                took_prio[s] = std::max<int64_t>(took_prio[s], prio);
            } else {
                // Would it fit but for the jobs ahead of it?
                int taken = -1;
                for (int p : r.pools) {
                    int s = set_of(p);
                    if (!r.refuses(p) && s >= 0 && c.pool(p).capacity >= r.gpus && free_start[static_cast<size_t>(s)] >= r.gpus) {
                        taken = p;
                        break;
                    }
                }
                if (taken >= 0) {
                    pe.reason_pool = taken;
                    pe.reason = took_prio[static_cast<size_t>(set_of(taken))] > int64_t(prio)
                                    ? WaitReason::BehindHigherTier
                                    : WaitReason::WaitingForGpus;
                } else {
                    // No free GPUs: what may it preempt (R4 in its pool,
                    // R5 from others' borrowed excess when entitled)?  As
                    // the engine decides (Engine::candidacy).
                    pe.reason = WaitReason::WaitingForGpus;
                    pe.reason_pool = r.pools.front();
                    for (int p : r.pools) {
                        int s = set_of(p);
                        if (s < 0 || r.refuses(p)) continue;
                        std::vector<const RunningExplain *> cands;
                        for (const RunningExplain &v : x.running) {  // R6 order
                            if (!v.preemptible || v.pool < 0 || claimed.count(v.job_id) || v.gpus == 0) continue;
                            auto ri = c.ev.running.find(v.job_id);
                            Verdict verdict;
                            if (ri != c.ev.running.end() && c.engine.candidacy(p, r.tier, r.gpus, ri->second, verdict))
                                cands.push_back(&v);
                        }
                        // Reclaim is tried before preemption in the pool.
                        std::stable_sort(cands.begin(), cands.end(), [&](auto *a, auto *b) {
                            return (a->pool == p) < (b->pool == p);
                        });
                        uint64_t have = free_left[static_cast<size_t>(s)];
                        std::vector<const RunningExplain *> now_free, later;
                        for (const RunningExplain *v : cands) (v->protected_until ? later : now_free).push_back(v);
                        std::vector<const RunningExplain *> use;
                        for (const RunningExplain *v : now_free) {
                            if (have >= r.gpus) break;
                            have += v->gpus;
                            use.push_back(v);
                        }
                        WaitReason why = WaitReason::WaitingForReclaim;
                        int64_t until = 0;
                        if (have < r.gpus) {
                            std::stable_sort(later.begin(), later.end(), [](auto *a, auto *b) {
                                return a->protected_until < b->protected_until;
                            });
                            for (const RunningExplain *v : later) {
                                if (have >= r.gpus) break;
                                have += v->gpus;
                                until = v->protected_until;
                                use.push_back(v);
                            }
                            why = WaitReason::MinRuntime;
                        }
                        if (have < r.gpus) continue;
                        pe.reason = why;
                        pe.reason_pool = p;
                        pe.protected_until = until;
                        free_left[static_cast<size_t>(s)] = 0;
                        for (const RunningExplain *v : use) {
                            claimed.insert(v->job_id);
                            pe.victims.push_back(VictimRef{v->job_id, v->pool == p ? Rule::InPool : Rule::Reclaim,
                                                           v->protected_until});
                        }
                        break;
                    }
                }
            }
        }
        if (detailed(r.job_id) && pe.reason_pool >= 0 &&
            (pe.reason == WaitReason::QuotaFull || pe.reason == WaitReason::QuotaTooSmall)) {
            size_t hp = static_cast<size_t>(pe.reason_pool);
            std::vector<const RunningInfo *> run;
            for (const auto &[id, ri] : ev.running)
                if (ri.pool == pe.reason_pool && !c.preemptible(ri.tier) && ri.gpus > 0) run.push_back(&ri);
            std::sort(run.begin(), run.end(), [](auto *a, auto *b) { return a->job_id < b->job_id; });
            for (const RunningInfo *ri : run) pe.quota_users.push_back(QuotaUser{ri->job_id, ri->gpus, true});
            for (const QuotaUser &u : admitted[hp]) pe.quota_users.push_back(u);
        }
        // Admitted: a user of each listed pool's quota that admitted it.
        if (r.admission == Admission::Quota)
            for (int p : r.pools)
                if (!r.refuses(p))
                    admitted[static_cast<size_t>(p)].push_back(QuotaUser{r.job_id, r.admitted_tasks * r.gpus, false});
        for (int p : r.pools) {
            PoolExplain &px = x.pools[static_cast<size_t>(p)];
            if (r.tier >= 0) {
                px.pending_jobs_by_tier[static_cast<size_t>(r.tier)]++;
                px.pending_gpus_by_tier[static_cast<size_t>(r.tier)] += static_cast<uint32_t>(pe.pending_gpus());
            }
        }
        x.pending.push_back(std::move(pe));
    }

    // Jobs held by their user or an admin: not ordered, listed after.
    std::vector<const SnapJob *> held;
    for (const SnapJob &j : snap.jobs)
        if (j.state == JobState::Pending && j.user_held) held.push_back(&j);
    std::sort(held.begin(), held.end(), [](auto *a, auto *b) { return a->id < b->id; });
    for (const SnapJob *j : held) {
        PendingExplain pe;
        pe.job_id = j->id;
        pe.tier = c.engine.tier_of_qos(j->qos);
        pe.gpus = j->gpus;
        pe.tasks = task_count(j->array_tasks);
        for (const std::string &name : j->partitions) {
            auto it = ev.pool_index.find(name);
            if (it != ev.pool_index.end() &&
                std::find(pe.pools.begin(), pe.pools.end(), it->second) == pe.pools.end())
                pe.pools.push_back(it->second);
        }
        pe.reason = WaitReason::Held;
        x.pending.push_back(std::move(pe));
    }
}

}  // namespace

Explanation explain(const Engine &engine, const Snapshot &snap, const ExplainInput &in, int64_t now) {
    if (!engine.has_config() || !engine.last().valid) throw std::logic_error("no gpupool pass to explain");
    const Evaluation &ev = engine.last();
    Ctx c{engine, engine.config(), ev, now};
    Explanation x;
    x.now = now;
    x.pools.resize(ev.pools.size());
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        const PoolState &ps = ev.pools[i];
        PoolExplain &px = x.pools[i];
        uint32_t np_room = ps.quota > ps.np_used ? ps.quota - ps.np_used : 0;
        px.p_in_quota = std::min(ps.p_used, np_room);
        px.free_quota = static_cast<uint32_t>(ps.quota_room());
        px.pending_jobs_by_tier.assign(c.cfg.tiers.size(), 0);
        px.pending_gpus_by_tier.assign(c.cfg.tiers.size(), 0);
    }
    auto from = node_sets_and_borrowing(c, x);
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        PoolExplain &px = x.pools[i];
        if (px.node_set < 0) continue;
        const PoolState &ps = ev.pools[i];
        const NodeSetExplain &ns = x.node_sets[static_cast<size_t>(px.node_set)];
        px.free_gpus = std::min(ps.capacity, ns.free_gpus);
        int64_t others = int64_t(ns.used) - ps.used();
        int64_t reach = std::min<int64_t>(ps.capacity, int64_t(ns.capacity) - others);
        px.borrowable = reach > int64_t(ps.quota) ? static_cast<uint32_t>(reach - ps.quota) : 0;
    }
    explain_running(c, std::move(from), x);
    explain_pending(c, snap, in, x);
    return x;
}

}  // namespace gpupool

// R4-R6 on the last pass: which running job a job may preempt or reclaim
// (candidacy, MinRuntime), the R5 walk of each pool (borrowed excess,
// victim class) and the R6 victim order.
#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "fairshare.hpp"
#include "gpupool.h"
#include "levels.hpp"
#include "min_runtime.hpp"
#include "preemption.hpp"
#include "plugin_apply.hpp"

namespace gpupool {

// Would a preemptible job of `tier` holding `gpus` be in pool ps's borrowed
// excess right after starting there?  The R5 walk takes the lower tiers
// (its own victims among them) before it, and, newest first, it comes
// first of its own tier: what stays in front of it is NP use, its own
// GPUs, higher tiers and (newest first) its own tier.
bool Engine::borrows_after_start(const PoolState &ps, int tier, uint32_t gpus) const {
    const uint32_t prio = tier_priority(tier);
    const bool newest = config_->preemption_order == PreemptionOrder::Newest;
    uint64_t ahead = uint64_t(ps.np_used()) + gpus;
    for (size_t t = 0; t < ps.p_used_by_tier.size(); ++t) {
        const uint32_t tp = config_->tiers[t].priority;
        if (tp > prio || (newest && tp == prio)) ahead += ps.p_used_by_tier[t];
    }
    return ahead > ps.quota;
}

namespace {

// Sort keys made once per job, not per comparison: (own queue's class,
// tier priority, start key, job id) for each pool's walk; (class, pool
// furthest above its fairshare, tier priority, start key, job id) for the
// R6 order.
struct VictimKey {
    uint64_t hi;     // walk: VictimClass; R6: class << 33 | (fairshare - used + 2^32): bigger excess first
    uint32_t prio;
    int64_t start;
    uint32_t id;
    RunningInfo *r;
    bool operator<(const VictimKey &o) const {
        if (hi != o.hi) return hi < o.hi;
        if (prio != o.prio) return prio < o.prio;
        if (start != o.start) return start < o.start;
        return id < o.id;
    }
};

VictimClass class_of(QueueStanding s) {
    if (s == QueueStanding::OverFairshare) return VictimClass::OverFairshare;
    return s == QueueStanding::OverQuota ? VictimClass::OverQuota : VictimClass::InQuota;
}

Amounts held_by(const RunningInfo &r) { return Amounts{r.gpus, r.cpus, r.mem_mb}; }

Amounts less(const Amounts &a, const Amounts &b) {
    Amounts out{};
    for (size_t k = 0; k < kResources; ++k) out[k] = a[k] - std::min(a[k], b[k]);
    return out;
}

// With levels: each job's class in its own queue (into its key's hi),
// walking each queue's own jobs in victim order (v sorted by tier, start,
// id).  A queue that counts nothing the job holds guards nothing of it.
void own_queue_classes(const PoolState &ps, std::vector<VictimKey> &v) {
    const PoolQueues &pq = ps.queues;
    std::vector<Amounts> taken(pq.tree->queues.size(), Amounts{});
    for (VictimKey &k : v) {
        const size_t q = size_t(queue_in(ps, k.r->account));
        const Amounts held = held_by(*k.r);
        QueueStanding st;
        const bool counted = standing_at(pq.tree->queues, pq.fairshare, int32_t(q), less(pq.allocated[q], taken[q]),
                                         held, st);
        k.hi = static_cast<uint64_t>(counted ? class_of(st) : VictimClass::InQuota);
        add_to(taken[q], held);
    }
}

// With levels: each queue's allocation at each job's place in the pool's
// walk (v in walk order), from the job's queue up to the root.
void walk_queues(PoolState &ps, const std::vector<VictimKey> &v) {
    PoolQueues &pq = ps.queues;
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    std::vector<Amounts> taken(queues.size(), Amounts{});
    pq.victim_at.clear();
    for (const VictimKey &k : v) {
        RunningInfo &r = *k.r;
        r.queue_walk = static_cast<uint32_t>(pq.victim_at.size());
        const Amounts held = held_by(r);
        for (int32_t x : path_up(queues, queue_in(ps, r.account))) {
            pq.victim_at.push_back(less(pq.allocated[size_t(x)], taken[size_t(x)]));
            add_to(taken[size_t(x)], held);
        }
    }
}

}  // namespace

void Engine::rank_victims(Evaluation &ev) const {
    const bool newest = config_->preemption_order == PreemptionOrder::Newest;
    // ~start (= -start - 1) reverses the order and is defined for every start.
    auto start_key = [newest](const RunningInfo &r) { return newest ? ~r.start : r.start; };
    // Starts in one second tie: the later job id most likely started later
    // (FIFO within a tier), so ids follow the start order too.  Seen on
    // 26.05: a scheduling cycle begun at .999 gave a job started at .000
    // the start second of one started a second earlier, and newest-first
    // took the older one.
    auto id_key = [newest](const RunningInfo &r) { return newest ? ~r.job_id : r.job_id; };
    std::vector<std::vector<VictimKey>> by_pool(ev.pools.size());
    std::vector<VictimKey> all;
    all.reserve(ev.running.size());
    for (auto &[id, r] : ev.running) {
        r.cls = VictimClass::Never;
        r.walk = r.excess = 0;
        r.queue_walk = RunningInfo::kNoWalk;
        VictimKey k{0, tier_priority(r.tier), start_key(r), id_key(r), &r};
        all.push_back(k);
        if (r.pool >= 0 && preemptible_tier(r.tier)) by_pool[static_cast<size_t>(r.pool)].push_back(k);
    }
    // R5 walk: in victim order, a job is over quota (reclaimable) only while
    // the pool's usage without the jobs walked before it is above quota.
    // With levels the walk takes the jobs of over-fairshare queues first,
    // then of over-quota ones, and notes each queue's figures on the way.
    for (size_t p = 0; p < by_pool.size(); ++p) {
        auto &v = by_pool[p];
        PoolState &ps = ev.pools[p];
        const bool levels = static_cast<bool>(ps.queues.tree);
        if (levels) {
            std::sort(v.begin(), v.end());
            own_queue_classes(ps, v);
        }
        std::sort(v.begin(), v.end());
        if (levels) walk_queues(ps, v);
        int64_t before = ps.used();
        uint32_t place = 0;
        for (VictimKey &k : v) {
            RunningInfo *r = k.r;
            const int64_t over = before - int64_t(ps.quota);
            r->walk = place++;
            r->excess = over > 0 ? static_cast<uint32_t>(std::min<int64_t>(over, r->gpus)) : 0;
            r->pool_at = static_cast<uint32_t>(std::max<int64_t>(before, 0));
            // A job that frees no GPU is never reclaimed.
            r->cls = r->gpus == 0 ? VictimClass::InQuota
                                  : class_of(standing(uint64_t(std::max<int64_t>(before, 0)), ps.quota, ps.fairshare));
            if (levels) r->cls = std::min(r->cls, static_cast<VictimClass>(k.hi));
            before -= r->gpus;
        }
    }
    // R6: class, pool furthest above fairshare, tier, start, id.
    for (VictimKey &k : all) {
        const RunningInfo *r = k.r;
        int64_t over = 0;
        if (r->pool >= 0) {
            const PoolState &ps = ev.pools[static_cast<size_t>(r->pool)];
            over = int64_t(ps.used()) - int64_t(ps.fairshare);
        }
        k.hi = (uint64_t(static_cast<unsigned>(r->cls)) << 33) | uint64_t((int64_t(1) << 32) - over);
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) all[i].r->rank = static_cast<uint32_t>(i + 1);
    sync_node_set_rows(ev.node_sets, ev.pools);
}

// R5's ReclaimBy, at every level: a non-preemptible job reclaims; a
// preemptible one only with ReclaimBy=all, or with ReclaimTo=fairshare,
// where any job of a queue or pool below its fairshare reclaims up to it
// (Run:ai).
bool Engine::reclaims(const Preemptor &p) const {
    return !preemptible_tier(p.tier) || config_->reclaim_by == ReclaimBy::All ||
           config_->reclaim_to == ReclaimTo::Fairshare;
}

// Victim: as ranked by the last pass; a job that started since then is
// not known to be in any borrowed excess, so it is never reclaimed.
RunningInfo Engine::victim_info(const JobRef &victim) const {
    RunningInfo vi;
    auto rit = eval_.running.find(victim.id);
    if (rit != eval_.running.end()) {
        vi = rit->second;
    } else if (auto sit = eval_.suspended.find(victim.id); sit != eval_.suspended.end()) {
        vi = sit->second;
    } else {
        vi.job_id = victim.id;
        vi.tier = tier_of_qos(std::string(victim.qos));
        vi.gpus = victim.gpus;
        vi.start = victim.start;
        PoolList vp = managed_pools(victim.partitions);
        vi.pool = vp.empty() ? -1 : vp.front();
        if (!eval_.account_ids.empty())
            note_account(*config_, eval_, vi, std::string(victim.account), victim.cpus, victim.mem_mb);
    }
    return vi;
}

bool Engine::may_count(const RunningInfo &vi) const {
    if (vi.pool < 0 || vi.excess > 0 || !preemptible_tier(vi.tier)) return false;
    const PoolState &ps = eval_.pools[static_cast<size_t>(vi.pool)];
    return ps.used() > ps.quota;
}

RunningInfo Engine::counted_in_excess(const RunningInfo &vi) const {
    RunningInfo c = vi;
    if (vi.pool >= 0) c.pool_at = eval_.pools[static_cast<size_t>(vi.pool)].used();
    return c;
}

// The preemptor as the engine judges it (tier, pools, whether R2 admits
// it and where), kept while Slurm asks about the same job against its
// victims.
Engine::PreemptorCache &Engine::cached_preemptor(const JobRef &preemptor) {
    PreemptorCache &pc = preemptor_cache_;
    if (!pc.valid || pc.id != preemptor.id || pc.gpus != preemptor.gpus || pc.partitions != preemptor.partitions ||
        pc.qos != preemptor.qos || pc.account != preemptor.account || pc.cpus != preemptor.cpus ||
        pc.mem_mb != preemptor.mem_mb || pc.nodes != preemptor.nodes || pc.whole_node != preemptor.whole_node ||
        pc.gpus_untyped != preemptor.gpus_untyped) {
        pc.valid = true;
        pc.freeable_count = 0;
        pc.id = preemptor.id;
        pc.gpus = preemptor.gpus;
        pc.cpus = preemptor.cpus;
        pc.mem_mb = preemptor.mem_mb;
        pc.nodes = preemptor.nodes;
        pc.whole_node = preemptor.whole_node;
        pc.gpus_untyped = preemptor.gpus_untyped;
        pc.partitions.assign(preemptor.partitions);
        pc.qos.assign(preemptor.qos);
        pc.account.assign(preemptor.account);
        // As the pass counts it: a job of whole nodes gets all their GPUs.
        const uint32_t gpus =
            admitted_gpus(preemptor.partitions, gpu_ask(preemptor));
        pc.who = Preemptor{tier_of_qos(pc.qos), gpus};
        if (!eval_.account_ids.empty())
            note_account(*config_, eval_, pc.who, pc.account, preemptor.cpus, preemptor.mem_mb);
        pc.pools = managed_pools(preemptor.partitions);
        pc.admitted = true;
        pc.refused_pool = -1;
        if (!preemptible_tier(pc.who.tier) && gpus > 0 && !pc.pools.empty()) {
            const PendingResult *known = pending_result(preemptor.id);
            PendingResult asked;
            if (!known) {
                // Unknown to the last pass and its placements: R2 decides
                // now, as for any job (its queues and limits included).
                asked.job_id = preemptor.id;
                asked.tier = pc.who.tier;
                asked.gpus = gpus;
                asked.pools = pc.pools;
                asked.account = pc.who.account;
                asked.cpus = pc.who.cpus;
                asked.mem_mb = pc.who.mem_mb;
                decide_admission(asked, eval_.pools, nullptr);
                known = &asked;
            }
            if (known->admission == Admission::Held) {
                pc.admitted = false;
            } else if (!known->refused.empty()) {
                // It may start (and so preempt) only in the pools whose
                // quota admitted it.
                PoolList admitted_in;
                for (int p : pc.pools)
                    if (known->refuses(p))
                        pc.refused_pool = p;
                    else
                        admitted_in.push_back(p);
                if (admitted_in.empty())
                    pc.admitted = false;
                else
                    pc.pools = admitted_in;
            }
        }
    } else if (const PendingResult *known = pending_result(preemptor.id);
               known && known->admission == Admission::Held && !pc.pools.empty()) {
        pc.admitted = false;  // a preemptible job held by a Limit or LendingLimit
    }
    return pc;
}

Verdict Engine::preemptable(const JobRef &victim, const JobRef &preemptor, int64_t now) {
    if (!config_ || !eval_.valid) {
        Verdict v;
        v.why = "no gpupool pass yet";
        return v;
    }
    const RunningInfo vi = victim_info(victim);
    Verdict v = verdict_for(vi, preemptor, now);
    // A preemptor bound to nodes the core does not know (-C with counts, a
    // reservation): the rules alone; Slurm takes victims only on the nodes
    // it may use.
    if (!nodes_.known() || (preemptor.nodes_given && preemptor.allowed_nodes.empty())) return v;
    if (v.allowed) {
        apply_plan(victim.id, preemptor, now, v);
        return v;
    }
    // A move the plan chose (consolidation, victim_plan.cpp): R4 and R5
    // need not allow it, as the job starts again at once elsewhere.
    if (config_->consolidation && preemptible_tier(vi.tier) && entitled_to_move(preemptor)) {
        const VictimPlan &plan = victim_plan(preemptor, now);
        if (const uint32_t place =
                plan.consolidation && plan.outcome == VictimPlan::Outcome::Victims ? plan.place_of(victim.id) : 0) {
            v.victim_pool = vi.pool;
            v.preemptor_pool = cached_preemptor(preemptor).pools.front();
            moved(plan, place, v);
            return v;
        }
    }
    // R5 as a count: a borrower past its pool's walk prefix, if the plan
    // took it (within the pool's excess; victim_plan.cpp).
    if (may_count(vi)) {
        Verdict counted = verdict_for(counted_in_excess(vi), preemptor, now);
        if (!counted.allowed || counted.rule != Rule::Reclaim) return v;
        const VictimPlan &plan = victim_plan(preemptor, now);
        return plan.outcome == VictimPlan::Outcome::Victims && plan.place_of(victim.id) ? counted : v;
    }
    // A swap, if the plan took it (victim_plan.cpp).
    if (!may_swap(vi, preemptor, now)) return v;
    const VictimPlan &plan = victim_plan(preemptor, now);
    if (plan.outcome != VictimPlan::Outcome::Victims || !plan.place_of(victim.id)) return v;
    const int q = cached_preemptor(preemptor).pools.front();
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    v.allowed = true;
    v.rule = Rule::Reclaim;
    v.preemptor_pool = q;
    v.why.set(config_->swap == SwapWhen::LeastWork
                  ? "swap: %s within its quota; with Swap=least-work its job is in the set that frees a node for %s, "
                    "and %s may reclaim as many GPUs borrowed elsewhere"
                  : "swap: %s within its quota; nothing else frees a node for %s, and %s may reclaim as many GPUs "
                    "borrowed elsewhere",
              eval_.pools[static_cast<size_t>(vi.pool)].name.c_str(), qps.name.c_str(),
              eval_.pools[static_cast<size_t>(vi.pool)].name.c_str());
    return v;
}

bool Engine::may_swap(const RunningInfo &vi, const JobRef &preemptor, int64_t now) {
    if (config_->reclaim_to != ReclaimTo::Quota || vi.pool < 0 || !preemptible_tier(vi.tier)) return false;
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    if (vps.queues.tree || vps.used() > vps.quota || min_runtime_end(vps.min_runtime, vi.start, now) != 0)
        return false;
    PreemptorCache &pc = cached_preemptor(preemptor);
    if (pc.pools.empty() || !pc.admitted || preemptible_tier(pc.who.tier)) return false;
    const int q = pc.pools.front();
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    return q != vi.pool && !qps.queues.tree && qps.domain >= 0 && qps.domain == vps.domain;
}

SwapRoom Engine::swap_room(const JobRef &preemptor) {
    PreemptorCache &pc = cached_preemptor(preemptor);
    SwapRoom r;
    if (config_->reclaim_to != ReclaimTo::Quota || pc.pools.empty() || !pc.admitted ||
        preemptible_tier(pc.who.tier))
        return r;
    const int q = pc.pools.front();
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    if (qps.queues.tree || qps.domain < 0) return r;
    r.own = int64_t(qps.used()) + int64_t(pc.who.gpus) - int64_t(qps.quota);
    for (size_t k = 0; k < eval_.pools.size(); ++k)
        if (int(k) != q && eval_.pools[k].domain == qps.domain) r.others += eval_.pools[k].borrowed();
    return r;
}

Verdict Engine::verdict_for(const RunningInfo &vi, const JobRef &preemptor, int64_t now, bool with_why) {
    Verdict v;
    if (!with_why) v.why.mute();
    v.victim_pool = vi.pool;
    if (vi.pool < 0) {
        v.why = "victim is not in a gpupool pool";
        return v;
    }
    if (!preemptible_tier(vi.tier)) {
        v.why.set("victim tier %s is not preemptible", config_->tiers[static_cast<size_t>(vi.tier)].name.c_str());
        return v;
    }
    if (vi.suspended) {
        v.why = "victim is suspended";
        return v;
    }
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    if (min_runtime_end(vps.min_runtime, vi.start, now) != 0) {
        v.why.set("victim within MinRuntime of %s", vps.name.c_str());
        return v;
    }

    PreemptorCache &pc = cached_preemptor(preemptor);
    if (pc.pools.empty()) {
        v.why = "preemptor is not in a gpupool pool";
        return v;
    }
    v.preemptor_pool = pc.pools.front();
    if (!pc.admitted) {
        if (pc.refused_pool >= 0) {
            v.preemptor_pool = pc.refused_pool;
            v.why.set("preemptor does not fit the quota of %s",
                      eval_.pools[static_cast<size_t>(pc.refused_pool)].name.c_str());
        } else {
            v.why = "preemptor is held by quota";
        }
        return v;
    }
    for (int q : pc.pools)
        if (candidacy(q, pc.who, freeable_cached(q, now), vi, v)) return v;
    return v;
}

const Freeable &Engine::freeable_cached(int q, int64_t now) {
    PreemptorCache &pc = preemptor_cache_;
    if (pc.freeable_now != now) pc.freeable_count = 0;
    pc.freeable_now = now;
    for (size_t i = 0; i < pc.freeable_count; ++i)
        if (pc.freeable[i].first == q) return pc.freeable[i].second;
    if (pc.freeable_count == pc.freeable.size()) pc.freeable.emplace_back();
    auto &[pool, f] = pc.freeable[pc.freeable_count++];
    pool = q;
    freeable(q, pc.who, now, f);
    return f;
}

void Engine::freeable(int q, const Preemptor &p, int64_t now, Freeable &f) const {
    const PoolState &ps = eval_.pools[static_cast<size_t>(q)];
    const PoolQueues &pq = ps.queues;
    const size_t n = pq.tree ? pq.tree->queues.size() : 0;
    f.pool_gpus = f.pool_gpus_to_bound = 0;
    f.lower.assign(n, Amounts{});
    f.takeable.assign(n, Amounts{});
    const uint32_t prio = tier_priority(p.tier);
    if (!preemptible_tier(p.tier)) {
        for (const auto &[id, r] : eval_.running) {
            if (r.pool != q || !preemptible_tier(r.tier) || min_runtime_end(ps.min_runtime, r.start, now) != 0)
                continue;
            const bool below = tier_priority(r.tier) < prio;
            if (!pq.tree) {
                f.pool_gpus += below ? r.gpus : 0;
                continue;
            }
            const size_t x = size_t(queue_in(ps, r.account));
            add_to(f.takeable[x], held_by(r));
            if (below) add_to(f.lower[x], held_by(r));
        }
    }
    if (!pq.tree) {
        f.pool_gpus_to_bound = f.pool_gpus;  // its own lower tiers, in either step
        f.path.to_quota.clear();
        f.path.to_bound.clear();
        return;
    }
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    f.bound.assign(n, Amounts{});
    for (size_t x = 0; x < n; ++x)
        for (size_t r = 0; r < kResources; ++r) {
            const uint64_t quota = queues[x].quota.get(Resource(r));
            f.bound[x][r] = config_->reclaim_to == ReclaimTo::Fairshare ? std::max(quota, pq.fairshare[x][r]) : quota;
        }
    freed_on_path(queues, pq.allocated, f.bound, f.lower, f.takeable, queue_in(ps, p.account), f.path);
    f.pool_gpus = static_cast<uint32_t>(std::min<uint64_t>(f.path.to_quota.back()[kGpu], UINT32_MAX));
    f.pool_gpus_to_bound = static_cast<uint32_t>(std::min<uint64_t>(f.path.to_bound.back()[kGpu], UINT32_MAX));
}

// R4 and R5 (MinRuntime apart): may preemptor `p`, starting in pool `q`,
// take the preemptible victim `vi`?  The one place that says so:
// preemptable() asks it for Slurm, explain() for `gpupool why` and
// `status`.  Fills `v` (allowed, rule, why; preemptor_pool = q when the
// answer is about q, else left as it is) and returns allowed.
bool Engine::candidacy(int q, const Preemptor &p, const Freeable &f, const RunningInfo &vi, Verdict &v) const {
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    const bool np = !preemptible_tier(p.tier);
    if (q == vi.pool) {
        // With levels, queues on two sides of their common ancestor
        // reclaim from each other (R5), never preempt by tier.
        if (qps.queues.tree) {
            const int32_t from = queue_in(qps, p.account);
            if (sides_below_common_ancestor(qps.queues.tree->queues, from, queue_in(qps, vi.account)).first >= 0)
                return reclaim_between_queues(q, p, f, from, vi, v);
        }
        // R4: a lower preemptible tier of the same pool (with levels: the
        // same queue, or one the other's ancestor).
        if (!tier_preempts(tier_priority(p.tier), tier_priority(vi.tier), preemptible_tier(vi.tier))) {
            v.why = "victim tier is not lower";
            return false;
        }
        // With ReclaimBy=all a victim within the pool's quota could
        // reclaim a borrowing preemptor back from another pool it lists,
        // which would evict it again: a cycle.
        if (!np && config_->reclaim_by == ReclaimBy::All && vi.excess == 0 &&
            borrows_after_start(qps, p.tier, p.gpus)) {
            v.preemptor_pool = q;
            v.why.set("preemptor would borrow in %s (quota %u) and the victim is within it", qps.name.c_str(),
                      static_cast<unsigned>(qps.quota));
            return false;
        }
        v.allowed = true;
        v.rule = Rule::InPool;
        v.preemptor_pool = q;
        v.why = "lower tier in the same pool";
        return true;
    }
    // R5: take back own quota (or fairshare) from another pool's borrowed excess.
    if (!reclaims(p)) {
        v.why = "only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)";
        return false;
    }
    if (qps.domain < 0 || qps.domain != vps.domain) {
        v.why = "pools share no nodes";
        return false;
    }
    return reclaim_between_pools(q, p, f, vi, v);
}

// R5 between two pools of one node set: check_reclaim decides on the node
// set's tree (its pools the top queues), with what the same preemption
// frees in the preemptor's pool counted off (a non-preemptible preemptor's
// own lower tiers, and with levels its sibling queues' excess), at the
// victim's place in its pool's walk.
bool Engine::reclaim_between_pools(int q, const Preemptor &p, const Freeable &f, const RunningInfo &vi,
                                   Verdict &v) const {
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    const NodeSetTree &tree = eval_.node_sets[size_t(qps.node_set)];
    ReclaimQuestion rq;
    rq.reclaimer = qps.node_set_row;
    rq.victim_queue = vps.node_set_row;
    rq.job = Amounts{p.gpus, 0, 0};
    rq.victim = Amounts{vi.gpus, 0, 0};
    const Amounts at{vi.pool_at, 0, 0}, freed_to_quota{f.pool_gpus, 0, 0}, freed_to_bound{f.pool_gpus_to_bound, 0, 0};
    rq.victim_at = &at;
    rq.freed_to_quota = &freed_to_quota;
    rq.freed_to_bound = &freed_to_bound;
    const ReclaimCheck c = check_reclaim(tree.queues, tree.allocated, tree.fairshare, rq, config_->reclaim_to);
    const bool to_quota = c.bound == tree.queues[size_t(c.queue)].quota.get(kGpu);
    const char *bound = to_quota ? "quota" : "fairshare";
    v.decided = Decider{tree.pool_of[size_t(c.queue)], -1, kGpu, c.allocated, c.bound, !to_quota};
    // The answer is about q unless the victim's pool decided it.
    if (c.outcome != ReclaimCheck::VictimSideWithin) v.preemptor_pool = q;
    switch (c.outcome) {
    case ReclaimCheck::Allowed:
        v.allowed = true;
        v.rule = Rule::Reclaim;
        v.why.set("borrowed excess (%s) of %s", victim_class_name(vi.cls), vps.name.c_str());
        return true;
    case ReclaimCheck::ReclaimerOver:
        if (f.pool_gpus == 0)
            v.why.set("preemptor pool %s not entitled: %llu+%u > %s %llu", qps.name.c_str(),
                      static_cast<unsigned long long>(qps.used()), static_cast<unsigned>(p.gpus), bound,
                      static_cast<unsigned long long>(c.bound));
        else
            v.why.set("preemptor pool %s not entitled: %llu-%u it frees+%u > %s %llu", qps.name.c_str(),
                      static_cast<unsigned long long>(qps.used()), static_cast<unsigned>(f.pool_gpus),
                      static_cast<unsigned>(p.gpus), bound, static_cast<unsigned long long>(c.bound));
        return false;
    case ReclaimCheck::VictimSideToQuota:
        v.why.set("victim pool %s would fall below its quota taken to fairshare (%llu < %llu)", vps.name.c_str(),
                  static_cast<unsigned long long>(c.allocated), static_cast<unsigned long long>(c.bound));
        return false;
    default:  // VictimSideWithin: no queue below B in this tree
        v.why.set("victim pool %s is not over its %s for this job (%llu/%llu)", vps.name.c_str(), bound,
                  static_cast<unsigned long long>(vps.used()), static_cast<unsigned long long>(c.bound));
        return false;
    }
}

// R5 with levels, inside pool q: the preemptor's queue `from` and the
// victim's are on two sides of their common ancestor; check_reclaim
// decides, at the victim's place in the walk of its queues.
bool Engine::reclaim_between_queues(int q, const Preemptor &p, const Freeable &f, int32_t from,
                                    const RunningInfo &vi, Verdict &v) const {
    const PoolState &ps = eval_.pools[static_cast<size_t>(q)];
    const PoolQueues &pq = ps.queues;
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    const ReclaimTo to = config_->reclaim_to;
    v.preemptor_pool = q;
    // ReclaimTo=quota: as between pools.  ReclaimTo=fairshare (Run:ai): any
    // job of a queue below its fairshare reclaims up to it.
    if (!reclaims(p)) {
        v.why = "only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)";
        return false;
    }
    if (vi.queue_walk == RunningInfo::kNoWalk) {
        v.why = "victim started after the last pass: in no queue's excess yet";
        return false;
    }
    ReclaimQuestion rq;
    rq.reclaimer = from;
    rq.victim_queue = queue_in(ps, vi.account);
    rq.job = task_amounts(*config_, p.gpus, p.cpus, p.mem_mb);
    rq.victim = Amounts{vi.gpus, vi.cpus, vi.mem_mb};
    rq.victim_at = &pq.victim_at[vi.queue_walk];
    if (!f.path.to_quota.empty()) {
        rq.freed_to_quota = f.path.to_quota.data();
        rq.freed_to_bound = f.path.to_bound.data();
    }
    const ReclaimCheck c = check_reclaim(queues, pq.allocated, pq.fairshare, rq, to);
    const char *name = queues[size_t(c.queue)].name.c_str();
    const char *res = resource_word(c.resource);
    const bool to_quota = c.bound == queues[size_t(c.queue)].quota.get(c.resource);
    v.decided = Decider{q, c.queue, c.resource, c.allocated, c.bound, !to_quota};
    const auto used = static_cast<unsigned long long>(c.allocated), bound = static_cast<unsigned long long>(c.bound);
    switch (c.outcome) {
    case ReclaimCheck::Allowed:
        v.allowed = true;
        v.rule = Rule::Reclaim;
        v.why.set("queue %s over its %s (%s %llu/%llu)", name, to_quota ? "quota" : "fairshare", res, used, bound);
        return true;
    case ReclaimCheck::ReclaimerOver:
        v.why.set("preemptor's queue %s would pass its %s: %s %llu > %llu", name, to_quota ? "quota" : "fairshare",
                  res, used, bound);
        return false;
    case ReclaimCheck::VictimSideToQuota:
        v.why.set("victim's queue %s would fall below its quota taken to fairshare (%s %llu < %llu)", name, res,
                  used, bound);
        return false;
    case ReclaimCheck::VictimQueueWithin:
        v.why.set("victim's queue %s within its quota (%s %llu/%llu)", name, res, used, bound);
        return false;
    default:
        v.why.set("victim's queue %s within its %s (%s %llu/%llu)", name, to_quota ? "quota" : "fairshare", res, used,
                  bound);
        return false;
    }
}

uint32_t Engine::victim_rank(uint32_t job_id) const {
    auto it = eval_.running.find(job_id);
    if (it != eval_.running.end()) return it->second.rank;
    // Unknown to the last pass: after every ranked job, by id.
    return static_cast<uint32_t>(std::min<uint64_t>(0xFFFFFFFEu, uint64_t(eval_.running.size()) + 1 + job_id % 0x7FFFFFFF));
}

}  // namespace gpupool

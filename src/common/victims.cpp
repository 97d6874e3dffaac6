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
#include "placement.hpp"

namespace gpupool {

// Would a preemptible job of `tier` holding `gpus` be in pool ps's borrowed
// excess right after starting there?  The R5 walk takes the lower tiers
// (its own victims among them) before it, and, newest first, it comes
// first of its own tier: what stays in front of it is NP use, its own
// GPUs, higher tiers and (newest first) its own tier.
bool Engine::borrows_after_start(const PoolState &ps, int tier, uint32_t gpus) const {
    const uint32_t prio = tier_priority(tier);
    const bool newest = config_->preemption_order == PreemptionOrder::Newest;
    uint64_t ahead = uint64_t(ps.np_used) + gpus;
    for (size_t t = 0; t < ps.p_used_by_tier.size(); ++t) {
        const uint32_t tp = config_->tiers[t].priority;
        if (tp > prio || (newest && tp == prio)) ahead += ps.p_used_by_tier[t];
    }
    return ahead > ps.quota;
}

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
    // Sort keys made once per job, not per comparison: (tier priority,
    // start key, job id) for each pool's walk; (class, pool furthest above
    // its fairshare, tier priority, start key, job id) for the R6 order.
    struct Key {
        uint64_t hi;     // class << 33 | (fairshare - used + 2^32): bigger excess first
        uint32_t prio;
        int64_t start;
        uint32_t id;
        RunningInfo *r;
        bool operator<(const Key &o) const {
            if (hi != o.hi) return hi < o.hi;
            if (prio != o.prio) return prio < o.prio;
            if (start != o.start) return start < o.start;
            return id < o.id;
        }
    };
    std::vector<std::vector<Key>> by_pool(ev.pools.size());
    std::vector<Key> all;
    all.reserve(ev.running.size());
    for (auto &[id, r] : ev.running) {
        r.cls = VictimClass::Never;
        r.walk = r.excess = 0;
        Key k{0, tier_priority(r.tier), start_key(r), id_key(r), &r};
        all.push_back(k);
        if (r.pool >= 0 && preemptible_tier(r.tier)) by_pool[static_cast<size_t>(r.pool)].push_back(k);
    }
    // R5 walk: in victim order, a job is over quota (reclaimable) only while
    // the pool's usage without the jobs walked before it is above quota.
    for (size_t p = 0; p < by_pool.size(); ++p) {
        auto &v = by_pool[p];
        std::sort(v.begin(), v.end());
        const PoolState &ps = ev.pools[p];
        int64_t before = ps.used();
        uint32_t place = 0;
        for (Key &k : v) {
            RunningInfo *r = k.r;
            const int64_t over = before - int64_t(ps.quota);
            r->walk = place++;
            r->excess = over > 0 ? static_cast<uint32_t>(std::min<int64_t>(over, r->gpus)) : 0;
            if (r->gpus == 0)
                r->cls = VictimClass::InQuota;  // frees no GPU: never reclaimed
            else if (before > int64_t(ps.fairshare))
                r->cls = VictimClass::OverFairshare;
            else if (before > int64_t(ps.quota))
                r->cls = VictimClass::OverQuota;
            else
                r->cls = VictimClass::InQuota;
            before -= r->gpus;
        }
    }
    // R6: class, pool furthest above fairshare, tier, start, id.
    for (Key &k : all) {
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
}

Verdict Engine::preemptable(const JobRef &victim, const JobRef &preemptor, int64_t now) {
    Verdict v;
    if (!config_ || !eval_.valid) {
        v.why = "no gpupool pass yet";
        return v;
    }
    // Victim: as ranked by the last pass; a job that started since then is
    // not known to be in any borrowed excess, so it is never reclaimed.
    RunningInfo vi;
    auto rit = eval_.running.find(victim.id);
    if (rit != eval_.running.end()) {
        vi = rit->second;
    } else {
        vi.job_id = victim.id;
        vi.tier = tier_of_qos(std::string(victim.qos));
        vi.gpus = victim.gpus;
        vi.start = victim.start;
        PoolList vp = managed_pools(victim.partitions);
        vi.pool = vp.empty() ? -1 : vp.front();
    }
    v.victim_pool = vi.pool;
    if (vi.pool < 0) {
        v.why = "victim is not in a gpupool pool";
        return v;
    }
    if (!preemptible_tier(vi.tier)) {
        v.why.set("victim tier %s is not preemptible", config_->tiers[static_cast<size_t>(vi.tier)].name.c_str());
        return v;
    }
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    if (min_runtime_end(vps.min_runtime, vi.start, now) != 0) {
        v.why.set("victim within MinRuntime of %s", vps.name.c_str());
        return v;
    }

    PreemptorCache &pc = preemptor_cache_;
    if (!pc.valid || pc.id != preemptor.id || pc.gpus != preemptor.gpus || pc.partitions != preemptor.partitions ||
        pc.qos != preemptor.qos) {
        pc.valid = true;
        pc.id = preemptor.id;
        pc.gpus = preemptor.gpus;
        pc.partitions.assign(preemptor.partitions);
        pc.qos.assign(preemptor.qos);
        pc.tier = tier_of_qos(pc.qos);
        pc.pools = managed_pools(preemptor.partitions);
        pc.admitted = true;
        pc.refused_pool = -1;
        if (!preemptible_tier(pc.tier) && preemptor.gpus > 0 && !pc.pools.empty()) {
            const PendingResult *known = pending_result(preemptor.id);
            if (!known) {
                pc.admitted = fits_quota(pc.pools, preemptor.gpus);
            } else if (known->admission == Admission::Held) {
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
    }
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
        if (candidacy(q, pc.tier, preemptor.gpus, vi, v)) return v;
    return v;
}

// R4 and R5 (MinRuntime apart): may a job of tier `ptier` needing `gpus`,
// starting in pool `q`, take the preemptible victim `vi`?  The one place
// that says so: preemptable() asks it for Slurm, explain() for `gpupool
// why` and `status`.  Fills `v` (allowed, rule, why; preemptor_pool = q
// when the answer is about q, else left as it is) and returns allowed.
bool Engine::candidacy(int q, int ptier, uint32_t gpus, const RunningInfo &vi, Verdict &v) const {
    const PoolState &qps = eval_.pools[static_cast<size_t>(q)];
    const PoolState &vps = eval_.pools[static_cast<size_t>(vi.pool)];
    const bool np = !preemptible_tier(ptier);
    if (q == vi.pool) {
        // R4: a lower preemptible tier of the same pool.
        if (tier_priority(vi.tier) >= tier_priority(ptier)) {
            v.why = "victim tier is not lower";
            return false;
        }
        // With ReclaimBy=all a victim within the pool's quota could
        // reclaim a borrowing preemptor back from another pool it lists,
        // which would evict it again: a cycle.
        if (!np && config_->reclaim_by == ReclaimBy::All && vi.cls != VictimClass::OverFairshare &&
            vi.cls != VictimClass::OverQuota && borrows_after_start(qps, ptier, gpus)) {
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
    // R5: take back own quota from another pool's borrowed excess.
    if (!np && config_->reclaim_by != ReclaimBy::All) {
        v.why = "only non-preemptible jobs reclaim (ReclaimBy=nonpreemptible)";
        return false;
    }
    if (qps.domain < 0 || qps.domain != vps.domain) {
        v.why = "pools share no nodes";
        return false;
    }
    if (uint64_t(qps.used()) + gpus > qps.quota) {
        v.preemptor_pool = q;
        v.why.set("preemptor pool %s not entitled: %llu+%u > quota %u", qps.name.c_str(),
                  static_cast<unsigned long long>(qps.used()), static_cast<unsigned>(gpus),
                  static_cast<unsigned>(qps.quota));
        return false;
    }
    if (vi.cls != VictimClass::OverFairshare && vi.cls != VictimClass::OverQuota) {
        v.why.set("victim pool %s is not over its quota for this job (%llu/%u)", vps.name.c_str(),
                  static_cast<unsigned long long>(vps.used()), static_cast<unsigned>(vps.quota));
        return false;
    }
    v.allowed = true;
    v.rule = Rule::Reclaim;
    v.preemptor_pool = q;
    v.why.set("borrowed excess (%s) of %s", victim_class_name(vi.cls), vps.name.c_str());
    return true;
}

uint32_t Engine::victim_rank(uint32_t job_id) const {
    auto it = eval_.running.find(job_id);
    if (it != eval_.running.end()) return it->second.rank;
    // Unknown to the last pass: after every ranked job, by id.
    return static_cast<uint32_t>(std::min<uint64_t>(0xFFFFFFFEu, uint64_t(eval_.running.size()) + 1 + job_id % 0x7FFFFFFF));
}

}  // namespace gpupool

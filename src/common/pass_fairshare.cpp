// R8 in the pass: time-decayed usage, pending demand (pending_gpus), the
// fairshare of each node set's pools (water-filling: fairshare.cpp), who
// lends to whom (R3), and each pool's standing.
#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "fairshare.hpp"
#include "gpupool.h"
#include "levels.hpp"
#include "plugin_apply.hpp"

namespace gpupool {

namespace {

// R8's time term per queue: each queue's own jobs' GPUs over
// [accounted_until, now), as the pool's, and its decayed share of the
// pool's decayed capacity.  The pool's own row is what its queues leave of
// the pool's usage.  Accounts that lost their entry keep no history.
// `accounted_before`: as the pass found it (the clock may have gone back
// since); `accounted_until`: as the pool's accounting took it.
void account_queue_usage(Engine::PoolHistory &h, PoolState &ps, int64_t accounted_before, int64_t accounted_until,
                         int64_t now, const DecayParams &dp, double decayed_capacity) {
    PoolQueues &pq = ps.queues;
    if (!pq.tree) {
        h.accounts.clear();
        return;
    }
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    const size_t n = queues.size();
    const std::vector<Amounts> own = own_part(*pq.tree, pq.allocated);
    pq.usage_share.assign(n, 0.0);
    double in_queues = 0;
    std::map<std::string, Engine::AccountHistory> kept;
    for (size_t q = 1; q < n; ++q) {
        auto it = h.accounts.find(queues[q].name);
        Engine::AccountHistory a = it == h.accounts.end() ? Engine::AccountHistory{} : std::move(it->second);
        a.usage.drop_future(now, accounted_before);
        a.usage.advance(a.last_used, accounted_until, now, dp);
        a.last_used = static_cast<uint32_t>(std::min<uint64_t>(own[q][kGpu], UINT32_MAX));
        const double share = decayed_capacity > 0 ? std::min(1.0, a.usage.decayed(now, dp) / decayed_capacity) : 0.0;
        pq.usage_share[q] = share;
        in_queues += share;
        kept.emplace(queues[q].name, std::move(a));
    }
    pq.usage_share[0] = std::max(0.0, ps.usage_share - in_queues);
    h.accounts = std::move(kept);
}

}  // namespace

void Engine::account_usage(Evaluation &ev, int64_t now) {
    const int64_t accounted_before = last_account_;
    // The clock went back (or a clock set ahead saved the state): usage
    // after now never happened.  Drop it and account from now on, rather
    // than wait, accounting nothing, until the clock catches up.
    std::string future_pool;
    for (auto &[name, h] : history_) {
        bool usage_future = h.usage.drop_future(now, last_account_);
        bool capacity_future = h.capacity.drop_future(now, last_account_);
        if ((usage_future || capacity_future) && future_pool.empty()) future_pool = name;
    }
    if (last_account_ > now) {
        ev.warnings.push_back("clock went back: usage was accounted up to " + std::to_string(last_account_) +
                              ", now is " + std::to_string(now) +
                              "; history after now dropped, usage accounting restarts from now");
        last_account_ = now;
    } else if (!future_pool.empty()) {
        ev.warnings.push_back("usage history of pool " + future_pool + " lies after now (" + std::to_string(now) +
                              "): dropped");
    }
    for (PoolState &ps : ev.pools) {
        PoolHistory &h = history_[ps.name];
        const DecayParams dp = config_->decay_of(config_->pools[size_t(ps.config_index)]);
        const int64_t accounted_until = last_account_;
        h.usage.advance(h.last_used, last_account_, now, dp);
        h.capacity.advance(h.last_capacity, last_account_, now, dp);
        h.last_used = ps.used();
        h.last_capacity = ps.domain_capacity;
        ps.decayed_usage = h.usage.decayed(now, dp);
        double cap = h.capacity.decayed(now, dp);
        ps.usage_share = cap > 0 ? std::min(1.0, ps.decayed_usage / cap) : 0.0;
        account_queue_usage(h, ps, accounted_before, accounted_until, now, dp, cap);
    }
    // A pool no longer configured (its line commented out, its name
    // mistyped) keeps its history for the usage window, accounting nothing
    // meanwhile, so that it comes back where it was, not as the least used.
    const int64_t keep = config_->usage_window > 0 ? config_->usage_window : kKeepUnconfigured;
    for (auto it = history_.begin(); it != history_.end();) {
        PoolHistory &h = it->second;
        if (ev.pool_index.count(it->first)) {
            ++it;
            continue;
        }
        h.last_used = h.last_capacity = 0;
        for (auto &[account, a] : h.accounts) a.last_used = 0;
        const int64_t last = h.usage.buckets().empty() ? h.usage.tail_time() : h.usage.buckets().back().end;
        it = now - last > keep ? history_.erase(it) : std::next(it);
    }
    if (now > last_account_) last_account_ = now;
}

void Engine::tally_pending(Evaluation &ev) const {
    for (PoolState &ps : ev.pools) {
        ps.pending_jobs = ps.pending_gpus = ps.held_jobs = 0;
        ps.pending_by_tier.assign(config_->tiers.size(), 0);
    }
    for (const PendingResult &r : ev.pending)
        for (int p : r.pools) {
            PoolState &ps = ev.pools[static_cast<size_t>(p)];
            ps.pending_jobs++;
            ps.pending_gpus = static_cast<uint32_t>(std::min<uint64_t>(ps.pending_gpus + r.pending_gpus(), UINT32_MAX));
            ps.pending_by_tier[static_cast<size_t>(r.tier)]++;
        }
}

std::vector<std::vector<PoolGpus>> lending(const std::vector<PoolState> &pools, const std::vector<size_t> &members,
                                           uint32_t capacity) {
    std::vector<uint64_t> quota, held;
    for (size_t i : members) {
        quota.push_back(pools[i].quota);
        held.push_back(pools[i].used());
    }
    const std::vector<std::vector<LentFrom>> edges = lend_among(quota, held, 0, capacity);
    std::vector<std::vector<PoolGpus>> from(members.size());
    for (size_t k = 0; k < members.size(); ++k)
        for (const LentFrom &g : edges[k])
            from[k].push_back(PoolGpus{g.lender < 0 ? -1 : int(members[size_t(g.lender)]), uint32_t(g.amount)});
    return from;
}

void Engine::compute_fairshare(Evaluation &ev) const {
    std::map<int, std::vector<size_t>> domains;
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        PoolState &ps = ev.pools[i];
        ps.fairshare = ps.quota;
        ps.lent = 0;
        if (ps.domain >= 0) domains[ps.domain].push_back(i);
    }
    for (auto &[root, members] : domains) {
        std::vector<FairshareInput> in;
        uint64_t quota_sum = 0, borrowed = 0;
        for (size_t i : members) {
            const PoolState &ps = ev.pools[i];
            uint64_t demand = uint64_t(ps.used()) + ps.pending_gpus;
            const Pool &pool = config_->pools[size_t(ps.config_index)];
            in.push_back(FairshareInput{ps.quota, ps.weight, static_cast<uint32_t>(std::min<uint64_t>(demand, UINT32_MAX)),
                                        ps.usage_share, config_->usage_weight_of(pool), pool.rank});
            quota_sum += ps.quota;
            borrowed += ps.borrowed();
        }
        uint32_t cap = ev.pools[members.front()].domain_capacity;
        FairshareResult fr = gpupool::compute_fairshare(cap, in, config_->usage_weight);
        for (size_t k = 0; k < members.size(); ++k) ev.pools[members[k]].fairshare = fr.fairshare[k];
        if (fr.overcommitted) {
            std::string names;
            for (size_t i : members) names += (names.empty() ? "" : ",") + ev.pools[i].name;
            ev.warnings.push_back("pools " + names + " share " + std::to_string(cap) +
                                  " GPUs but their quotas add up to " + std::to_string(quota_sum) +
                                  ": quotas cannot all be honoured");
        }
        if (borrowed == 0) continue;
        for (const std::vector<PoolGpus> &from : lending(ev.pools, members, cap))
            for (const PoolGpus &g : from)
                if (g.pool >= 0) ev.pools[static_cast<size_t>(g.pool)].lent += g.gpus;
    }
    // R1.2 standing among pools: higher rank first, then the more starved, in GPUs.
    std::vector<size_t> idx(ev.pools.size());
    std::iota(idx.begin(), idx.end(), 0);
    auto ratio = [&](size_t i) {
        const PoolState &ps = ev.pools[i];
        return use_ratio(Amounts{ps.used(), 0, 0}, Amounts{ps.fairshare, 0, 0});
    };
    auto rank = [&](size_t i) { return config_->pools[size_t(ev.pools[i].config_index)].rank; };
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        if (rank(a) != rank(b)) return rank(a) > rank(b);
        return ratio(a) < ratio(b);
    });
    for (size_t r = 0; r < idx.size(); ++r) ev.pools[idx[r]].standing = static_cast<uint32_t>(r);
    if (ev.levels) divide_queues(*config_, ev);
}

}  // namespace gpupool

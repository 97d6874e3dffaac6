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

const char *rule_name(Rule r) {
    switch (r) {
    case Rule::InPool: return "InPool";
    case Rule::Reclaim: return "Reclaim";
    default: return "None";
    }
}

const char *victim_class_name(VictimClass c) {
    switch (c) {
    case VictimClass::OverFairshare: return "over-fairshare";
    case VictimClass::OverQuota: return "over-quota";
    case VictimClass::InQuota: return "in-quota";
    default: return "never";
    }
}

void Engine::set_config(Config cfg) {
    if (cfg.tiers.empty()) throw ConfigError(cfg.source + ": no Tier defined");
    LoadedConfig next;
    for (size_t t = 0; t < cfg.tiers.size(); ++t)
        for (const std::string &q : cfg.tiers[t].qos) next.qos_tier.emplace(q, static_cast<int>(t));
    if (!cfg.default_tier.empty()) {
        const Tier *d = cfg.find_tier(cfg.default_tier);
        if (!d) throw ConfigError(cfg.source + ": DefaultTier=" + cfg.default_tier + " is not a Tier");
        next.default_tier = static_cast<int>(d - cfg.tiers.data());
    }
    for (const Pool &p : cfg.pools) next.pool_names.insert(p.name);
    next.config = std::make_shared<const Config>(std::move(cfg));
    if (eval_.valid) {
        // Clearing the pass would hold every new NP job (GpuPoolStarting)
        // and refuse every preemption until the next pass: decide with the
        // old configuration and its pass until then, never mixing the two.
        staged_ = std::make_unique<LoadedConfig>(std::move(next));
        return;
    }
    staged_.reset();
    apply_config(std::move(next));
}

void Engine::apply_config(LoadedConfig next) {
    ++config_serial_;
    config_ = std::move(next.config);
    qos_tier_ = std::move(next.qos_tier);
    default_tier_ = next.default_tier;
    pool_names_ = std::move(next.pool_names);
    // Pool indices and tiers of the last pass may no longer mean the same.
    eval_ = Evaluation{};
    preemptor_cache_.valid = false;
}

int Engine::tier_of_qos(const std::string &qos) const {
    if (!qos.empty()) {
        auto it = qos_tier_.find(qos);
        if (it != qos_tier_.end()) return it->second;
    }
    return default_tier_;
}

bool Engine::preemptible_tier(int tier) const {
    return tier >= 0 && config_->tiers[static_cast<size_t>(tier)].preemptible;
}

uint32_t Engine::tier_priority(int tier) const {
    return tier >= 0 ? config_->tiers[static_cast<size_t>(tier)].priority : 0;
}

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

DecayParams Engine::decay() const {
    return DecayParams{config_->decay_half_life, config_->usage_window};
}

int64_t Engine::note_job(uint32_t job_id, int64_t submit_time, uint32_t restart_cnt, int64_t now) {
    // Kept times stay in [0, kMaxTime]: the state file takes them back and
    // order keys subtract them.
    submit_time = clamp_time(submit_time);
    now = clamp_time(now);
    auto [m, fresh] = jobs_.try_emplace(job_id, JobMemory{submit_time, now});
    if (!fresh) {
        m->last_seen = std::max(m->last_seen, now);
        if (restart_cnt == 0)
            m->orig_submit = submit_time;  // also an id used again after slurmctld -c
        else if (submit_time > 0 && submit_time < m->orig_submit)
            m->orig_submit = submit_time;
    }
    return m->orig_submit;
}

PoolList Engine::managed_pools(const std::vector<std::string> &parts) const {
    PoolList out;
    for (const std::string &p : parts) {
        auto it = eval_.pool_index.find(p);
        if (it != eval_.pool_index.end() && !out.contains(it->second)) out.push_back(it->second);
    }
    return out;
}

// Does the comma-separated list name a configured pool?
bool Engine::names_pool(std::string_view parts) const {
    size_t start = 0;
    while (start <= parts.size()) {
        size_t end = parts.find(',', start);
        if (end == std::string_view::npos) end = parts.size();
        if (end > start && pool_names_.count(std::string(parts.substr(start, end - start)))) return true;
        start = end + 1;
    }
    return false;
}

PoolList Engine::managed_pools(std::string_view parts) const {
    PoolList out;
    size_t start = 0;
    while (start <= parts.size()) {
        size_t end = parts.find(',', start);
        if (end == std::string_view::npos) end = parts.size();
        if (end > start) {
            auto it = eval_.pool_index.find(std::string(parts.substr(start, end - start)));
            if (it != eval_.pool_index.end() && !out.contains(it->second)) out.push_back(it->second);
        }
        start = end + 1;
    }
    return out;
}

uint64_t Engine::quota_room(const PoolState &ps) {
    uint64_t taken = uint64_t(ps.np_used) + ps.np_reserved;
    return taken < ps.quota ? ps.quota - taken : 0;
}

bool Engine::fits_quota(const PoolList &pools, uint32_t gpus) const {
    for (int p : pools)
        if (quota_room(eval_.pools[static_cast<size_t>(p)]) < gpus) return false;
    return true;
}

// R2 for a job listing several pools: it is admitted when its quota fits
// in at least one of them, and may then start only in those (Slurm is told
// not to start it in the others, the refused ones).  Slurm may start it in
// any pool it is admitted to, so it reserves in each of them; a job array
// record gets as many tasks as fit every one of them.
void Engine::admit_one(PendingResult &r, Evaluation &ev) const {
    r.admission = Admission::Free;
    r.hold = Hold::None;
    r.hold_pool = -1;
    r.refused.clear();
    r.admitted_tasks = r.task_count();
    if (preemptible_tier(r.tier) || r.gpus == 0 || r.pools.empty()) return;
    uint64_t k = r.task_count();
    bool fits_one = false, quota_big_enough = false;
    for (int p : r.pools) {
        const PoolState &ps = ev.pools[static_cast<size_t>(p)];
        quota_big_enough |= r.gpus <= ps.quota;
        uint64_t fit = quota_room(ps) / r.gpus;
        if (fit == 0) {
            uint64_t taken = uint64_t(ps.np_used) + ps.np_reserved;
            r.refused.push_back(Refusal{p, static_cast<uint32_t>(std::min<uint64_t>(taken, UINT32_MAX))});
            continue;
        }
        fits_one = true;
        k = std::min(k, fit);
    }
    if (!fits_one) {
        r.admission = Admission::Held;
        r.hold = quota_big_enough ? Hold::Quota : Hold::QuotaTooSmall;
        r.hold_pool = r.refused.front().pool;
        r.admitted_tasks = 0;
        r.priority = 0;
        return;
    }
    r.admission = Admission::Quota;
    r.admitted_tasks = static_cast<uint32_t>(k);
    for (int p : r.pools)
        if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += r.admitted_tasks * r.gpus;
}

std::string Engine::reason_of(const PendingResult &r) const {
    char buf[512];
    reason_into(r, buf, sizeof(buf));
    return buf;
}

// Into a caller's buffer (cut to fit): the C ABI fills results this way,
// with no heap allocation, on slurmctld's submit path and for every held
// job of a pass.
size_t Engine::reason_into(const PendingResult &r, char *buf, size_t len) const {
    if (!len) return 0;
    buf[0] = '\0';
    size_t n = 0;
    auto add = [&](const char *fmt, auto... args) {
        if (n + 1 >= len) return;
        int w = std::snprintf(buf + n, len - n, fmt, args...);
        if (w > 0) n = std::min(len - 1, n + static_cast<size_t>(w));
    };
    if (r.hold == Hold::Starting) {
        add("%s", starting_reason());
        return n;
    }
    if (r.hold != Hold::Quota && r.hold != Hold::QuotaTooSmall) return n;
    add("%s", r.hold == Hold::QuotaTooSmall ? GP_HOLD_PREFIX "QuotaTooSmall:" : GP_HOLD_PREFIX "Quota:");
    const char *sep = "";
    for (const Refusal &x : r.refused) {
        const bool known = x.pool >= 0 && static_cast<size_t>(x.pool) < eval_.pools.size();
        const char *name = known ? eval_.pools[static_cast<size_t>(x.pool)].name.c_str() : "?";
        const uint32_t quota = known ? eval_.pools[static_cast<size_t>(x.pool)].quota : 0;
        if (r.gpus > quota)
            add("%s%s needs %u quota %u", sep, name, r.gpus, quota);
        else
            add("%s%s %u/%u", sep, name, x.taken, quota);
        sep = ",";
    }
    return n;
}

std::string Engine::start_partitions(uint32_t job_id, std::string_view listed) const {
    const PendingResult *r = pending_result(job_id);
    if (!r) throw std::invalid_argument("job " + std::to_string(job_id) + " has no gpupool result");
    std::string out;
    if (r->admission == Admission::Held) return out;
    size_t start = 0;
    while (start <= listed.size()) {
        size_t end = listed.find(',', start);
        if (end == std::string_view::npos) end = listed.size();
        std::string_view name = listed.substr(start, end - start);
        if (!name.empty()) {
            auto it = eval_.pool_index.find(std::string(name));
            if (it == eval_.pool_index.end() || !r->refuses(it->second)) {
                if (!out.empty()) out += ',';
                out += name;
            }
        }
        start = end + 1;
    }
    return out;
}

void Engine::resolve_pools(const Snapshot &snap, Evaluation &ev) const {
    const Config &cfg = *config_;
    ev.pools.clear();
    ev.pool_index.clear();
    std::unordered_map<std::string, size_t> part_index;
    for (size_t i = 0; i < snap.partitions.size(); ++i) part_index.emplace(snap.partitions[i].name, i);

    // Union-find over pools: two pools sharing a node share GPUs.
    const size_t n = cfg.pools.size();
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
        while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
        return x;
    };
    std::vector<int> node_pool(snap.nodes.size(), -1);
    std::vector<const SnapPartition *> part_of(n, nullptr);

    for (size_t i = 0; i < n; ++i) {
        const Pool &cp = cfg.pools[i];
        PoolState ps;
        ps.name = cp.name;
        ps.config_index = static_cast<int>(i);
        ps.quota = cp.quota;
        ps.weight = cp.weight;
        ps.min_runtime = cp.min_runtime >= 0 ? cp.min_runtime : cfg.min_runtime;
        ps.p_used_by_tier.assign(cfg.tiers.size(), 0);
        auto it = part_index.find(cp.name);
        if (it == part_index.end()) {
            ev.warnings.push_back("Pool=" + cp.name + ": no partition of that name");
        } else {
            part_of[i] = &snap.partitions[it->second];
            for (int32_t node : part_of[i]->nodes) {
                ps.capacity += snap.nodes[static_cast<size_t>(node)].gpus;
                int &owner = node_pool[static_cast<size_t>(node)];
                if (owner < 0)
                    owner = static_cast<int>(i);
                else
                    parent[static_cast<size_t>(find(static_cast<int>(i)))] = find(owner);
            }
        }
        ev.pool_index.emplace(cp.name, static_cast<int>(i));
        ev.pools.push_back(std::move(ps));
    }
    // Domains numbered by their first pool; capacity = GPUs of the union.
    std::vector<uint32_t> domain_cap(n, 0);
    for (size_t node = 0; node < snap.nodes.size(); ++node)
        if (node_pool[node] >= 0) domain_cap[static_cast<size_t>(find(node_pool[node]))] += snap.nodes[node].gpus;
    for (size_t i = 0; i < n; ++i) {
        if (!part_of[i] || part_of[i]->nodes.empty()) continue;
        int root = find(static_cast<int>(i));
        ev.pools[i].domain = root;
        ev.pools[i].domain_capacity = domain_cap[static_cast<size_t>(root)];
    }
}

void Engine::count_running(const Snapshot &snap, Evaluation &ev) const {
    ev.running.clear();
    ev.array_running.clear();
    for (const SnapJob &j : snap.jobs) {
        if (j.state != JobState::Running) continue;
        RunningInfo r;
        r.job_id = j.id;
        r.tier = tier_of_qos(j.qos);
        r.gpus = j.gpus;
        r.start = j.start_time;
        r.array_job_id = j.array_job_id;
        if (r.array_job_id) ev.array_running[r.array_job_id]++;
        if (!j.partitions.empty()) {
            auto it = ev.pool_index.find(j.partitions.front());
            if (it != ev.pool_index.end()) r.pool = it->second;
        }
        if (r.pool >= 0) {
            PoolState &ps = ev.pools[static_cast<size_t>(r.pool)];
            (preemptible_tier(r.tier) ? ps.p_used : ps.np_used) += j.gpus;
            if (preemptible_tier(r.tier)) ps.p_used_by_tier[static_cast<size_t>(r.tier)] += j.gpus;
        }
        ev.running[j.id] = r;
    }
}

void Engine::account_usage(Evaluation &ev, int64_t now) {
    const DecayParams dp = decay();
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
        if (last_account_ > 0 && now > last_account_) {
            h.usage.add(h.last_used, last_account_, now, dp);
            h.capacity.add(h.last_capacity, last_account_, now, dp);
        }
        h.usage.prune(now, dp);
        h.capacity.prune(now, dp);
        h.last_used = ps.used();
        h.last_capacity = ps.domain_capacity;
        ps.decayed_usage = h.usage.decayed(now, dp);
        double cap = h.capacity.decayed(now, dp);
        ps.usage_share = cap > 0 ? std::min(1.0, ps.decayed_usage / cap) : 0.0;
    }
    // Pools no longer configured keep no history.
    for (auto it = history_.begin(); it != history_.end();)
        it = ev.pool_index.count(it->first) ? std::next(it) : history_.erase(it);
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
    uint64_t quota_sum = 0;
    for (size_t i : members) quota_sum += pools[i].quota;
    std::vector<PoolGpus> lenders;
    if (capacity > quota_sum) lenders.push_back(PoolGpus{-1, static_cast<uint32_t>(capacity - quota_sum)});
    for (size_t i : members)
        if (pools[i].quota > pools[i].used()) lenders.push_back(PoolGpus{static_cast<int>(i), pools[i].quota - pools[i].used()});
    std::vector<std::vector<PoolGpus>> from(members.size());
    size_t li = 0;
    for (size_t k = 0; k < members.size(); ++k) {
        uint32_t need = pools[members[k]].borrowed();
        while (need > 0 && li < lenders.size()) {
            const uint32_t take = std::min(need, lenders[li].gpus);
            from[k].push_back(PoolGpus{lenders[li].pool, take});
            need -= take;
            lenders[li].gpus -= take;
            if (lenders[li].gpus == 0) ++li;
        }
    }
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
            in.push_back(FairshareInput{ps.quota, ps.weight, static_cast<uint32_t>(std::min<uint64_t>(demand, UINT32_MAX)),
                                        ps.usage_share});
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
    // R1.2 standing: lower used/fairshare first; no fairshare and no use
    // counts as 0, no fairshare but some use as infinitely served.
    std::vector<size_t> idx(ev.pools.size());
    std::iota(idx.begin(), idx.end(), 0);
    auto ratio = [&](size_t i) {
        const PoolState &ps = ev.pools[i];
        if (ps.fairshare == 0) return ps.used() == 0 ? 0.0 : 1e300;
        return static_cast<double>(ps.used()) / ps.fairshare;
    };
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return ratio(a) < ratio(b); });
    for (size_t r = 0; r < idx.size(); ++r) ev.pools[idx[r]].standing = static_cast<uint32_t>(r);
}

void Engine::order_pending(const Snapshot &snap, Evaluation &ev, int64_t /*now*/) {
    ev.pending.clear();
    ev.pending_index.clear();
    ev.provisional.clear();
    const uint32_t unmanaged_standing = static_cast<uint32_t>(ev.pools.size());
    for (const SnapJob &j : snap.jobs) {
        if (j.state != JobState::Pending || j.user_held) continue;
        PendingResult r;
        r.job_id = j.id;
        r.tier = tier_of_qos(j.qos);
        r.gpus = j.gpus;
        r.orig_submit = jobs_.find(j.id)->orig_submit;  // noted by evaluate()
        r.pools = managed_pools(j.partitions);
        r.array_tasks = j.array_tasks;
        r.group_standing = unmanaged_standing;  // set once fairshare is known
        ev.pending.push_back(std::move(r));
    }
    tally_pending(ev);
}

static bool order_before(const PendingResult &a, uint32_t a_prio, const PendingResult &b, uint32_t b_prio) {
    return pending_order_key(a, a_prio) < pending_order_key(b, b_prio);
}

// A held job waits in every pool it lists.
void Engine::count_held(const PendingResult &r, Evaluation &ev) {
    if (r.admission == Admission::Held)
        for (const Refusal &x : r.refused) ev.pools[static_cast<size_t>(x.pool)].held_jobs++;
}

// What an admitted job holds in the pools it may start in.
void Engine::reserve_admitted(const PendingResult &r, Evaluation &ev) {
    if (r.admission != Admission::Quota) return;
    for (int p : r.pools)
        if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += r.admitted_tasks * r.gpus;
}

void Engine::admit(Evaluation &ev) const {
    for (PendingResult &r : ev.pending) {
        admit_one(r, ev);
        count_held(r, ev);
    }
}

void Engine::rank_victims(Evaluation &ev) const {
    const bool newest = config_->preemption_order == PreemptionOrder::Newest;
    // ~start (= -start - 1) reverses the order and is defined for every start.
    auto start_key = [newest](const RunningInfo &r) { return newest ? ~r.start : r.start; };
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
        Key k{0, tier_priority(r.tier), start_key(r), r.job_id, &r};
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

void Engine::evaluate(const Snapshot &snap, int64_t now) {
    if (!config_) throw std::logic_error("no configuration loaded");
    if (staged_) {
        LoadedConfig next = std::move(*staged_);
        staged_.reset();
        apply_config(std::move(next));
    }
    // Accounting and the state file keep times in [0, kMaxTime].
    now = clamp_time(now);
    changes_.clear();
    Evaluation ev;
    ev.now = now;
    eval_.pool_index.clear();
    resolve_pools(snap, ev);
    // managed_pools() reads eval_.pool_index: make it this pass's.
    eval_.pool_index = ev.pool_index;
    count_running(snap, ev);

    for (const SnapJob &j : snap.jobs) note_job(j.id, j.submit_time, j.restart_cnt, now);
    std::vector<uint32_t> forget;
    jobs_.for_each([&](uint32_t id, JobMemory &m) {
        // Seen "after now" means the clock went back: seen now.
        m.last_seen = std::min(m.last_seen, now);
        if (now - m.last_seen > kForgetAfter) forget.push_back(id);
    });
    for (uint32_t id : forget) jobs_.erase(id);
    // Room for the jobs submitted before the next pass (note_job from
    // provisional(), in slurmctld's submit path), allocated here.
    jobs_.reserve(jobs_.size() + std::max<size_t>(4096, jobs_.size() / 2));
    // The placements' array is kept from pass to pass, with room for twice
    // the most seen between two passes.
    provisional_peak_ = std::max(provisional_peak_, eval_.provisional.size());
    ev.provisional = std::move(eval_.provisional);
    ev.provisional.clear();
    ev.provisional.reserve(std::max<size_t>(1024, 2 * provisional_peak_));

    account_usage(ev, now);
    order_pending(snap, ev, now);  // collects demand; sorted below
    compute_fairshare(ev);
    for (PendingResult &r : ev.pending) {
        r.group_standing = static_cast<uint32_t>(ev.pools.size());
        for (int p : r.pools)
            r.group_standing = std::min(r.group_standing, ev.pools[static_cast<size_t>(p)].standing);
    }
    // Sort compact keys (R1's), then move each result once.
    struct Key {
        PendingOrderKey key;
        uint32_t index;
    };
    std::vector<Key> keys;
    keys.reserve(ev.pending.size());
    for (size_t i = 0; i < ev.pending.size(); ++i) {
        const PendingResult &r = ev.pending[i];
        keys.push_back(Key{pending_order_key(r, tier_priority(r.tier)), static_cast<uint32_t>(i)});
    }
    std::sort(keys.begin(), keys.end(), [](const Key &a, const Key &b) { return a.key < b.key; });
    {
        std::vector<PendingResult> sorted;
        sorted.reserve(keys.size());
        for (const Key &k : keys) sorted.push_back(std::move(ev.pending[k.index]));
        ev.pending.swap(sorted);
    }

    ev.pending_index.build(ev.pending.size());
    number_pending(ev);

    ev.valid = true;
    eval_ = std::move(ev);
    admit(eval_);
    build_candidates(eval_);
    rank_victims(eval_);
    preemptor_cache_.valid = false;
}

void Engine::refresh_running(const Snapshot &snap, int64_t now) {
    // Without a full pass there is no order or demand to keep: a snapshot
    // of running jobs alone must not stand in for one.
    if (!config_ || !eval_.valid) return;
    for (PoolState &ps : eval_.pools) {
        ps.np_used = ps.p_used = 0;
        std::fill(ps.p_used_by_tier.begin(), ps.p_used_by_tier.end(), 0u);
    }
    count_running(snap, eval_);
    for (const SnapJob &j : snap.jobs) {
        if (j.state != JobState::Running) continue;
        note_job(j.id, j.submit_time, j.restart_cnt, now);
        // Admitted pending (by the pass or since) and started since: it is
        // counted as running now, so its reservation goes, or it would
        // count twice and keep jobs held that the quota has room for.
        const PendingResult *placed = eval_.provisional.find(j.id);
        if (placed) uncount_held(*placed, eval_);
        eval_.provisional.erase(j.id);
        uint32_t pos = eval_.pending_index.find(j.id);
        if (pos != IdIndex::kNone) {
            PendingResult &r = eval_.pending[pos];
            // The next job end settles what is left of it (clear_left).
            if (!r.pools.empty()) {
                if (!placed) uncount_held(r, eval_);
                for (int p : r.pools) {
                    PoolCandidates &c = eval_.candidates[static_cast<size_t>(p)];
                    auto at = std::lower_bound(c.pos.begin(), c.pos.end(), pos);
                    if (at != c.pos.end() && *at == pos) c.gpus.set(static_cast<size_t>(at - c.pos.begin()), MinTree::kEmpty);
                }
                eval_.cleared.push_back(r.job_id);
            }
            r.pools.clear();
            r.refused.clear();
            r.gpus = 0;
        }
    }
    // Admission reservations are redone against the new usage.
    for (PoolState &ps : eval_.pools) ps.np_reserved = ps.np_overcount = 0;
    auto reserve = [&](const PendingResult &r) { reserve_admitted(r, eval_); };
    for (const PendingResult &r : eval_.pending)
        if (!eval_.provisional.contains(r.job_id)) reserve(r);
    // Jobs placed since the pass keep their reservation too.
    for (const PendingResult &r : eval_.provisional) reserve(r);
    std::vector<uint32_t> standing;
    for (const PoolState &ps : eval_.pools) standing.push_back(ps.standing);
    compute_fairshare(eval_);
    // Standing feeds priorities, which only a full pass reassigns.
    for (size_t i = 0; i < standing.size(); ++i) eval_.pools[i].standing = standing[i];
    rank_victims(eval_);
    eval_.now = now;
    preemptor_cache_.valid = false;
}

// Between passes admission only grows: a job admitted since the last pass
// may have started already, which the engine learns only at the next pass,
// so taking its admission back to give it to a job ahead of it in the
// order could put two jobs into one job's quota.  What is admitted keeps
// its reservation; held jobs (and arrays' further tasks) get what is left,
// in order.
void Engine::admit_more(Evaluation &ev) const {
    for (PoolState &ps : ev.pools) ps.np_reserved = ps.np_overcount = ps.held_jobs = 0;
    for (const PendingResult &r : ev.pending) reserve_admitted(r, ev);
    for (PendingResult &r : ev.pending) {
        if (r.admission == Admission::Quota) {
            // More tasks of an array, in the pools it was admitted to; the
            // refused ones stay refused until the next pass.
            if (r.admitted_tasks >= r.task_count()) continue;
            uint64_t extra = r.task_count() - r.admitted_tasks;
            for (int p : r.pools)
                if (!r.refuses(p)) extra = std::min(extra, quota_room(ev.pools[static_cast<size_t>(p)]) / r.gpus);
            r.admitted_tasks += static_cast<uint32_t>(extra);
            for (int p : r.pools)
                if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += static_cast<uint32_t>(extra) * r.gpus;
        } else if (r.admission == Admission::Held) {
            r.priority = r.nominal;
            admit_one(r, ev);
            count_held(r, ev);
        }
    }
}

void Engine::add_reservation(const PendingResult &r, Evaluation &ev, int sign) {
    if (r.admission != Admission::Quota) return;
    for (int p : r.pools) {
        if (r.refuses(p)) continue;
        uint32_t &res = ev.pools[static_cast<size_t>(p)].np_reserved;
        const uint32_t n = r.admitted_tasks * r.gpus;
        res = sign > 0 ? res + n : res - std::min(res, n);
    }
}

void Engine::uncount_held(const PendingResult &r, Evaluation &ev) {
    if (r.admission != Admission::Held) return;
    for (const Refusal &x : r.refused) {
        uint32_t &h = ev.pools[static_cast<size_t>(x.pool)].held_jobs;
        if (h) --h;
    }
}

// What admit_more() makes of a job that left the queue (its pools cleared):
// held, it is no longer held; an array, all its tasks count as admitted.
void Engine::clear_left(PendingResult &r, Evaluation &ev) const {
    if (r.admission == Admission::Quota) {
        r.admitted_tasks = std::max(r.admitted_tasks, r.task_count());
    } else if (r.admission == Admission::Held) {
        r.priority = r.nominal;
        admit_one(r, ev);
    }
}

// Of the pass's jobs, those a job end may admit (more of), per pool.
void Engine::build_candidates(Evaluation &ev) const {
    ev.cleared.clear();
    ev.candidates.assign(ev.pools.size(), PoolCandidates{});
    std::vector<std::vector<uint32_t>> gpus(ev.pools.size());
    for (size_t pos = 0; pos < ev.pending.size(); ++pos) {
        const PendingResult &r = ev.pending[pos];
        const bool held = r.admission == Admission::Held;
        const bool more = r.admission == Admission::Quota && r.admitted_tasks < r.task_count();
        if (!held && !more) continue;
        for (int p : r.pools) {
            if (more && r.refuses(p)) continue;
            ev.candidates[static_cast<size_t>(p)].pos.push_back(static_cast<uint32_t>(pos));
            gpus[static_cast<size_t>(p)].push_back(r.gpus);
        }
    }
    for (size_t p = 0; p < ev.pools.size(); ++p) ev.candidates[p].gpus.build(gpus[p]);
}

// After the pass job at `pos` changed: what it may still gain, per pool.
void Engine::update_candidate(Evaluation &ev, uint32_t pos) const {
    const PendingResult &r = ev.pending[pos];
    const bool held = r.admission == Admission::Held;
    const bool more = r.admission == Admission::Quota && r.admitted_tasks < r.task_count();
    for (int p : r.pools) {
        PoolCandidates &c = ev.candidates[static_cast<size_t>(p)];
        auto at = std::lower_bound(c.pos.begin(), c.pos.end(), pos);
        if (at == c.pos.end() || *at != pos) continue;
        const bool stays = held || (more && !r.refuses(p));
        c.gpus.set(static_cast<size_t>(at - c.pos.begin()), stays ? r.gpus : MinTree::kEmpty);
    }
}

namespace {
// What job_ended() reports as changed: all that the plugins write but the
// counts in a held job's reason.
struct Decision {
    Admission admission;
    uint32_t admitted_tasks, priority;
    uint64_t refused;  // pools, as bits (pool indices past 63 share one)
    explicit Decision(const PendingResult &r)
        : admission(r.admission), admitted_tasks(r.admitted_tasks), priority(r.priority), refused(0) {
        for (const Refusal &x : r.refused) refused |= uint64_t(1) << std::min(x.pool, 63);
    }
    bool operator!=(const Decision &o) const {
        return admission != o.admission || admitted_tasks != o.admitted_tasks || priority != o.priority ||
               refused != o.refused;
    }
};
}  // namespace

// The walk of admit_more() over only the jobs it can change: those that fit
// the room some pool has now (found per pool in O(log n), PoolCandidates),
// and the few placed since the pass, in the same order.  A job that does
// not fit is left as it is: admit_more() would give it the same decision.
bool Engine::job_ended(uint32_t job_id, int64_t now) {
    changes_.clear();
    if (!config_ || !eval_.valid) return false;
    uint32_t array_record = 0;
    auto rit = eval_.running.find(job_id);
    if (rit != eval_.running.end()) {
        const RunningInfo &r = rit->second;
        if (r.pool >= 0) {
            PoolState &ps = eval_.pools[static_cast<size_t>(r.pool)];
            uint32_t &used = preemptible_tier(r.tier) ? ps.p_used : ps.np_used;
            used -= std::min(used, r.gpus);
            if (preemptible_tier(r.tier)) {
                uint32_t &tier_used = ps.p_used_by_tier[static_cast<size_t>(r.tier)];
                tier_used -= std::min(tier_used, r.gpus);
            }
        }
        if (r.array_job_id) {
            auto ait = eval_.array_running.find(r.array_job_id);
            if (ait != eval_.array_running.end() && --ait->second == 0) eval_.array_running.erase(ait);
            array_record = r.array_job_id;
        }
        eval_.running.erase(rit);
    }
    // Reservations counted twice go first (admit_more() counts afresh).
    for (PoolState &ps : eval_.pools) {
        ps.np_reserved -= std::min(ps.np_reserved, ps.np_overcount);
        ps.np_overcount = 0;
    }
    // A pending job that goes away no longer reserves anything.
    const bool placed_since = eval_.provisional.contains(job_id);
    if (const PendingResult *pr = eval_.provisional.find(job_id)) {
        add_reservation(*pr, eval_, -1);
        uncount_held(*pr, eval_);
        eval_.provisional.erase(job_id);
    }
    const bool any_provisional = !eval_.provisional.empty();
    auto superseded = [&](uint32_t id) { return any_provisional && eval_.provisional.contains(id); };
    uint32_t pos = eval_.pending_index.find(job_id);
    if (pos != IdIndex::kNone) {
        PendingResult &r = eval_.pending[pos];
        if (!r.pools.empty()) {
            // Placed again since the pass, that placement reserved (and was
            // counted held) instead.
            if (!placed_since) {
                add_reservation(r, eval_, -1);
                uncount_held(r, eval_);
            }
            for (int p : r.pools) {
                PoolCandidates &c = eval_.candidates[static_cast<size_t>(p)];
                auto at = std::lower_bound(c.pos.begin(), c.pos.end(), pos);
                if (at != c.pos.end() && *at == pos) c.gpus.set(static_cast<size_t>(at - c.pos.begin()), MinTree::kEmpty);
            }
        }
        r.pools.clear();
        r.refused.clear();
        r.gpus = 0;
        clear_left(r, eval_);
    }
    for (uint32_t id : eval_.cleared) {
        uint32_t at = eval_.pending_index.find(id);
        if (at == IdIndex::kNone || superseded(id)) continue;
        PendingResult &r = eval_.pending[at];
        const Decision was(r);
        clear_left(r, eval_);
        if (Decision(r) != was && id != job_id) changes_.push_back(id);
    }
    eval_.cleared.clear();

    // One job of the walk: admitted (more tasks) if it fits now.
    auto visit = [&](PendingResult &r) {
        const Decision was(r);
        if (r.admission == Admission::Held) {
            bool fits = false;
            for (int p : r.pools) fits |= r.gpus > 0 && quota_room(eval_.pools[static_cast<size_t>(p)]) >= r.gpus;
            if (!fits) return false;
            uncount_held(r, eval_);
            r.priority = r.nominal;
            admit_one(r, eval_);
            count_held(r, eval_);
        } else if (r.admission == Admission::Quota && r.admitted_tasks < r.task_count() && r.gpus > 0) {
            uint64_t extra = r.task_count() - r.admitted_tasks;
            for (int p : r.pools)
                if (!r.refuses(p)) extra = std::min(extra, quota_room(eval_.pools[static_cast<size_t>(p)]) / r.gpus);
            if (extra == 0) return false;
            r.admitted_tasks += static_cast<uint32_t>(extra);
            for (int p : r.pools)
                if (!r.refuses(p)) eval_.pools[static_cast<size_t>(p)].np_reserved += static_cast<uint32_t>(extra) * r.gpus;
        } else {
            return false;
        }
        if (Decision(r) != was && r.job_id != job_id) changes_.push_back(r.job_id);
        return true;
    };
    // The first pass job from `from` on that fits some pool's room now.
    auto next_fit = [&](size_t from) {
        size_t best = MinTree::kNone;
        for (size_t p = 0; p < eval_.pools.size(); ++p) {
            const uint64_t room = quota_room(eval_.pools[p]);
            if (room == 0) continue;
            const PoolCandidates &c = eval_.candidates[p];
            size_t i = static_cast<size_t>(std::lower_bound(c.pos.begin(), c.pos.end(), from) - c.pos.begin());
            if (best != MinTree::kNone)  // only what comes before the best so far
                if (i >= c.pos.size() || c.pos[i] >= best) continue;
            size_t j = c.gpus.first_at_most(i, static_cast<uint32_t>(std::min<uint64_t>(room, MinTree::kEmpty - 1)));
            if (j != MinTree::kNone) best = std::min<size_t>(best, c.pos[j]);
        }
        return best;
    };
    // Placed since the pass and able to gain: those that fit the rooms as
    // they are now (rooms only shrink along the walk), sorted here.
    auto may_gain = [&](const PendingResult &r) {
        if (r.pools.empty() || r.gpus == 0) return false;
        if (r.admission == Admission::Held) {
            for (int p : r.pools)
                if (quota_room(eval_.pools[static_cast<size_t>(p)]) >= r.gpus) return true;
            return false;
        }
        if (r.admission != Admission::Quota || r.admitted_tasks >= r.task_count()) return false;
        for (int p : r.pools)
            if (!r.refuses(p) && quota_room(eval_.pools[static_cast<size_t>(p)]) < r.gpus) return false;
        return true;
    };
    std::vector<PendingResult *> placed;
    for (PendingResult &r : eval_.provisional)
        if (may_gain(r)) placed.push_back(&r);
    auto before = [&](const PendingResult &a, const PendingResult &b) {
        return order_before(a, tier_priority(a.tier), b, tier_priority(b.tier));
    };
    std::sort(placed.begin(), placed.end(), [&](const PendingResult *a, const PendingResult *b) { return before(*a, *b); });
    size_t from = 0, next = next_fit(0), y = 0;
    while (true) {
        if (y < placed.size() && (next == MinTree::kNone || before(*placed[y], eval_.pending[next]))) {
            if (visit(*placed[y++])) next = next_fit(from);  // rooms shrank
            continue;
        }
        if (next == MinTree::kNone) break;
        const uint32_t at = static_cast<uint32_t>(next);
        PendingResult &r = eval_.pending[at];
        if (superseded(r.job_id)) {
            // Its placement since the pass stands for it.
            for (int p : r.pools) {
                PoolCandidates &c = eval_.candidates[static_cast<size_t>(p)];
                auto it = std::lower_bound(c.pos.begin(), c.pos.end(), at);
                if (it != c.pos.end() && *it == at) c.gpus.set(static_cast<size_t>(it - c.pos.begin()), MinTree::kEmpty);
            }
        } else if (visit(r)) {
            update_candidate(eval_, at);
        }
        from = next + 1;
        next = next_fit(from);
    }
    if (array_record && array_record != job_id && pending_result(array_record) &&
        std::find(changes_.begin(), changes_.end(), array_record) == changes_.end())
        changes_.push_back(array_record);
    eval_.now = std::max(eval_.now, now);
    preemptor_cache_.valid = false;
    return !changes_.empty();
}

bool Engine::job_ended_full(uint32_t job_id, int64_t now) {
    changes_.clear();
    if (!config_ || !eval_.valid) return false;
    auto rit = eval_.running.find(job_id);
    if (rit != eval_.running.end()) {
        const RunningInfo &r = rit->second;
        if (r.pool >= 0) {
            PoolState &ps = eval_.pools[static_cast<size_t>(r.pool)];
            uint32_t &used = preemptible_tier(r.tier) ? ps.p_used : ps.np_used;
            used -= std::min(used, r.gpus);
            if (preemptible_tier(r.tier)) {
                uint32_t &tier_used = ps.p_used_by_tier[static_cast<size_t>(r.tier)];
                tier_used -= std::min(tier_used, r.gpus);
            }
        }
        if (r.array_job_id) {
            auto ait = eval_.array_running.find(r.array_job_id);
            if (ait != eval_.array_running.end() && --ait->second == 0) eval_.array_running.erase(ait);
        }
        eval_.running.erase(rit);
    }
    uint32_t pos = eval_.pending_index.find(job_id);
    if (pos != IdIndex::kNone) {
        // A pending job that goes away no longer reserves anything.
        PendingResult &r = eval_.pending[pos];
        r.pools.clear();
        r.refused.clear();
        r.gpus = 0;
    }
    eval_.provisional.erase(job_id);
    fold_provisional();
    std::vector<std::pair<Admission, uint32_t>> before;
    before.reserve(eval_.pending.size());
    for (const PendingResult &r : eval_.pending) before.emplace_back(r.admission, r.admitted_tasks);
    admit_more(eval_);
    eval_.cleared.clear();
    build_candidates(eval_);
    eval_.now = std::max(eval_.now, now);
    preemptor_cache_.valid = false;
    for (size_t i = 0; i < before.size(); ++i)
        if (before[i] != std::make_pair(eval_.pending[i].admission, eval_.pending[i].admitted_tasks)) return true;
    return false;
}

// Priorities along the order: slot * (jobs after it) + slot + 1, with one
// slot per tier plus one.  The numbers in between stay free for jobs placed
// by provisional() before the next pass: just above the job they go before,
// higher for a higher tier, so that such jobs never tie across tiers.
// Factors split the number into the jobs of lower tiers, of the same tier
// in less starved pools, and of the same tier and pool submitted later.
void Engine::number_pending(Evaluation &ev) const {
    const size_t n = ev.pending.size();
    const uint64_t slot = priority_slot(n);
    ev.pending_index.build(n);
    size_t tier_end = 0, group_end = 0;
    for (size_t pos = 0; pos < n; ++pos) {
        PendingResult &r = ev.pending[pos];
        if (pos >= tier_end) {
            tier_end = pos;
            while (tier_end + 1 < n && tier_priority(ev.pending[tier_end + 1].tier) == tier_priority(r.tier)) ++tier_end;
            ++tier_end;
        }
        if (pos >= group_end) {
            group_end = pos;
            while (group_end + 1 < tier_end && ev.pending[group_end + 1].group_standing == r.group_standing) ++group_end;
            ++group_end;
        }
        r.position = static_cast<uint32_t>(pos);
        r.factor_tier = static_cast<uint32_t>(slot * (n - tier_end) + slot + 1);
        r.factor_fairshare = static_cast<uint32_t>(slot * (tier_end - group_end));
        r.factor_age = static_cast<uint32_t>(slot * (group_end - 1 - pos));
        r.nominal = r.priority = r.factor_tier + r.factor_fairshare + r.factor_age;
        ev.pending_index.insert(r.job_id, static_cast<uint32_t>(pos));
    }
}

// One free number per tier between two jobs, unless the queue is so long
// that this would not fit in uint32 (then provisional jobs may tie).
uint64_t Engine::priority_slot(size_t pending) const {
    uint64_t slot = config_->tiers.size() + 1;
    return (uint64_t(pending) + 2) * slot < 0xFFFFFFFFull ? slot : 1;
}

// Jobs placed between passes join the order by their provisional priority
// (even numbers between the pass's odd ones), so that admission can be
// redone over everything in one walk.
void Engine::fold_provisional() {
    if (eval_.provisional.empty()) return;
    // The pass's jobs are in order already: sort the few placed since and
    // merge, rather than sort the whole queue at every job end.
    auto before = [&](const PendingResult &a, const PendingResult &b) {
        return order_before(a, tier_priority(a.tier), b, tier_priority(b.tier));
    };
    std::vector<PendingResult> placed;
    placed.reserve(eval_.provisional.size());
    for (PendingResult &r : eval_.provisional) placed.push_back(std::move(r));
    std::sort(placed.begin(), placed.end(), before);
    // The pass sorted by the same key: a merge keeps R1's order.
    std::vector<PendingResult> merged;
    merged.reserve(eval_.pending.size() + placed.size());
    auto p = placed.begin();
    for (PendingResult &r : eval_.pending) {
        if (eval_.provisional.contains(r.job_id)) continue;
        while (p != placed.end() && before(*p, r)) merged.push_back(std::move(*p++));
        merged.push_back(std::move(r));
    }
    for (; p != placed.end(); ++p) merged.push_back(std::move(*p));
    eval_.provisional.clear();
    eval_.pending.swap(merged);
    number_pending(eval_);
}

const PendingResult *Engine::pending_result(uint32_t job_id) const {
    // A job placed again since the pass (its tier, pools or size changed)
    // is as placed last; its pass result is stale.
    if (!eval_.provisional.empty())
        if (const PendingResult *r = eval_.provisional.find(job_id)) return r;
    uint32_t pos = eval_.pending_index.find(job_id);
    if (pos != IdIndex::kNone) return &eval_.pending[pos];
    return nullptr;
}

JobRef job_ref(const SnapJob &job, std::string &parts) {
    parts.clear();
    for (const std::string &p : job.partitions) parts += (parts.empty() ? "" : ",") + p;
    JobRef ref;
    ref.id = job.id;
    ref.partitions = parts;
    ref.qos = job.qos;
    ref.gpus = job.gpus;
    ref.start = job.start_time;
    ref.submit_time = job.submit_time;
    ref.restart_cnt = job.restart_cnt;
    ref.array_tasks = job.array_tasks;
    return ref;
}

PendingResult Engine::provisional(const SnapJob &job, int64_t now) {
    std::string parts;
    return provisional(job_ref(job, parts), now);
}

PendingResult Engine::provisional(const JobRef &job, int64_t now) {
    if (!config_) throw std::logic_error("no configuration loaded");
    PendingResult r;
    r.job_id = job.id;
    r.tier = tier_of_qos(std::string(job.qos));
    r.gpus = job.gpus;
    r.array_tasks = job.array_tasks;
    r.admitted_tasks = r.task_count();
    r.orig_submit = note_job(job.id, job.submit_time, job.restart_cnt, now);
    if (!eval_.valid) {
        // Nothing known yet: GPU jobs of configured pools wait for the
        // first pass, NP ones so as not to go over quota, preemptible ones
        // so as not to start ahead of jobs the pass will put first (and
        // be preempted back out).
        bool managed = names_pool(job.partitions);
        r.priority = r.nominal = r.factor_tier = 2;
        if (managed && job.gpus > 0) {
            r.admission = Admission::Held;
            r.admitted_tasks = 0;
            r.priority = 0;
            r.hold = Hold::Starting;
        }
        return r;
    }
    r.pools = managed_pools(job.partitions);
    r.group_standing = static_cast<uint32_t>(eval_.pools.size());
    for (int p : r.pools) r.group_standing = std::min(r.group_standing, eval_.pools[static_cast<size_t>(p)].standing);

    // A job already ranked by the last pass keeps its place if its tier
    // and pools are unchanged.
    if (const PendingResult *known = pending_result(job.id))
        if (known->tier == r.tier && known->pools == r.pools && known->gpus == r.gpus &&
            known->task_count() == r.task_count())
            return *known;

    // Place it just before the first job that orders after it.
    const uint32_t prio = tier_priority(r.tier);
    auto it = std::partition_point(eval_.pending.begin(), eval_.pending.end(), [&](const PendingResult &x) {
        return order_before(x, tier_priority(x.tier), r, prio);
    });
    r.position = static_cast<uint32_t>(it - eval_.pending.begin());
    uint32_t tiers_below = 0;
    for (const Tier &t : config_->tiers) tiers_below += t.priority < prio;
    const uint32_t above = priority_slot(eval_.pending.size()) > 1 ? tiers_below + 1 : 0;
    if (it == eval_.pending.end()) {
        r.nominal = r.factor_tier = std::max<uint32_t>(1, above);
    } else {
        r.nominal = it->nominal + above;
        if (tier_priority(it->tier) == prio) {
            r.factor_tier = it->factor_tier;
            r.factor_fairshare = it->factor_fairshare;
            r.factor_age = it->factor_age + above;
        } else {
            r.factor_tier = r.nominal;
        }
    }
    r.priority = r.nominal;
    // Reserve now so that a burst of submits between passes cannot admit
    // more than the quota.
    admit_one(r, eval_);
    // A placement it replaces reserves no more, but stays counted (as it
    // always did, for the placements until the next job end) in
    // np_overcount, which that job end takes back.
    const PendingResult *prev = eval_.provisional.find(job.id);
    if (!prev) {
        uint32_t at = eval_.pending_index.find(job.id);
        if (at != IdIndex::kNone) prev = &eval_.pending[at];
    }
    if (prev) {
        if (prev->admission == Admission::Quota)
            for (int p : prev->pools)
                if (!prev->refuses(p)) eval_.pools[static_cast<size_t>(p)].np_overcount += prev->admitted_tasks * prev->gpus;
        uncount_held(*prev, eval_);
    }
    count_held(r, eval_);
    eval_.provisional.put(r);
    // Its admission (and where it may start) is what preemptable() reads.
    preemptor_cache_.valid = false;
    return r;
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

uint32_t Engine::array_running(uint32_t array_job_id) const {
    auto it = eval_.array_running.find(array_job_id);
    return it != eval_.array_running.end() ? it->second : 0;
}

uint32_t Engine::victim_rank(uint32_t job_id) const {
    auto it = eval_.running.find(job_id);
    if (it != eval_.running.end()) return it->second.rank;
    // Unknown to the last pass: after every ranked job, by id.
    return static_cast<uint32_t>(std::min<uint64_t>(0xFFFFFFFEu, uint64_t(eval_.running.size()) + 1 + job_id % 0x7FFFFFFF));
}

std::vector<std::string> Engine::warnings() const {
    std::vector<std::string> w = config_warnings_;
    w.insert(w.end(), eval_.warnings.begin(), eval_.warnings.end());
    return w;
}

}  // namespace gpupool

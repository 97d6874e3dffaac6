#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "fairshare.hpp"
#include "gpupool.h"
#include "levels.hpp"
#include "plugin_apply.hpp"

namespace gpupool {

const char *rule_name(Rule r) {
    switch (r) {
    case Rule::InPool: return "InPool";
    case Rule::Reclaim: return "Reclaim";
    case Rule::Consolidate: return "Consolidation";
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
    config_warnings_ = config_->warnings;
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

uint32_t Engine::waiting_preemptor_priority() const {
    // Only where preemptible jobs reclaim from other pools (reclaims()):
    // in its own pool (R4) a preemptible preemptor loses nothing a higher
    // preemptible tier would give back.
    if (!config_ || (config_->reclaim_by != ReclaimBy::All && config_->reclaim_to != ReclaimTo::Fairshare)) return 0;
    uint32_t top = 0, lowest_np = UINT32_MAX;
    for (const Tier &t : config_->tiers) {
        if (t.preemptible)
            top = std::max(top, t.priority);
        else
            lowest_np = std::min(lowest_np, t.priority);
    }
    return lowest_np > top ? top : 0;
}

uint32_t Engine::order_priority(const PendingResult &r) const {
    const uint32_t prio = tier_priority(r.tier);
    if (!r.preempted || !preemptible_tier(r.tier)) return prio;
    return std::max(prio, waiting_preemptor_priority());
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

PoolList Engine::managed_pools(const PartitionList &parts) const {
    PoolList out;
    for (const std::string &p : parts) {
        auto it = eval_.pool_index.find(p);
        if (it != eval_.pool_index.end() && !out.contains(it->second)) out.push_back(it->second);
    }
    return out;
}

// Does the comma-separated list name a configured pool?
bool Engine::names_pool(std::string_view parts) const {
    bool named = false;
    for_each_listed(parts, [&](std::string_view p) { named = named || pool_names_.count(std::string(p)); });
    return named;
}

PoolList Engine::managed_pools(std::string_view parts) const {
    PoolList out;
    for_each_listed(parts, [&](std::string_view p) {
        auto it = eval_.pool_index.find(std::string(p));
        if (it != eval_.pool_index.end() && !out.contains(it->second)) out.push_back(it->second);
    });
    return out;
}

// `most`: the most GPUs (of QuotaTRES's type) a node of the job's pool
// partitions has; `fewest`: the least of those partitions' most (0: one of
// them has none of that type).
uint32_t Engine::admitted_gpus(uint32_t most_whole, uint32_t fewest, const GpuAsk &ask) {
    // GPUs of no type: Slurm may give it that type's in every pool it
    // lists, and counts it nothing in one without: counted where every
    // one has them (R2 cannot count a job in some of its pools only).
    if (ask.untyped && fewest == 0) return 0;
    // Where whole nodes come with no GPU unasked (Flags=explicit), what it asked.
    if (!ask.whole || most_whole == 0) return ask.gpus;
    // At least the nodes its GPUs need (--gpus=6 on 4-GPU nodes: 2).
    const uint64_t count = std::max<uint64_t>({1, ask.nodes, (uint64_t(ask.gpus) + most_whole - 1) / most_whole});
    return static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, uint64_t(most_whole) * count));
}

uint32_t Engine::admitted_gpus(const PartitionList &parts, const GpuAsk &ask) const {
    if (!ask.whole && !ask.untyped) return ask.gpus;
    uint32_t most_whole = 0, fewest = UINT32_MAX;
    for (const std::string &p : parts) {
        auto it = most_node_gpus_.find(p);
        if (it == most_node_gpus_.end()) continue;
        most_whole = std::max(most_whole, it->second.most_whole);
        fewest = std::min(fewest, it->second.most);
    }
    return admitted_gpus(most_whole, fewest == UINT32_MAX ? 0 : fewest, ask);
}

uint32_t Engine::admitted_gpus(std::string_view parts, const GpuAsk &ask) const {
    if (!ask.whole && !ask.untyped) return ask.gpus;
    uint32_t most_whole = 0, fewest = UINT32_MAX;
    for_each_listed(parts, [&](std::string_view p) {
        auto it = most_node_gpus_.find(std::string(p));
        if (it == most_node_gpus_.end()) return;
        most_whole = std::max(most_whole, it->second.most_whole);
        fewest = std::min(fewest, it->second.most);
    });
    return admitted_gpus(most_whole, fewest == UINT32_MAX ? 0 : fewest, ask);
}

void Engine::resolve_pools(const Snapshot &snap, Evaluation &ev) const {
    const Config &cfg = *config_;
    ev.pools.clear();
    ev.node_sets.clear();
    ev.pool_index.clear();
    std::unordered_map<std::string, size_t> part_index;
    for (size_t i = 0; i < snap.partitions.size(); ++i) part_index.emplace(snap.partitions[i].name, i);

    // Two pools sharing a node share GPUs.
    const size_t n = cfg.pools.size();
    PoolSets sets(n, snap.nodes.size());
    std::vector<const SnapPartition *> part_of(n, nullptr);

    for (size_t i = 0; i < n; ++i) {
        const Pool &cp = cfg.pools[i];
        PoolState ps;
        ps.name = cp.name;
        ps.config_index = static_cast<int>(i);
        ps.quota = cp.quota;
        ps.weight = cp.weight;
        ps.min_runtime = cfg.min_runtime_of(cp);
        ps.p_used_by_tier.assign(cfg.tiers.size(), 0);
        auto it = part_index.find(cp.name);
        if (it == part_index.end()) {
            ev.warnings.push_back("Pool=" + cp.name + ": no partition of that name");
        } else {
            part_of[i] = &snap.partitions[it->second];
            for (int32_t node : part_of[i]->nodes) {
                ps.capacity += snap.nodes[static_cast<size_t>(node)].gpus;
                sets.add(static_cast<int>(i), static_cast<size_t>(node));
            }
        }
        ev.pool_index.emplace(cp.name, static_cast<int>(i));
        ev.pools.push_back(std::move(ps));
    }
    // Domains numbered by their first pool; capacity = GPUs of the union.
    std::vector<uint32_t> domain_cap(n, 0);
    for (size_t node = 0; node < snap.nodes.size(); ++node)
        if (sets.owner(node) >= 0) domain_cap[static_cast<size_t>(sets.find(sets.owner(node)))] += snap.nodes[node].gpus;
    std::vector<int32_t> tree_of_domain(n, -1);
    for (size_t i = 0; i < n; ++i) {
        if (!part_of[i] || part_of[i]->nodes.empty()) continue;
        int root = sets.find(static_cast<int>(i));
        PoolState &ps = ev.pools[i];
        ps.domain = root;
        ps.domain_capacity = domain_cap[static_cast<size_t>(root)];
        int32_t &t = tree_of_domain[static_cast<size_t>(root)];
        if (t < 0) {
            t = int32_t(ev.node_sets.size());
            NodeSetTree tree;
            tree.queues.emplace_back();
            tree.queues.back().name = "(nodes of " + ps.name + ")";
            tree.pool_of.push_back(-1);
            ev.node_sets.push_back(std::move(tree));
        }
        NodeSetTree &tree = ev.node_sets[size_t(t)];
        QueueSpec row;
        row.name = ps.name;
        row.parent = 0;
        row.quota.set(kGpu, ps.quota);
        row.weight = ps.weight;
        row.rank = config_->pools[size_t(ps.config_index)].rank;
        ps.node_set = t;
        ps.node_set_row = int32_t(tree.queues.size());
        tree.queues.push_back(std::move(row));
        tree.pool_of.push_back(int(i));
    }
    for (NodeSetTree &tree : ev.node_sets) {
        tree.allocated.assign(tree.queues.size(), Amounts{});
        tree.fairshare.assign(tree.queues.size(), Amounts{});
    }
}

void sync_node_set_rows(std::vector<NodeSetTree> &trees, const std::vector<PoolState> &pools) {
    for (NodeSetTree &tree : trees)
        for (size_t row = 1; row < tree.queues.size(); ++row) {
            const PoolState &ps = pools[size_t(tree.pool_of[row])];
            tree.allocated[row] = Amounts{ps.used(), 0, 0};
            tree.fairshare[row] = Amounts{ps.fairshare, 0, 0};
        }
}

void Engine::count_running(const Snapshot &snap, Evaluation &ev) const {
    ev.running.clear();
    ev.suspended.clear();
    ev.array_running.clear();
    const bool levels = ev.levels;
    for (PoolState &ps : ev.pools) clear_running(ps.queues);
    for (const SnapJob &j : snap.jobs) {
        if (!holds_gpus(j.state)) continue;
        RunningInfo r;
        r.job_id = j.id;
        r.tier = tier_of_qos(j.qos);
        r.gpus = j.gpus;
        r.start = j.start_time;
        r.suspended = j.state == JobState::Suspended;
        r.stays = j.stays;
        r.run_limit = j.run_limit;
        r.array_job_id = j.array_job_id;
        if (r.array_job_id) ev.array_running[r.array_job_id]++;
        if (!j.partitions.empty()) {
            auto it = ev.pool_index.find(j.partitions.front());
            if (it != ev.pool_index.end()) r.pool = it->second;
        }
        if (r.pool >= 0) {
            PoolState &ps = ev.pools[static_cast<size_t>(r.pool)];
            if (preemptible_tier(r.tier)) ps.p_used_by_tier[static_cast<size_t>(r.tier)] += j.gpus;
            if (levels) note_account(*config_, ev, r, j.account, j.cpus, j.mem_mb);
            use_in_queues(r, ps, +1);
        }
        (r.suspended ? ev.suspended : ev.running)[j.id] = r;
    }
}

// A running job's amounts in its pool's queues (an NP job's in the
// pool's own row, queues or not).
void Engine::use_in_queues(const RunningInfo &r, PoolState &ps, int sign) const {
    if (!ps.queues.tree) {
        // The pass counts every running job: a pool without queues is its
        // one row, read only for GPUs, moved here without the tree walk.
        uint64_t &all = ps.queues.allocated[0][kGpu];
        all = sign > 0 ? all + r.gpus : all - std::min<uint64_t>(all, r.gpus);
        if (!preemptible_tier(r.tier)) add_np(ps.queues, 0, Amounts{r.gpus, 0, 0}, 1, sign, true);
        return;
    }
    const int32_t queue = queue_in(ps, r.account);
    const Amounts one{r.gpus, r.cpus, r.mem_mb};
    add_allocated(ps.queues, queue, one, sign);
    if (!preemptible_tier(r.tier)) add_np(ps.queues, queue, one, 1, sign, true);
}

// A heterogeneous job starts whole: a component Slurm holds back (or its
// user or an admin: `user_held`) holds the others back with it (R1 step 0),
// or they would set quota aside first.
static void hold_back_het_jobs(const Snapshot &snap, std::vector<PendingResult> &pending) {
    std::unordered_map<uint32_t, bool> back;  // allocates only if there are any
    for (const SnapJob &j : snap.jobs)
        if (j.het_job_id && j.state == JobState::Pending && j.user_held) back[j.het_job_id] = true;
    for (const PendingResult &r : pending)
        if (r.het_job_id) back[r.het_job_id] |= r.dependent || r.over_limit;
    if (back.empty()) return;
    for (PendingResult &r : pending)
        if (r.het_job_id) r.het_held_back = back[r.het_job_id];
}

void Engine::order_pending(const Snapshot &snap, Evaluation &ev, int64_t /*now*/) {
    ev.pending.clear();
    // Room for all at once: each result is moved in once, not again at
    // every growth of the array.
    ev.pending.reserve(snap.jobs.size());
    ev.pending_index.clear();
    ev.provisional.clear();
    const uint32_t unmanaged_standing = static_cast<uint32_t>(ev.pools.size());
    const bool levels = ev.levels;
    for (const SnapJob &j : snap.jobs) {
        if (j.state != JobState::Pending || j.user_held) continue;
        PendingResult r;
        r.job_id = j.id;
        r.tier = tier_of_qos(j.qos);
        r.gpus = admitted_gpus(j.partitions, gpu_ask(j));
        r.orig_submit = jobs_.find(j.id)->orig_submit;  // noted by evaluate()
        r.pools = managed_pools(j.partitions);
        r.array_tasks = j.array_tasks;
        r.dependent = j.dependent;
        r.over_limit = j.over_limit;
        r.het_job_id = j.het_job_id;
        if (levels) note_account(*config_, ev, r, j.account, j.cpus, j.mem_mb);
        r.group_standing = unmanaged_standing;  // set once fairshare is known
        ev.pending.push_back(std::move(r));
    }
    hold_back_het_jobs(snap, ev.pending);
    tally_pending(ev);
}

void Engine::evaluate(const Snapshot &snap, int64_t now) {
    if (!config_) throw std::logic_error("no configuration loaded");
    try {
        evaluate_pass(snap, now);
    } catch (...) {
        // Half a pass is none: the last one lent it its arrays, and one
        // that failed after taking effect lacks its candidates.
        eval_ = Evaluation{};
        throw;
    }
}

void Engine::evaluate_pass(const Snapshot &snap, int64_t now) {
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
    // The last pass's per-job arrays lend their room to this one (nothing
    // reads them while it is built): one copy of each in memory, not two.
    ev.pending = std::move(eval_.pending);
    ev.pending.clear();
    eval_.pending.clear();
    ev.pending_index = std::move(eval_.pending_index);
    eval_.pending_index.clear();
    eval_.valid = false;
    eval_.pool_index.clear();
    resolve_pools(snap, ev);
    most_node_gpus_.clear();
    for (const SnapPartition &p : snap.partitions) {
        if (!ev.pool_index.count(p.name)) continue;  // quotas count pools' nodes alone
        PartitionGpus &most = most_node_gpus_[p.name];
        for (int32_t n : p.nodes) {
            if (n < 0 || size_t(n) >= snap.nodes.size()) continue;
            const SnapNode &node = snap.nodes[size_t(n)];
            most.most = std::max(most.most, node.gpus);
            if (!node.gpus_explicit) most.most_whole = std::max(most.most_whole, node.gpus);
        }
    }
    build_queue_trees(*config_, snap, ev);
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
    // A cap lives as long as its record is remembered.
    for (auto at = array_caps_.begin(); at != array_caps_.end();)
        at = jobs_.contains(at->first) ? std::next(at) : array_caps_.erase(at);
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
    ev.standings = static_cast<uint32_t>(ev.pools.size());
    if (ev.levels) rank_queues(ev);
    for (PendingResult &r : ev.pending) {
        r.group_standing = job_standing(ev, r);
        mark_preempted(r);
    }
    // Sort compact keys (R1's), then move each result once, in place
    // (cycle by cycle: no second array of results).
    struct Key {
        PendingOrderKey key;
        uint32_t index;
    };
    std::vector<Key> keys;
    keys.reserve(ev.pending.size());
    for (size_t i = 0; i < ev.pending.size(); ++i) {
        const PendingResult &r = ev.pending[i];
        keys.push_back(Key{pending_order_key(r, order_priority(r)), static_cast<uint32_t>(i)});
    }
    std::sort(keys.begin(), keys.end(), [](const Key &a, const Key &b) { return a.key < b.key; });
    for (uint32_t start = 0; start < keys.size(); ++start) {
        // Position p takes the result at keys[p].index; a done position
        // points at itself.
        if (keys[start].index == start) continue;
        PendingResult first = std::move(ev.pending[start]);
        uint32_t p = start;
        while (keys[p].index != start) {
            uint32_t from = keys[p].index;
            ev.pending[p] = std::move(ev.pending[from]);
            keys[p].index = p;
            p = from;
        }
        ev.pending[p] = std::move(first);
        keys[p].index = p;
    }

    ev.pending_index.build(ev.pending.size());
    number_pending(ev);

    ev.valid = true;
    eval_ = std::move(ev);
    admit(eval_);
    build_candidates(eval_);
    rank_victims(eval_);
    nodes_.load(snap);
    // Placement= that Slurm cannot honour here (placement.hpp).
    if (!snap.partitions.empty()) {
        placement_warnings_.clear();
        (void)node_placements(*config_, snap, &placement_warnings_);
    }
    forget_started_preemptors();
    preemptor_cache_.valid = false;
    // Room for a preemptor's figures in each pool, so that preemptable()
    // allocates nothing (after a pass, it may).
    preemptor_cache_.freeable.reserve(eval_.pools.size());
}

void Engine::refresh_running(const Snapshot &snap, int64_t now) {
    // Without a full pass there is no order or demand to keep: a snapshot
    // of running jobs alone must not stand in for one.
    if (!config_ || !eval_.valid) return;
    for (PoolState &ps : eval_.pools) {
        std::fill(ps.p_used_by_tier.begin(), ps.p_used_by_tier.end(), 0u);
    }
    count_running(snap, eval_);
    for (const SnapJob &j : snap.jobs) {
        if (!holds_gpus(j.state)) continue;
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
    for (PoolState &ps : eval_.pools) {
        ps.np_overcount = 0;
        clear_reserved(ps.queues);
    }
    auto reserve = [&](const PendingResult &r) { reserve_admitted(r, eval_.pools); };
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
    nodes_.load(snap);
    eval_.now = now;
    preemptor_cache_.valid = false;
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
            while (tier_end + 1 < n && order_priority(ev.pending[tier_end + 1]) == order_priority(r)) ++tier_end;
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
    ref.account = job.account;
    ref.cpus = job.cpus;
    ref.mem_mb = job.mem_mb;
    ref.nodes = job.node_count;
    ref.nodes_given = job.nodes_given;
    ref.whole_node = job.whole_node;
    ref.gpus_untyped = job.gpus_untyped;
    ref.dependent = job.dependent;
    ref.over_limit = job.over_limit;
    ref.allowed_nodes = job.allowed_nodes;
    ref.run_limit = job.run_limit;
    ref.het_job_id = job.het_job_id;
    return ref;
}

uint32_t Engine::array_running(uint32_t array_job_id) const {
    auto it = eval_.array_running.find(array_job_id);
    return it != eval_.array_running.end() ? it->second : 0;
}

std::vector<std::string> Engine::warnings() const {
    std::vector<std::string> w = config_warnings_;
    w.insert(w.end(), eval_.warnings.begin(), eval_.warnings.end());
    w.insert(w.end(), placement_warnings_.begin(), placement_warnings_.end());
    w.insert(w.end(), weight_warnings_.begin(), weight_warnings_.end());
    return w;
}

size_t Engine::node_weights(const uint32_t *current, uint32_t *want, size_t count) {
    std::copy(current, current + count, want);
    if (!config_ || !nodes_.known() || count != nodes_.nodes().size()) return 0;
    // GPUs of non-preemptible jobs per node: pack gathers them.
    std::vector<uint32_t> np(count, 0);
    for (size_t n = 0; n < count; ++n)
        for (const JobOnNode &j : nodes_.jobs_on(int32_t(n))) {
            auto it = eval_.running.find(j.job_id);
            if (it != eval_.running.end() && !preemptible_tier(it->second.tier)) np[n] += j.gpus;
        }
    weight_warnings_.clear();
    return node_weights_.want(*config_, nodes_, np, current, want, &weight_warnings_);
}

}  // namespace gpupool

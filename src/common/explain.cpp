// Figures behind `gpupool status`, `queue` and `why`, read from the
// engine's last pass with the rules engine.cpp applies (see explain.hpp).
#include "explain.hpp"

#include "placement.hpp"

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
    case WaitReason::OverLimit: return "over_limit";
    case WaitReason::LendingLimit: return "lending_limit";
    case WaitReason::WaitingForGpus: return "waiting_for_gpus";
    case WaitReason::BehindHigherTier: return "behind_higher_tier";
    case WaitReason::WaitingForReclaim: return "waiting_for_reclaim";
    case WaitReason::MinRuntime: return "min_runtime";
    case WaitReason::Held: return "held";
    case WaitReason::NotEligible: return "not_eligible";
    case WaitReason::NotManaged: return "not_managed";
    case WaitReason::NoOneNode: return "no_one_node";
    }
    return "unknown";
}

const char *wait_reason_text(WaitReason r) {
    switch (r) {
    case WaitReason::Starting: return "starting";
    case WaitReason::QuotaFull: return "quota full";
    case WaitReason::QuotaTooSmall: return "never fits the quota";
    case WaitReason::OverLimit: return "at its queue's Limit";
    case WaitReason::LendingLimit: return "kept by a LendingLimit";
    case WaitReason::WaitingForGpus: return "waiting for GPUs";
    case WaitReason::BehindHigherTier: return "behind a higher tier";
    case WaitReason::WaitingForReclaim: return "waiting for a reclaim";
    case WaitReason::MinRuntime: return "protected by MinRuntime";
    case WaitReason::Held: return "held by user/admin";
    case WaitReason::NotEligible: return "not eligible yet";
    case WaitReason::NotManaged: return "not in a gpupool pool";
    case WaitReason::NoOneNode: return "waiting for one node";
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
class PendingWalk {
public:
    PendingWalk(const Ctx &c, const Snapshot &snap, const ExplainInput &in, Explanation &x)
        : c_(c), in_(in), x_(x), trace_(c.engine.admission_trace()), admitted_(c.ev.pools.size()),
          pool_count_(c.ev.pools.size(), 0), free_left_(x.node_sets.size()), free_start_(x.node_sets.size()),
          took_prio_(x.node_sets.size(), -1) {
        for (size_t s = 0; s < x.node_sets.size(); ++s) free_left_[s] = free_start_[s] = x.node_sets[s].free_gpus;
        if (c.engine.nodes().known()) {
            node_left_ = node_start_ = c.engine.nodes().nodes();
            for (const SnapJob &j : snap.jobs)
                if (j.state == JobState::Pending) pending_jobs_.emplace(j.id, &j);
        }
    }

    void run() {
        for (size_t pos = 0; pos < c_.ev.pending.size(); ++pos) {
            const PendingResult &r = c_.ev.pending[pos];
            PendingExplain pe = describe(r, pos);
            reason(r, pe);
            if (detailed(r.job_id)) quota_users(pe);
            tally(r, pe);
            x_.pending.push_back(std::move(pe));
        }
    }

private:
    const Ctx &c_;
    const ExplainInput &in_;
    Explanation &x_;
    const AdmissionTrace trace_;
    std::vector<std::vector<QuotaUser>> admitted_;  // per pool, admitted NP jobs so far
    std::vector<uint32_t> pool_count_;
    std::vector<uint32_t> free_left_, free_start_;  // per node set
    std::vector<int64_t> took_prio_;                // highest tier that took free GPUs
    std::unordered_set<uint32_t> claimed_;          // victims counted for a job ahead
    // Where the engine knows the nodes: free GPUs (CPUs, memory) per node,
    // handed out in the same order, and the pending jobs' asks.
    std::vector<NodeUse> node_left_, node_start_;
    std::unordered_map<uint32_t, const SnapJob *> pending_jobs_;
    static constexpr int32_t kNoNode = -1, kAnyNode = -2;

    bool detailed(uint32_t id) const { return in_.all_details || id == in_.detail_job; }
    int set_of(int p) const { return x_.pools[static_cast<size_t>(p)].node_set; }
    bool fits(int p, uint32_t gpus, const std::vector<uint32_t> &free) const {
        int s = set_of(p);
        return s >= 0 && c_.pool(p).capacity >= gpus && free[static_cast<size_t>(s)] >= gpus;
    }

    // The node of pool p's partition where Slurm would put a one-node
    // job's GPUs (and CPUs and memory) now, in the pool's placement order;
    // kNoNode if none fits; kAnyNode where nodes do not decide here
    // (unknown, a job on several nodes or bound to some): the count does.
    int32_t node_fit(const SnapJob *j, int p, uint32_t gpus, const std::vector<NodeUse> &free) const {
        if (node_left_.empty() || !j || j->node_count > 1 || j->nodes_given || j->whole_node) return kAnyNode;
        const std::vector<int32_t> *in = nodes_of(p);
        if (!in) return kAnyNode;
        const Placement order = placement_of(p);
        int32_t best = kNoNode;
        for (int32_t n : *in) {
            const NodeUse u = for_job(j, n, free[size_t(n)]);
            if (!u.starts_jobs() || u.free_gpus < gpus || !u.room_for(j->cpus, j->mem_mb)) continue;
            if (best == kNoNode || before(order, free[size_t(n)], free[size_t(best)])) best = n;
        }
        return best;
    }
    // Node n's use `u` as job j may have it: Slurm keeps a reservation's
    // nodes and cores from a job that would run past its start
    // (NodeLayout::node_until).
    NodeUse for_job(const SnapJob *j, int32_t n, NodeUse u) const {
        const int64_t until = j && j->run_limit > 0 ? c_.now + j->run_limit : c_.now;
        c_.engine.nodes().node_until(until, n, u);
        return u;
    }
    const std::vector<int32_t> *nodes_of(int p) const {
        return c_.engine.nodes().partition_nodes(c_.pool(p).name);
    }
    // Pack: the fewest free GPUs first; spread (LLN): the most; else
    // Slurm's first fit in node order (Weights as the admin set them).
    Placement placement_of(int p) const {
        const PoolState &ps = c_.pool(p);
        return pool_placement(c_.cfg.pools[size_t(ps.config_index)], c_.engine.nodes().partition_lln(ps.name));
    }
    static bool before(Placement order, const NodeUse &a, const NodeUse &b) {
        if (order == Placement::Pack) return a.free_gpus < b.free_gpus;
        if (order == Placement::Spread) return a.free_gpus > b.free_gpus;
        return false;
    }
    const SnapJob *pending_job(uint32_t id) const {
        auto it = pending_jobs_.find(id);
        return it == pending_jobs_.end() ? nullptr : it->second;
    }
    void take(int32_t node, const SnapJob &j, uint32_t gpus) {
        NodeUse &u = node_left_[size_t(node)];
        u.free_gpus -= std::min(u.free_gpus, gpus);
        u.free_cpus -= std::min(u.free_cpus, j.cpus);
        u.free_mem_mb -= std::min(u.free_mem_mb, j.mem_mb);
    }
    // A job the count starts where nodes do not decide (several nodes,
    // bound to some): its GPUs come off pool p's nodes too, an even share
    // on each of its nodes in placement order (the rest wherever some are
    // free), so that the one-node jobs behind it do not count them free.
    void take_any(int p, const SnapJob *j, uint32_t gpus) {
        const std::vector<int32_t> *in = node_left_.empty() ? nullptr : nodes_of(p);
        if (!in) return;
        std::vector<int32_t> order;
        for (int32_t n : *in)
            if (node_left_[size_t(n)].starts_jobs() && node_left_[size_t(n)].free_gpus > 0) order.push_back(n);
        const Placement how = placement_of(p);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return before(how, node_left_[size_t(a)], node_left_[size_t(b)]); });
        const uint32_t nodes = std::max(1u, j ? j->node_count : 1u);
        const uint32_t share = (gpus + nodes - 1) / nodes;
        for (uint32_t pass = 0; pass < 2; ++pass)
            for (int32_t n : order) {
                if (gpus == 0) return;
                NodeUse &u = node_left_[size_t(n)];
                const uint32_t t = std::min({u.free_gpus, gpus, pass == 0 ? share : gpus});
                u.free_gpus -= t;
                gpus -= t;
            }
    }
    // Free GPUs enough in pool p's node set: are they on p's own nodes
    // (then on no one node that fits the job: NoOneNode)?
    bool on_no_one_node(const SnapJob *j, int p, uint32_t gpus, PendingExplain &pe) const {
        uint64_t total = 0;
        uint32_t most = 0;
        if (const std::vector<int32_t> *in = nodes_of(p))
            for (int32_t n : *in) {
                const NodeUse u = for_job(j, n, node_left_[size_t(n)]);
                if (!u.starts_jobs()) continue;
                total += u.free_gpus;
                most = std::max(most, u.free_gpus);
            }
        if (total < gpus) return false;
        pe.reason = WaitReason::NoOneNode;
        pe.reason_pool = p;
        pe.free_on_nodes = total;
        pe.most_free_on_a_node = most;
        return true;
    }

    // The job, its places, R2's quota lines and (detailed) the jobs ahead.
    PendingExplain describe(const PendingResult &r, size_t pos) {
        PendingExplain pe;
        pe.job_id = r.job_id;
        pe.position = static_cast<int64_t>(pos);
        pe.tier = r.tier;
        pe.gpus = r.gpus;
        pe.tasks = r.task_count();
        for (int p : r.pools) {
            pe.pools.push_back(p);
            pe.pool_position.emplace_back(p, pool_count_[static_cast<size_t>(p)]++);
        }
        pe.quota.assign(trace_.lines.begin() + trace_.first[pos], trace_.lines.begin() + trace_.first[pos + 1]);
        if (detailed(r.job_id)) {
            for (size_t k = 0; k < pos; ++k) {
                bool shares = false;
                for (int p : c_.ev.pending[k].pools) shares |= r.pools.contains(p);
                if (shares) pe.ahead.push_back(c_.ev.pending[k].job_id);
            }
        }
        return pe;
    }

    void reason(const PendingResult &r, PendingExplain &pe) {
        if (r.admission == Admission::Held) {
            pe.reason = r.hold == Hold::QuotaTooSmall  ? WaitReason::QuotaTooSmall
                        : r.hold == Hold::Limit        ? WaitReason::OverLimit
                        : r.hold == Hold::LendingLimit ? WaitReason::LendingLimit
                                                       : WaitReason::QuotaFull;
            pe.reason_pool = r.hold_pool;
            pe.held_with = r.het_held_for;
        } else if (in_.not_eligible.count(r.job_id)) {
            pe.reason = WaitReason::NotEligible;
        } else if (r.pools.empty()) {
            pe.reason = WaitReason::NotManaged;
        } else if (r.gpus == 0) {
            pe.reason = WaitReason::Starting;
            pe.reason_pool = r.pools.front();
        } else {
            gpu_reason(r, pe);
        }
    }

    // A job Slurm may start: does it get free GPUs now, would it but for
    // the jobs ahead, or what may it preempt?
    void gpu_reason(const PendingResult &r, PendingExplain &pe) {
        const uint32_t prio = c_.tier_priority(r.tier);
        // Slurm starts an admitted job only in the pools whose quota
        // admitted it (Engine::start_partitions).
        const SnapJob *j = pending_job(r.job_id);
        int fit = -1, taken = -1, scattered = -1;
        int32_t node = kAnyNode;
        for (int p : r.pools) {
            if (r.refuses(p) || !fits(p, r.gpus, free_left_)) continue;
            const int32_t n = node_fit(j, p, r.gpus, node_left_);
            if (n == kNoNode) {
                if (scattered < 0) scattered = p;
                continue;
            }
            fit = p;
            node = n;
            break;
        }
        if (fit >= 0) {
            pe.reason = WaitReason::Starting;
            pe.reason_pool = fit;
            // An array record may start several tasks; each takes GPUs (on
            // a node that fits it, where nodes decide).
            uint32_t tasks = r.admission == Admission::Quota ? r.admitted_tasks : r.task_count();
            size_t s = static_cast<size_t>(set_of(fit));
            for (uint32_t t = 0; t < std::max(1u, tasks) && free_left_[s] >= r.gpus && node != kNoNode; ++t) {
                free_left_[s] -= r.gpus;
                if (node >= 0) {
                    take(node, *j, r.gpus);
                    node = node_fit(j, fit, r.gpus, node_left_);
                } else {
                    take_any(fit, j, r.gpus);
                }
            }
            took_prio_[s] = std::max<int64_t>(took_prio_[s], prio);
            return;
        }
        // Would it fit but for the jobs ahead of it?
        for (int p : r.pools)
            if (!r.refuses(p) && fits(p, r.gpus, free_start_) && node_fit(j, p, r.gpus, node_start_) != kNoNode) {
                taken = p;
                break;
            }
        if (taken >= 0) {
            pe.reason_pool = taken;
            pe.reason = took_prio_[static_cast<size_t>(set_of(taken))] > int64_t(prio) ? WaitReason::BehindHigherTier
                                                                                      : WaitReason::WaitingForGpus;
            return;
        }
        // Enough free GPUs on its nodes, but on no one node that fits it:
        // preempt/gpupool's victim plan (`why`) says what frees one.
        if (scattered >= 0 && on_no_one_node(j, scattered, r.gpus, pe)) return;
        // No free GPUs: what may it preempt (R4 in its pool, R5 from
        // others' borrowed excess when entitled)?
        pe.reason = WaitReason::WaitingForGpus;
        pe.reason_pool = r.pools.front();
        for (int p : r.pools)
            if (set_of(p) >= 0 && !r.refuses(p) && victims_in(r, p, pe)) return;
    }

    // Victims enough for the job in pool p, as the engine decides who may
    // take whom (Engine::candidacy), reclaim tried before preemption in
    // the pool, those past MinRuntime first.
    bool victims_in(const PendingResult &r, int p, PendingExplain &pe) {
        std::vector<const RunningExplain *> cands;
        std::unordered_map<uint32_t, Verdict> verdict_of;
        std::vector<std::pair<uint32_t, std::string>> refused;  // first of each reason, in the node set
        Freeable freeable;
        c_.engine.freeable(p, preemptor_of(r), c_.now, freeable);
        for (const RunningExplain &v : x_.running) {  // R6 order
            if (!v.preemptible || v.pool < 0 || claimed_.count(v.job_id) || v.gpus == 0) continue;
            auto ri = c_.ev.running.find(v.job_id);
            Verdict verdict;
            if (ri == c_.ev.running.end()) continue;
            if (c_.engine.candidacy(p, preemptor_of(r), freeable, ri->second, verdict)) {
                cands.push_back(&v);
                verdict_of[v.job_id] = verdict;
            } else if (set_of(v.pool) == set_of(p) &&
                       std::none_of(refused.begin(), refused.end(),
                                    [&](const auto &f) { return f.second == verdict.why.c_str(); })) {
                refused.emplace_back(v.job_id, verdict.why.c_str());
            }
        }
        auto reclaims = [&](const RunningExplain *v) { return verdict_of[v->job_id].rule == Rule::Reclaim; };
        auto ref = [&](const RunningExplain *v) {
            const Verdict &vd = verdict_of[v->job_id];
            return VictimRef{v->job_id, vd.rule, v->protected_until, vd.why.c_str(), vd.decided};
        };
        std::stable_sort(cands.begin(), cands.end(), [&](auto *a, auto *b) { return reclaims(a) > reclaims(b); });
        const size_t s = static_cast<size_t>(set_of(p));
        uint64_t have = free_left_[s];
        std::vector<const RunningExplain *> now_free, later, use;
        for (const RunningExplain *v : cands) (v->protected_until ? later : now_free).push_back(v);
        for (const RunningExplain *v : now_free) {
            if (have >= r.gpus) break;
            have += v->gpus;
            use.push_back(v);
        }
        WaitReason why = WaitReason::WaitingForReclaim;
        int64_t until = 0;
        if (have < r.gpus) {
            std::stable_sort(later.begin(), later.end(),
                             [](auto *a, auto *b) { return a->protected_until < b->protected_until; });
            for (const RunningExplain *v : later) {
                if (have >= r.gpus) break;
                have += v->gpus;
                until = v->protected_until;
                use.push_back(v);
            }
            why = WaitReason::MinRuntime;
        }
        if (have < r.gpus) {
            // Said of the first pool tried (the reason's pool).
            if (p == pe.reason_pool) {
                pe.can_free = have;
                for (const RunningExplain *v : cands)
                    pe.may_take.push_back(ref(v));
                pe.not_takeable = std::move(refused);
            }
            return false;
        }
        pe.reason = why;
        pe.reason_pool = p;
        pe.protected_until = until;
        free_left_[s] = 0;
        for (const RunningExplain *v : use) {
            claimed_.insert(v->job_id);
            pe.victims.push_back(ref(v));
        }
        return true;
    }

    // Who holds the quota that holds the job: running NP jobs, then the
    // admitted ones ahead of it.
    void quota_users(PendingExplain &pe) const {
        if (pe.reason_pool < 0 || (pe.reason != WaitReason::QuotaFull && pe.reason != WaitReason::QuotaTooSmall))
            return;
        std::vector<const RunningInfo *> run;
        for (const auto &[id, ri] : c_.ev.running)
            if (ri.pool == pe.reason_pool && !c_.preemptible(ri.tier) && ri.gpus > 0) run.push_back(&ri);
        std::sort(run.begin(), run.end(), [](auto *a, auto *b) { return a->job_id < b->job_id; });
        for (const RunningInfo *ri : run) pe.quota_users.push_back(QuotaUser{ri->job_id, ri->gpus, true});
        for (const QuotaUser &u : admitted_[static_cast<size_t>(pe.reason_pool)]) pe.quota_users.push_back(u);
    }

    void tally(const PendingResult &r, const PendingExplain &pe) {
        // Admitted: a user of each listed pool's quota that admitted it.
        if (r.admission == Admission::Quota)
            for (int p : r.pools)
                if (!r.refuses(p))
                    admitted_[static_cast<size_t>(p)].push_back(QuotaUser{r.job_id, r.admitted_tasks * r.gpus, false});
        for (int p : r.pools) {
            PoolExplain &px = x_.pools[static_cast<size_t>(p)];
            if (r.tier >= 0) {
                px.pending_jobs_by_tier[static_cast<size_t>(r.tier)]++;
                px.pending_gpus_by_tier[static_cast<size_t>(r.tier)] += static_cast<uint32_t>(pe.pending_gpus());
            }
        }
    }
};

// Jobs held by their user or an admin: not ordered, listed after.
void explain_user_held(const Ctx &c, const Snapshot &snap, Explanation &x) {
    std::vector<const SnapJob *> held;
    for (const SnapJob &j : snap.jobs)
        if (j.state == JobState::Pending && j.user_held) held.push_back(&j);
    std::sort(held.begin(), held.end(), [](auto *a, auto *b) { return a->id < b->id; });
    for (const SnapJob *j : held) {
        PendingExplain pe;
        pe.job_id = j->id;
        pe.tier = c.engine.tier_of_qos(j->qos);
        // As admission counts it once released (whole nodes, untyped GPUs).
        pe.gpus = c.engine.counted_gpus(*j);
        pe.tasks = task_count(j->array_tasks);
        for (const std::string &name : j->partitions) {
            auto it = c.ev.pool_index.find(name);
            if (it != c.ev.pool_index.end() &&
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
        uint32_t np_room = ps.quota > ps.np_used() ? ps.quota - ps.np_used() : 0;
        px.p_in_quota = std::min(ps.p_used(), np_room);
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
    PendingWalk(c, snap, in, x).run();
    explain_user_held(c, snap, x);
    return x;
}

}  // namespace gpupool

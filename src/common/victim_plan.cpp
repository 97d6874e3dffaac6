// The victim plan (victim_plan.hpp): per preemptor, once per node layout.
#include "victim_plan.hpp"

#include <algorithm>

#include "engine.hpp"
#include "min_runtime.hpp"

namespace gpupool {

namespace {

const PlanCost kNoCost{UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};

// In the node choice one GPU of room left to preemptible jobs weighs as
// much as one GPU-hour of work the set throws away: room for whole-node
// jobs first, but not at any price in requeued work (doc/evaluation.md,
// "Work lost against room").
constexpr uint64_t kRoomGpuSeconds = 3600;

// A choice's node weight: the room non-preemptible jobs leave there, and
// the work its set loses (0 with PreemptionOrder=oldest, which counts none).
uint64_t room_and_work(const PlanScratch::Choice &c) {
    return uint64_t(c.np_room) * kRoomGpuSeconds + c.cost.gpu_seconds;
}

// The GPUs a job of `node_count` nodes needs on each (rounded up).
uint32_t gpus_per_node(uint32_t gpus, uint32_t node_count) { return (gpus + node_count - 1) / node_count; }

}  // namespace

bool cheapest_set(const std::vector<NodeCandidate> &c, uint32_t need, std::vector<int32_t> &prev,
                  std::vector<PlanCost> &best, std::vector<uint32_t> &out, PlanCost &cost) {
    out.clear();
    if (need == 0) {
        cost = PlanCost{};
        return true;
    }
    // best[k]: the cheapest set freeing k GPUs (need: at least need); one
    // row of prev per candidate says where taking it came from (-1: not).
    const size_t width = size_t(need) + 1;
    best.assign(width, kNoCost);
    best[0] = PlanCost{};
    prev.assign(c.size() * width, -1);
    for (size_t i = 0; i < c.size(); ++i) {
        if (c[i].gpus_here == 0) continue;
        for (size_t k = need; k-- > 0;) {  // downwards: each candidate once
            if (best[k].gpu_seconds == UINT64_MAX) continue;
            const size_t to = std::min<size_t>(need, k + c[i].gpus_here);
            const PlanCost with = best[k] + c[i].cost;
            if (with < best[to]) {
                best[to] = with;
                prev[i * width + to] = static_cast<int32_t>(k);
            }
        }
    }
    if (best[need].gpu_seconds == UINT64_MAX) return false;
    cost = best[need];
    size_t k = need;
    for (size_t i = c.size(); i-- > 0 && k > 0;) {
        if (prev[i * width + k] < 0) continue;
        out.push_back(static_cast<uint32_t>(i));
        k = size_t(prev[i * width + k]);
    }
    std::reverse(out.begin(), out.end());
    return true;
}

VictimPlan &PlanBook::make(uint32_t preemptor, std::string_view partitions, std::string_view allowed_nodes) {
    if (const uint32_t *i = index_.find(preemptor)) {
        std::swap(plans_[*i], plans_[count_ - 1]);  // drop its other plan
        --count_;
        reindex();
    }
    if (count_ == plans_.size()) plans_.emplace_back();
    VictimPlan &p = plans_[count_];
    p.preemptor = preemptor;
    p.partitions.assign(partitions);
    p.allowed_nodes.assign(allowed_nodes);
    p.outcome = VictimPlan::Outcome::Unplanned;
    p.nodes.clear();
    p.planned_nodes = 0;
    p.victims.clear();
    p.group_end.clear();
    p.carried_out = false;
    p.held_elsewhere = false;
    p.carried_at = 0;
    p.consolidation = false;
    p.moved_to.clear();
    index_.try_emplace(preemptor, static_cast<uint32_t>(count_++));
    return p;
}

void PlanBook::hold_nodes(const VictimPlan &plan) {
    // Slurm carries a plan out in the walk that asked for it, under the
    // same lock: only a plan carried out can be waiting for its nodes.
    if (!plan.carried_out) return;
    for (uint32_t i = 0; i < plan.planned_nodes && i < plan.nodes.size(); ++i)
        holder_.try_emplace(static_cast<uint32_t>(plan.nodes[i]), plan.preemptor);
    // A consolidation's moved jobs start again on the free GPUs it counted
    // on: no other preemptor plans those nodes either.
    if (plan.consolidation)
        for (int32_t n : plan.moved_to)
            if (n >= 0) holder_.try_emplace(static_cast<uint32_t>(n), plan.preemptor);
}

void PlanBook::reindex() {
    index_.clear();
    holder_.clear();
    for (size_t i = 0; i < count_; ++i) {
        index_.try_emplace(plans_[i].preemptor, static_cast<uint32_t>(i));
        hold_nodes(plans_[i]);
    }
}

}  // namespace gpupool

namespace gpupool {

const VictimPlan &Engine::victim_plan(const JobRef &preemptor, int64_t now) {
    plans_.begin(nodes_.generation(), now, [&](VictimPlan &p) { return still_waiting(p); });
    const std::string_view bound = preemptor.nodes_given ? preemptor.allowed_nodes : std::string_view();
    if (const VictimPlan *p = plans_.find(preemptor.id))
        if ((p->partitions == preemptor.partitions && p->allowed_nodes == bound) || p->carried_out) return *p;
    VictimPlan &plan = plans_.make(preemptor.id, preemptor.partitions, bound);
    make_plan(preemptor, now, plan);
    return plan;
}

// A plan Slurm carried out holds its nodes while its preemptor is pending
// and the GPUs it freed are not free yet (a victim still there, or its node
// completing): no second round of victims for it, and no other preemptor
// there.  Once they are free it plans again (and finds them free).
bool Engine::still_waiting(VictimPlan &plan) const {
    if (!pending_result(plan.preemptor) || eval_.running.count(plan.preemptor)) return false;
    bool freeing = false;
    for (uint32_t i = 0; i < plan.planned_nodes && i < plan.nodes.size(); ++i)
        freeing |= nodes_.nodes()[size_t(plan.nodes[i])].completing;
    // Its victims on the nodes planned first (fallbacks' were not taken),
    // in the run it preempted: a requeued victim that started again is not
    // freeing anything for it (else its preemptor would wait for that run's
    // end, never planning again).
    const size_t planned = plan.planned_nodes && plan.planned_nodes <= plan.group_end.size()
                               ? plan.group_end[plan.planned_nodes - 1]
                               : 0;
    for (size_t k = 0; k < planned; ++k) {
        if (nodes_.job_nodes(plan.victims[k]).empty()) continue;
        auto run = eval_.running.find(plan.victims[k]);
        if (run == eval_.running.end() || run->second.start <= plan.carried_at) freeing = true;
    }
    if (freeing) plan.outcome = VictimPlan::Outcome::Waiting;
    return freeing;
}

void Engine::apply_plan(uint32_t victim_id, const JobRef &preemptor, int64_t now, Verdict &v) {
    const VictimPlan &plan = victim_plan(preemptor, now);
    const std::string none;
    const std::string &node = plan.nodes.empty() ? none : nodes_.name(plan.nodes.front());
    switch (plan.outcome) {
    case VictimPlan::Outcome::Unplanned: return;
    case VictimPlan::Outcome::Victims:
        if (const uint32_t place = plan.place_of(victim_id)) {
            if (plan.consolidation) moved(plan, place, v);
            return;
        }
        v.why.set("not in the preemptor's victim plan (node %s first)", node.c_str());
        break;
    case VictimPlan::Outcome::FitsFree:
        v.why.set("free GPUs, CPUs and memory on node %s fit the preemptor", node.c_str());
        break;
    case VictimPlan::Outcome::NoNode:
        // Bound to some nodes: the list may miss one Slurm can use (a
        // model gpupool does not read there): the rules alone, never a
        // block (Slurm preempts nothing it cannot start the job with) -
        // unless its nodes are held by other preemptors' plans, which the
        // rules would preempt on a second time.
        if (preemptor.nodes_given && !plan.held_elsewhere) return;
        v.why = "no node can be freed for the preemptor";
        break;
    case VictimPlan::Outcome::Waiting:
        v.why.set("the preemptor waits for the GPUs it freed on node %s", node.c_str());
        break;
    }
    v.allowed = false;
    v.rule = Rule::None;
}

// The nodes of the preemptor's partitions, each once, in node order; of a
// preemptor bound to some nodes, only those it may use (a GPU model, -w,
// -x).  False where a partition's nodes are unknown.  (Nodes other plans
// hold are skipped when choosing: the choices serve every preemptor alike.)
bool Engine::eligible_nodes(const JobRef &preemptor, std::vector<int32_t> &out) {
    out.clear();
    std::vector<uint8_t> &seen = plan_scratch_.seen;
    seen.assign(nodes_.nodes().size(), 0);
    if (preemptor.nodes_given) {
        // Nodes it may not use count as seen.  Names sorted once, each
        // partition node looked up: no map kept per layout.
        std::vector<std::string_view> &allowed = plan_scratch_.bound_to;
        allowed.clear();
        for_each_listed(preemptor.allowed_nodes, [&](std::string_view n) { allowed.push_back(n); });
        std::sort(allowed.begin(), allowed.end());
        for (size_t n = 0; n < seen.size(); ++n)
            seen[n] = !std::binary_search(allowed.begin(), allowed.end(), std::string_view(nodes_.name(int32_t(n))));
        allowed.clear();  // views into the caller's string
    }
    bool known = true;
    for_each_listed(preemptor.partitions, [&](std::string_view part) {
        const std::vector<int32_t> *nodes = nodes_.partition_nodes(part);
        if (!nodes) {
            known = false;
            return;
        }
        for (int32_t n : *nodes) {
            if (n < 0 || size_t(n) >= seen.size() || seen[size_t(n)]) continue;
            seen[size_t(n)] = 1;
            out.push_back(n);
        }
    });
    std::sort(out.begin(), out.end());
    return known;
}

// The running jobs on `node` that R4/R5 let the preemptor take (each
// asked once per plan), in R6 order, into the scratch's candidates.  With
// `by_count`, R5 as a count: also the borrowed jobs past their pool's walk
// prefix (the set is then capped by within_excess).
void Engine::node_candidates(int32_t node, const JobRef &preemptor, int64_t now, bool by_count, bool swaps,
                             bool by_work, bool cpu_only) {
    PlanScratch &s = plan_scratch_;
    s.candidates.clear();
    for (const JobOnNode &j : nodes_.jobs_on(node)) {
        auto it = eval_.running.find(j.job_id);
        // Jobs without GPUs there only where the node's CPUs or memory are short.
        if ((j.gpus == 0 && (!cpu_only || (j.cpus == 0 && j.mem_mb == 0))) || it == eval_.running.end())
            continue;  // (not in running: started since the last look)
        const RunningInfo &ri = it->second;
        enum : uint8_t { kNot, kReclaim, kInPool, kByCount, kSwap };
        const uint8_t *known = s.allowed.find(j.job_id);
        uint8_t how = known ? *known : uint8_t(kNot);
        if (!known) {
            const Verdict v = verdict_for(ri, preemptor, now, false);
            how = !v.allowed ? kNot : v.rule == Rule::InPool ? kInPool : kReclaim;
            if (!v.allowed && may_count(ri)) {
                const Verdict c = verdict_for(counted_in_excess(ri), preemptor, now, false);
                if (c.allowed && c.rule == Rule::Reclaim) {
                    how = kByCount;
                    if (s.excess.size() <= size_t(ri.pool)) s.excess.resize(size_t(ri.pool) + 1, -1);
                    if (s.excess[size_t(ri.pool)] < 0)
                        s.excess[size_t(ri.pool)] =
                            c.decided.amount > c.decided.bound ? int64_t(c.decided.amount - c.decided.bound) : 0;
                }
            }
            if (how == kNot && s.swap_room.any() && may_swap(ri, preemptor, now)) how = kSwap;
            s.allowed.try_emplace(j.job_id, how);
        }
        if (how == kNot || (how == kByCount && !by_count) || (how == kSwap && !swaps)) continue;
        // Reserved cores and GPUs it holds go back to their reservation.
        uint32_t resv_cpus, resv_gpus;
        nodes_.held_reserved(j.job_id, node, s.until, resv_cpus, resv_gpus);
        // GPU-seconds lost is R6's `newest` (least work lost) for a set;
        // with `oldest` the site chose R6's order over work lost.
        const bool work_lost = config_->preemption_order == PreemptionOrder::Newest;
        const uint64_t ran = work_lost && now > ri.start ? uint64_t(now - ri.start) : 0;
        // With `by_work` (Swap=least-work's first try) the work lost alone
        // orders the sets, whoever's jobs they take (no "fewest by swap, then
        // by R4" first).
        s.candidates.push_back(NodeCandidate{j.job_id, j.gpus - std::min(j.gpus, resv_gpus),
                                             PlanCost{how == kSwap && !by_work ? uint64_t(ri.gpus) : 0u,
                                                      how == kInPool && !by_work ? uint64_t(ri.gpus) : 0u,
                                                      uint64_t(ri.gpus) * ran,
                                                      ri.rank},
                                             how == kInPool ? -1 : ri.pool, how == kByCount, how == kSwap,
                                             j.cpus - std::min(j.cpus, resv_cpus), j.mem_mb});
    }
    std::sort(s.candidates.begin(), s.candidates.end(),
              [](const NodeCandidate &a, const NodeCandidate &b) { return a.cost.rank_sum < b.cost.rank_sum; });
}

// Every eligible node's cheapest way to fit the preemptor (free GPUs: no
// victim), then the choice among them.  The choices are kept for the next
// preemptor alike (PlanScratch::made_for).
void Engine::make_plan(const JobRef &preemptor, int64_t now, VictimPlan &plan) {
    PlanScratch &s = plan_scratch_;
    const uint32_t node_count = std::max<uint32_t>(1, preemptor.nodes);
    if (preemptor.gpus == 0) return;  // Unplanned
    const PreemptorCache &pc = cached_preemptor(preemptor);
    PlanScratch::Alike alike;
    alike.valid = true;
    alike.generation = nodes_.generation();
    alike.now = now;
    alike.partitions.assign(preemptor.partitions);
    alike.allowed_nodes.assign(preemptor.nodes_given ? preemptor.allowed_nodes : std::string_view());
    alike.tier = pc.who.tier;
    alike.refused_pool = pc.refused_pool;
    alike.account = pc.who.account;
    alike.gpus = preemptor.gpus;
    alike.cpus = preemptor.cpus;
    alike.nodes = node_count;
    alike.mem_mb = preemptor.mem_mb;
    alike.admitted = pc.admitted;
    alike.whole_node = preemptor.whole_node;
    // Slurm keeps a reservation's nodes or cores from a job that would run
    // past its start, as if it had started (job_test_resv).
    const int64_t until = preemptor.run_limit > 0 ? now + preemptor.run_limit : now;
    alike.ahead = nodes_.ahead_before(until);
    if (alike == s.made_for) {
        ++s.reused;
    } else {
        s.made_for.valid = false;
        s.until = until;
        if (alike.ahead > 0) {
            nodes_.nodes_until(until, s.nodes_until);
            s.nodes = &s.nodes_until;
        } else {
            s.nodes = &nodes_.nodes();
        }
        const std::vector<NodeUse> &nodes = *s.nodes;
        if (!eligible_nodes(preemptor, s.eligible)) return;  // Unplanned
        // Every node of its partitions closed: the rules alone (Slurm
        // preempts nothing it cannot start the job with), never a block.
        if (std::all_of(s.eligible.begin(), s.eligible.end(), [&](int32_t n) { return nodes[size_t(n)].closed; }))
            return;  // Unplanned
        // More GPUs per node than any of its nodes has: Slurm spreads the
        // job over more nodes than it asks for (--gpus=8 without -N on
        // 4-GPU nodes), where the plan cannot say: the rules alone.
        const uint32_t per_node = gpus_per_node(preemptor.gpus, node_count);
        if (std::none_of(s.eligible.begin(), s.eligible.end(),
                         [&](int32_t n) { return nodes[size_t(n)].gpus >= per_node; }))
            return;  // Unplanned
        // Whole nodes (--exclusive): every job there goes, which the nodes'
        // CPUs tell (each running job holds some); where a node that could
        // hold the job has none given, the rules alone.
        if (preemptor.whole_node && std::any_of(s.eligible.begin(), s.eligible.end(), [&](int32_t n) {
                const NodeUse &u = nodes[size_t(n)];
                return u.starts_jobs() && u.gpus >= per_node && u.room_cpus == 0;
            }))
            return;  // Unplanned
        make_choices(preemptor, now, node_count);
        s.made_for = std::move(alike);
    }
    // Fallback nodes only for a preemptor offered victims kFallbacksAfter
    // ago and still pending (CPUs or memory may not fit on its node):
    // 26.05's backfill tests a job with every candidate gone at once, and
    // candidates on other nodes made it skip every second preemptor alike.
    static constexpr int64_t kFallbacksAfter = 30;
    const int64_t first = plans_.first_offered(preemptor.id);
    choose_nodes(preemptor.id, node_count, first >= 0 && now - first >= kFallbacksAfter, plan);
    if (plan.outcome == VictimPlan::Outcome::Victims) plans_.note_offered(preemptor.id, now);
}

// Slurm starts the job on a node only where CPUs and memory fit too: where
// the set's GPUs leave those short, the candidates after it in R6 order that
// free some of what is short join it until they fit; then those of them not
// needed once the others are in leave again, earliest first (a job holding
// 12 CPUs alone frees 8, not the 2-CPU job before it as well).
bool Engine::cover_room(const NodeUse &u, PlanCost &cost) {
    PlanScratch &s = plan_scratch_;
    uint64_t cpus = 0, mem = 0;
    for (uint32_t i : s.set) {
        cpus += s.candidates[i].cpus_here;
        mem += s.candidates[i].mem_here;
    }
    if (u.room_for(s.ask_cpus, s.ask_mem_mb, cpus, mem)) return true;
    const size_t before = s.set.size();
    auto in_set = [&](uint32_t i) { return std::find(s.set.begin(), s.set.end(), i) != s.set.end(); };
    for (uint32_t i = 0; i < s.candidates.size() && !u.room_for(s.ask_cpus, s.ask_mem_mb, cpus, mem); ++i) {
        const NodeCandidate &c = s.candidates[i];
        const bool cpus_short = !u.room_for(s.ask_cpus, 0, cpus, 0);
        const bool mem_short = !u.room_for(0, s.ask_mem_mb, 0, mem);
        if ((!(cpus_short && c.cpus_here) && !(mem_short && c.mem_here)) || in_set(i)) continue;
        s.set.push_back(i);
        cpus += c.cpus_here;
        mem += c.mem_here;
    }
    if (!u.room_for(s.ask_cpus, s.ask_mem_mb, cpus, mem)) return false;
    for (size_t k = before; k < s.set.size();) {
        const NodeCandidate &c = s.candidates[s.set[k]];
        if (u.room_for(s.ask_cpus, s.ask_mem_mb, cpus - c.cpus_here, mem - c.mem_here)) {
            cpus -= c.cpus_here;
            mem -= c.mem_here;
            s.set.erase(s.set.begin() + long(k));
        } else {
            cost = cost + c.cost;
            ++k;
        }
    }
    std::sort(s.set.begin(), s.set.end());
    return true;
}

// R5 as a count: a set may take from a pool past its walk's prefix only
// while the pool stays over its bound until the set's last job from it (the
// one that straddles the line): at most its excess plus that one job.
bool Engine::within_excess(const std::vector<uint32_t> &set) const {
    const PlanScratch &s = plan_scratch_;
    for (uint32_t i : set) {
        const NodeCandidate &c = s.candidates[i];
        if (!c.by_count) continue;
        uint64_t taken = 0, largest = 0;
        for (uint32_t k : set) {
            const NodeCandidate &o = s.candidates[k];
            if (o.reclaimed_pool != c.reclaimed_pool) continue;
            const auto it = eval_.running.find(o.job_id);
            const uint64_t g = it == eval_.running.end() ? o.gpus_here : it->second.gpus;
            taken += g;
            largest = std::max(largest, g);
        }
        if (int64_t(taken - largest) >= s.excess[size_t(c.reclaimed_pool)]) return false;
    }
    return true;
}

// A swap (R5): what it takes from pools within their quota is at most what
// preemptible jobs hold past their pools' quotas once the preemptor starts
// (its own pool's, less its jobs the set takes, and the other pools'),
// which the pools it took from reclaim in turn, plus the GPUs of its
// partition left free then: those too are theirs to take (a LOW job of
// the preemptor's own pool would otherwise take them in the same cycle and
// make the room one cycle later).
bool Engine::within_swap(const std::vector<uint32_t> &set, uint32_t per_node) const {
    const PlanScratch &s = plan_scratch_;
    int64_t swapped = 0, own = 0, freed = 0;
    for (uint32_t i : set) {
        const NodeCandidate &c = s.candidates[i];
        const auto it = eval_.running.find(c.job_id);
        const int64_t g = it == eval_.running.end() ? c.gpus_here : it->second.gpus;
        if (c.swap) swapped += g;
        if (c.reclaimed_pool < 0) own += g;
        freed += c.gpus_here;
    }
    const int64_t left_free = std::max<int64_t>(0, s.free_total + freed - int64_t(per_node));
    return swapped <= std::max<int64_t>(0, s.swap_room.own - own) + s.swap_room.others + left_free;
}

void Engine::make_choices(const JobRef &preemptor, int64_t now, uint32_t node_count) {
    PlanScratch &s = plan_scratch_;
    const uint32_t per_node = gpus_per_node(preemptor.gpus, node_count);
    s.allowed.clear();
    s.excess.clear();
    s.choices.clear();
    s.sets.clear();
    s.dests.clear();
    bool fits_free = false;
    // Its CPUs and memory per node, rounded down: never more than it asks.
    const uint32_t ask_cpus = preemptor.cpus / node_count;
    s.ask_mem_mb = preemptor.mem_mb / node_count;
    s.swap_room = node_count == 1 ? swap_room(preemptor) : SwapRoom{};
    s.free_total = 0;
    // Held nodes count too: the choices serve every preemptor alike in a
    // layout and second, whatever plans are carried out meanwhile.
    for (int32_t node : s.eligible) {
        const NodeUse &u = (*s.nodes)[size_t(node)];
        if (u.starts_jobs()) s.free_total += u.free_gpus;
    }
    for (int32_t node : s.eligible) {
        const NodeUse &u = (*s.nodes)[size_t(node)];
        if (!u.starts_jobs() || u.gpus < per_node) continue;  // Slurm starts nothing on a completing or closed node
        const uint32_t from = static_cast<uint32_t>(s.sets.size());
        PlanCost cost;
        // A whole node: Slurm starts such a job only where no job holds
        // any of its CPUs or GPUs (a suspended job holds GPUs alone).
        const uint32_t gpus_asked = preemptor.whole_node ? u.gpus : per_node;
        s.ask_cpus = preemptor.whole_node ? u.room_cpus : ask_cpus;
        const bool room = u.room_for(s.ask_cpus, s.ask_mem_mb);
        if (u.free_gpus < gpus_asked || !room) {
            const uint32_t need = u.free_gpus < gpus_asked ? gpus_asked - u.free_gpus : 0;
            // The set freeing `need` GPUs at least cost, with what CPUs and
            // memory still need (cover_room).
            auto set_for = [&](bool by_count, bool swaps, bool by_work) {
                node_candidates(node, preemptor, now, by_count, swaps, by_work, !room);
                return cheapest_set(s.candidates, need, s.prev, s.best, s.set, cost) && cover_room(u, cost);
            };
            bool found = false;
            // Swap=least-work: the set that loses least work, swaps among the
            // candidates from the start; the steps below where it fails a bound.
            if (config_->swap == SwapWhen::LeastWork && s.swap_room.any())
                found = set_for(true, true, true) && within_excess(s.set) && within_swap(s.set, gpus_asked);
            if (!found) found = set_for(true, false, false);
            // over a pool's excess: the walk's prefix alone
            if (found && !within_excess(s.set)) found = set_for(false, false, false);
            if (!found && s.swap_room.any())  // nothing else frees the node: a swap
                found = set_for(true, true, false) && within_excess(s.set) && within_swap(s.set, gpus_asked);
            if (!found) continue;
            for (uint32_t i : s.set) {
                s.sets.push_back(s.candidates[i].job_id);
                s.dests.push_back(-1);
            }
        } else {
            fits_free = true;
        }
        s.choices.push_back(
            PlanScratch::Choice{cost, node, from, static_cast<uint32_t>(s.sets.size()), np_room(node), false});
    }
    // Consolidation, where no node fits and R4 and R5 free no node that no
    // preemptor holds (moves come after them: the order below).
    s.ask_cpus = ask_cpus;
    // (Not for whole nodes: every job there would have to move.)
    if (node_count == 1 && config_->consolidation && !fits_free && !preemptor.whole_node &&
        entitled_to_move(preemptor) &&
        std::none_of(s.choices.begin(), s.choices.end(), [&](const PlanScratch::Choice &c) {
            return !c.cost.swapped && plans_.holder(c.node) == 0;
        }))
        consolidation_choices(preemptor, now, per_node);
    // A node free enough first (no victim); then R4 and R5's sets; then a
    // consolidation (nothing lost but the moved jobs' run so far), before
    // a swap (the swapped job waits); within each, fewest GPUs by swap;
    // then the node where non-preemptible jobs leave the least room (they
    // gather, and nodes whole of preemptible jobs stay for jobs of a whole
    // node), each GPU-hour the set loses counting as a GPU more of room;
    // then fewest GPUs by R4 (reclaim before the pool's own lower tiers;
    // first of all with levels or ReclaimTo=fairshare: room_before_own;
    // first everywhere made pools wait under their quota 1.14x to 1.4x as
    // long in the replays, doc/evaluation.md); then the rest of the cost.  (Run:ai moves before it reclaims; in the
    // simulator, on Slurm's timing, that made pools wait under their quota
    // 8 % longer: doc/evaluation.md.)
    auto kind = [](const PlanScratch::Choice &c) { return c.to == c.from ? 0 : c.moves ? 2 : c.cost.swapped ? 3 : 1; };
    const bool room_first = room_before_own(preemptor);
    std::sort(s.choices.begin(), s.choices.end(), [&](const PlanScratch::Choice &a, const PlanScratch::Choice &b) {
        if (kind(a) != kind(b)) return kind(a) < kind(b);
        if (a.cost.swapped != b.cost.swapped) return a.cost.swapped < b.cost.swapped;
        if (!room_first && a.cost.own != b.cost.own) return a.cost.own < b.cost.own;
        if (room_and_work(a) != room_and_work(b)) return room_and_work(a) < room_and_work(b);
        if (a.np_room != b.np_room) return a.np_room < b.np_room;
        if (a.cost.own != b.cost.own) return a.cost.own < b.cost.own;
        if (a.cost < b.cost || b.cost < a.cost) return a.cost < b.cost;
        return a.node < b.node;
    });
}

bool Engine::room_before_own(const JobRef &preemptor) {
    if (config_->reclaim_to != ReclaimTo::Quota) return false;
    const PreemptorCache &pc = cached_preemptor(preemptor);
    if (pc.pools.empty()) return false;
    return !eval_.pools[static_cast<size_t>(pc.pools.front())].queues.tree;
}

// The cheapest nodes no other preemptor holds, one per node the job asks
// for; if free GPUs fit on all of them, no victim; else their victims, and
// with `fallbacks` up to two fallback nodes' too (Slurm goes on to them
// only if CPUs or memory do not fit first).
void Engine::choose_nodes(uint32_t preemptor_id, uint32_t node_count, bool with_fallbacks, VictimPlan &plan) const {
    const uint32_t kFallbacks = with_fallbacks ? 2 : 0;
    const PlanScratch &s = plan_scratch_;
    auto mine = [&](int32_t node) {
        const uint32_t holder = plans_.holder(node);
        return holder == 0 || holder == preemptor_id;
    };
    // A consolidation needs its destinations too.  A node whose free GPUs
    // fit the job is taken whoever holds it: Slurm starts the job there.
    auto free_to_take = [&](const PlanScratch::Choice &c) {
        if (c.to == c.from) return true;
        if (!mine(c.node)) return false;
        if (c.moves)
            for (uint32_t k = c.from; k < c.to; ++k)
                if (!mine(s.dests[k])) return false;
        return true;
    };
    // The first node_count choices free to take decide the outcome.
    bool victims = false, held = false;
    uint32_t taken = 0;
    for (size_t i = 0; i < s.choices.size() && taken < node_count; ++i)
        if (free_to_take(s.choices[i])) {
            victims |= s.choices[i].to > s.choices[i].from;
            ++taken;
        } else {
            held = true;
        }
    if (taken < node_count) {
        plan.outcome = VictimPlan::Outcome::NoNode;
        plan.held_elsewhere = held;
        return;
    }
    const VictimPlan::Outcome outcome = victims ? VictimPlan::Outcome::Victims : VictimPlan::Outcome::FitsFree;
    plan.outcome = outcome;
    if (victims) plan.planned_nodes = node_count;
    uint32_t chosen = 0, fallbacks = 0;
    for (size_t i = 0; i < s.choices.size() && (chosen < node_count || (victims && fallbacks < kFallbacks)); ++i) {
        const PlanScratch::Choice &c = s.choices[i];
        if (!free_to_take(c)) continue;
        if (chosen >= node_count) {
            // A consolidation has no fallback; a fallback is no move.
            if (plan.consolidation) break;
            if (c.to == c.from || c.moves) continue;  // free there already: no fallback victims
            ++fallbacks;
        }
        ++chosen;
        plan.nodes.push_back(c.node);
        if (!victims) continue;
        if (chosen == 1) plan.consolidation = c.moves;
        for (uint32_t k = c.from; k < c.to; ++k)
            if (!plan.place_of(s.sets[k])) {
                plan.victims.push_back(s.sets[k]);
                if (plan.consolidation) plan.moved_to.push_back(s.dests[k]);
            }
        plan.group_end.push_back(static_cast<uint32_t>(plan.victims.size()));
    }
}

// The node's GPUs not held by non-preemptible jobs.
uint32_t Engine::np_room(int32_t node) const {
    uint32_t room = nodes_.nodes()[size_t(node)].gpus;
    for (const JobOnNode &j : nodes_.jobs_on(node)) {
        auto it = eval_.running.find(j.job_id);
        if (it != eval_.running.end() && !preemptible_tier(it->second.tier)) room -= std::min(room, j.gpus);
    }
    return room;
}

// A non-preemptible job within its quota (R2 admitted it).  Run:ai also
// consolidates for a preemptible job within its fairshare; in Slurm a job
// of a higher tier takes the GPUs freed for it in the next pass, and the
// moved jobs lost their run for nothing (10 of the 800 node-loop worlds).
bool Engine::entitled_to_move(const JobRef &preemptor) {
    PreemptorCache &pc = cached_preemptor(preemptor);
    return !pc.pools.empty() && pc.admitted && !preemptible_tier(pc.who.tier);
}

// A job Slurm can move: preemptible, requeued when preempted (a cancelled
// one would be lost, a suspended one keeps its GPUs), free to start on
// other nodes (not SnapJob::stays), all its GPUs on one node, past its
// MinRuntime.  Its pool's partition must be known to place
// it again (place_moved).
bool Engine::movable(const RunningInfo &vi, uint32_t gpus_here, int64_t now) const {
    if (vi.pool < 0 || vi.stays || !preemptible_tier(vi.tier) || gpus_here != vi.gpus) return false;
    const PreemptMode mode = config_->tiers[static_cast<size_t>(vi.tier)].preempt_mode;
    if (mode == PreemptMode::Cancel || mode == PreemptMode::Suspend) return false;
    if (nodes_.job_nodes(vi.job_id).size() != 1) return false;
    return min_runtime_end(eval_.pools[static_cast<size_t>(vi.pool)].min_runtime, vi.start, now) == 0;
}

// Per eligible node that could hold the job (ConsolidationTries at most per
// plan: a plan is made once per node layout and second for each kind of
// preemptor), the movable jobs there
// that free enough for the preemptor at least work lost (R6's `newest`;
// then R6's order), if every one of them can start again at once on
// another node of its partition (place_moved).
void Engine::consolidation_choices(const JobRef &preemptor, int64_t now, uint32_t per_node) {
    PlanScratch &s = plan_scratch_;
    uint32_t tries = config_->consolidation_tries;
    const bool work_lost = config_->preemption_order == PreemptionOrder::Newest;
    for (int32_t node : s.eligible) {
        if (tries == 0) break;
        const NodeUse &u = (*s.nodes)[size_t(node)];
        if (!u.starts_jobs() || u.gpus < per_node || u.free_gpus >= per_node) continue;
        --tries;
        s.candidates.clear();
        for (const JobOnNode &j : nodes_.jobs_on(node)) {
            auto it = eval_.running.find(j.job_id);
            if (j.gpus == 0 || it == eval_.running.end() || j.job_id == preemptor.id) continue;
            const RunningInfo &ri = it->second;
            if (!movable(ri, j.gpus, now)) continue;
            // One holding reserved cores or GPUs would free less than it
            // takes elsewhere: not moved.
            uint32_t resv_cpus, resv_gpus;
            nodes_.held_reserved(j.job_id, node, s.until, resv_cpus, resv_gpus);
            if (resv_cpus || resv_gpus) continue;
            const uint64_t ran = work_lost && now > ri.start ? uint64_t(now - ri.start) : 0;
            s.candidates.push_back(
                NodeCandidate{j.job_id, j.gpus, PlanCost{0, 0, uint64_t(j.gpus) * ran, ri.rank}, -1, false, false,
                              j.cpus, j.mem_mb});
        }
        std::sort(s.candidates.begin(), s.candidates.end(),
                  [](const NodeCandidate &a, const NodeCandidate &b) { return a.cost.rank_sum < b.cost.rank_sum; });
        PlanCost cost;
        if (!cheapest_set(s.candidates, per_node - u.free_gpus, s.prev, s.best, s.set, cost) ||
            !cover_room(u, cost))
            continue;
        const uint32_t from = static_cast<uint32_t>(s.sets.size());
        if (!place_moved(node, s.set, now)) continue;
        s.choices.push_back(
            PlanScratch::Choice{cost, node, from, static_cast<uint32_t>(s.sets.size()), np_room(node), true});
    }
}

// Places the set's jobs (candidates on `from_node`) on free GPUs of other
// nodes of their partitions, as Slurm starts them again: in its order
// (tier, then original submit time, which job ids follow), each on the
// first node in node order where its GPUs, CPUs and memory fit (equal node
// Weights).  All placed: appended to the scratch's sets and dests.
bool Engine::place_moved(int32_t from_node, const std::vector<uint32_t> &set, int64_t now) {
    PlanScratch &s = plan_scratch_;
    const std::vector<NodeUse> &nodes = nodes_.nodes();
    s.dest_free.resize(nodes.size());
    // Not a node another preemptor holds (its victims' or its moved jobs').
    for (size_t n = 0; n < nodes.size(); ++n)
        s.dest_free[n] = !nodes[n].starts_jobs() || plans_.holder(int32_t(n)) ? 0 : nodes[n].free_gpus;
    s.dest_free[size_t(from_node)] = 0;
    s.dest_room.assign(nodes.begin(), nodes.end());
    std::vector<uint32_t> &order = s.order;
    order.assign(set.begin(), set.end());
    auto priority = [&](uint32_t i) { return tier_priority(eval_.running.find(s.candidates[i].job_id)->second.tier); };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        if (priority(a) != priority(b)) return priority(a) > priority(b);
        return s.candidates[a].job_id < s.candidates[b].job_id;
    });
    const size_t first = s.sets.size();
    for (uint32_t i : order) {
        const NodeCandidate &c = s.candidates[i];
        const RunningInfo &ri = eval_.running.find(c.job_id)->second;
        const std::vector<int32_t> *part = nodes_.partition_nodes(eval_.pools[static_cast<size_t>(ri.pool)].name);
        int32_t to = -1;
        // Started again, it would run its whole time limit: reservations
        // starting before then keep their nodes, cores and GPUs from it.
        const int64_t until = ri.run_limit > 0 ? now + ri.run_limit : now;
        if (part)
            for (int32_t m : *part) {
                if (m < 0 || size_t(m) >= nodes.size() || m == from_node) continue;
                NodeUse later = nodes[size_t(m)];
                nodes_.node_until(until, m, later);
                const uint32_t kept_gpus = nodes[size_t(m)].free_gpus - later.free_gpus;
                const uint32_t kept_cpus = nodes[size_t(m)].free_cpus - later.free_cpus;
                NodeUse room = s.dest_room[size_t(m)];
                room.free_cpus -= std::min(room.free_cpus, kept_cpus);
                if (!later.closed && s.dest_free[size_t(m)] >= uint64_t(c.gpus_here) + kept_gpus &&
                    room.room_for(c.cpus_here, c.mem_here)) {
                    to = m;
                    break;
                }
            }
        if (to < 0) {
            s.sets.resize(first);
            s.dests.resize(first);
            return false;
        }
        s.dest_free[size_t(to)] -= c.gpus_here;
        NodeUse &room = s.dest_room[size_t(to)];
        room.free_cpus -= std::min(room.free_cpus, c.cpus_here);
        room.free_mem_mb -= std::min(room.free_mem_mb, c.mem_here);
        s.sets.push_back(c.job_id);
        s.dests.push_back(to);
    }
    return true;
}

// A planned move: allowed, by rule Consolidation.
void Engine::moved(const VictimPlan &plan, uint32_t place, Verdict &v) const {
    const int32_t to = place <= plan.moved_to.size() ? plan.moved_to[place - 1] : -1;
    v.allowed = true;
    v.rule = Rule::Consolidate;
    v.why.set("consolidation: it can start again at once on node %s, and the preemptor then fits on node %s",
              to >= 0 ? nodes_.name(to).c_str() : "?", nodes_.name(plan.nodes.front()).c_str());
}

uint32_t Engine::plan_rank(uint32_t preemptor_id, uint32_t victim_id) const {
    // Past every plan's length: unplanned jobs keep R6's order among themselves.
    static constexpr uint32_t kAfterPlan = 1u << 20;
    if (const VictimPlan *p = plans_.find(preemptor_id))
        if (uint32_t place = p->place_of(victim_id)) return place;
    const uint32_t r = victim_rank(victim_id);
    return r > UINT32_MAX - kAfterPlan ? UINT32_MAX : r + kAfterPlan;
}

void Engine::note_preempted(uint32_t preemptor_id, uint32_t victim_id) {
    VictimPlan *p = plans_.find(preemptor_id);
    // The node its plan frees first (0 where it had none: node usage unknown).
    const bool planned = p && p->outcome == VictimPlan::Outcome::Victims && !p->nodes.empty();
    preempted_first_.try_emplace(preemptor_id, planned ? static_cast<uint32_t>(p->nodes.front()) : 0u);
    if (!p || p->carried_out || !p->place_of(victim_id)) return;
    preempted_in_.try_emplace(preemptor_id, p->partitions);
    p->carried_out = true;
    p->carried_at = plans_.now();
    plans_.hold_nodes(*p);
}

// After a full pass: a job that preempted and is no longer pending (it
// started, or it went) goes back to its place by R1.
void Engine::forget_started_preemptors() {
    std::vector<uint32_t> &gone = plan_scratch_.set;
    gone.clear();
    preempted_first_.for_each([&](uint32_t id, uint32_t) {
        if (eval_.pending_index.find(id) == IdIndex::kNone) gone.push_back(id);
    });
    for (uint32_t id : gone) {
        preempted_first_.erase(id);
        preempted_in_.erase(id);
    }
    plans_.forget_left([&](uint32_t id) { return eval_.pending_index.find(id) != IdIndex::kNone; });
}

}  // namespace gpupool

// The replay's nodes: whole GPUs taken on the node the partition's
// placement chooses (first fit, pack by node Weights, or least loaded), and
// the preemption search on a copy of the nodes (cons_tres _run_now).  The
// rules are at the top of replay.cpp.
#include "placement.hpp"
#include "replay_state.hpp"

namespace gpupool::sim::replay_detail {

// --- nodes ---------------------------------------------------------------

// A node a preemptor waits on (kill_delay), or one the main walk has
// blocked, offers no free GPUs to others.
void Replay::node_changed(int32_t node) {
    const uint32_t g = offered(static_cast<size_t>(node));
    for (const auto &[p, pos] : node_parts_[static_cast<size_t>(node)]) trees_[static_cast<size_t>(p)].set(pos, g);
}

// --- placement -------------------------------------------------------------

// Which partitions pack or spread (ReplayOptions::placement), which nodes'
// Weights follow their free GPUs (as NodeWeights sets them live: a node of
// two GPUs or more under a packing pool and no spreading one), and how
// each partition then chooses.
void Replay::setup_placement() {
    using P = ReplayOptions::Placement;
    const size_t nparts = cluster_.partitions.size(), nnodes = cluster_.nodes.size();
    enum Wish : uint8_t { None, Pack, Spread };
    std::vector<uint8_t> wish(nparts, None);
    for (size_t p = 0; p < nparts; ++p) {
        const SimPartition &sp = cluster_.partitions[p];
        const int32_t pool = w_.pool_of_part[p];
        switch (w_.options.placement) {
        case P::Pack: wish[p] = Pack; break;
        case P::Spread: wish[p] = Spread; break;
        case P::First:
        case P::BestFit: wish[p] = sp.lln ? Spread : None; break;
        case P::Conf:
            if (kind_ == PolicyKind::Gpupool && pool >= 0) {
                const Placement pl = pool_placement(config_.pools[size_t(pool)], sp.lln);
                wish[p] = pl == Placement::Pack ? Pack : pl == Placement::Spread ? Spread : None;
            } else
                wish[p] = sp.lln ? Spread : None;
            break;
        }
    }
    node_packs_.assign(nnodes, 0);
    std::vector<uint8_t> spread(nnodes, 0);
    for (size_t p = 0; p < nparts; ++p)
        for (uint32_t n : cluster_.partitions[p].nodes) {
            if (wish[p] == Pack) node_packs_[n] = 1;
            if (wish[p] == Spread) spread[n] = 1;
        }
    // As NodeWeights: no Weight moves unless a node of two GPUs or more packs.
    bool any = false;
    for (size_t n = 0; n < nnodes; ++n) {
        node_packs_[n] &= uint8_t(!spread[n]);
        any |= node_packs_[n] && cluster_.nodes[n].gpus >= 2;
    }
    if (!any) node_packs_.assign(nnodes, 0);
    // Ranks of the admin's Weights: nodes come in Weight order.
    base_rank_.assign(nnodes, 0);
    for (size_t n = 1; n < nnodes && cluster_.weights.size() == nnodes; ++n)
        base_rank_[n] = base_rank_[n - 1] + (cluster_.weights[n] != cluster_.weights[n - 1] ? 1 : 0);
    node_np_.assign(nnodes, 0);
    uint32_t most = 0;
    for (const SimNode &n : cluster_.nodes) most = std::max(most, n.gpus);
    key_mod_ = most + 1;
    // NodeWeights::pack_key: nodes this large leave room for the free GPUs alone.
    if (uint64_t(key_mod_) * key_mod_ > NodeWeights::kScale) key_mod_ = 1;
    key_.assign(nnodes, 0);
    for (size_t n = 0; n < nnodes; ++n) key_[n] = pack_key(n);
    key_dirty_.assign(nnodes, 0);
    part_choice_.assign(nparts, Choice::First);
    buckets_.assign(nparts, {});
    for (size_t p = 0; p < nparts; ++p) {
        bool packs = false;
        for (uint32_t n : cluster_.partitions[p].nodes) packs |= node_packs_[n] != 0;
        if (wish[p] == Spread) {
            part_choice_[p] = Choice::Spread;
        } else if (w_.options.placement == P::BestFit) {
            part_choice_[p] = Choice::BestFit;
        } else if (packs) {
            part_choice_[p] = Choice::Keyed;
            buckets_[p].resize(nnodes ? base_rank_.back() + 1 : 0);
            for (KeyBuckets &b : buckets_[p])
                b.by_key.resize(key_mod_ == 1 ? size_t(most) + 1 : size_t(key_mod_) * key_mod_);
        }
    }
    for (size_t n = 0; n < nnodes; ++n) place_key(n, true);
}

// A packing node's order under NodeWeights: first the nodes whose GPUs
// non-preemptible jobs hold most, then the fewest free GPUs.
uint32_t Replay::pack_key(size_t node) const {
    const uint32_t gpus = cluster_.nodes[node].gpus;
    if (key_mod_ == 1) return free_[node];  // nodes too large for both (NodeWeights::pack_key)
    return (gpus - std::min(gpus, node_np_[node])) * key_mod_ + free_[node];
}

// j's GPUs of a non-preemptible tier on its nodes, counted in or out
// (before its GPUs are given back).
void Replay::note_np_gpus(uint32_t j, int sign) {
    const SimJobState &s = w_.jobs[j];
    if (w_.tiers[size_t(s.tier)].preemptible) return;
    auto add = [&](int32_t node, uint32_t g) {
        uint32_t &v = node_np_[size_t(node)];
        v = sign > 0 ? v + g : v - std::min(v, g);
    };
    if (s.node >= 0)
        add(s.node, s.gpus);
    else if (s.multi != UINT32_MAX)
        for (const auto &[node, g] : w_.multi_alloc[s.multi]) add(node, g);
}

uint32_t Replay::offered(size_t node) const {
    if (!node_blocked_.empty() && node_blocked_[node]) return 0;
    return reserved_by_.empty() || reserved_by_[node] == kNoJob ? free_[node] : 0;
}

// The node's place in a keyed partition's buckets, added or taken out.
void Replay::place_key(size_t node, bool add) {
    for (const auto &[p, pos] : node_parts_[node]) {
        if (part_choice_[size_t(p)] != Choice::Keyed) continue;
        KeyBuckets &b = buckets_[size_t(p)][base_rank_[node]];
        std::set<uint32_t> &s =
            node_packs_[node] ? b.by_key[std::min<size_t>(key_[node], b.by_key.size() - 1)] : b.level;
        if (add)
            s.insert(pos);
        else
            s.erase(pos);
    }
}

// Before a walk, as the plugin sets Weights after each pass: the free GPUs
// of packing nodes that jobs started on since.
void Replay::refresh_keys() {
    for (uint32_t n : dirty_nodes_) {
        place_key(n, false);
        key_[n] = pack_key(n);
        place_key(n, true);
        key_dirty_[n] = 0;
    }
    dirty_nodes_.clear();
}

// Where cons_tres puts a one-node job of g GPUs in partition pi (a node
// with room exists): the lowest Weight, then first in partition order, or
// the least loaded (LLN).  A position in the partition.
size_t Replay::choose_node(size_t pi, uint32_t g) const {
    const std::vector<uint32_t> &nodes = cluster_.partitions[pi].nodes;
    switch (part_choice_[pi]) {
    case Choice::First: return trees_[pi].find(0, g);
    case Choice::BestFit: {
        // 22.05's _eval_nodes: runs of consecutive nodes (cluster order) with
        // room and one Weight; the lowest Weight, then the shortest run
        // (fewest CPUs: a one-node job counts the same CPUs on each), then
        // the first; its first node.  A full node between splits a run.
        size_t best = SIZE_MAX, best_len = 0;
        for (size_t i = 0; i < nodes.size();) {
            if (offered(nodes[i]) < g) {
                ++i;
                continue;
            }
            const size_t start = i;
            while (i + 1 < nodes.size() && nodes[i + 1] == nodes[i] + 1 && offered(nodes[i + 1]) >= g &&
                   base_rank_[nodes[i + 1]] == base_rank_[nodes[start]])
                ++i;
            const size_t len = ++i - start;
            if (best == SIZE_MAX || base_rank_[nodes[start]] < base_rank_[nodes[best]] ||
                (base_rank_[nodes[start]] == base_rank_[nodes[best]] && len < best_len)) {
                best = start;
                best_len = len;
            }
        }
        return best;
    }
    case Choice::Spread: {
        if (nodes.empty() || base_rank_[nodes.front()] == base_rank_[nodes.back()])
            return trees_[pi].find(0, trees_[pi].max());
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < nodes.size(); ++i)
            if (offered(nodes[i]) >= g &&
                (best == SIZE_MAX || node_order(pi, nodes[i], offered(nodes[i])) <
                                         node_order(pi, nodes[best], offered(nodes[best]))))
                best = i;
        return best;
    }
    case Choice::Keyed:
        for (const KeyBuckets &b : buckets_[pi]) {
            for (uint32_t pos : b.level)
                if (offered(nodes[pos]) >= g) return pos;
            // A packing node offers no more free GPUs than its key says:
            // keys of fewer cannot hold the job.
            for (size_t k = 0; k < b.by_key.size(); ++k) {
                if ((key_mod_ == 1 ? k : k % key_mod_) < g) continue;
                for (uint32_t pos : b.by_key[k])
                    if (offered(nodes[pos]) >= g) return pos;
            }
        }
        return SIZE_MAX;
    }
    return SIZE_MAX;
}

// The order cons_tres tries nodes in for a job of partition pi, a node
// offering `avail` GPUs (lower first).
uint64_t Replay::node_order(size_t pi, size_t node, uint32_t avail) const {
    const uint64_t pos = uint64_t(part_pos_[pi][node]);
    const uint64_t rank = uint64_t(base_rank_[node]) << 40;
    switch (part_choice_[pi]) {
    case Choice::First:
    case Choice::BestFit: return pos;  // what a prefix frees fits one node, as a rule
    case Choice::Spread: return rank | (uint64_t(0xFFFF - std::min<uint32_t>(avail, 0xFFFF)) << 24) | pos;
    case Choice::Keyed: return rank | (uint64_t(node_packs_[node] ? std::min<uint32_t>(key_[node], 0xFFFF) : 0) << 24) | pos;
    }
    return pos;
}

bool Replay::fits_free(int32_t p, uint32_t g) const {
    const size_t pi = static_cast<size_t>(p);
    if (cluster_.partitions[pi].nodes.empty()) return false;
    if (g <= part_max_node_[pi]) return trees_[pi].max() >= g;
    uint32_t held = 0;  // free GPUs of the partition on reserved or blocked nodes
    for (const auto &[node, job] : reservations_)
        if (w_.part_has_node[pi][static_cast<size_t>(node)]) held += free_[static_cast<size_t>(node)];
    for (int32_t node : blocked_nodes_) {
        const size_t n = static_cast<size_t>(node);
        if (w_.part_has_node[pi][n] && (reserved_by_.empty() || reserved_by_[n] == kNoJob)) held += free_[n];
    }
    return part_free_[pi] - held >= g;
}

// Backfill plans a preemptor's start on the nodes its victims free, and
// the main scheduler stops at it: no other job starts there meanwhile.
void Replay::reserve(uint32_t j, const std::vector<int32_t> &nodes) {
    if (reserved_by_.empty()) reserved_by_.assign(free_.size(), kNoJob);
    for (int32_t node : nodes) {
        if (reserved_by_[static_cast<size_t>(node)] != kNoJob) continue;
        reserved_by_[static_cast<size_t>(node)] = j;
        reservations_.emplace_back(node, j);
        node_changed(node);
    }
}

// Would g GPUs fit partition p's nodes not blocked in this walk, were they
// idle?  Slurm fails a partition (fail_by_part) only for a job that would
// (ESLURM_NODES_BUSY); one that would not (ESLURM_REQUESTED_NODE_CONFIG_-
// UNAVAILABLE, ESLURM_NODE_NOT_AVAIL) leaves it and its nodes open.
bool Replay::fits_idle(int32_t p, uint32_t g) const {
    const size_t pi = static_cast<size_t>(p);
    const bool one_node = g <= part_max_node_[pi];
    uint64_t sum = 0;
    for (uint32_t node : cluster_.partitions[pi].nodes) {
        if (!node_blocked_.empty() && node_blocked_[node]) continue;
        const uint32_t gpus = cluster_.nodes[node].gpus;
        if (one_node && gpus >= g) return true;
        sum += gpus;
    }
    return !one_node && sum >= g;
}

// Slurm's main scheduler, at a partition's first job that does not fit,
// takes that partition's nodes out of the cycle for every later job, of
// any partition (job_scheduler.c, fail_by_part: 22.05 to 26.05).
void Replay::block_nodes_of(int32_t p) {
    for (uint32_t node : cluster_.partitions[static_cast<size_t>(p)].nodes) block_node(static_cast<int32_t>(node));
}

void Replay::block_node(int32_t node) {
    if (node_blocked_.empty()) node_blocked_.assign(free_.size(), 0);
    if (node_blocked_[static_cast<size_t>(node)]) return;
    node_blocked_[static_cast<size_t>(node)] = 1;
    blocked_nodes_.push_back(node);
    node_changed(node);
}

void Replay::unblock_nodes() {
    for (int32_t node : blocked_nodes_) {
        node_blocked_[static_cast<size_t>(node)] = 0;
        node_changed(node);
    }
    blocked_nodes_.clear();
}

void Replay::unreserve(uint32_t j) {
    for (size_t i = 0; i < reservations_.size();) {
        if (reservations_[i].second != j) {
            ++i;
            continue;
        }
        const int32_t node = reservations_[i].first;
        reserved_by_[static_cast<size_t>(node)] = kNoJob;
        reservations_[i] = reservations_.back();
        reservations_.pop_back();
        node_changed(node);
    }
}

void Replay::allocate(uint32_t j, int32_t p) {
    SimJobState &s = w_.jobs[j];
    const size_t pi = static_cast<size_t>(p);
    const std::vector<uint32_t> &nodes = cluster_.partitions[pi].nodes;
    auto take = [&](int32_t node, uint32_t g) {
        free_[static_cast<size_t>(node)] -= g;
        if (node_packs_[size_t(node)] && !key_dirty_[size_t(node)]) {
            key_dirty_[size_t(node)] = 1;
            dirty_nodes_.push_back(uint32_t(node));
        }
        for (const auto &[q, pos] : node_parts_[static_cast<size_t>(node)]) part_free_[static_cast<size_t>(q)] -= g;
        node_changed(node);
    };
    if (s.gpus <= part_max_node_[pi]) {
        size_t pos = choose_node(pi, s.gpus);
        const int32_t node = static_cast<int32_t>(nodes[pos]);
        s.node = node;
        take(node, s.gpus);
        return;
    }
    std::vector<std::pair<int32_t, uint32_t>> alloc;
    uint32_t left = s.gpus;
    size_t pos = 0;
    while (left > 0) {
        pos = trees_[pi].find(pos, 1);
        const int32_t node = static_cast<int32_t>(nodes[pos]);
        const uint32_t g = std::min(left, free_[static_cast<size_t>(node)]);
        alloc.emplace_back(node, g);
        take(node, g);
        left -= g;
        ++pos;
    }
    s.node = -1;
    if (!free_multi_.empty()) {
        s.multi = free_multi_.back();
        free_multi_.pop_back();
        w_.multi_alloc[s.multi] = std::move(alloc);
    } else {
        s.multi = static_cast<uint32_t>(w_.multi_alloc.size());
        w_.multi_alloc.push_back(std::move(alloc));
    }
}

// Freed GPUs raise a packing node's key at once (the plugin's pass after
// a job end), so a node never offers more than its key.
void Replay::give(int32_t node, uint32_t g) {
    free_[static_cast<size_t>(node)] += g;
    if (node_packs_[size_t(node)]) {
        place_key(size_t(node), false);
        key_[size_t(node)] = pack_key(size_t(node));
        place_key(size_t(node), true);
    }
    for (const auto &[q, pos] : node_parts_[static_cast<size_t>(node)]) part_free_[static_cast<size_t>(q)] += g;
    node_changed(node);
}

void Replay::release(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    if (s.node >= 0) {
        give(s.node, s.gpus);
        s.node = -1;
    } else if (s.multi != UINT32_MAX) {
        for (const auto &[node, g] : w_.multi_alloc[s.multi]) give(node, g);
        w_.multi_alloc[s.multi].clear();
        free_multi_.push_back(s.multi);
        s.multi = UINT32_MAX;
    }
}

// A preempted job's GPUs stay taken until its kill ends at t: its nodes
// are completing until then (kill_delay).
void Replay::hold_until(uint32_t j, int64_t t) {
    SimJobState &s = w_.jobs[j];
    std::vector<std::pair<int32_t, uint32_t>> held;
    if (s.node >= 0) {
        held.emplace_back(s.node, s.gpus);
        s.node = -1;
    } else if (s.multi != UINT32_MAX) {
        held = std::move(w_.multi_alloc[s.multi]);
        w_.multi_alloc[s.multi].clear();
        free_multi_.push_back(s.multi);
        s.multi = UINT32_MAX;
    }
    for (const auto &[node, g] : held) w_.completing_gpus[static_cast<size_t>(node)] += g;
    completing_.emplace(t, std::move(held));
}

// --- preemption on a copy of the nodes --------------------------------------

// Take the shortest prefix of the policy's candidates that lets j fit in
// partition p, as cons_tres does on a copy of the nodes; `victims` gets
// those of the prefix on the nodes j then gets.
bool Replay::preempt_for(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims) {
    if (!find_victims(j, p, t, victims)) return false;
    if (!policy_->view_stale()) return true;
    // Found on an old view: decide on a fresh one.
    policy_->refresh_view(t);
    return find_victims(j, p, t, victims);
}

// In a backfill cycle j preempts nothing on a node planned for a job before
// it: at a kill's end (plan_at_kill_end), or where a preemptor of this
// cycle preempted (backfill reserves the node its will-run test chose,
// whole, for the rest of the cycle, and _start_job excludes it).  Seen
// live with DebugFlags=Backfill: each preemptor of a cycle finds one node
// fewer "avail" (doc/evaluation.md).
bool Replay::planned_for_other(size_t node, uint32_t j) const {
    if (!backfill_walk_) return false;
    if (!node_blocked_.empty() && node_blocked_[node]) return true;
    return !reserved_by_.empty() && reserved_by_[node] != kNoJob && reserved_by_[node] != j;
}

bool Replay::find_victims(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &victims) {
    victims.clear();
    std::vector<uint32_t> &cands = cand_scratch_;
    policy_->candidates(j, p, t, cands);
    result_.stats.preemption_searches++;
    if (cands.empty()) return false;
    const size_t pi = static_cast<size_t>(p);
    const uint32_t g = w_.jobs[j].gpus;
    const bool single = g <= part_max_node_[pi];
    std::unordered_map<int32_t, uint32_t> extra;  // node -> GPUs the prefix frees
    uint64_t freed_in_part = 0;
    size_t prefix = 0;
    int32_t chosen = -1;  // single node: the node j gets
    for (; prefix < cands.size(); ++prefix) {
        const SimJobState &v = w_.jobs[cands[prefix]];
        auto add = [&](int32_t node, uint32_t gpus) {
            if (!w_.part_has_node[pi][static_cast<size_t>(node)]) return;
            if (single && planned_for_other(static_cast<size_t>(node), j)) return;
            extra[node] += gpus;
            freed_in_part += gpus;
        };
        if (v.node >= 0)
            add(v.node, v.gpus);
        else if (v.multi != UINT32_MAX)
            for (const auto &[node, gg] : w_.multi_alloc[v.multi]) add(node, gg);
        if (single) {
            // Free GPUs alone fit nowhere: only a node the prefix freed
            // GPUs on can; the first one in the partition's node order.
            uint64_t best = UINT64_MAX;
            for (const auto &[node, gg] : extra) {
                const uint32_t avail = free_[static_cast<size_t>(node)] + gg;
                if (avail < g) continue;
                const uint64_t order = node_order(pi, size_t(node), avail);
                if (order < best) {
                    best = order;
                    chosen = node;
                }
            }
            if (chosen >= 0) break;
        } else if (part_free_[pi] + freed_in_part >= g) {
            break;
        }
    }
    if (prefix == cands.size()) return false;
    // Nodes j gets on the copy.
    std::unordered_set<int32_t> nodes;
    if (single) {
        nodes.insert(chosen);
    } else {
        uint32_t left = g;
        for (uint32_t node : cluster_.partitions[pi].nodes) {
            if (left == 0) break;
            auto it = extra.find(static_cast<int32_t>(node));
            uint32_t avail = free_[node] + (it != extra.end() ? it->second : 0);
            if (avail == 0) continue;
            nodes.insert(static_cast<int32_t>(node));
            left -= std::min(left, avail);
        }
    }
    for (size_t k = 0; k <= prefix; ++k) {
        const SimJobState &v = w_.jobs[cands[k]];
        bool on = false;
        if (v.node >= 0)
            on = nodes.count(v.node) != 0;
        else if (v.multi != UINT32_MAX)
            for (const auto &[node, gg] : w_.multi_alloc[v.multi]) on |= nodes.count(node) != 0;
        if (on) victims.push_back(cands[k]);
    }
    return true;
}

}  // namespace gpupool::sim::replay_detail

// The replay's nodes: whole GPUs taken first fit in partition order, and
// the preemption search on a copy of the nodes (cons_tres _run_now).  The
// rules are at the top of replay.cpp.
#include "replay_state.hpp"

namespace gpupool::sim::replay_detail {

// --- nodes ---------------------------------------------------------------

// A node a preemptor waits on (kill_delay) offers no free GPUs to others.
void Replay::node_changed(int32_t node) {
    const size_t n = static_cast<size_t>(node);
    const uint32_t offered = reserved_by_.empty() || reserved_by_[n] == kNoJob ? free_[n] : 0;
    for (const auto &[p, pos] : node_parts_[n]) trees_[static_cast<size_t>(p)].set(pos, offered);
}

bool Replay::fits_free(int32_t p, uint32_t g) const {
    const size_t pi = static_cast<size_t>(p);
    if (cluster_.partitions[pi].nodes.empty()) return false;
    if (g <= part_max_node_[pi]) return trees_[pi].max() >= g;
    uint32_t held = 0;  // free GPUs of the partition on reserved nodes
    for (const auto &[node, job] : reservations_)
        if (w_.part_has_node[pi][static_cast<size_t>(node)]) held += free_[static_cast<size_t>(node)];
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
        for (const auto &[q, pos] : node_parts_[static_cast<size_t>(node)]) part_free_[static_cast<size_t>(q)] -= g;
        node_changed(node);
    };
    if (s.gpus <= part_max_node_[pi]) {
        size_t pos = trees_[pi].find(0, s.gpus);
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

void Replay::give(int32_t node, uint32_t g) {
    free_[static_cast<size_t>(node)] += g;
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
            extra[node] += gpus;
            freed_in_part += gpus;
        };
        if (v.node >= 0)
            add(v.node, v.gpus);
        else if (v.multi != UINT32_MAX)
            for (const auto &[node, gg] : w_.multi_alloc[v.multi]) add(node, gg);
        if (single) {
            // Free GPUs alone fit nowhere: only a node the prefix freed
            // GPUs on can; the first one in partition order.
            int32_t best_pos = INT32_MAX;
            for (const auto &[node, gg] : extra)
                if (free_[static_cast<size_t>(node)] + gg >= g && part_pos_[pi][static_cast<size_t>(node)] < best_pos) {
                    best_pos = part_pos_[pi][static_cast<size_t>(node)];
                    chosen = node;
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

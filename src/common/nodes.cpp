#include "nodes.hpp"

#include <algorithm>

namespace gpupool {

namespace {

bool same_nodes(const std::vector<std::string> &names, const std::vector<SnapNode> &nodes) {
    if (names.size() != nodes.size()) return false;
    for (size_t i = 0; i < nodes.size(); ++i)
        if (names[i] != nodes[i].name) return false;
    return true;
}

}  // namespace

void NodeLayout::load(const Snapshot &snap) {
    ++generation_;
    known_ = snap.node_usage;
    if (!known_) return;
    if (!snap.partitions.empty() || !same_nodes(names_, snap.nodes)) {
        partitions_.clear();
        lln_.clear();
        one_node_by_weight_ = snap.one_node_by_weight;
        for (const SnapPartition &p : snap.partitions) {
            partitions_[p.name] = p.nodes;
            if (p.lln) lln_[p.name] = true;
        }
    }
    names_.resize(snap.nodes.size());
    nodes_.resize(snap.nodes.size());
    for (size_t i = 0; i < snap.nodes.size(); ++i) {
        const SnapNode &n = snap.nodes[i];
        if (names_[i] != n.name) names_[i] = n.name;
        NodeUse &u = nodes_[i];
        u = NodeUse{n.gpus, n.free_gpus, n.completing, n.closed};
        u.room_cpus = n.room_cpus;
        u.free_cpus = n.room_cpus - std::min(n.room_cpus, n.reserved_cpus);
        u.room_mem_mb = u.free_mem_mb = n.room_mem_mb;
    }
    ahead_.clear();
    ahead_starts_.clear();
    for (const ReservedAhead &a : snap.reserved_ahead) {
        if (a.node < 0 || size_t(a.node) >= nodes_.size()) continue;
        ahead_.push_back(a);
        ahead_starts_.push_back(a.from);
    }
    std::stable_sort(ahead_.begin(), ahead_.end(), [](const ReservedAhead &a, const ReservedAhead &b) {
        return a.node != b.node ? a.node < b.node : a.from < b.from;
    });
    held_reserved_.clear();
    for (const HeldReserved &h : snap.held_reserved) {
        if (h.node < 0 || size_t(h.node) >= nodes_.size()) continue;
        held_reserved_.push_back(h);
        // Its start splits preemptors as a reservation ahead does (a later
        // one's cores that jobs hold have no ReservedAhead entry).
        if (h.from > 0) ahead_starts_.push_back(h.from);
    }
    std::stable_sort(held_reserved_.begin(), held_reserved_.end(), [](const HeldReserved &a, const HeldReserved &b) {
        if (a.job_id != b.job_id) return a.job_id < b.job_id;
        return a.node != b.node ? a.node < b.node : a.from < b.from;
    });
    std::sort(ahead_starts_.begin(), ahead_starts_.end());
    ahead_starts_.erase(std::unique(ahead_starts_.begin(), ahead_starts_.end()), ahead_starts_.end());
    job_range_.clear();
    job_nodes_.clear();
    node_start_.assign(nodes_.size() + 1, 0);
    for (const SnapJob &j : snap.jobs) {
        if (!holds_gpus(j.state) || j.nodes.empty()) continue;
        const uint32_t from = static_cast<uint32_t>(job_nodes_.size());
        for (const NodeShare &g : j.nodes) {
            if (g.node < 0 || size_t(g.node) >= nodes_.size()) continue;
            job_nodes_.push_back(g);
            ++node_start_[size_t(g.node) + 1];
            NodeUse &u = nodes_[size_t(g.node)];
            u.free_cpus -= std::min(u.free_cpus, g.cpus);
            u.free_mem_mb -= std::min(u.free_mem_mb, g.mem_mb);
        }
        job_range_.try_emplace(j.id, {from, static_cast<uint32_t>(job_nodes_.size())});
    }
    for (size_t n = 0; n < nodes_.size(); ++n) node_start_[n + 1] += node_start_[n];
    on_node_.resize(job_nodes_.size());
    std::vector<uint32_t> &fill = fill_scratch_;
    fill.assign(node_start_.begin(), node_start_.end() - 1);
    // In the snapshot's order, so that a node lists its jobs the same way
    // every time.
    for (const SnapJob &j : snap.jobs) {
        if (!holds_gpus(j.state) || j.nodes.empty()) continue;
        for (const NodeShare &g : job_nodes(j.id))
            on_node_[fill[size_t(g.node)]++] = JobOnNode{j.id, g.gpus, g.cpus, g.mem_mb};
    }
}

Span<NodeShare> NodeLayout::job_nodes(uint32_t job_id) const {
    const std::pair<uint32_t, uint32_t> *r = job_range_.find(job_id);
    if (!r) return {};
    return {job_nodes_.data() + r->first, job_nodes_.data() + r->second};
}

Span<JobOnNode> NodeLayout::jobs_on(int32_t node) const {
    if (node < 0 || size_t(node) >= nodes_.size()) return {};
    return {on_node_.data() + node_start_[size_t(node)], on_node_.data() + node_start_[size_t(node) + 1]};
}

uint32_t NodeLayout::ahead_before(int64_t until) const {
    return static_cast<uint32_t>(std::lower_bound(ahead_starts_.begin(), ahead_starts_.end(), until) -
                                 ahead_starts_.begin());
}

namespace {

// A node's latest entry starting before `until` (it counts the earlier ones).
void apply(const ReservedAhead &a, NodeUse &u) {
    u.closed |= a.whole;
    u.free_gpus -= std::min(u.free_gpus, a.gpus);
    u.free_cpus -= std::min(u.free_cpus, a.cpus);
}

}  // namespace

void NodeLayout::nodes_until(int64_t until, std::vector<NodeUse> &out) const {
    out.assign(nodes_.begin(), nodes_.end());
    for (size_t i = 0; i < ahead_.size(); ++i) {
        const ReservedAhead &a = ahead_[i];
        if (a.from >= until) continue;
        if (i + 1 < ahead_.size() && ahead_[i + 1].node == a.node && ahead_[i + 1].from < until) continue;
        apply(a, out[size_t(a.node)]);
    }
}

void NodeLayout::node_until(int64_t until, int32_t node, NodeUse &u) const {
    if (ahead_.empty()) return;
    auto it = std::lower_bound(ahead_.begin(), ahead_.end(), node,
                               [](const ReservedAhead &a, int32_t n) { return a.node < n; });
    const ReservedAhead *last = nullptr;
    for (; it != ahead_.end() && it->node == node && it->from < until; ++it) last = &*it;
    if (last) apply(*last, u);
}

void NodeLayout::held_reserved(uint32_t job_id, int32_t node, int64_t until, uint32_t &cpus, uint32_t &gpus) const {
    cpus = gpus = 0;
    if (held_reserved_.empty()) return;
    auto it = std::lower_bound(held_reserved_.begin(), held_reserved_.end(), std::make_pair(job_id, node),
                               [](const HeldReserved &h, const std::pair<uint32_t, int32_t> &k) {
                                   return h.job_id != k.first ? h.job_id < k.first : h.node < k.second;
                               });
    // The latest entry in force by `until` (it counts the earlier ones).
    for (; it != held_reserved_.end() && it->job_id == job_id && it->node == node && it->from < until; ++it) {
        cpus = it->cpus;
        gpus = it->gpus;
    }
}

const std::vector<int32_t> *NodeLayout::partition_nodes(std::string_view name) const {
    auto it = partitions_.find(std::string(name));
    return it != partitions_.end() ? &it->second : nullptr;
}

}  // namespace gpupool

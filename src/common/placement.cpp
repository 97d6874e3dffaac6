// Placement=: each node's strategy and the Weights that carry it out
// (placement.hpp).
#include "placement.hpp"

#include <algorithm>

namespace gpupool {

Placement pool_placement(const Pool &pool, bool lln) {
    if (pool.placement != Placement::Default) return pool.placement;
    return lln ? Placement::Spread : Placement::Default;
}

namespace {

const char *word(Placement p) { return p == Placement::Spread ? "spread" : "pack"; }

}  // namespace

namespace {

// A partition as node_placements() reads it: its nodes and LLN flag.
struct PartitionView {
    const std::vector<int32_t> *nodes = nullptr;
    bool lln = false;
};

template <typename Part, typename Name>
std::vector<NodePlacement> placements(const Config &cfg, size_t node_count, Part part, Name name,
                                      std::vector<std::string> *warnings) {
    std::vector<NodePlacement> out(node_count, NodePlacement::None);
    // The first pool that set each node, for the conflict's message.
    std::vector<int> setter(out.size(), -1);
    std::vector<std::string> conflicts;
    for (size_t i = 0; i < cfg.pools.size(); ++i) {
        const Pool &pool = cfg.pools[i];
        const PartitionView pv = part(pool.name);
        if (!pv.nodes) continue;
        const bool lln = pv.lln;
        const Placement p = pool_placement(pool, lln);
        if (pool.placement == Placement::Spread && !lln)
            warnings->push_back("Pool=" + pool.name + " Placement=spread: partition " + pool.name +
                                " has no LLN=YES, so Slurm puts its jobs on the first node that fits; "
                                "add LLN=YES to PartitionName=" + pool.name + " in slurm.conf");
        if (pool.placement == Placement::Pack && lln)
            warnings->push_back("Pool=" + pool.name + " Placement=pack: partition " + pool.name +
                                " has LLN=YES, which puts a job on the least loaded of nodes with one "
                                "Weight; remove LLN=YES from PartitionName=" + pool.name + " in slurm.conf");
        if (p == Placement::Default) continue;
        const NodePlacement np = p == Placement::Pack ? NodePlacement::Pack : NodePlacement::Spread;
        uint32_t clashes = 0;
        std::string first, other;
        for (int32_t n : *pv.nodes) {
            if (n < 0 || size_t(n) >= out.size()) continue;
            NodePlacement &cur = out[size_t(n)];
            if (cur == NodePlacement::None) {
                cur = np;
                setter[size_t(n)] = int(i);
            } else if (cur != np && cur != NodePlacement::Conflict) {
                cur = NodePlacement::Conflict;
                if (!clashes++) {
                    first = name(n);
                    other = cfg.pools[size_t(setter[size_t(n)])].name;
                }
            }
        }
        if (clashes)
            conflicts.push_back("pools " + other + " (Placement=" + word(p == Placement::Pack ? Placement::Spread
                                                                                            : Placement::Pack) +
                                ") and " + pool.name + " (Placement=" + word(p) + ") share " +
                                std::to_string(clashes) + " node(s) from " + first +
                                ": Slurm orders a node by one Weight for every partition over it, so gpupool "
                                "leaves their Weights level and jobs there go first fit; give both one Placement");
    }
    warnings->insert(warnings->end(), conflicts.begin(), conflicts.end());
    return out;
}

}  // namespace

std::vector<NodePlacement> node_placements(const Config &cfg, const NodeLayout &nodes,
                                           std::vector<std::string> *warnings) {
    return placements(
        cfg, nodes.nodes().size(),
        [&](const std::string &p) { return PartitionView{nodes.partition_nodes(p), nodes.partition_lln(p)}; },
        [&](int32_t n) { return nodes.name(n); }, warnings);
}

std::vector<NodePlacement> node_placements(const Config &cfg, const Snapshot &snap,
                                           std::vector<std::string> *warnings) {
    return placements(
        cfg, snap.nodes.size(),
        [&](const std::string &p) {
            for (const SnapPartition &sp : snap.partitions)
                if (sp.name == p) return PartitionView{&sp.nodes, sp.lln};
            return PartitionView{};
        },
        [&](int32_t n) { return snap.nodes[size_t(n)].name; }, warnings);
}

uint32_t NodeWeights::pack_key(const NodeUse &use, uint32_t np_gpus, uint32_t most) {
    const uint64_t mod = uint64_t(most) + 1;
    const uint32_t free = std::min(use.free_gpus, use.gpus);
    // Nodes this large leave no room for both: free GPUs alone.
    if (mod * mod > kScale) return std::min(free, kScale - 1);
    const uint32_t not_np = use.gpus - std::min(use.gpus, np_gpus);
    return uint32_t(not_np * mod + free);
}

uint32_t NodeWeights::spread_key(const NodeUse &use, uint32_t most) {
    return std::min(most - std::min(use.free_gpus, use.gpus), kScale - 1);
}

size_t NodeWeights::want(const Config &cfg, const NodeLayout &nodes, const std::vector<uint32_t> &np_gpus,
                         const uint32_t *current, uint32_t *want, std::vector<std::string> *warnings) {
    const std::vector<NodeUse> &use = nodes.nodes();
    // Strategy warnings come with every pass (Engine::evaluate): none here.
    std::vector<std::string> said;
    const std::vector<NodePlacement> how = node_placements(cfg, nodes, &said);
    // Spread by Weights too where Slurm places a one-node job by Weight
    // alone (26.05): the nodes of pools that ask for it (Placement=spread).
    std::vector<uint8_t> spread(use.size(), 0);
    if (nodes.one_node_by_weight())
        for (const Pool &pool : cfg.pools)
            if (pool.placement == Placement::Spread)
                if (const std::vector<int32_t> *pn = nodes.partition_nodes(pool.name))
                    for (int32_t n : *pn)
                        if (n >= 0 && size_t(n) < use.size() && how[size_t(n)] == NodePlacement::Spread)
                            spread[size_t(n)] = 1;
    // A node of one GPU is free or full: its free GPUs order nothing.
    bool any_keyed = false;
    for (size_t n = 0; n < use.size(); ++n)
        any_keyed |= (how[n] == NodePlacement::Pack || spread[n]) && use[n].gpus >= 2;
    uint32_t most = 0;
    for (const NodeUse &u : use) most = std::max(most, u.gpus);
    // Each node's base first: a Weight that is not the one this set last
    // is the admin's.
    std::vector<uint32_t> base(use.size());
    std::vector<Seen *> seen(use.size());
    for (size_t n = 0; n < use.size(); ++n) {
        auto [it, fresh] = seen_.try_emplace(nodes.name(int32_t(n)));
        Seen &s = it->second;
        if (fresh || current[n] != s.set) s.base = current[n];
        base[n] = s.base;
        seen[n] = &s;  // unordered_map keeps its elements in place
    }
    std::vector<uint32_t> distinct = base;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const bool fits = distinct.size() <= kMaxRanks;
    if (any_keyed && !fits)
        warnings->push_back("Placement=pack or spread: the nodes have " + std::to_string(distinct.size()) +
                            " different Weights, more than the " + std::to_string(kMaxRanks) +
                            " that fit under Slurm's 24 bits with room for the pack or spread order; gpupool leaves "
                            "every Weight");
    size_t changed = 0;
    for (size_t n = 0; n < use.size(); ++n) {
        Seen &s = *seen[n];
        uint32_t w = s.base;
        if (any_keyed && fits) {
            const uint32_t rank =
                uint32_t(std::lower_bound(distinct.begin(), distinct.end(), base[n]) - distinct.begin());
            const uint32_t key = how[n] == NodePlacement::Pack ? pack_key(use[n], n < np_gpus.size() ? np_gpus[n] : 0, most)
                                 : spread[n]                   ? spread_key(use[n], most)
                                                               : 0;
            w = (rank + 1) * kScale + key;
        }
        s.set = w;
        want[n] = w;
        if (w != current[n]) ++changed;
    }
    return changed;
}

}  // namespace gpupool

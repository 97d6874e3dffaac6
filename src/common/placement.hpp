// Placement= (Run:ai's placement strategy per node pool, issue 29) on the
// levers Slurm gives.  Slurm's select plugin (cons_tres) tries a job's
// nodes by Weight, lowest first; within one Weight it takes the first node
// that fits, in node order, or the least loaded one where the partition
// has LLN=YES.  So:
//   pack:   gpupool gives each node of a packing pool the Weight
//           (rank + 1) * 4096 + key, refreshed every pass, where key orders the
//           nodes whose GPUs non-preemptible jobs hold most first, then
//           those with the fewest free GPUs: (GPUs not held by NP jobs) *
//           (most GPUs on a node + 1) + free GPUs.  The fullest node that
//           fits comes first, whole nodes stay free for big jobs, and NP
//           jobs gather, so that nodes of preemptible jobs stay clearable
//           for a job within its quota.  `rank` is the place of the node's
//           base Weight (the one slurm.conf or scontrol gave it) among the
//           nodes' distinct base Weights; every other node gets
//           (rank + 1) * 4096, so the admin's order between nodes holds.
//           Ranks, not bases: slurmctld shifts a Weight 8 bits left in 32
//           (node_scheduler.c _set_sched_weight), so Weights must stay
//           under 2^24.
//   spread: Slurm's own LLN=YES, judged per job as it starts; gpupool
//           leaves those nodes' Weights level.  Except where Slurm places
//           a job capped at one node by Weight alone, first fit, never
//           reaching LLN (26.05's one-node path, cons_tres _get_one_res;
//           sbatch caps -N1-4 -n1 at one node too): there the nodes of a
//           pool with Placement=spread get (rank + 1) * 4096 + (most GPUs
//           on a node - its free GPUs), refreshed every pass, so the node
//           with the most free GPUs comes first.  Jobs that start between
//           two passes all see the same order.
// A node has one Weight for every partition over it: pools that share
// nodes and ask for opposite strategies cannot both hold (a warning says
// so, and those nodes are left level).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "nodes.hpp"

namespace gpupool {

// The strategy a pool asks of its nodes: its Placement=; by default
// (Placement=slurm) spread where its partition has LLN=YES (Slurm spreads
// there) and nothing elsewhere (Default: Slurm's first fit, Weights left).
Placement pool_placement(const Pool &pool, bool lln);

enum class NodePlacement : uint8_t { None, Pack, Spread, Conflict };

// Each node's strategy from the pools over it (None: no pool).  Warnings
// for what Slurm cannot honour go to `warnings`.  From the last node
// layout, or from a snapshot (every pass, with node usage or not: what
// `gpupool` and the plugin's log warn of).
std::vector<NodePlacement> node_placements(const Config &cfg, const NodeLayout &nodes,
                                           std::vector<std::string> *warnings);
std::vector<NodePlacement> node_placements(const Config &cfg, const Snapshot &snap,
                                           std::vector<std::string> *warnings);

class NodeWeights {
public:
    static constexpr uint32_t kScale = 4096;  // room for a node's key under the admin's order
    static constexpr uint32_t kMaxWeight = (1u << 24) - 1;  // Slurm's sched_weight keeps 24 bits of it
    static constexpr uint32_t kMaxRanks = kMaxWeight / kScale - 1;

    // The pack key of a node (see above); `most`: the most GPUs on a node.
    static uint32_t pack_key(const NodeUse &use, uint32_t np_gpus, uint32_t most);
    // The spread key: the node with the most free GPUs first.
    static uint32_t spread_key(const NodeUse &use, uint32_t most);

    // The Weight each node of `nodes` should have (`want`), given its
    // Weight now (`current`) and its GPUs held by non-preemptible jobs
    // (`np_gpus`), all in the layout's node order.  A Weight
    // that is not the one this set last is the admin's: it becomes that
    // node's base (gpupool's own Weights are read back as slurmctld has
    // them: config_ptr's, what scontrol shows).  Where no node of two
    // GPUs or more packs, every node gets its base back.
    // Returns how many differ from `current`.
    size_t want(const Config &cfg, const NodeLayout &nodes, const std::vector<uint32_t> &np_gpus,
                const uint32_t *current, uint32_t *want, std::vector<std::string> *warnings);

private:
    struct Seen {
        uint32_t base = 0;  // the admin's Weight
        uint32_t set = 0;   // what want() last asked for
    };
    std::unordered_map<std::string, Seen> seen_;
};

}  // namespace gpupool

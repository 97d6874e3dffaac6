// Where GPUs are: each node's GPUs, free GPUs (CPUs and memory where
// given) and completing state, the partitions' nodes and what each running
// job holds per node, as the last
// snapshot with node usage gave them (Snapshot::node_usage).  The engine
// keeps one between passes for the victim plan (victim_plan.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "containers.hpp"
#include "snapshot.hpp"

namespace gpupool {

struct NodeUse {
    uint32_t gpus = 0;
    uint32_t free_gpus = 0;
    bool completing = false;
    bool closed = false;  // no new job starts there now (SnapNode::closed)
    // The CPUs and memory Slurm gives jobs there (SnapNode::room_cpus,
    // room_mem_mb; 0: not checked) and those no job holds.
    uint32_t room_cpus = 0, free_cpus = 0;
    uint64_t room_mem_mb = 0, free_mem_mb = 0;
    // Slurm may start a job there now.
    bool starts_jobs() const { return !completing && !closed; }
    // Its free CPUs and memory, with `freed_cpus` and `freed_mem_mb` more
    // freed, fit a job asking `cpus` and `mem_mb` there.  True where not
    // checked, and for an ask past the node's room: such a job spans nodes
    // (-n64 without -N), or its ask is another node's (--mem=0 asks for
    // the partition's first node's memory): GPUs alone decide there.
    bool room_for(uint32_t cpus, uint64_t mem_mb, uint64_t freed_cpus = 0, uint64_t freed_mem_mb = 0) const {
        return (cpus > room_cpus || uint64_t(free_cpus) + freed_cpus >= cpus) &&
               (mem_mb > room_mem_mb || free_mem_mb + freed_mem_mb >= mem_mb);
    }
};

// What a running job holds on one node, as listed per node.
struct JobOnNode {
    uint32_t job_id = 0;
    uint32_t gpus = 0;
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
};

template <typename T>
struct Span {
    const T *first = nullptr, *last = nullptr;
    const T *begin() const { return first; }
    const T *end() const { return last; }
    size_t size() const { return size_t(last - first); }
    bool empty() const { return first == last; }
};

class NodeLayout {
public:
    // False until a snapshot with node usage was loaded (and after one
    // without): preemption then judges pools' GPU counts alone.
    bool known() const { return known_; }
    // From `snap`; its partitions only where it has any (a refresh's
    // snapshot of running jobs has none: the last full pass's stay, as long
    // as the nodes are the same ones).  Keeps its room from load to load.
    void load(const Snapshot &snap);
    // Raised by every load: plans made on an older layout are stale.
    uint64_t generation() const { return generation_; }

    const std::vector<NodeUse> &nodes() const { return nodes_; }
    const std::string &name(int32_t node) const { return names_[size_t(node)]; }
    // A running job's nodes; empty if unknown.
    Span<NodeShare> job_nodes(uint32_t job_id) const;
    // GPUs of running jobs on node n.
    Span<JobOnNode> jobs_on(int32_t node) const;
    // The nodes of a partition (indices into nodes()); null if unknown.
    const std::vector<int32_t> *partition_nodes(std::string_view name) const;
    // The partition has LLN=YES (Slurm puts a job on its least loaded node).
    bool partition_lln(std::string_view name) const { return lln_.count(std::string(name)) > 0; }
    // Slurm places a one-node job by Weight alone (Snapshot::one_node_by_weight).
    bool one_node_by_weight() const { return one_node_by_weight_; }
    // How many start times of reservations not started yet come before
    // `until` (a job running until then is kept off what they hold, or
    // gets less back from victims holding it: held_reserved).
    uint32_t ahead_before(int64_t until) const;
    // nodes() as a job that would run until `until` may have them: with
    // what reservations starting before then hold (Snapshot::reserved_ahead).
    void nodes_until(int64_t until, std::vector<NodeUse> &out) const;
    // The same for one node's use `u` (nodes()[node], or what is left of it).
    void node_until(int64_t until, int32_t node, NodeUse &u) const;
    // Of what running job `job_id` holds on `node`, the CPUs and GPUs that
    // reservations in force by `until` reserve (Snapshot::held_reserved):
    // preempted, it frees them to the reservation, not to a job outside it
    // that runs until then.
    void held_reserved(uint32_t job_id, int32_t node, int64_t until, uint32_t &cpus, uint32_t &gpus) const;

private:
    bool known_ = false;
    uint64_t generation_ = 0;
    std::vector<std::string> names_;
    std::vector<NodeUse> nodes_;
    std::unordered_map<std::string, std::vector<int32_t>> partitions_;
    std::unordered_map<std::string, bool> lln_;  // partitions with LLN=YES
    bool one_node_by_weight_ = false;
    // Snapshot::reserved_ahead by node, then start; their start times, sorted, once each.
    std::vector<ReservedAhead> ahead_;
    std::vector<int64_t> ahead_starts_;
    // Snapshot::held_reserved by job, node, then start (nearly always empty).
    std::vector<HeldReserved> held_reserved_;
    // Jobs' nodes, one range per running job found by id.
    FlatIdMap<std::pair<uint32_t, uint32_t>> job_range_;
    std::vector<NodeShare> job_nodes_;
    // Per node: [node_start_[n], node_start_[n+1]) of on_node_.
    std::vector<uint32_t> node_start_;
    std::vector<JobOnNode> on_node_;
    std::vector<uint32_t> fill_scratch_;
};

}  // namespace gpupool

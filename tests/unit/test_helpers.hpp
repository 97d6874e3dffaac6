// Small builders for engine tests: a cluster of 1-GPU-per-node (or more)
// nodes, partitions over node ranges, and jobs.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "engine.hpp"
#include "snapshot.hpp"

namespace gpupool::test {

// OSMO's three priorities; pools appended by each test.
inline const std::string kOsmoTiers =
    "Tier=high   QOS=high   Priority=300 Preemptible=no\n"
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low    QOS=low    Priority=100 Preemptible=yes\n"
    "DefaultTier=normal\n"
    "UsageWeight=0\n";

inline Engine engine_with(const std::string &conf) {
    Engine e;
    e.set_config(parse_config(conf, "test.conf"));
    return e;
}

// `nodes` nodes named n0.. with `gpus` GPUs each.
inline Snapshot cluster(int nodes, uint32_t gpus = 1) {
    Snapshot s;
    for (int i = 0; i < nodes; ++i) s.add_node("n" + std::to_string(i), gpus);
    return s;
}

// Partition over nodes [first, last].
inline void partition(Snapshot &s, const std::string &name, int first, int last) {
    std::vector<int32_t> idx;
    for (int i = first; i <= last; ++i) idx.push_back(i);
    s.add_partition(name, idx);
}

inline SnapJob running(uint32_t id, const std::string &part, const std::string &qos, uint32_t gpus,
                       int64_t start, int64_t submit = 0) {
    SnapJob j;
    j.id = id;
    j.state = JobState::Running;
    j.partitions = {part};
    j.qos = qos;
    j.gpus = gpus;
    j.start_time = start;
    j.submit_time = submit ? submit : start;
    return j;
}

inline SnapJob pending(uint32_t id, const std::string &parts, const std::string &qos, uint32_t gpus,
                       int64_t submit) {
    SnapJob j;
    j.id = id;
    j.state = JobState::Pending;
    j.partitions = split_list(parts);
    j.qos = qos;
    j.gpus = gpus;
    j.submit_time = submit;
    return j;
}

// `job` runs on `node` with all its GPUs.
inline SnapJob on(SnapJob job, int32_t node) {
    job.nodes = {NodeShare{node, job.gpus}};
    return job;
}

// Each node's free GPUs from the running jobs placed on it (node usage known).
inline void settle(Snapshot &s) {
    s.node_usage = true;
    for (SnapNode &n : s.nodes) n.free_gpus = n.gpus;
    for (const SnapJob &j : s.jobs)
        if (j.state == JobState::Running)
            for (const NodeShare &g : j.nodes) s.nodes[size_t(g.node)].free_gpus -= g.gpus;
}

inline JobRef ref(const SnapJob &j) {
    JobRef r;
    r.id = j.id;
    r.partitions = j.partitions.empty() ? std::string_view() : std::string_view(j.partitions.front());
    r.qos = j.qos;
    r.gpus = j.gpus;
    r.cpus = j.cpus;
    r.mem_mb = j.mem_mb;
    r.start = j.start_time;
    r.nodes_given = j.nodes_given;
    r.allowed_nodes = j.allowed_nodes;
    r.run_limit = j.run_limit;
    return r;
}

// Job ids of the pending jobs in R1 order.
// A pending job's admission and squeue reason, as the last pass left them.
inline Admission admission_of(const Engine &e, uint32_t id) { return e.pending_result(id)->admission; }
inline std::string reason(const Engine &e, uint32_t id) { return e.reason_of(*e.pending_result(id)); }

inline std::vector<uint32_t> order_of(const Engine &e) {
    std::vector<uint32_t> ids;
    for (const PendingResult &r : e.last().pending) ids.push_back(r.job_id);
    return ids;
}

// The pending jobs the last pass did not hold, in R1 order: those a
// scheduler loop tries.
inline std::vector<uint32_t> unheld_order(const Engine &e) {
    std::vector<uint32_t> ids;
    for (const PendingResult &r : e.last().pending)
        if (r.admission != Admission::Held) ids.push_back(r.job_id);
    return ids;
}

inline const PoolState &pool(const Engine &e, const std::string &name) {
    return e.last().pools.at(static_cast<size_t>(e.last().pool_index.at(name)));
}

}  // namespace gpupool::test

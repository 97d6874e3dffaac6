// What `gpupool sim` replays: a cluster and a workload, read from a site's
// files (slurm.conf, sacct --parsable2), from a public trace or made by a
// seeded generator.  Plain data; the replay itself is in replay.hpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpupool::sim {

struct SimNode {
    std::string name;
    uint32_t gpus = 0;
};

struct SimPartition {
    std::string name;
    std::vector<uint32_t> nodes;  // indices into SimCluster::nodes
};

struct SimCluster {
    std::vector<SimNode> nodes;
    std::vector<SimPartition> partitions;
};

struct SimJob {
    uint32_t id = 0;                  // unique, > 0
    std::string label;                // the original id (sacct JobID, trace name)
    int64_t submit = 0;               // seconds; the replay starts at the first
    int64_t duration = 0;             // run time it needs, seconds (> 0)
    uint32_t gpus = 0;                // whole GPUs
    std::vector<std::string> pools;   // partitions it may run in, in order
    std::string qos;                  // empty: gpupool.conf's DefaultTier
    std::string user;
    int64_t recorded_start = -1;      // when it started on the real cluster; -1: unknown
};

struct Workload {
    std::vector<SimJob> jobs;         // sorted by submit, then id
    std::vector<std::string> notes;   // what the reader skipped or changed, and why
};

// Bad input: the message names the file, line and field.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace gpupool::sim

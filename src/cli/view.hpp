// What the `gpupool` command knows of a cluster: the snapshot the plugins
// would build (src/plugins/common/gpupool_slurm.c), what Slurm says of
// each job beyond it, and where gpupool.conf and the usage history came
// from.  Filled from libslurm (slurm_view.cpp) or by tests.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "preemptions.hpp"
#include "snapshot.hpp"
#include "stats.hpp"

namespace gpupool::cli {

struct JobMeta {
    std::string name;
    std::string user;
    std::string partition;      // as Slurm has it (pending: the list)
    std::string state;          // PENDING, RUNNING, ...
    std::string slurm_reason;   // squeue %r: "Priority", "Resources", ...
    std::string state_desc;     // e.g. "GpuPoolQuota:pool1 2/2"
    uint32_t slurm_priority = 0;
    uint32_t array_job_id = 0;  // 0: not an array
    std::string array_task;     // "1-5%2" (pending record), "3", or ""
    int64_t submit_time = 0;    // Slurm's (reset on requeue)
    int64_t start_time = 0;
};

// The usage history (StateSaveLocation/gpupool_state.json).
struct UsageHistory {
    bool available = false;
    std::string path;
    int64_t saved_at = 0;
    std::string error;          // why it is not available
};

// priority/gpupool's pass durations (StateSaveLocation/gpupool_stats.json,
// written by slurmctld every 10 s, readable by root and SlurmUser).
struct PluginPasses {
    bool available = false;
    std::string path;
    std::string error;          // why it is not available
    PassStats stats;
};

struct ClusterView {
    std::string cluster;
    std::string conf_path;      // gpupool.conf read
    int64_t now = 0;
    Snapshot snap;
    std::unordered_map<uint32_t, JobMeta> meta;
    // Pending jobs Slurm holds back whatever the GPUs (dependency, begin
    // time, partition down): they take no free GPU in the explanation.
    std::unordered_set<uint32_t> not_eligible;
    UsageHistory history;
    PluginPasses passes;
    // Said once on stderr (e.g. jobs hidden by PrivateData=jobs).
    std::vector<std::string> notes;
    // `why JOBID`: the job's preemptions (slurm_preemptions.cpp).
    PreemptionHistory preemptions;

    const JobMeta *job(uint32_t id) const {
        auto it = meta.find(id);
        return it == meta.end() ? nullptr : &it->second;
    }
};

}  // namespace gpupool::cli

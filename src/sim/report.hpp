// `gpupool sim`'s outputs, from the results of one run over the same
// workload under several policies: a Slurm-like text table, JSON (field
// names stable, documented in gpupool(1) SIM OUTPUT), a CSV line per job
// and policy, a CSV line per pool, sample time and policy, and the start
// order log.  Formatting only: every figure comes from the replay.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "config.hpp"
#include "replay.hpp"
#include "workload.hpp"

namespace gpupool::sim {

// Version of the JSON document: raised only when a field changes meaning
// or goes away; new fields may appear.
constexpr int kSimJsonVersion = 1;

// What was replayed, for the report's head.
struct RunInfo {
    std::string cluster_source;   // "slurm.conf:/etc/slurm/slurm.conf", "--nodes 16x4", ...
    std::string workload_source;  // "sacct:dump.txt", "alibaba:DIR", "generate:SPEC"
    std::string config_source;    // gpupool.conf path
    ReplayOptions options;
};

void write_text(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                const RunInfo &info, const std::vector<ReplayResult> &results);
void write_json(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                const RunInfo &info, const std::vector<ReplayResult> &results);
// policy,job_id,label,pool,tier,gpus,submit,first_start,last_start,end,
// wait,preemptions,lost_gpu_seconds,state
void write_jobs_csv(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                    const std::vector<ReplayResult> &results);
// policy,time,pool,quota,used,np_used,p_used,pending_gpus,fairshare
void write_pools_csv(std::ostream &out, const Config &config, const std::vector<ReplayResult> &results);
// policy,order,time,job_id,label,partition,victims,node (victims: job ids
// separated by spaces; node: the one-node job's node, empty for a job over
// several)
void write_start_log(std::ostream &out, const SimCluster &cluster, const Workload &workload,
                     const std::vector<ReplayResult> &results);

// A CSV field: quoted (with "" for ") when it holds a comma, quote or
// line break.
std::string csv_field(const std::string &text);

}  // namespace gpupool::sim

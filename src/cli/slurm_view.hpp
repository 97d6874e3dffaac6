// The live cluster through libslurm: slurmctld's configuration, nodes,
// partitions and jobs, mapped to the core's snapshot exactly as the
// plugins map slurmctld's records (src/plugins/common/gpupool_slurm.c).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "slurm_compat.hpp"
#include "view.hpp"

namespace gpupool::cli {

struct ControllerConf {
    std::string cluster;
    std::string slurm_conf;       // slurm.conf as slurmctld names it
    std::string state_save;       // StateSaveLocation
    bool private_jobs = false;    // PrivateData=jobs
    bool memory_allocated = false;  // SelectTypeParameters allocates memory
};

// Each throws std::runtime_error naming what failed (slurmctld down, ...).
ControllerConf load_controller_conf();

// What load_cluster reads node usage with (the victim plan of `why`, the
// one-node check of `queue`).
struct NodeTable {
    bool memory_allocated = false;  // SelectTypeParameters allocates memory
    int64_t now = 0;                // the view's time (0: the clock's)
    // Filled: slurmctld's node table index -> index in Snapshot::nodes (-1: none).
    std::vector<int32_t> to_snap;
    // Partitions that give whole nodes or cap CPUs per node: their jobs
    // get no victim plan (as the plugins' _part_bound_unknown).
    std::unordered_set<std::string> bound_partitions;
    // Filled: each node's GPU type (Snapshot::nodes order; "" none, "?"
    // untyped or several).
    std::vector<std::string> gpu_type;
    // Filled: each node's active features (Snapshot::nodes order), for a
    // pending job's -C.
    std::vector<std::string> features;
    // Filled: active reservations of some cores (their jobs' CPUs are
    // theirs, not other jobs').
    std::unordered_set<std::string> partial_reservations;
    // Filled: each partition's MaxTime (minutes), for a pending job's run
    // limit (SnapJob::run_limit) where it has no time limit of its own.
    std::unordered_map<std::string, uint32_t> max_time;
};

// Nodes (with the GPUs `cfg`'s QuotaTRES counts, and CPUs and memory where
// it counts them) and partitions into `snap`; with `priority_tier`, each
// partition's PriorityTier too; with `usage`, each node's room, completing
// and closed state, as the plugins give them to the victim plan.
void load_nodes_partitions(Snapshot &snap, const Config &cfg,
                           std::unordered_map<std::string, uint32_t> *priority_tier = nullptr,
                           NodeTable *usage = nullptr);

// Slurm's account tree as slurmctld's assoc_mgr has it, from slurmdbd
// (sacctmgr show assoc): each account association of the cluster and its
// parent account, into snap.account_parent.  False, with `why_not`, when
// slurmdbd cannot be reached or gives no associations.
bool load_account_tree(const ControllerConf &conf, Snapshot &snap, std::string &why_not);

// Nodes, partitions and jobs, counting GPUs by `cfg`'s QuotaTRES; with
// Account= entries also jobs' accounts and Slurm's account tree (from
// slurmdbd: when it cannot be reached the tree is empty and a note says
// so), and where QuotaTRES counts them jobs' and nodes' CPUs and memory.
// With `node_usage`, also each node's room and each job's nodes and GPUs
// per node (SHOW_DETAIL, a larger answer): the victim plan (`why`).
void load_cluster(ClusterView &view, const Config &cfg, const ControllerConf &conf, bool node_usage = false);

// Each record slurmdbd keeps of `jobs` (sacct -D, no steps) submitted
// before `end` that ended at or after `since` or still run (since 0: every
// record), passed to `each`.  False, with `why_not`, when slurmdbd could
// not be reached or gave no records.
bool for_each_job_record(const std::vector<uint32_t> &jobs, const ControllerConf &conf, int64_t since, int64_t end,
                         const std::function<void(const slurmdb_job_rec_t &)> &each, std::string &why_not);

// `name` as Slurm sent it, else the passwd name of `uid`, else the number.
std::string user_name(const char *name, uint32_t uid);

// Original submit times of `jobs` (requeued) from slurmdbd: the earliest
// submit of each job's records (sacct -D) among those submitted before
// `until` that ended at or after `since` or still run (since 0: all).  Slurm resets a job's submit
// time on requeue; the plugins remember the first one in their state
// file, which a login node cannot read.  Empty when accounting cannot be
// reached (then `why_not` says why).
std::unordered_map<uint32_t, int64_t> first_submit_times(const std::vector<uint32_t> &jobs, int64_t since,
                                                         int64_t until, const ControllerConf &conf,
                                                         std::string &why_not);

}  // namespace gpupool::cli

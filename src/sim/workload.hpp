// What `gpupool sim` replays: a cluster and a workload, read from a site's
// files (slurm.conf, sacct --parsable2), from a public trace or made by a
// seeded generator.  Plain data; the replay itself is in replay.hpp.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "slurm_text.hpp"
#include "snapshot.hpp"

namespace gpupool::sim {

// A node as the core's snapshot has it: a name and its GPUs.
using SimNode = SnapNode;

struct SimPartition {
    std::string name;
    std::vector<uint32_t> nodes;  // indices into SimCluster::nodes
    bool lln = false;             // LLN=YES: a job goes to the least loaded node
};

// Slurm's account tree: each account's parent ("" or "root": top level).
using AccountTree = std::unordered_map<std::string, std::string>;

struct SimCluster {
    std::vector<SimNode> nodes;
    std::vector<SimPartition> partitions;
    std::vector<uint32_t> weights;    // each node's slurm.conf Weight (empty: all 1); nodes are in Weight order
    AccountTree account_parent;       // from sacctmgr (read_account_tree)
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
    std::string account;              // Slurm account; empty: none
    uint32_t cpus = 0;                // CPUs and memory (MiB) it asks for; 0: unknown
    uint64_t mem_mb = 0;
    int64_t recorded_start = -1;      // when it started on the real cluster; -1: unknown
    std::vector<int64_t> recorded_restarts;  // when it started again after a requeue (sacct -D), in order;
                                             // -1: a run whose start was not recorded
    // Recorded runs: the first (its start perhaps unknown) and the restarts.
    bool has_recorded_run() const { return recorded_start >= 0 || !recorded_restarts.empty(); }
};

struct Workload {
    std::vector<SimJob> jobs;         // sorted by submit, then id
    std::vector<std::string> notes;   // what the reader skipped or changed, and why
    AccountTree account_parent;       // the generator's departments; empty otherwise
};

// Bad input: the message names the file, line and field.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace gpupool::sim

// ---------------------------------------------------------------------------
// Readers and the generator (src/sim/read_*.cpp, generate.cpp).  Each throws
// InputError on bad input ("FILE:LINE: problem") and returns nothing half
// read.  Workload::notes say, per kind, how many jobs were skipped or
// changed and why, with a few examples.
// ---------------------------------------------------------------------------

namespace gpupool::sim {

// Slurm hostlist expression -> names (slurm_text.hpp).
using cli::expand_hostlist;

// --- Cluster spec (read_cluster.cpp) ---------------------------------------
//
// The GPU nodes and the partitions of a slurm.conf: NodeName= lines (Gres=
// gpu:N, gpu:TYPE:N, several entries summed; NodeName=DEFAULT; Weight=;
// Features=; CPUs= and RealMemory= (MiB) for CPU and memory quotas), PartitionName= lines (Nodes= hostlists, NodeSet names or ALL;
// PartitionName=DEFAULT), NodeSet= lines (Nodes= or Feature=), Include
// FILE (relative to the including file's folder), '#' comments, '\' line
// continuation.  Other lines and keys are ignored.  Nodes without GPUs are
// left out (noted).  Nodes are in the order Slurm's select plugin tries them:
// lowest Weight first, then slurm.conf order; a partition's node indices
// are in that order too.  `notes`, if given, receives what was left out.
SimCluster read_slurm_conf(const std::string &path, std::vector<std::string> *notes = nullptr);
SimCluster parse_slurm_conf(const std::string &text, const std::string &source,
                            std::vector<std::string> *notes = nullptr);

// The command line's shorthand for a made-up cluster:
//   nodes: "COUNTxGPUS[+COUNTxGPUS...]", e.g. "1250x8" or "16x8+8x4": nodes
//          node1..nodeN in that order;
//   pools: "NAME[:HOSTLIST],...", e.g. "pool1,pool2" (each over every node)
//          or "a:node[1-8],b:node[5-16]" (a hostlist without top-level
//          commas).
// Errors (InputError) name the option: "--nodes: ..." / "--pools: ...".
SimCluster make_cluster(const std::string &nodes, const std::string &pools);

// GPUs of the whole cluster.
uint64_t total_gpus(const SimCluster &cluster);

// --- Account tree (read_accounts.cpp) -------------------------------------
//
// Slurm's account tree as `sacctmgr -P show assoc format=account,parentname`
// prints it: one association a line, "ACCOUNT|PARENT"; the
// header line ("Account|Par Name") is optional and, when given, may name
// more columns in any order (format=cluster,account,user,parentname).  A
// first line naming Account or Par Name is the header; one without both
// (plain `sacctmgr show assoc` has no Par Name) is an InputError.
// Lines without a parent are left out: user associations (sacctmgr shows
// the parent of account associations only) and root's own.  An account
// given two different parents, or a loop, is an InputError.
AccountTree read_account_tree(const std::string &path);
AccountTree parse_account_tree(std::istream &in, const std::string &source);

// --- sacct (read_sacct.cpp) -----------------------------------------------
//
// `sacct --parsable2` (or --parsable) output WITH its header line (blank
// lines before it are skipped), columns
// in any order: JobID (or JobIDRaw), Submit, Start, End, Partition, State,
// ReqTRES and/or AllocTRES are required; QOS, User, Account, Elapsed,
// JobIDRaw are used when present.  Rules (doc/evaluation.md):
// - step lines (JobID with '.') are skipped; array tasks (1234_5) and
//   heterogeneous job components (1234+1) are jobs of their own;
// - several records of one JobID (sacct -D: a requeued job): submit = the
//   first record's, recorded_start = the first start, recorded_restarts =
//   the later runs' starts, duration = the last
//   run's Elapsed (End - Start without that column); a PREEMPTED
//   record with AllocTRES and an End but no Start is a run whose start Slurm did not
//   record (-1 there, placed by its End);
// - jobs that never started (PENDING, or CANCELLED before they started) and
//   jobs without GPUs are skipped, noted; a run of 0 s is replayed as 1 s;
//   a job still running at the dump runs for its Elapsed so far;
// - GPUs: gres/gpu=N of ReqTRES, else of AllocTRES (gres/gpu:TYPE=N summed
//   when the untyped entry is missing); CPUs (cpu=N) and memory (mem=SIZE,
//   MiB) from the same TRES list;
// - pools: Partition, split at ','; account: Account;
// - id: JobIDRaw, else the numeric JobID (plain jobs and het job leaders),
//   else a number above every such id, in the order of the dump;
// - times: "YYYY-MM-DDTHH:MM:SS" is local time in the TZ of this process
//   (sacct prints local time in its TZ: run both with the same TZ, e.g.
//   TZ=UTC; in the repeated hour at the end of summer time mktime(3)
//   decides), or seconds since the epoch (SLURM_TIME_FORMAT=%s: no time
//   zone at all).  "Unknown" and "None" mean no time.
Workload read_sacct(const std::string &path);
Workload parse_sacct(std::istream &in, const std::string &source);

// --- Alibaba GPU cluster trace v2023 (read_alibaba.cpp) -------------------
//
// ../shared/traces/alibaba-gpu-v2023 (openb_node_list_gpu_node.csv,
// openb_pod_list_default.csv).  Mapping (doc/evaluation.md):
// - cluster: one node per line of the node list (sn, gpu); `pools`
//   partitions pool1..poolN, each over every node (so that pools can lend
//   and borrow), quotas split evenly (alibaba_gpupool_conf);
// - a task's pool: splitmix64(fnv1a64(name) ^ seed) % pools, so the split
//   depends on the seed and the name only, not on the order of the file;
// - QOS: the task's class lower-cased (ls, guaranteed, burstable, be);
//   etc/sim/alibaba.conf maps ls and guaranteed to the non-preemptible
//   tier high, burstable to normal, be to the preemptible tier low;
// - GPUs: num_gpu; a fraction of one GPU (gpu_milli < 1000) is 1 GPU;
//   tasks without GPUs are skipped (noted);
// - submit = creation_time, recorded_start = scheduled_time (-1 when
//   empty), duration = deletion_time - scheduled_time, or deletion_time -
//   creation_time for tasks never scheduled (as the trace's README says);
//   a run of 0 s is replayed as 1 s.
struct AlibabaOptions {
    uint32_t pools = 4;
    uint64_t seed = 0;
};
struct Scenario {
    SimCluster cluster;
    Workload workload;
};
SimCluster read_alibaba_nodes(const std::string &path, const AlibabaOptions &options);
Workload read_alibaba_pods(const std::string &path, const AlibabaOptions &options);
// Both files of the trace folder `dir`.
Scenario read_alibaba(const std::string &dir, const AlibabaOptions &options);
// pool1..poolN
std::vector<std::string> alibaba_pools(const AlibabaOptions &options);
// The gpupool.conf for a cluster from read_alibaba_nodes: the tiers above
// and one Pool line per pool, the cluster's GPUs split evenly (the first
// pools get one more when they do not divide).
std::string alibaba_gpupool_conf(const SimCluster &cluster, const AlibabaOptions &options);

// --- Seeded generator (generate.cpp) --------------------------------------
//
// Deterministic for a seed: std::mt19937_64 and this file's own
// distributions (std:: distributions differ between library versions).
// Jobs arrive as a Poisson process; each draws its pool, QOS, GPU count and
// duration independently.
struct GeneratorSpec {
    enum class Duration { Fixed, Exponential, Lognormal, Uniform };
    uint64_t seed = 1;
    uint64_t jobs = 1000;
    std::vector<std::pair<std::string, double>> pools;   // name, weight
    std::vector<std::pair<std::string, double>> tiers;   // QOS, weight
    std::vector<std::pair<uint32_t, double>> gpus;       // GPU count, weight
    Duration duration = Duration::Lognormal;
    double duration_a = 3600;  // Fixed: seconds; Exponential: mean;
    double duration_b = 1;     // Lognormal: median a, sigma b; Uniform: [a, b]
    int64_t duration_min = 1;  // durations are clamped to [min, max]
    int64_t duration_max = 0;  // 0: no maximum
    // Arrivals: mean seconds between submits when > 0, else from the load:
    // load * cluster GPUs / (mean GPUs * mean duration) jobs per second.
    double interarrival = 0;
    double load = 1;
    uint32_t users = 0;        // > 0: user u1..uN, uniform; 0: no user
    int64_t start = 0;         // the first job's submit time
    // Accounts, each a path in the account tree (departments
    // over projects) with its share of the arrivals; jobs draw one (the
    // last name of the path) before anything else.  Empty: no accounts.
    struct Account {
        std::vector<std::string> path;   // e.g. {"physics", "qcd"}
        double weight = 1;
        std::vector<std::string> tiers;  // its jobs' QOS among Tiers (by their weights); empty: all
    };
    std::vector<Account> accounts;
    bool pool_per_account = false;   // a job's pool is its account (one partition per team)
    uint32_t cpus_per_gpu = 0;       // a job's CPUs and memory per GPU; 0: none
    uint64_t mem_mb_per_gpu = 0;
};

// Whitespace-separated Key=Value tokens (several lines; '#' comments; keys
// in any case), e.g.
//   Seed=7 Jobs=100000 Pools=pool1,pool2,pool3,pool4
//   Tiers=high:0.2,normal:0.5,low:0.3 Gpus=1:0.6,2:0.2,4:0.1,8:0.1
//   Duration=lognormal:1h:1.0 DurationMin=60 DurationMax=2d Load=1.5 Users=20
//   Accounts=physics/qcd:3,physics/astro:2,biology/imaging:1
//   AccountTiers=imaging:low CpusPerGpu=8 MemPerGpu=64G PoolPerAccount=yes
// Durations: seconds, or with a unit s, m, h, d.  Accounts: PATH[:WEIGHT]
// with '/' between a department and its project (any depth); the tree
// the paths make is the workload's account_parent.  AccountTiers:
// ACCOUNT:TIER[+TIER...] restricts a project's QOS (a zero-quota project
// submits only preemptible work).  PoolPerAccount=yes: each job asks for
// the partition named after its project, the OSMO model of one partition
// per team; the jobs are otherwise the same as without it (same draws).
// MemPerGpu: MiB, or with a unit M, G, T.  Duration forms:
// fixed:T, exp:MEAN, lognormal:MEDIAN:SIGMA, uniform:MIN:MAX.  A list
// entry without ":WEIGHT" weighs 1.  Pools and Tiers are required.
// `overrides`: more tokens, which replace the same keys of `text` (the
// command line's --generate=@FILE KEY=VALUE...); their messages name
// "--generate".
GeneratorSpec parse_generator_spec(const std::string &text, const std::string &source,
                                   const std::string &overrides = "");
// Mean GPUs and mean duration (unclamped) of the spec's distributions.
double mean_gpus(const GeneratorSpec &spec);
double mean_duration(const GeneratorSpec &spec);
// Jobs 1..N, label "gN"; `cluster_gpus` sets the arrival rate from Load.
Workload generate_workload(const GeneratorSpec &spec, uint64_t cluster_gpus);

}  // namespace gpupool::sim

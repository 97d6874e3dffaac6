// `gpupool sim`'s replay: a Workload on a SimCluster under one policy,
// through Slurm-like mechanics (discrete events in whole seconds, whole
// GPUs, first-fit packing, a scheduling walk in the policy's order,
// preemption of the shortest prefix of the policy's candidates, requeue
// after cred_expire).  The gpupool policy is the unchanged core
// (gpupool::Engine) driven as the plugins drive it; the baselines model
// Slurm's own behaviour (policy_*.cpp, each says what it models).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config.hpp"
#include "workload.hpp"

namespace gpupool::sim {

enum class PolicyKind { Gpupool, Strict, Borrow, Fifo };

// "gpupool", "strict", "borrow", "fifo".
const char *policy_name(PolicyKind p);
// Comma-separated names ("all": the four, in that order).  Throws
// InputError naming the unknown one.
std::vector<PolicyKind> parse_policies(const std::string &text);

struct ReplayOptions {
    // A requeued job may start again cred_expire + 1 s after its
    // preemption (Slurm: begin_time = now + cred_expire + 1).  Default: the
    // live test cluster's AuthInfo=cred_expire=5.
    int64_t cred_expire = 5;
    // gpupool: least simulated seconds between two full passes of the
    // core after a change (the plugin's agent: 1 s), besides the periodic
    // pass every RecalcInterval.  Between passes the core is told of each
    // submit (provisional), end (job_ended) and asked before a preemption
    // after a change (refresh_running), as the plugins do.
    int64_t pass_interval = 1;
    // Scheduling walks at most every this many simulated seconds (0: at
    // every instant something happens, as the live cluster whose
    // scheduler runs on every submit and end).  A cap for huge replays,
    // like Slurm's sched_interval.
    int64_t sched_interval = 0;
    // Which node a one-node job gets (Placement=, placement.hpp).  Conf:
    // the gpupool policy places each pool as its Placement= says (pack
    // through node Weights refreshed before each scheduling walk, as the
    // plugin sets them after each pass; by default Slurm's own order), and
    // the other policies as Slurm alone does (first fit; least loaded where
    // LLN=YES).  First, Pack, Spread: every partition
    // so, whatever the policy, to compare strategies on one workload.
    // BestFit: Slurm 22.05's own choice (cons_tres _eval_nodes, measured
    // live): the nodes with room form runs of consecutive nodes of one
    // Weight; the lowest Weight, then the shortest run, then the first; its
    // first node (23.11 and 24.11 alike, measured).  First is 26.05's
    // (measured live), and 22.05's too where every node with room is in
    // one run.
    enum class Placement { Conf, First, Pack, Spread, BestFit };
    Placement placement = Placement::Conf;
    // Slurm's timing of a preemption (0, 0: the victims' GPUs are free and
    // the preemptor starts in the instant it preempts).  Measured on the
    // live cluster (doc/evaluation.md, "Preemption as Slurm times it"):
    // - kill_delay: seconds from a preemption until its victims' GPUs may
    //   be taken (slurmd kills the job, the epilog runs, the node leaves
    //   COMPLETING, the next scheduling cycle looks); the preemptor stays
    //   pending meanwhile and the victims' nodes are completing.
    int64_t kill_delay = 0;
    // - kill_delay_max: above kill_delay, each victim's kill takes a whole
    //   number of seconds drawn evenly from [kill_delay, kill_delay_max]
    //   by kill_seed, the job and its run.  Kills spread on a live cluster
    //   (1.4 to 3.3 s in one cycle of the 22.05 bench).
    int64_t kill_delay_max = 0;
    uint64_t kill_seed = 1;
    // - kill_delays: the n-th victim the replay preempts takes the n-th
    //   (seconds, at least 1), and those after the list as above: a live
    //   run's own kills in their order (scripts/preempt-bench-sim.sh).
    std::vector<int64_t> kill_delays;
    // - backfill_interval: > 0, only the walks at multiples of it
    //   (sched/backfill's cycles, bf_interval) preempt, trying every
    //   pending job; the walks between (the main scheduler, on every
    //   event) start what fits free and stop trying a partition at its
    //   first job that does not fit, whose nodes no later job of any
    //   partition gets in that walk (Slurm's fail_by_part).  On the live runs of
    //   scripts/preempt-bench.sh every preemption came from backfill.
    int64_t backfill_interval = 0;
    // - backfill_times: with a backfill_interval, the cycles come at these
    //   instants (sorted) instead, and at its multiples after the last: a
    //   live run's own cycles (scripts/preempt-bench-sim.sh).
    std::vector<int64_t> backfill_times;
    // - backfill_preemptions: > 0, a backfill cycle preempts for at most
    //   this many jobs (Slurm's backfill gives up its locks after
    //   bf_yield_interval, 2 s, and each preemption takes some of it: on
    //   the live 4-GPU bench about 0.1 s).  0: no cap.
    uint32_t backfill_preemptions = 0;
    // - backfill_spacing_milli: a backfill cycle's k-th preemptor (from 0)
    //   preempts k x this many thousandths of a time unit after the
    //   cycle's start (its victims' kills start then): a live cycle tests
    //   its jobs one after another, over up to a second and a half (the
    //   bench's mean, scripts/preempt-bench.sh).  0: all at the cycle's
    //   start.  Only the kill's end and the victim's requeue move: the
    //   victim stops running, and the preemptor's guard starts, at the
    //   cycle's start (a lag of up to two seconds against a 15 s guard).
    int64_t backfill_spacing_milli = 0;
    // - preempt_guard: a job that preempted less than this many seconds
    //   ago does not preempt again (Slurm's preempt_start_time guard:
    //   KillWait + MessageTimeout, 5 + 10 on the live cluster).  Only
    //   with a kill_delay.  `gpupool sim` refuses these with a
    //   sched_interval (they need a walk at every event).
    int64_t preempt_guard = 15;
    // Pool samples (share, fairshare, Jain's index, the per-pool CSV)
    // every this many seconds; 0: about 1000 samples over the replay.
    int64_t sample_interval = 0;
    // A job preempted and requeued this many times is not requeued again:
    // it is left held (JobEnd::RequeueLimit) and noted.  Slurm has no such
    // limit for preemption (MAX_BATCH_REQUEUE counts node failures only),
    // but a replay must end: jobs preempted again and again are a cycle
    // of the policy, which the report names.
    uint32_t max_requeues = 1000;
    // Seconds two starts may be apart and still count as simultaneous
    // when the replay's start order is checked against the recorded one
    // (StartOrderCheck); default: the live test cluster's sched_interval.
    int64_t order_tolerance = 2;
    // The gpupool.conf whose Account= quotas the per-account
    // figures (AccountMetrics) hold each account to; null: the replay's
    // own.  A flat configuration's replay is held to the departments'
    // quotas of another this way.
    const Config *account_quotas = nullptr;
    // Keep the start order log (StartRecord per start).
    bool start_log = true;
    // For tests: walk every pending job in the policy's order, without the
    // class and search shortcuts (replay.cpp); the same starts, slower.
    bool reference_walk = false;
    // Called now and then with the share of jobs done (0..1) and the
    // simulated time; null: never.
    std::function<void(double done, int64_t now)> progress;
};

enum class JobEnd : uint8_t {
    Completed,     // ran its whole duration
    Cancelled,     // preempted with PreemptMode=cancel
    NeverStarted,  // still pending when nothing else could happen
    RequeueLimit,  // preempted max_requeues times: held
};
const char *job_end_name(JobEnd e);

// One job's life in a replay, in Workload order.
struct JobOutcome {
    int64_t first_start = -1;
    int64_t last_start = -1;
    int64_t end = -1;             // completion or cancellation; -1: never
    int64_t wait = 0;             // seconds pending in all, requeues included
    int64_t lost_gpu_seconds = 0; // GPUs x seconds of the runs preemption ended
    uint32_t preemptions = 0;
    int32_t partition = -1;       // where it ran last (SimCluster index)
    int tier = -1;                // gpupool.conf tier index
    JobEnd state = JobEnd::NeverStarted;
};

// A start, in the order the replay made them.
struct StartRecord {
    int64_t time = 0;
    uint32_t job = 0;             // Workload index
    int32_t partition = -1;
    std::vector<uint32_t> victims;  // Workload indices preempted for it
    int32_t node = -1;              // the node it got (cluster index); -1: several
};

// A pool (a partition gpupool.conf names) at one sample time.
struct PoolSample {
    int64_t time = 0;
    uint32_t pool = 0;            // index in gpupool.conf's pools
    uint32_t used = 0, np_used = 0, p_used = 0;
    uint32_t pending_gpus = 0;    // of pending jobs listing it (eligible or not)
    uint32_t fairshare = 0;       // point in time (UsageWeight=0), over its node set
};

struct Percentiles {
    uint64_t jobs = 0;            // jobs that started at least once
    int64_t p50 = 0, p95 = 0, p99 = 0, max = 0;
    double mean = 0;
};

// Why a pool under its quota with NP demand waits (issue 27), judged at
// each instant for its smallest waiting NP job on its partition's nodes,
// counting as room a node's free GPUs, the GPUs being killed there and
// those of preemptible jobs running there (whoever's):
//   Kill:         one of its NP jobs preempted and waits for the kill;
//   CannotFree:   the room of all the nodes together is too small (NP
//                 jobs of other pools hold the rest);
//   NoSingleNode: enough room in all, but not on any one node;
//   Protected:    a node has the room only with preemptible jobs of other
//                 pools within their quota (which R5 keeps: a swap of
//                 places would start it);
//   Other:        a node has the room, the job has not started there yet
//                 (jobs ordered before it, the next cycle, the policy's
//                 choice of victims).
enum class BelowCause : uint8_t { Kill, CannotFree, NoSingleNode, Protected, Other };
constexpr size_t kBelowCauses = 5;
const char *below_cause_name(BelowCause c);
using BelowByCause = std::array<int64_t, kBelowCauses>;

struct PoolMetrics {
    std::string name;
    uint32_t quota = 0;
    Percentiles wait;
    uint64_t jobs = 0, preemptions = 0;
    double lost_gpu_hours = 0;
    int64_t np_over_quota_seconds = 0;   // NP GPUs running > quota
    int64_t below_quota_seconds = 0;     // an NP job waited that fit the quota left
    BelowByCause below_by_cause{};       // below_quota_seconds split (BelowCause)
    double mean_used = 0;                // time-weighted GPUs
    double mean_share = 0;               // over samples with demand: used / min(fairshare, demand)
};

// An account (department or project) over the whole replay, its
// jobs and those of every account below it.  Its quota: the GPU quotas of
// its Account= entries, summed over the pools; without any, in the OSMO
// model of one partition per team, the quotas of the pools named after it
// or after the accounts below it.  Figures over NP jobs (which are never
// preempted): when their GPUs went over the quota, and when one waited
// that fitted in the quota its account's running NP jobs left.
struct AccountMetrics {
    std::string name;
    std::string parent;                  // "" at the top
    uint32_t depth = 0;                  // 0: a department (top level)
    bool has_quota = false;
    uint64_t quota = 0;                  // GPUs
    uint32_t rank = 0;                   // its Rank (the highest of its entries')
    uint64_t jobs = 0, preemptions = 0;
    Percentiles wait;
    double gpu_hours = 0;                // every run, preempted ones included
    uint64_t np_peak = 0;                // most NP GPUs at once
    int64_t np_over_quota_seconds = 0;
    int64_t below_quota_seconds = 0;
};

struct TierMetrics {
    std::string name;
    bool preemptible = false;
    uint64_t jobs = 0;
    Percentiles wait;
};

struct Metrics {
    uint32_t gpus = 0;                   // of the cluster
    int64_t begin = 0, end = 0;          // first submit .. last event
    double busy_gpu_seconds = 0;
    double utilisation = 0;              // busy / (gpus * (end - begin))
    int64_t waiting_seconds = 0;         // some job pending
    double utilisation_waiting = 0;      // busy / (gpus * waiting_seconds)
    double utilisation_useful = 0;       // (busy - lost) / (gpus * (end - begin))
    // Up to the last submit: a finite workload drains after it (the last
    // long jobs alone on an emptying cluster), which a cluster in service
    // never does.
    int64_t arriving_seconds = 0;        // last submit - begin
    double utilisation_arriving = 0;     // busy then / (gpus * arriving_seconds)
    uint64_t jobs = 0, completed = 0, cancelled = 0, never_started = 0, requeue_limit = 0;
    Percentiles wait;                    // every job that started
    uint64_t preemptions = 0;
    double lost_gpu_hours = 0;
    int64_t np_over_quota_seconds = 0;   // any pool's NP usage over its quota
    int64_t below_quota_seconds = 0;     // any pool kept below its quota with NP demand
    BelowByCause below_by_cause{};       // the pools' below_quota_seconds, summed, by cause
    // NP jobs from the instant they fit their pool's quota (after its
    // running NP jobs and the waiting NP jobs before them in tier and
    // submit order) to their start; never started: to the end.
    Percentiles within_quota_wait;
    std::map<uint32_t, Percentiles> within_quota_wait_by_gpus;  // the same per job size (GPUs)
    int64_t prompt_window = 0;           // kill delay + one cycle (backfill or sched interval)
    uint64_t within_quota_prompt = 0;    // of within_quota_wait.jobs: started within prompt_window
    double jain = 0;                     // mean over samples with 2+ pools asking
    uint64_t samples = 0;
    std::vector<TierMetrics> tiers;      // gpupool.conf order
    std::vector<PoolMetrics> pools;      // gpupool.conf order
    std::vector<AccountMetrics> accounts;  // the account tree depth first, by name; none without accounts
};

// What the replay did, for the curious and the benchmark.
struct ReplayStats {
    uint64_t instants = 0, walks = 0, passes = 0, refreshes = 0, preemption_searches = 0;
    double wall_seconds = 0;
};

// The replay's start order against the recorded one (SimJob::
// recorded_start and recorded_restarts, from sacct or a trace), over the
// jobs that have a recorded run and started in the replay: each job's
// first start, and its Nth start after a requeue where both the record and
// the replay have one (the replay's from its start log; without the log,
// first starts only), except a recorded run whose start is unknown.  A pair of starts is compared when one was recorded
// more than `tolerance` seconds before the other (a live scheduler starts
// jobs a second or two after it could: closer starts have no order to
// keep); it is discordant when the replay made that one more than
// `tolerance` seconds after the other.
struct StartOrderCheck {
    int64_t tolerance = 0;
    uint64_t jobs = 0;            // with a recorded run, started here
    uint64_t starts = 0;          // compared: their first starts and the restarts both have
    uint64_t unmatched_restarts = 0;  // restarts only the record or only the replay has
    uint64_t pairs = 0;           // compared
    uint64_t discordant = 0;
    // Workload index of the first job, in recorded order, that the replay
    // started before a job recorded as starting before it; -1: none.
    int64_t first_mismatch = -1;
};

struct ReplayResult {
    PolicyKind policy = PolicyKind::Gpupool;
    std::vector<JobOutcome> jobs;        // Workload order
    std::vector<StartRecord> starts;
    std::vector<PoolSample> samples;
    Metrics metrics;
    ReplayStats stats;
    StartOrderCheck order_check;
    std::vector<std::string> notes;      // jobs that can never start, ...
};

// Replay `workload` on `cluster` under `policy` with gpupool.conf `config`
// (tiers, pools and quotas for every policy; the gpupool policy runs the
// core with it).  Throws InputError for a workload the replay cannot take
// (duplicate job ids, a job without duration).
ReplayResult replay(const SimCluster &cluster, const Workload &workload, const Config &config, PolicyKind policy,
                    const ReplayOptions &options);

}  // namespace gpupool::sim

// The gpupool engine: config + remembered state in, decisions out.  Engine
// stages configurations, keeps state between passes and runs the pass over
// its data (pass.hpp).  Plain C++17, no Slurm, no clock: `now` is always
// passed in.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "min_runtime.hpp"
#include "nodes.hpp"
#include "pass.hpp"
#include "placement.hpp"
#include "snapshot.hpp"
#include "usage.hpp"
#include "victim_plan.hpp"

namespace gpupool {

// A job as the plugins hand it over, without copying its strings.
struct JobRef {
    uint32_t id = 0;
    std::string_view partitions;  // comma-separated; running: one
    std::string_view qos;
    uint32_t gpus = 0;
    int64_t start = 0;
    // Pending jobs (provisional): as in SnapJob.
    int64_t submit_time = 0;
    uint32_t restart_cnt = 0;
    uint32_t array_tasks = 0;
    // Its account and CPUs and memory (MiB) per task.
    std::string_view account;
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
    // Pending: the nodes it asks for (0: one), and whether it may use only
    // some nodes of its partitions, and which where known
    // (SnapJob::nodes_given, allowed_nodes).
    uint32_t nodes = 0;
    bool nodes_given = false;
    std::string_view allowed_nodes;
    bool whole_node = false;  // SnapJob::whole_node
    bool gpus_untyped = false;  // SnapJob::gpus_untyped
    bool dependent = false;     // SnapJob::dependent
    bool over_limit = false;    // SnapJob::over_limit
    // Pending: seconds Slurm counts it to run (SnapJob::run_limit); 0: not known.
    int64_t run_limit = 0;
    uint32_t het_job_id = 0;    // SnapJob::het_job_id
};

// A snapshot job as a JobRef; `parts` keeps its partitions joined by
// commas, and must outlive the JobRef.
JobRef job_ref(const SnapJob &job, std::string &parts);

// Why a preemption is or is not allowed: made without a heap allocation
// (preemptable() runs in slurmctld's request, scheduler and backfill
// threads, for every running job at each job tested; a string made and
// freed there each time lands between slurmctld's job records).
class WhyText {
public:
    template <typename... A>
    void set(const char *fmt, A... args) {
        if (!muted_) std::snprintf(buf_, sizeof(buf_), fmt, args...);
    }
    // No text from now on: the victim plan asks only yes or no of every
    // job on a node, and formatting was most of its cost.
    void mute() { muted_ = true; }
    WhyText &operator=(const char *text) {
        set("%s", text);
        return *this;
    }
    const char *c_str() const { return buf_; }
    bool empty() const { return buf_[0] == '\0'; }
    friend bool operator==(const WhyText &w, const char *text) { return std::strcmp(w.buf_, text) == 0; }
    friend bool operator==(const WhyText &w, const std::string &text) { return text == w.buf_; }
    friend std::ostream &operator<<(std::ostream &o, const WhyText &w) { return o << w.buf_; }

private:
    char buf_[128] = "";  // as gp_verdict_t.why
    bool muted_ = false;
};

// A preemptor as candidacy() reads it: a pending job of the last pass
// (preemptor_of) or one Slurm asks about.
struct Preemptor {
    int tier = -1;
    uint32_t gpus = 0;
    int32_t account = -1;            // Evaluation::account_ids; -1: none (levels only)
    uint32_t cpus = 0, mem_mb = 0;   // per task, where counted (levels only)
};
inline Preemptor preemptor_of(const PendingResult &r) { return Preemptor{r.tier, r.gpus, r.account, r.cpus, r.mem_mb}; }

// R5's entitlement is judged with what one preemption frees together: the
// preemptor's own candidates (its pool's or its queues' lower preemptible
// tiers, past MinRuntime) and the borrowed excess of the queues beside its
// path, which it may take in the same preemption.  Without that, a pool's
// job within its quota waits for good when its own LOW jobs and another
// pool's borrowers must go at once.  Only a non-preemptible preemptor
// counts them (a preemptible one, ReclaimBy=all, must fit as it is).
struct Freeable {
    uint32_t pool_gpus = 0;  // in the whole pool, for reclaim between pools (step to quota)
    uint32_t pool_gpus_to_bound = 0;  // the same in the step to fairshare
    // With levels, per queue on the preemptor's path (its own first, the
    // root last): what it may free inside that queue (path.to_quota: with
    // siblings' excess over quota; path.to_bound: over their reclaim bound).
    PathFreed path;
    std::vector<Amounts> lower, takeable, bound;  // freed_on_path's inputs, kept for their room
};

// Which level decided a reclaim (R5), read by `gpupool why`: the pool, and
// with levels the queue of its tree (-1: the pool itself, among the pools of
// its node set), the resource, its amount there and its bound (quota, or
// fairshare in the step to fairshare).  pool -1: no reclaim check decided
// (R4 by tier, or a refusal before the check).
struct Decider {
    int pool = -1;
    int32_t queue = -1;
    Resource resource = kGpu;
    uint64_t amount = 0, bound = 0;
    bool fairshare = false;
};

struct Verdict {
    bool allowed = false;
    Rule rule = Rule::None;
    int victim_pool = -1, preemptor_pool = -1;
    WhyText why;
    Decider decided;
};


class Engine {
public:
    Engine() = default;

    // Replace the configuration; on error throws ConfigError and keeps the
    // old one.  With no valid pass it applies at once.  After a pass it is
    // staged and applies at the start of the next evaluate(): until then
    // provisional(), job_ended(), refresh_running() and preemptable() go on
    // with the configuration of the last pass and that pass, so a
    // reconfigure holds no new job and refuses no preemption.
    void set_config(Config cfg);
    bool has_config() const { return static_cast<bool>(config_); }
    // The configuration decisions use now (that of the last pass).
    const Config &config() const { return *config_; }
    // The configuration the next full pass applies: the staged one, if any.
    const Config &next_config() const { return staged_ ? *staged_->config : *config_; }
    bool has_staged_config() const { return static_cast<bool>(staged_); }

    // Tier index of a QOS (unknown or empty: DefaultTier).
    int tier_of_qos(const std::string &qos) const;

    // Original submit time (R1.3): a job never requeued has Slurm's; a
    // requeued one the earliest seen (Slurm resets it on requeue).
    int64_t note_job(uint32_t job_id, int64_t submit_time, uint32_t restart_cnt, int64_t now);

    // Full pass: usage accounting, fairshare, order, admission, victims.
    // If it throws (no memory), no pass is in force until the next one.
    void evaluate(const Snapshot &snap, int64_t now);
    // Running jobs only: usage, victim walk and ranks; order, admission and
    // pending demand stay from the last full pass.
    void refresh_running(const Snapshot &snap, int64_t now);

    // Raised each time a configuration takes effect (what tier_of_qos()
    // and every decision read): a caller's cache of answers keyed on it.
    uint64_t config_serial() const { return config_serial_; }

    // Placement of a job that arrived after the last pass (priority_p_set:
    // slurmctld's submit path, under its job write lock; no heap
    // allocation per job while the room the last pass reserved lasts).
    PendingResult provisional(const JobRef &job, int64_t now);
    PendingResult provisional(const SnapJob &job, int64_t now);
    // A job ended, was cancelled or requeued: give back what it held or had
    // reserved and redo admission in the last pass's order at once, so a
    // held job can start in the very next scheduling pass.  Returns true if
    // any pending job's result changed; job_end_changes() lists them.
    // Costs what the jobs it changes cost, not what the queue holds: only
    // the jobs that can gain are visited (PoolCandidates).  A job that
    // stays held keeps the counts of its reason ("2/4") until the next
    // pass, which the plugin starts at every job end.
    bool job_ended(uint32_t job_id, int64_t now);
    // Pending jobs (ids) whose priority, admission, admitted tasks,
    // refused pools or running array tasks the last job_ended() changed,
    // the job that ended left out.
    const std::vector<uint32_t> &job_end_changes() const { return changes_; }
    // The same decisions as job_ended() by a walk over the whole queue
    // (which also renumbers it): the reference the unit tests hold
    // job_ended() to.
    bool job_ended_full(uint32_t job_id, int64_t now);
    Verdict preemptable(const JobRef &victim, const JobRef &preemptor, int64_t now);
    // R4/R5 for preemptor `p` starting in pool `q` and a preemptible victim
    // of the last pass, MinRuntime apart: the one home of that rule
    // (preemptable(), explain()).
    bool candidacy(int q, const Preemptor &p, const Freeable &f, const RunningInfo &vi, Verdict &v) const;
    // What preemptor `p` starting in pool q may free there (Freeable), at `now`.
    // `out` is reused: with its room made, nothing allocates.
    void freeable(int q, const Preemptor &p, int64_t now, Freeable &out) const;
    // R2 walked again over the last pass's order, by the rule's own code,
    // with the quota lines it checked for each job (the reservations of the
    // jobs ahead as the pass and job ends since left them): what `gpupool
    // why` reads.  The pass itself keeps no trace.
    AdmissionTrace admission_trace() const;
    // Pass result or provisional placement of a pending job; null if none.
    const PendingResult *pending_result(uint32_t job_id) const;
    // The tier priority R1 orders a pending job by: its tier's, except that
    // a preemptible job that preempted (ReclaimBy=all) and waits for the
    // GPUs it freed goes at waiting_preemptor_priority(): a job of a higher
    // preemptible tier would otherwise take them first and be reclaimed
    // again.
    uint32_t order_priority(const PendingResult &r) const;
    // The highest preemptible tier's priority where preemptible jobs reclaim
    // (ReclaimBy=all or ReclaimTo=fairshare) and every NP tier is above it;
    // else 0: no preemptible preemptor moves up (none reclaims, or it would
    // land among NP tiers).
    uint32_t waiting_preemptor_priority() const;
    uint32_t victim_rank(uint32_t job_id) const;

    // Where GPUs are, as the last pass or refresh saw them.
    const NodeLayout &nodes() const { return nodes_; }
    // The preemptor's victim plan (victim_plan.cpp), made at its first
    // question on a node layout and kept for the layout's life: preemptable()
    // says yes only to the jobs it plans.
    const VictimPlan &victim_plan(const JobRef &preemptor, int64_t now);
    // The order Slurm should try the preemptor's candidates in: its planned
    // victims first, node group by node group (1 = first), then the rest by
    // R6 (victim_rank).
    uint32_t plan_rank(uint32_t preemptor_id, uint32_t victim_id) const;
    // Slurm preempted `victim` for `preemptor`: its plan is carried out, the
    // preemptor waits for the GPUs it freed, and until it starts the next
    // passes put it first in its tier and it may start only in the
    // partition it preempted in (start_partitions()).
    void note_preempted(uint32_t preemptor_id, uint32_t victim_id);
    // Running tasks of job array `array_job_id` as the engine counts them
    // (last pass, refresh_running, job_ended).
    uint32_t array_running(uint32_t array_job_id) const;
    // "GpuPoolQuota:pool1 2/2" for a held job ("GpuPoolQuota:pool1 2/2,
    // pool2 2/2" when it lists several pools), "" otherwise.
    std::string reason_of(const PendingResult &r) const;
    // The same into buf (cut to fit, NUL-terminated); returns its length.
    size_t reason_into(const PendingResult &r, char *buf, size_t len) const;
    // Of `listed` (a pending job's comma-separated partitions), those Slurm
    // may start it in now: every partition that is not a pool, and the
    // pools whose quota admitted it (R2).  A held job: none.  Throws
    // std::invalid_argument for a job with no result.
    std::string start_partitions(uint32_t job_id, std::string_view listed) const;
    // The GPUs admission counts for a pending job (whole nodes, untyped
    // GPUs under a typed quota), on the last pass's nodes.
    uint32_t counted_gpus(const SnapJob &j) const { return admitted_gpus(j.partitions, gpu_ask(j)); }

    const Evaluation &last() const { return eval_; }
    std::vector<std::string> warnings() const;
    // Placement= (placement.hpp): the Weight each node of the last layout
    // should have; see gp_engine_node_weights.
    size_t node_weights(const uint32_t *current, uint32_t *want, size_t count);

    // Reports (report.cpp).
    std::string report_json() const;

    struct JobMemory {
        int64_t orig_submit = 0;
        int64_t last_seen = 0;
    };
    // GPUs a queue's own jobs held, by the queue's account.
    struct AccountHistory {
        UsageSeries usage;
        uint32_t last_used = 0;
    };
    struct PoolHistory {
        UsageSeries usage;      // GPUs the pool held
        UsageSeries capacity;   // GPUs of the nodes it shares
        uint32_t last_used = 0, last_capacity = 0;
        // Per account with an Account= entry for the pool; summed up the
        // tree by divide_among_queues, so a department carries its projects'.
        std::map<std::string, AccountHistory> accounts;
    };
    // How long a job absent from every snapshot is remembered.
    static constexpr int64_t kForgetAfter = 3600;
    // How long a pool taken out of the configuration keeps its usage
    // history where UsageWindow is unlimited.
    static constexpr int64_t kKeepUnconfigured = 30 * 86400;
    // The throttle gpupool put on a pending array record (the plugin's
    // gp_array_throttle_t while capped): Slurm saves the capped throttle as
    // the record's own, so only this tells a restarted slurmctld which
    // throttle is the user's.
    struct ArrayCap {
        uint32_t user_max = 0;  // the user's throttle (0: none)
        uint32_t our_max = 0;   // the cap gpupool set (at least 1)
        bool operator==(const ArrayCap &o) const { return user_max == o.user_max && our_max == o.our_max; }
    };
    // A cap set or changed (our_max 0: gone).  Returns whether a record
    // was capped or uncapped or its user's throttle moved: worth a save.
    bool note_array_cap(uint32_t job_id, ArrayCap cap);
    std::optional<ArrayCap> array_cap(uint32_t job_id) const;

    // Persistent state (state.cpp).  What the state file keeps, as plain
    // data: copied under the engine's lock, encoded and written after it.
    struct PersistentState {
        std::map<std::string, PoolHistory> history;
        std::vector<std::pair<uint32_t, JobMemory>> jobs;
        std::vector<std::pair<uint32_t, ArrayCap>> array_caps;
        int64_t last_account = 0;
    };
    PersistentState persistent_state() const;
    // Errors (a name jansson cannot encode, I/O) throw std::runtime_error.
    static std::string encode_state(const PersistentState &state, int64_t now);
    // Write `text` to `path` + ".new" (a new file, never through a link),
    // fsync, rename over `path`, fsync the directory.
    static void write_state_file(const std::string &path, const std::string &text);
    // Tests put a writer in place of write_state_file (empty: the file).
    using StateWriter = std::function<void(const std::string &path, const std::string &text)>;
    static void set_state_writer(StateWriter writer);
    // encode_state then the writer.
    static void store_state(const std::string &path, const PersistentState &state, int64_t now);

    std::string state_json(int64_t now) const { return encode_state(persistent_state(), now); }
    void load_state_json(const std::string &text);  // throws std::runtime_error
    void save_state(const std::string &path, int64_t now) const { store_state(path, persistent_state(), now); }
    void load_state(const std::string &path);

private:
    struct TierKey;
    void resolve_pools(const Snapshot &snap, Evaluation &ev) const;
    void count_running(const Snapshot &snap, Evaluation &ev) const;
    void use_in_queues(const RunningInfo &r, PoolState &ps, int sign) const;
    void account_usage(Evaluation &ev, int64_t now);
    void compute_fairshare(Evaluation &ev) const;
    void order_pending(const Snapshot &snap, Evaluation &ev, int64_t now);
    void admit(Evaluation &ev) const;
    void admit_together(const std::vector<PendingResult *> &parts, std::vector<PoolState> &pools) const;
    bool readmit_het(PendingResult &r);
    const PendingResult *het_front(const std::vector<PendingResult *> &parts) const;
    bool admit_together_or_keep(const std::vector<PendingResult *> &parts, std::vector<PoolState> &pools) const;
    static void index_het_parts(Evaluation &ev);
    void rank_victims(Evaluation &ev) const;
    void fold_provisional();
    void admit_more(Evaluation &ev) const;
    void build_candidates(Evaluation &ev) const;
    void update_candidate(Evaluation &ev, uint32_t pos) const;
    static void add_reservation(const PendingResult &r, Evaluation &ev, int sign);
    static void uncount_held(const PendingResult &r, Evaluation &ev);
    // A running job ended: its GPUs leave its pool; returns its array's id.
    uint32_t release_running(uint32_t job_id);
    void clear_left(PendingResult &r, Evaluation &ev) const;
    // Job ends (job_end.cpp).
    static void drop_candidate(Evaluation &ev, const PendingResult &r, uint32_t pos);
    bool superseded(uint32_t job_id) const;
    void take_back(uint32_t job_id);
    bool readmit(PendingResult &r);
    size_t next_fit(size_t from) const;
    bool may_gain(const PendingResult &r) const;
    void number_pending(Evaluation &ev) const;
    void place_between(PendingResult &r) const;
    uint64_t priority_slot(size_t pending) const;
    PoolList managed_pools(const PartitionList &parts) const;
    PoolList managed_pools(std::string_view parts) const;
    // The GPUs a pending job counts for admission (R2): its ask, or for
    // one asking for whole nodes (--exclusive), every GPU of each node,
    // which Slurm gives it whatever it asked, none too
    // (_handle_exclusive_gres): the most a node of its partitions has,
    // times its nodes.  GPUs of no type (`untyped`, QuotaTRES counting one
    // type) count only where every pool partition it lists has GPUs of
    // that type: Slurm may give it those there; in one without, it costs
    // that quota nothing, and R2 counts a job alike in all its pools.
    struct GpuAsk {
        uint32_t gpus = 0, nodes = 0;
        bool whole = false, untyped = false;
    };
    static GpuAsk gpu_ask(const SnapJob &j) { return {j.gpus, j.node_count, j.whole_node, j.gpus_untyped}; }
    static GpuAsk gpu_ask(const JobRef &j) { return {j.gpus, j.nodes, j.whole_node, j.gpus_untyped}; }
    uint32_t admitted_gpus(const PartitionList &parts, const GpuAsk &ask) const;
    uint32_t admitted_gpus(std::string_view parts, const GpuAsk &ask) const;
    static uint32_t admitted_gpus(uint32_t most_whole, uint32_t fewest, const GpuAsk &ask);
    bool names_pool(std::string_view parts) const;
    // R2, the one home of its arithmetic, and Limit and LendingLimit
    // (any tier): admission of one pending result against the
    // pools' current usage and reservations (admission.cpp).
    void decide_admission(PendingResult &r, const std::vector<PoolState> &pools,
                          std::vector<QuotaLine> *lines) const;
    // decide_admission() and the reservation of what it admits.
    void admit_one(PendingResult &r, std::vector<PoolState> &pools) const;
    static void reserve_admitted(const PendingResult &r, std::vector<PoolState> &pools, int sign = +1);
    static void reserve_in(const PendingResult &r, PoolState &ps, uint32_t tasks, int sign);
    static uint64_t fit_in_queues(PendingResult &r, int p, const PoolState &ps, uint64_t fit, bool &big_enough,
                                  QuotaLine *line);
    static uint32_t admit_more_tasks(PendingResult &r, std::vector<PoolState> &pools);
    static void count_held(const PendingResult &r, Evaluation &ev);
    void tally_pending(Evaluation &ev) const;
    bool preemptible_tier(int tier) const;
    uint32_t tier_priority(int tier) const;
    bool borrows_after_start(const PoolState &ps, int tier, uint32_t gpus) const;
    const Freeable &freeable_cached(int q, int64_t now);
    RunningInfo victim_info(const JobRef &victim) const;
    // R5 as a count (victim plans only): the victim as if first in its
    // pool's walk, so any borrowed job of a pool over its bound may be
    // taken; the plan caps what one set takes from the pool.
    RunningInfo counted_in_excess(const RunningInfo &vi) const;
    // Whether the count could allow what the walk refused: a preemptible
    // job past the walk's excess, of a pool over its quota (a bound is never
    // below it).  Spares the second verdict for the other jobs.
    bool may_count(const RunningInfo &vi) const;
    // preemptable() before the plan: R4, R5, MinRuntime, R2 of the preemptor.
    Verdict verdict_for(const RunningInfo &vi, const JobRef &preemptor, int64_t now, bool with_why = true);
    // The victim plan (victim_plan.cpp).
    void apply_plan(uint32_t victim_id, const JobRef &preemptor, int64_t now, Verdict &v);
    void make_plan(const JobRef &preemptor, int64_t now, VictimPlan &plan);
    bool eligible_nodes(const JobRef &preemptor, std::vector<int32_t> &out);
    void node_candidates(int32_t node, const JobRef &preemptor, int64_t now, bool by_count, bool swaps,
                         bool by_work = false, bool cpu_only = false);
    // Where the node's CPUs or memory do not fit the preemptor with the set
    // freed: candidates added that free what is short (false: none do).
    bool cover_room(const NodeUse &u, PlanCost &cost);
    bool within_excess(const std::vector<uint32_t> &set) const;
    // A swap (R5, victim plans only): an admitted NP preemptor may take a
    // preemptible job of another pool within its quota (flat pools, one
    // node, ReclaimTo=quota) where nothing else frees the node, for at most
    // the GPUs preemptible jobs hold past their pools' quotas once it
    // starts (SwapRoom), which the pool it took from reclaims in turn.
    bool may_swap(const RunningInfo &vi, const JobRef &preemptor, int64_t now);
    SwapRoom swap_room(const JobRef &preemptor);
    bool within_swap(const std::vector<uint32_t> &set, uint32_t per_node) const;
    void make_choices(const JobRef &preemptor, int64_t now, uint32_t node_count);
    // Whether a preemptor's nodes go by room and work lost before reclaim
    // comes before its pool's own lower tiers (R6 "Where victims are": a
    // flat pool with ReclaimTo=quota, where once the job starts its own
    // displaced jobs are past its quota as the borrowers are).  It reads
    // the preemptor's first pool: Slurm asks for victims per partition it
    // tries (preempt_gpupool.c passes part_ptr, the replay its partition).
    bool room_before_own(const JobRef &preemptor);
    // Consolidation (Run:ai, victim_plan.cpp): may this preemptor move
    // others' jobs (a non-preemptible job within its quota); may `vi` be moved; each eligible node's cheapest
    // move, where every moved job can start again at once elsewhere.
    bool entitled_to_move(const JobRef &preemptor);
    bool movable(const RunningInfo &vi, uint32_t gpus_here, int64_t now) const;
    void consolidation_choices(const JobRef &preemptor, int64_t now, uint32_t per_node);
    bool place_moved(int32_t from_node, const std::vector<uint32_t> &set, int64_t now);
    void moved(const VictimPlan &plan, uint32_t place, Verdict &v) const;
    uint32_t np_room(int32_t node) const;
    void choose_nodes(uint32_t preemptor_id, uint32_t node_count, bool with_fallbacks, VictimPlan &plan) const;
    bool still_waiting(VictimPlan &plan) const;
    // Jobs that preempted go first in their tier until they start, by the
    // order of the node they freed (R1).
    void evaluate_pass(const Snapshot &snap, int64_t now);
    void mark_preempted(PendingResult &r) const {
        const uint32_t *node = preempted_first_.find(r.job_id);
        r.preempted = node != nullptr;
        r.freed_node = node ? *node : 0;
    }
    void forget_started_preemptors();
    struct PreemptorCache;
    PreemptorCache &cached_preemptor(const JobRef &preemptor);
    // R5 with levels: between two queues of pool q's tree on different
    // sides of their common ancestor.
    bool reclaim_between_queues(int q, const Preemptor &p, const Freeable &f, int32_t from, const RunningInfo &vi,
                                Verdict &v) const;
    // R5 between two pools of one node set (their tree: NodeSetTree).
    bool reclaim_between_pools(int q, const Preemptor &p, const Freeable &f, const RunningInfo &vi, Verdict &v) const;
    // R5's ReclaimBy: may this preemptor reclaim at all.
    bool reclaims(const Preemptor &p) const;

    // A configuration with the indexes derived from it.
    struct LoadedConfig {
        std::shared_ptr<const Config> config;
        std::unordered_map<std::string, int> qos_tier;
        int default_tier = 0;
        std::unordered_set<std::string> pool_names;
    };
    void apply_config(LoadedConfig next);

    std::shared_ptr<const Config> config_;
    std::unordered_map<std::string, int> qos_tier_;
    int default_tier_ = 0;
    std::unordered_set<std::string> pool_names_;  // config_'s pools, for lookups per job
    std::unique_ptr<LoadedConfig> staged_;        // applies at the next evaluate()
    Evaluation eval_;
    FlatIdMap<JobMemory> jobs_;
    // By the array record's job id; forgotten with its JobMemory.
    std::unordered_map<uint32_t, ArrayCap> array_caps_;
    size_t provisional_peak_ = 0;  // most placements between two passes
    std::vector<uint32_t> changes_;  // of the last job_ended()
    uint64_t config_serial_ = 0;
    std::map<std::string, PoolHistory> history_;
    int64_t last_account_ = 0;
    std::vector<std::string> config_warnings_;
    NodeLayout nodes_;
    // Partition -> the most GPUs (QuotaTRES's) a node of it has, and the
    // most a whole-node job gets there unasked (none on nodes of
    // Flags=explicit GPUs), as of the last pass (admitted_gpus).
    struct PartitionGpus {
        uint32_t most = 0, most_whole = 0;
    };
    std::unordered_map<std::string, PartitionGpus> most_node_gpus_;
    NodeWeights node_weights_;
    std::vector<std::string> placement_warnings_;  // Placement= Slurm cannot honour (last pass)
    std::vector<std::string> weight_warnings_;     // of the last node_weights()
    PlanBook plans_;
    PlanScratch plan_scratch_;
    FlatIdMap<uint32_t> preempted_first_;  // jobs that preempted, not started yet -> the node they freed
    std::unordered_map<uint32_t, std::string> preempted_in_;  // those of them with a plan -> the partition it freed GPUs in

    // The preempt plugin asks about one preemptor against many victims.
    struct PreemptorCache {
        bool valid = false;
        uint32_t id = 0, gpus = 0, cpus = 0, nodes = 0;
        uint64_t mem_mb = 0;
        bool whole_node = false, gpus_untyped = false;
        std::string partitions, qos, account;
        Preemptor who;  // its GPUs as admission counts them (admitted_gpus)
        PoolList pools;
        bool admitted = false;
        int refused_pool = -1;  // not admitted: a pool whose quota it does not fit
        // Per pool asked, made at the first ask at `freeable_now` (MinRuntime
        // depends on it); entries past `freeable_count` are room kept.
        std::vector<std::pair<int, Freeable>> freeable;
        size_t freeable_count = 0;
        int64_t freeable_now = 0;
    } preemptor_cache_;

    friend struct EngineStateAccess;
};

}  // namespace gpupool

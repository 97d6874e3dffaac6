// The gpupool engine: config + remembered state in, decisions out.
// Plain C++17, no Slurm, no clock: `now` is always passed in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "snapshot.hpp"
#include "min_runtime.hpp"
#include "usage.hpp"

namespace gpupool {

enum class Admission { Free, Quota, Held };
enum class Rule { None, InPool, Reclaim };
// R6 class of a running preemptible job within its pool's victim walk.
enum class VictimClass { OverFairshare = 0, OverQuota = 1, InQuota = 2, Never = 3 };

const char *rule_name(Rule r);
const char *victim_class_name(VictimClass c);

struct PoolState {
    std::string name;
    int config_index = 0;
    int domain = -1;            // set of pools sharing nodes; -1: no nodes
    uint32_t capacity = 0;
    uint32_t domain_capacity = 0;
    uint32_t quota = 0, weight = 1;
    int64_t min_runtime = 0;
    uint32_t np_used = 0, p_used = 0;
    std::vector<uint32_t> p_used_by_tier;  // p_used per tier index
    uint32_t np_reserved = 0;   // admitted NP jobs not yet running
    // Reserved twice: a job placed again by provisional() keeps its former
    // placement's reservation in np_reserved until the next job end (or
    // refresh) takes this back.
    uint32_t np_overcount = 0;
    uint32_t pending_jobs = 0, pending_gpus = 0, held_jobs = 0;
    uint32_t fairshare = 0, lent = 0;
    double decayed_usage = 0, usage_share = 0;
    uint32_t standing = 0;      // 0 = most starved (R1.2)
    std::vector<uint32_t> pending_by_tier;  // pending jobs per tier index

    uint32_t used() const { return np_used + p_used; }
    uint32_t borrowed() const { return used() > quota ? used() - quota : 0; }
};

// A short list kept inline (almost always one or two entries), to spare an
// allocation per pending job and pass.
template <typename T, uint32_t kInline>
class InlineList {
public:
    void push_back(const T &p) {
        if (n_ < kInline) {
            inline_[n_] = p;
        } else {
            if (n_ == kInline) spill_.assign(inline_, inline_ + kInline);
            spill_.push_back(p);
        }
        ++n_;
    }
    const T *begin() const { return n_ <= kInline ? inline_ : spill_.data(); }
    const T *end() const { return begin() + n_; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const T &front() const { return *begin(); }
    void clear() {
        n_ = 0;
        spill_.clear();
    }
    bool contains(const T &p) const {
        for (const T &x : *this)
            if (x == p) return true;
        return false;
    }
    bool operator==(const InlineList &o) const {
        return n_ == o.n_ && std::equal(begin(), end(), o.begin());
    }

private:
    uint32_t n_ = 0;
    T inline_[kInline] = {};
    std::vector<T> spill_;
};

// Pools a job may run in.
using PoolList = InlineList<int, 4>;

// A listed pool whose quota a pending NP job does not fit.
struct Refusal {
    int pool = -1;
    uint32_t taken = 0;  // the pool's NP GPUs then, used + reserved
    bool operator==(const Refusal &o) const { return pool == o.pool && taken == o.taken; }
};

// Why an NP job is held; the text is made only when someone asks.
enum class Hold { None, Quota, QuotaTooSmall, Starting };

struct PendingResult {
    uint32_t job_id = 0;
    uint32_t position = 0;
    uint32_t priority = 0;      // 0 when held
    uint32_t nominal = 0;       // the priority it has when not held
    Admission admission = Admission::Free;
    uint32_t factor_tier = 0, factor_fairshare = 0, factor_age = 0;
    int64_t orig_submit = 0;
    int tier = -1;
    PoolList pools;             // managed pools it may run in
    uint32_t gpus = 0;
    uint32_t group_standing = 0;
    Hold hold = Hold::None;
    // R2 over several pools: the listed pools whose quota it does not fit.
    // Held: all of them.  Admitted: Slurm must not start it there, only in
    // its other partitions (start_partitions()); nothing is reserved there.
    InlineList<Refusal, 2> refused;
    int hold_pool = -1;         // held: the first of them
    // Job array meta record: pending tasks it stands for (0/1: ordinary).
    uint32_t array_tasks = 0;
    // Tasks of this record that may start now: Quota: k >= 1 (1 for an
    // ordinary job), Held: 0, Free: max(1, array_tasks).
    uint32_t admitted_tasks = 0;

    uint32_t task_count() const { return gpupool::task_count(array_tasks); }
    uint64_t pending_gpus() const { return gpupool::pending_gpus(gpus, array_tasks); }
    bool refuses(int pool) const {
        for (const Refusal &x : refused)
            if (x.pool == pool) return true;
        return false;
    }
};

// R1, the one home of the pending order (policy.md): tier priority (higher
// first), the standing of the job's pools (more starved first), original
// submit time (older first), job id (lower first).  Ascending keys are that
// order; the pass sorts by it, job ends place jobs by it, the simulator's
// gpupool policy orders by it.
struct PendingOrderKey {
    uint64_t major = 0;  // ~tier priority << 32 | standing
    int64_t submit = 0;  // original submit time
    uint32_t job_id = 0;
    friend bool operator<(const PendingOrderKey &a, const PendingOrderKey &b) {
        if (a.major != b.major) return a.major < b.major;
        if (a.submit != b.submit) return a.submit < b.submit;
        return a.job_id < b.job_id;
    }
};
inline PendingOrderKey pending_order_key(const PendingResult &r, uint32_t tier_priority) {
    return PendingOrderKey{(uint64_t(~tier_priority) << 32) | r.group_standing, r.orig_submit, r.job_id};
}
inline bool order_before(const PendingResult &a, uint32_t a_prio, const PendingResult &b, uint32_t b_prio) {
    return pending_order_key(a, a_prio) < pending_order_key(b, b_prio);
}

struct RunningInfo {
    uint32_t job_id = 0;
    int pool = -1;              // -1: not a gpupool pool
    int tier = -1;
    uint32_t gpus = 0;
    int64_t start = 0;
    uint32_t array_job_id = 0;  // task of this job array; 0: none
    VictimClass cls = VictimClass::Never;
    uint32_t rank = 0;          // R6 victim order, 1 = first
    // The R5 walk of its pool (preemptible jobs): its place, 0 = first,
    // and its GPUs over the pool's quota at that place (borrowed excess).
    uint32_t walk = 0;
    uint32_t excess = 0;
};

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
        std::snprintf(buf_, sizeof(buf_), fmt, args...);
    }
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
};

struct Verdict {
    bool allowed = false;
    Rule rule = Rule::None;
    int victim_pool = -1, preemptor_pool = -1;
    WhyText why;
};

// Job id -> position, rebuilt every pass: open addressing in one array, so
// a pass over 100k jobs makes one allocation instead of 100k.
class IdIndex {
public:
    static constexpr uint32_t kNone = UINT32_MAX;
    void build(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap <<= 1;
        slots_.assign(cap, Slot{0, kNone});
        mask_ = cap - 1;
    }
    void insert(uint32_t id, uint32_t pos) {
        size_t i = hash(id) & mask_;
        while (slots_[i].pos != kNone && slots_[i].id != id) i = (i + 1) & mask_;
        slots_[i] = Slot{id, pos};
    }
    uint32_t find(uint32_t id) const {
        if (slots_.empty()) return kNone;
        size_t i = hash(id) & mask_;
        while (slots_[i].pos != kNone) {
            if (slots_[i].id == id) return slots_[i].pos;
            i = (i + 1) & mask_;
        }
        return kNone;
    }
    void clear() { slots_.clear(); }

private:
    struct Slot {
        uint32_t id, pos;
    };
    static size_t hash(uint32_t id) { return static_cast<size_t>(id) * 0x9E3779B97F4A7C15ull >> 17; }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

// Job id -> V in one open-addressing array (linear probing).  Adding an
// entry allocates only when the array grows, and reserve() grows it ahead
// of time, in the thread that calls it.  For what slurmctld's submit path
// adds per job (priority_p_set): a heap allocation there per job lands
// between slurmctld's own job records, and freed later by the agent thread
// it leaves holes that later records fill; either way the job list that
// every scheduling cycle walks is scattered over memory (measured: the
// scheduler's walk of 10k jobs 3x slower).
template <typename V>
class FlatIdMap {
public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Room for n entries without growing.
    void reserve(size_t n) {
        if (2 * n > slots_.size()) rehash(n);
    }
    V *find(uint32_t id) {
        size_t i = slot_of(id);
        return i != kNoSlot && slots_[i].used ? &slots_[i].value : nullptr;
    }
    const V *find(uint32_t id) const { return const_cast<FlatIdMap *>(this)->find(id); }
    bool contains(uint32_t id) const { return find(id) != nullptr; }
    // The entry of `id`, added as `v` if there was none; true if added.
    std::pair<V *, bool> try_emplace(uint32_t id, const V &v) {
        if (2 * (size_ + 1) > slots_.size()) rehash(2 * (size_ + 1));
        size_t i = slot_of(id);
        if (slots_[i].used) return {&slots_[i].value, false};
        slots_[i].id = id;
        slots_[i].used = true;
        slots_[i].value = v;
        ++size_;
        return {&slots_[i].value, true};
    }
    bool erase(uint32_t id) {
        size_t i = slot_of(id);
        if (i == kNoSlot || !slots_[i].used) return false;
        // Backward shift: entries after it that probed past it move up.
        const size_t mask = slots_.size() - 1;
        for (size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
            size_t home = hash(slots_[j].id) & mask;
            bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (stays) continue;
            slots_[i] = std::move(slots_[j]);
            i = j;
        }
        slots_[i].used = false;
        slots_[i].value = V{};
        --size_;
        return true;
    }
    // Empty, keeping the array.
    void clear() {
        for (Slot &s : slots_)
            if (s.used) s = Slot{};
        size_ = 0;
    }
    template <typename F>
    void for_each(F f) {
        for (Slot &s : slots_)
            if (s.used) f(s.id, s.value);
    }
    template <typename F>
    void for_each(F f) const {
        for (const Slot &s : slots_)
            if (s.used) f(s.id, s.value);
    }

private:
    static constexpr size_t kNoSlot = SIZE_MAX;
    struct Slot {
        uint32_t id = 0;
        bool used = false;
        V value{};
    };
    static size_t hash(uint32_t id) { return static_cast<size_t>(id) * 0x9E3779B97F4A7C15ull >> 17; }
    // The slot holding `id`, or the free one where it would go.
    size_t slot_of(uint32_t id) const {
        if (slots_.empty()) return kNoSlot;
        const size_t mask = slots_.size() - 1;
        size_t i = hash(id) & mask;
        while (slots_[i].used && slots_[i].id != id) i = (i + 1) & mask;
        return i;
    }
    // At least 2n slots (a power of two), entries moved over.
    void rehash(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap <<= 1;
        std::vector<Slot> old(cap);
        old.swap(slots_);
        size_ = 0;
        for (Slot &s : old)
            if (s.used) {
                size_t i = slot_of(s.id);
                slots_[i] = std::move(s);
                ++size_;
            }
    }
    std::vector<Slot> slots_;
    size_t size_ = 0;
};

// Jobs placed by provisional() since the last pass: results in one array
// (any order), found by id.  Kept from pass to pass with its room (see
// FlatIdMap), so that a submit adds one without a heap allocation.
class ProvisionalSet {
public:
    size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    void reserve(size_t n) {
        items_.reserve(n);
        index_.reserve(n);
    }
    const PendingResult *find(uint32_t id) const {
        const uint32_t *i = index_.find(id);
        return i ? &items_[*i] : nullptr;
    }
    bool contains(uint32_t id) const { return index_.contains(id); }
    void put(const PendingResult &r) {
        auto [i, added] = index_.try_emplace(r.job_id, static_cast<uint32_t>(items_.size()));
        if (added)
            items_.push_back(r);
        else
            items_[*i] = r;
    }
    void erase(uint32_t id) {
        const uint32_t *i = index_.find(id);
        if (!i) return;
        uint32_t pos = *i;
        index_.erase(id);
        if (pos + 1 != items_.size()) {
            items_[pos] = std::move(items_.back());
            *index_.find(items_[pos].job_id) = pos;
        }
        items_.pop_back();
    }
    void clear() {
        items_.clear();
        index_.clear();
    }
    std::vector<PendingResult>::iterator begin() { return items_.begin(); }
    std::vector<PendingResult>::iterator end() { return items_.end(); }
    std::vector<PendingResult>::const_iterator begin() const { return items_.begin(); }
    std::vector<PendingResult>::const_iterator end() const { return items_.end(); }

private:
    std::vector<PendingResult> items_;
    FlatIdMap<uint32_t> index_;
};

// Smallest value over a range of slots, and the first slot from a given one
// whose value is at most a limit, both in O(log n).
class MinTree {
public:
    static constexpr size_t kNone = SIZE_MAX;
    static constexpr uint32_t kEmpty = UINT32_MAX;
    void build(const std::vector<uint32_t> &values) {
        n_ = values.size();
        size_ = 1;
        while (size_ < n_) size_ <<= 1;
        t_.assign(2 * size_, kEmpty);
        std::copy(values.begin(), values.end(), t_.begin() + static_cast<std::ptrdiff_t>(size_));
        for (size_t i = size_ - 1; i > 0; --i) t_[i] = std::min(t_[2 * i], t_[2 * i + 1]);
    }
    void set(size_t i, uint32_t v) {
        i += size_;
        t_[i] = v;
        for (i >>= 1; i > 0; i >>= 1) t_[i] = std::min(t_[2 * i], t_[2 * i + 1]);
    }
    size_t first_at_most(size_t from, uint32_t limit) const {
        if (from >= n_) return kNone;
        return first(1, 0, size_, from, limit);
    }

private:
    size_t first(size_t node, size_t lo, size_t hi, size_t from, uint32_t limit) const {
        if (hi <= from || t_[node] > limit) return kNone;
        if (hi - lo == 1) return lo;
        const size_t mid = (lo + hi) / 2;
        size_t r = first(2 * node, lo, mid, from, limit);
        return r != kNone ? r : first(2 * node + 1, mid, hi, from, limit);
    }
    size_t n_ = 0, size_ = 1;
    std::vector<uint32_t> t_;
};

// A pool's pass jobs that a job end may admit (more of): held ones listing
// the pool, and job arrays admitted there with tasks still waiting.  `pos`:
// their places in the order (ascending); `gpus`: the GPUs each needs,
// kEmpty once it can gain nothing more before the next pass.
struct PoolCandidates {
    std::vector<uint32_t> pos;
    MinTree gpus;
};

// GPUs of one pool (pool -1: of no pool's quota) lent to or borrowed from
// another.
struct PoolGpus {
    int pool = -1;
    uint32_t gpus = 0;
};

// R3 lending within one node set (`members`: its pools in gpupool.conf
// order, sharing `capacity` GPUs): whose GPUs each member's borrowed GPUs
// are.  First GPUs in nobody's quota (pool -1), then the members' idle
// quota in that order, borrowers in that order too.  Per member, its
// lenders in that order.  The one home of the lending order: the engine's
// `lent` and the gpupool command's borrowed-from and lent-to read it.
std::vector<std::vector<PoolGpus>> lending(const std::vector<PoolState> &pools, const std::vector<size_t> &members,
                                           uint32_t capacity);

// Everything the last pass decided.
struct Evaluation {
    int64_t now = 0;
    bool valid = false;
    std::vector<PoolState> pools;                 // config order
    std::unordered_map<std::string, int> pool_index;
    std::vector<PendingResult> pending;           // R1 order
    IdIndex pending_index;
    std::unordered_map<uint32_t, RunningInfo> running;
    // Job array id -> its tasks among `running`.
    std::unordered_map<uint32_t, uint32_t> array_running;
    // Jobs placed by provisional() since this pass.
    ProvisionalSet provisional;
    // Per pool (config order), for job_ended().
    std::vector<PoolCandidates> candidates;
    // Pass jobs that left the queue (refresh_running) since the last job end.
    std::vector<uint32_t> cleared;
    std::vector<std::string> warnings;
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
    // R4/R5 for a preemptor of `ptier` needing `gpus` in pool `q` and a
    // preemptible victim of the last pass, MinRuntime apart: the one home
    // of that rule (preemptable(), explain()).
    bool candidacy(int q, int ptier, uint32_t gpus, const RunningInfo &vi, Verdict &v) const;
    // Pass result or provisional placement of a pending job; null if none.
    const PendingResult *pending_result(uint32_t job_id) const;
    uint32_t victim_rank(uint32_t job_id) const;
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

    const Evaluation &last() const { return eval_; }
    std::vector<std::string> warnings() const;

    // Reports (report.cpp).
    std::string report_json() const;

    struct JobMemory {
        int64_t orig_submit = 0;
        int64_t last_seen = 0;
    };
    struct PoolHistory {
        UsageSeries usage;      // GPUs the pool held
        UsageSeries capacity;   // GPUs of the nodes it shares
        uint32_t last_used = 0, last_capacity = 0;
    };
    // How long a job absent from every snapshot is remembered.
    static constexpr int64_t kForgetAfter = 3600;

    // Persistent state (state.cpp).  What the state file keeps, as plain
    // data: copied under the engine's lock, encoded and written after it.
    struct PersistentState {
        std::map<std::string, PoolHistory> history;
        std::vector<std::pair<uint32_t, JobMemory>> jobs;
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
    void account_usage(Evaluation &ev, int64_t now);
    void compute_fairshare(Evaluation &ev) const;
    void order_pending(const Snapshot &snap, Evaluation &ev, int64_t now);
    void admit(Evaluation &ev) const;
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
    void number_pending(Evaluation &ev) const;
    uint64_t priority_slot(size_t pending) const;
    PoolList managed_pools(const std::vector<std::string> &parts) const;
    PoolList managed_pools(std::string_view parts) const;
    bool names_pool(std::string_view parts) const;
    // Fits the quota of every pool (a job not seen by a pass, which Slurm
    // may start in any of them).
    bool fits_quota(const PoolList &pools, uint32_t gpus) const;
    // GPUs of pool p's quota that no NP job holds or has been admitted to.
    static uint64_t quota_room(const PoolState &ps);
    // R2 admission of one pending result against the pools' current
    // usage and reservations; reserves what it admits.
    void admit_one(PendingResult &r, Evaluation &ev) const;
    static void reserve_admitted(const PendingResult &r, Evaluation &ev);
    static void count_held(const PendingResult &r, Evaluation &ev);
    void tally_pending(Evaluation &ev) const;
    bool preemptible_tier(int tier) const;
    uint32_t tier_priority(int tier) const;
    bool borrows_after_start(const PoolState &ps, int tier, uint32_t gpus) const;
    DecayParams decay() const;

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
    size_t provisional_peak_ = 0;  // most placements between two passes
    std::vector<uint32_t> changes_;  // of the last job_ended()
    uint64_t config_serial_ = 0;
    std::map<std::string, PoolHistory> history_;
    int64_t last_account_ = 0;
    std::vector<std::string> config_warnings_;

    // The preempt plugin asks about one preemptor against many victims.
    struct PreemptorCache {
        bool valid = false;
        uint32_t id = 0, gpus = 0;
        std::string partitions, qos;
        int tier = -1;
        PoolList pools;
        bool admitted = false;
        int refused_pool = -1;  // not admitted: a pool whose quota it does not fit
    } preemptor_cache_;

    friend struct EngineStateAccess;
};

}  // namespace gpupool

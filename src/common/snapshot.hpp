// A cluster snapshot as the engine sees it: nodes with GPU counts, the
// partitions over them, and the jobs.  Built by the plugins under
// slurmctld's locks, by the simulator, or by tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "containers.hpp"

namespace gpupool {

enum class JobState { Pending, Running, Suspended };

// A running job holds its GPUs, and so does a suspended one: Slurm keeps a
// suspended job's GRES allocated (it frees only its CPUs).
inline bool holds_gpus(JobState s) { return s == JobState::Running || s == JobState::Suspended; }

struct SnapNode {
    std::string name;
    uint32_t gpus = 0;
    // Its CPUs and memory (MiB), for quotas that count them; 0: unknown (a pool's CPUs and
    // memory are then not divided among its queues).
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
    // Its GPUs no job holds now, and whether Slurm is still ending jobs on
    // it (no job starts there until that is over).  Known only where
    // Snapshot::node_usage says so.
    uint32_t free_gpus = 0;
    bool completing = false;
    // It takes no new job now (draining, failing, not responding, held whole
    // by a reservation): Slurm starts nothing there, so no victim is planned there.
    bool closed = false;
    // The CPUs and memory (MiB) Slurm gives jobs there (its CPUs less
    // specialized ones, its memory less MemSpecLimit), where node usage is
    // known; 0: not checked (memory where Slurm does not allocate it).  A
    // preemptor fits a node only where its free GPUs, CPUs and memory do.
    uint32_t room_cpus = 0;
    uint64_t room_mem_mb = 0;
    // CPUs reservations of some cores keep from jobs outside them (and no
    // job of theirs uses): not free, though within the room.
    uint32_t reserved_cpus = 0;
    // Its GPUs go to a job only as asked, not with the whole node
    // (gres.conf Flags=explicit, Slurm 23.11 and later).
    bool gpus_explicit = false;
};

// What a running job holds on one node (an index into Snapshot::nodes): its
// GPUs there, and its CPUs and memory where the snapshot gives them.
struct NodeShare {
    int32_t node = -1;
    uint32_t gpus = 0;
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
};

struct SnapPartition {
    std::string name;
    std::vector<int32_t> nodes;  // indices into Snapshot::nodes
    bool lln = false;            // LLN=YES (or CR_LLN): Slurm spreads its jobs
    bool whole_nodes = false;    // OverSubscribe=EXCLUSIVE (the command reads it)
};

// A job's partitions.  Nearly every job lists one: that one is kept in the
// job (a name of up to 15 bytes in the string's own room), so that a
// snapshot's jobs are one array.  Two or more live in `many_`.
class PartitionList {
public:
    PartitionList() = default;
    PartitionList(std::initializer_list<std::string> names) { assign(names.begin(), names.end()); }
    PartitionList(const std::vector<std::string> &names) { assign(names.begin(), names.end()); }
    PartitionList &operator=(std::initializer_list<std::string> names) {
        assign(names.begin(), names.end());
        return *this;
    }
    PartitionList &operator=(const std::vector<std::string> &names) {
        assign(names.begin(), names.end());
        return *this;
    }
    template <typename It>
    void assign(It first, It last) {
        clear();
        for (; first != last; ++first) push_back(*first);
    }
    void assign(size_t n, std::string name) {  // a copy: it may be one of ours
        clear();
        for (size_t i = 0; i < n; ++i) push_back(name);
    }
    void push_back(std::string name) {
        if (many_.empty() && one_.empty() && !name.empty()) {
            one_ = std::move(name);
            return;
        }
        if (many_.empty() && !one_.empty()) {
            many_.push_back(std::move(one_));
            one_.clear();
        }
        many_.push_back(std::move(name));
    }
    template <typename... A>
    void emplace_back(A &&...a) {
        push_back(std::string(std::forward<A>(a)...));
    }
    void clear() {
        one_.clear();
        many_.clear();
    }
    // The first n (new ones empty).
    void resize(size_t n) {
        std::vector<std::string> kept(begin(), begin() + std::min(n, size()));
        kept.resize(n);
        assign(kept.begin(), kept.end());
    }
    const std::string *begin() const { return many_.empty() ? &one_ : many_.data(); }
    const std::string *end() const { return begin() + size(); }
    size_t size() const { return many_.empty() ? (one_.empty() ? 0 : 1) : many_.size(); }
    bool empty() const { return size() == 0; }
    const std::string &front() const { return *begin(); }
    const std::string &operator[](size_t i) const { return begin()[i]; }
    bool operator==(const PartitionList &o) const {
        return size() == o.size() && std::equal(begin(), end(), o.begin());
    }
    bool operator!=(const PartitionList &o) const { return !(*this == o); }

private:
    std::string one_;                // the only one, where there is one
    std::vector<std::string> many_;  // all of them, where there are more (or an empty name)
};

struct SnapJob {
    uint32_t id = 0;
    JobState state = JobState::Pending;
    PartitionList partitions;  // running: exactly one
    std::string qos;                      // empty: DefaultTier
    uint32_t gpus = 0;
    int64_t submit_time = 0;              // Slurm's (reset on requeue)
    int64_t start_time = 0;
    bool user_held = false;
    // Pending job array meta record: the count of still-pending tasks it
    // stands for (0 or 1: an ordinary job).  Slurm may start several of
    // them from the one record in a single scheduling pass.
    uint32_t array_tasks = 0;
    // Running task of a job array: the array's (meta record's) id; 0 else.
    uint32_t array_job_id = 0;
    // Times Slurm requeued it; 0: submit_time is the original.
    uint32_t restart_cnt = 0;
    // Its Slurm account (its queue) and the CPUs and memory (MiB) it holds
    // (running) or asks for (pending), per task.
    std::string account;
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
    // Running: its nodes and what it holds on each (where Snapshot::node_usage).
    // Pending: the nodes it asks for (0: one).
    std::vector<NodeShare> nodes;
    uint32_t node_count = 0;
    // Running: Slurm would not start it again elsewhere at once
    // (GP_JOB_STAYS): consolidation does not move it.
    bool stays = false;
    // Pending: it may use only some nodes of its partitions
    // (GP_JOB_NODES_GIVEN): its victim plan looks only at `allowed_nodes`
    // (names, comma-separated), and where those are unknown (empty) it
    // gets no plan.
    bool nodes_given = false;
    std::string allowed_nodes;
    // Pending: it asks for whole nodes (GP_JOB_WHOLE_NODE): no other job
    // may stay on a node it plans.
    bool whole_node = false;
    // Pending: `gpus` are of no type while QuotaTRES counts one type
    // (GP_JOB_GPUS_UNTYPED): Slurm may give it that type's GPUs wherever
    // its partitions have them.
    bool gpus_untyped = false;
    // Pending: it waits for another job (GP_JOB_DEPENDENT): R1 puts it after
    // every job that does not, so that it sets no quota aside ahead of them.
    bool dependent = false;
    // Pending: Slurm's own limits (association, QOS) hold it back now
    // (GP_JOB_OVER_LIMIT): R1 puts it after every job they do not.
    bool over_limit = false;
    // How long Slurm counts it to run (its time limit, else its
    // partition's; a year for none), in seconds: a reservation starting
    // before it would end keeps its nodes and cores from it
    // (Snapshot::reserved_ahead).  Running: the same, as it would run if
    // moved and started again (consolidation).  0: not known (those are
    // not read).
    int64_t run_limit = 0;
    // Pending: the heterogeneous job it is a component of (its leader's
    // id; 0: none).  Slurm starts the components together or not at all.
    uint32_t het_job_id = 0;
};

// Tasks a pending record stands for: an array meta record's pending tasks,
// else 1.
inline uint32_t task_count(uint32_t array_tasks) { return array_tasks > 1 ? array_tasks : 1; }

// The GPUs a pending record asks for: every task it stands for.  The one
// definition of "pending GPUs": fairshare demand, status, queue, the
// exporter and the simulator all count through it.
inline uint64_t pending_gpus(uint32_t gpus_per_task, uint32_t array_tasks) {
    return uint64_t(gpus_per_task) * task_count(array_tasks);
}

// What reservations that have not started yet keep on a node from a job
// that would still run when they start (Slurm's job_test_resv: a job whose
// time limit reaches past a reservation's start is treated as if it had
// started): from `from` on, with every reservation starting by then
// counted, the node is held whole, or `cpus` CPUs and `gpus` GPUs more than
// now are reserved (beyond SnapNode::reserved_cpus and off free_gpus).
// A node's later entries include its earlier ones.
struct ReservedAhead {
    int32_t node = -1;
    int64_t from = 0;
    bool whole = false;
    uint32_t cpus = 0;
    uint32_t gpus = 0;
};

// What a running job holds on a node that reservations reserve: `cpus`
// CPUs and `gpus` GPUs of it, counting every reservation in force by `from`
// (0: those in force now).  Preempted, it gives them back to the
// reservation, not to a job outside it that would run past `from`.  A job
// and node's later entries include its earlier ones.
struct HeldReserved {
    uint32_t job_id = 0;
    int32_t node = -1;
    int64_t from = 0;
    uint32_t cpus = 0;
    uint32_t gpus = 0;
};

struct Snapshot {
    std::vector<SnapNode> nodes;
    // Reservations not started yet (with node usage only).
    std::vector<ReservedAhead> reserved_ahead;
    // Reserved CPUs and GPUs running jobs hold (with node usage only).
    std::vector<HeldReserved> held_reserved;
    std::vector<SnapPartition> partitions;
    // Mapped, not from malloc: it goes back when the snapshot does.
    std::vector<SnapJob, PageAllocator<SnapJob>> jobs;
    // Slurm's account tree (the queues' tree), each account's parent ("" or "root"
    // for a top-level one), as slurmctld's association manager has it now.
    std::unordered_map<std::string, std::string> account_parent;
    // Nodes' free GPUs and completing state and running jobs' nodes are
    // given: the victim plan (victim_plan.hpp) places preemptions on nodes.
    // Without them preemption judges pools' GPU counts alone.
    bool node_usage = false;
    // Slurm places a job capped at one node by Weight alone, first fit,
    // without LLN (26.05's one-node path): spread needs Weights too.
    bool one_node_by_weight = false;

    int32_t add_node(std::string name, uint32_t gpus);
    // Node indices out of range are a std::invalid_argument.
    void add_partition(std::string name, std::vector<int32_t> node_index);
    void add_job(SnapJob job) { jobs.push_back(std::move(job)); }
};

// Calls f(item) for each item of a comma-separated list, empty ones left
// out, without copying: the one list splitter (split_list builds on it).
template <typename F>
void for_each_listed(std::string_view list, F &&f) {
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(',', start);
        if (end == std::string_view::npos) end = list.size();
        if (end > start) f(list.substr(start, end - start));
        start = end + 1;
    }
}

// Is `name` an item of the comma-separated list?
inline bool contains_listed(std::string_view list, std::string_view name) {
    bool found = false;
    for_each_listed(list, [&](std::string_view item) { found |= item == name; });
    return found;
}

// "a,b,,c" -> {"a","b","c"}
std::vector<std::string> split_list(const std::string &text);

}  // namespace gpupool

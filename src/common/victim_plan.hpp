// The victim plan of a preemptor: which running jobs Slurm may preempt for
// it, on which nodes, in which order (policy.md R5, "Where victims are").
// R4 and R5 say who may be taken (Engine::candidacy); the plan chooses
// among those by where their GPUs are, so that one preemption frees the
// GPUs the job needs on one node and no more.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "containers.hpp"
#include "nodes.hpp"

namespace gpupool {

// What a victim set costs: the GPUs it takes by R4 (the preemptor's own lower
// tiers) first, as reclaim is tried before preemption inside the pool; then
// GPU-seconds lost (with
// PreemptionOrder=newest, R6's "least work lost"; 0 with oldest), then R6's
// order (the sum of the victims' ranks: sets of jobs earlier in it first).
struct PlanCost {
    uint64_t swapped = 0;  // GPUs of jobs taken by a swap (R5): only where nothing else frees the node
    uint64_t own = 0;  // GPUs of jobs of the preemptor's own line (R4): reclaim comes first (R5)
    uint64_t gpu_seconds = 0;
    uint64_t rank_sum = 0;
    friend bool operator<(const PlanCost &a, const PlanCost &b) {
        if (a.swapped != b.swapped) return a.swapped < b.swapped;
        if (a.own != b.own) return a.own < b.own;
        if (a.gpu_seconds != b.gpu_seconds) return a.gpu_seconds < b.gpu_seconds;
        return a.rank_sum < b.rank_sum;
    }
    PlanCost operator+(const PlanCost &o) const {
        return PlanCost{swapped + o.swapped, own + o.own, gpu_seconds + o.gpu_seconds, rank_sum + o.rank_sum};
    }
};

// A job R4/R5 let the preemptor take, as one node sees it.
struct NodeCandidate {
    uint32_t job_id = 0;
    uint32_t gpus_here = 0;  // its GPUs on this node
    PlanCost cost;           // the whole job's GPU-seconds and its R6 rank
    // Reclaimed from another pool (R5): that pool, -1 otherwise; and
    // whether only R5 as a count allows it (past the walk's prefix).
    int32_t reclaimed_pool = -1;
    bool by_count = false;
    bool swap = false;  // of a pool within its quota, taken by a swap (R5)
    // Its CPUs and memory on this node (where the node's are checked).
    // gpus_here and cpus_here: what the preemptor gets back, less what
    // reservations hold of them (NodeLayout::held_reserved).
    uint32_t cpus_here = 0;
    uint64_t mem_here = 0;
};

// What a swap (R5) may take: the preemptor's pool's GPUs past its quota
// once it starts (less its own jobs the set takes), and the other pools'
// of its node set past theirs: borrowed GPUs the pools it takes from
// reclaim in turn.
struct SwapRoom {
    int64_t own = 0, others = 0;
    bool any() const { return own > 0 || others > 0; }
};

// The cheapest set of `c` (in R6 order) freeing at least `need` GPUs on the
// node: indices into `c`, ascending, into `out`.  False if all of them
// together free less.  `scratch` keeps its room between calls.
bool cheapest_set(const std::vector<NodeCandidate> &c, uint32_t need, std::vector<int32_t> &scratch,
                  std::vector<PlanCost> &best, std::vector<uint32_t> &out, PlanCost &cost);

struct VictimPlan {
    enum class Outcome : uint8_t {
        Unplanned,  // the plan does not apply (no GPUs asked, nodes unknown): R4/R5 alone decide
        FitsFree,   // free GPUs (CPUs, memory) on nodes that take jobs now fit it: no victim
        Victims,    // `victims`, node group by node group
        NoNode,     // no node can be freed for it (or all are planned by others)
        Waiting,    // it preempted already: it waits for the GPUs it freed
    };
    uint32_t preemptor = 0;
    std::string partitions;  // where Slurm tried it (a job listing several is tried in each)
    std::string allowed_nodes;  // the nodes it was bound to (JobRef::allowed_nodes), if any
    Outcome outcome = Outcome::Unplanned;
    // FitsFree: the nodes that fit; Victims: the node of each group, the
    // nodes planned first (one per node the job asks for), then fallbacks.
    std::vector<int32_t> nodes;
    uint32_t planned_nodes = 0;        // Victims: groups before the fallbacks
    std::vector<uint32_t> victims;     // node group by node group, R6 order in each
    std::vector<uint32_t> group_end;   // end of each node's group in `victims`
    bool carried_out = false;          // Slurm preempted some of them for it
    bool held_elsewhere = false;       // NoNode: other preemptors' plans hold nodes that would do
    int64_t carried_at = 0;            // when (its plan's time)
    // Consolidation (Run:ai): the victims are moved, not reclaimed: each
    // can start again at once on its node in `moved_to` (same order as
    // `victims`), where free GPUs wait for it.
    bool consolidation = false;
    std::vector<int32_t> moved_to;

    // 1-based place of a job in `victims`; 0: not planned.
    uint32_t place_of(uint32_t job_id) const {
        for (size_t i = 0; i < victims.size(); ++i)
            if (victims[i] == job_id) return static_cast<uint32_t>(i + 1);
        return 0;
    }
};

// The plans of one node layout and the nodes they hold: two preemptors
// never plan the same node while one waits for the GPUs it freed there.  A plan lasts while the layout does; one Slurm
// carried out lasts until its preemptor is no longer waiting for it.
class PlanBook;

// Room the planner reuses from plan to plan (no allocation once grown).
struct PlanScratch {
    struct Choice {
        PlanCost cost;
        int32_t node = -1;
        uint32_t from = 0, to = 0;  // its set in `sets`
        uint32_t np_room = 0;       // the node's GPUs not held by non-preemptible jobs
        bool moves = false;         // consolidation: its set moves to `dests`
    };
    std::vector<int32_t> eligible;
    std::vector<uint8_t> seen;
    std::vector<std::string_view> bound_to;  // a bound preemptor's nodes, sorted
    std::vector<NodeCandidate> candidates;
    std::vector<int32_t> prev;
    std::vector<PlanCost> best;
    std::vector<uint32_t> set, sets;
    std::vector<int32_t> dests;      // per entry of `sets`: where a moved job starts again; -1: not moved
    std::vector<uint32_t> order;      // consolidation: the moved jobs, in Slurm's order
    std::vector<uint32_t> dest_free;  // consolidation: free GPUs per node while moved jobs are placed
    std::vector<NodeUse> dest_room;   // consolidation: their free CPUs and memory meanwhile
    std::vector<Choice> choices;
    // The nodes as the preemptor may have them: the layout's, or with
    // reservations that start before it would end (NodeLayout::nodes_until).
    const std::vector<NodeUse> *nodes = nullptr;
    std::vector<NodeUse> nodes_until;
    // Until when the preemptor would run (its time limit; now where not
    // known): what victims hold that reservations in force by then reserve
    // is not theirs to free for it (NodeLayout::held_reserved).
    int64_t until = 0;
    FlatIdMap<uint8_t> allowed;  // job -> R4/R5 let the preemptor take it: kNot, kReclaim, kInPool, kByCount, kSwap
    SwapRoom swap_room;
    int64_t free_total = 0;  // free GPUs of the preemptor's nodes that take jobs now
    // What the preemptor asks for per node besides GPUs (NodeUse::room_for).
    uint32_t ask_cpus = 0;
    uint64_t ask_mem_mb = 0;
    // Per pool, its GPUs over the bound R5 reclaims to (-1: not known yet).
    std::vector<int64_t> excess;
    // Whom `choices` were made for: preemptors alike (partitions, tier,
    // account, size, nodes, admission) have the same candidates on every
    // node, so the next one alike in the same layout and second reuses
    // them (Slurm tries many jobs of one kind in a row).
    struct Alike {
        bool valid = false;
        uint64_t generation = 0;
        int64_t now = 0;
        std::string partitions;
        std::string allowed_nodes;  // JobRef's, where nodes_given
        int tier = -1, refused_pool = -1;
        int32_t account = -1;
        uint32_t gpus = 0, cpus = 0, nodes = 0;
        uint64_t mem_mb = 0;
        bool admitted = false, whole_node = false;
        uint32_t ahead = 0;  // reservations' start times before its end (NodeLayout::ahead_before)
        bool operator==(const Alike &o) const {
            return valid && o.valid && generation == o.generation && now == o.now && ahead == o.ahead &&
                   partitions == o.partitions &&
                   allowed_nodes == o.allowed_nodes &&
                   tier == o.tier && refused_pool == o.refused_pool && account == o.account && gpus == o.gpus &&
                   cpus == o.cpus && nodes == o.nodes && mem_mb == o.mem_mb && admitted == o.admitted &&
                   whole_node == o.whole_node;
        }
    } made_for;
    uint64_t reused = 0;  // plans made from another's choices (benchmarks, tests)
};

class PlanBook {
public:
    // A new layout or a new second (MinRuntime ends, GPU-seconds grow):
    // plans not carried out go; carried-out ones for which
    // `keep(plan)` stay (it may mark them waiting), with their nodes.
    template <typename Keep>
    void begin(uint64_t generation, int64_t now, Keep keep) {
        if (generation == generation_ && now == now_) return;
        generation_ = generation;
        now_ = now;
        size_t kept = 0;
        for (size_t i = 0; i < count_; ++i) {
            if (plans_[i].carried_out && keep(plans_[i])) std::swap(plans_[kept++], plans_[i]);
        }
        count_ = kept;
        reindex();
    }
    VictimPlan *find(uint32_t preemptor) {
        const uint32_t *i = index_.find(preemptor);
        return i ? &plans_[*i] : nullptr;
    }
    const VictimPlan *find(uint32_t preemptor) const { return const_cast<PlanBook *>(this)->find(preemptor); }
    // An empty plan for `preemptor` tried in `partitions` (its plan for
    // other partitions goes, with its nodes), its room kept.
    VictimPlan &make(uint32_t preemptor, std::string_view partitions, std::string_view allowed_nodes);
    // A plan carried out: its nodes planned first become its preemptor's.
    void hold_nodes(const VictimPlan &plan);
    // When `preemptor` was first offered victims (a plan with some); -1:
    // never.  Kept while it is pending (forget_left).
    int64_t first_offered(uint32_t preemptor) const {
        const int64_t *t = first_offered_.find(preemptor);
        return t ? *t : -1;
    }
    void note_offered(uint32_t preemptor, int64_t now) { first_offered_.try_emplace(preemptor, now); }
    // Jobs no longer pending (`pending` says): their first offers and
    // their plans go.
    template <typename Pending>
    void forget_left(Pending pending) {
        std::vector<uint32_t> gone;
        first_offered_.for_each([&](uint32_t id, int64_t) {
            if (!pending(id)) gone.push_back(id);
        });
        for (uint32_t id : gone) first_offered_.erase(id);
        size_t kept = 0;
        for (size_t i = 0; i < count_; ++i)
            if (pending(plans_[i].preemptor)) std::swap(plans_[kept++], plans_[i]);
        if (kept == count_) return;
        count_ = kept;
        reindex();
    }
    // The time of the plans now in the book.
    int64_t now() const { return now_; }
    // The preemptor holding `node`; 0: none.
    uint32_t holder(int32_t node) const {
        const uint32_t *h = holder_.find(static_cast<uint32_t>(node));
        return h ? *h : 0;
    }

    void clear() {
        count_ = 0;
        reindex();
    }

private:
    void reindex();
    uint64_t generation_ = 0;
    int64_t now_ = 0;
    std::vector<VictimPlan> plans_;
    size_t count_ = 0;
    FlatIdMap<uint32_t> index_;   // preemptor -> plans_
    FlatIdMap<uint32_t> holder_;  // node -> preemptor
    FlatIdMap<int64_t> first_offered_;  // preemptor -> when first offered victims
};

}  // namespace gpupool

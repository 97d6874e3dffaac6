// Queues of one node pool in a tree: the pool is the root,
// Slurm's accounts below it (departments over projects).  Fairshare is
// divided top-down, each level by R8's own division (compute_fairshare), and
// reclaim between two queues is decided between the children of their lowest
// common ancestor.  Plain data in, numbers out: the engine, `gpupool why` and
// the simulator all ask these functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "resources.hpp"

namespace gpupool {

struct QueueSpec {
    std::string name;
    int32_t parent = -1;        // a lower index than this queue's; -1 for the root only
    ResourceAmounts quota;      // guaranteed; a resource it does not give is not counted for
                                // this queue: no cap, and neither owed nor reclaimed
    uint32_t weight = 1;        // over-quota weight of a queue without children
    uint32_t rank = 0;          // among its siblings: higher divides the unused first, is served first
    ResourceAmounts limit;      // the most it may hold, borrowed included
    ResourceAmounts lending_limit;  // the most of its quota it lends (the rest it keeps)
};

// The one walk up a tree: the queues from `from` up to (not including)
// `stop`, own first; stop -1 is past the root, 0 stops below the pool.
// With no queues (null) a pool is its one row 0.
class PathUp {
public:
    PathUp(const std::vector<QueueSpec> *queues, int32_t from, int32_t stop = -1)
        : queues_(queues), from_(queues ? from : 0), stop_(stop) {}
    struct Iterator {
        const std::vector<QueueSpec> *queues;
        int32_t q;
        int32_t operator*() const { return q; }
        Iterator &operator++() {
            q = queues ? (*queues)[size_t(q)].parent : -1;
            return *this;
        }
        bool operator!=(const Iterator &o) const { return q != o.q; }
    };
    Iterator begin() const { return {queues_, from_}; }
    Iterator end() const { return {queues_, stop_}; }

private:
    const std::vector<QueueSpec> *queues_;
    int32_t from_, stop_;
};
inline PathUp path_up(const std::vector<QueueSpec> &queues, int32_t from, int32_t stop = -1) {
    return PathUp(&queues, from, stop);
}
// Each queue's children, in tree order.
inline std::vector<std::vector<int32_t>> children_of(const std::vector<QueueSpec> &queues) {
    std::vector<std::vector<int32_t>> children(queues.size());
    for (size_t q = 1; q < queues.size(); ++q) children[size_t(queues[q].parent)].push_back(int32_t(q));
    return children;
}
// Levels below the root: 0 for the root.
inline int32_t depth_of(const std::vector<QueueSpec> &queues, int32_t queue) {
    int32_t d = -1;
    for (int32_t q : path_up(queues, queue)) d += q >= 0;
    return d;
}

// What the queue's own jobs (not its children's) hold and ask for.
struct QueueLoad {
    Amounts demand{};                          // held plus asked for by pending jobs
    std::array<double, kResources> usage{};    // decayed usage over the pool's decayed capacity, 0..1
};

struct QueueShares {
    std::vector<Amounts> demand;     // the queue's and its descendants', each capped by its limit
    std::vector<Amounts> fairshare;  // quota plus its share of what its siblings leave unused
};

// Divides `root_share` (what the pool has: its capacity or its own R8
// fairshare among overlapping pools) down the tree.  At each level a queue
// first has min(quota, demand); the rest is water-filled among the siblings
// still asking, by weight for queues without children and in proportion to
// quota for queues with children (Run:ai: "Departments' over-quota is always
// proportional to its quota"), with R8's usage term (K = usage_weight) taken
// against what the parent divides.  A queue with children and jobs of its own
// (accounts with no entry of their own draw on it) divides as if those jobs
// were one more child holding the part of its quota its children do not.
// `queues` is in tree order (each parent before its children).
QueueShares divide_among_queues(const std::vector<QueueSpec> &queues, const std::vector<QueueLoad> &load,
                                const Amounts &root_share, double usage_weight);

// R2's arithmetic, the one home for a pool's GPU quota and a queue's quota
// in any resource: what `quota` has left with `taken` held or admitted,
// and how many tasks of `per_task` (> 0) fit in it.
inline uint64_t room_left(uint64_t taken, uint64_t quota) { return taken < quota ? quota - taken : 0; }
inline uint64_t tasks_within(uint64_t taken, uint64_t per_task, uint64_t quota) {
    return room_left(taken, quota) / per_task;
}

// R2 with levels: a non-preemptible job fits only if, for each resource it
// asks for, every queue from its own up to the root that counts that
// resource has room: non-preemptible use (held and admitted) plus the job
// within quota.  Says the first queue, from the job's own upward, that has
// no room (queue -1: it fits).
struct QuotaBlock {
    int32_t queue = -1;
    Resource resource = kGpu;
    uint64_t used = 0;    // that queue's non-preemptible use of that resource
    uint64_t quota = 0;
};
QuotaBlock quota_block(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &np_used, int32_t queue,
                       const Amounts &job);

// Limit: a job of any tier fits only if, for each resource it
// asks for, every queue from its own up whose Limit counts that resource
// stays within it: allocated (running jobs) plus admitted ahead in this
// pass plus the job.  Says the first queue that would pass its limit
// (QuotaBlock::used: allocated and ahead; quota: the limit).
QuotaBlock limit_block(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                       const std::vector<Amounts> &ahead, int32_t queue, const Amounts &job);

// LendingLimit: a queue with quota Q and lending limit L keeps
// Q - L for its own jobs (and its descendants'), so that they never wait
// for a reclaim.  A job fits only if, for each resource it asks for, the
// pool's free amount after it (capacity less the root's allocated and
// admitted ahead, less the job) is at least what the keepers off the job's
// path keep unused: the sum of max(0, Q - L - allocated - ahead).  Nested
// keepers add up (stricter, never looser).  A resource of unknown capacity
// (0) is not checked.  Says the first keeper (tree order) that keeps some
// of the resource that blocks (QuotaBlock::used: what it keeps; quota: Q - L).
QuotaBlock lending_block(const std::vector<QueueSpec> &queues, const std::vector<int32_t> &keepers,
                         const std::vector<Amounts> &allocated, const std::vector<Amounts> &ahead,
                         const Amounts &capacity, int32_t queue, const Amounts &job);

// Run:ai's three queue states, for one resource.
enum class QueueStanding { InQuota, OverQuota, OverFairshare };
QueueStanding standing(uint64_t allocated, uint64_t quota, uint64_t fairshare);

// R1.2's measure of how well a queue (or a pool) is served: allocated over
// fairshare in the resource it uses most of its share; one with no share
// that holds something is infinitely served, one that holds nothing not at
// all.  Lower is more starved.
double use_ratio(const Amounts &allocated, const Amounts &fairshare);

// A job's standing in queue `queue` at its place in the victim walk
// (`at`: the queue's allocation with the jobs walked before it taken off):
// the furthest over of the resources the queue counts and the job holds
// (`held`).  False when the queue counts none of them: it guards nothing of
// the job.
bool standing_at(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &fairshare, int32_t queue,
                 const Amounts &at, const Amounts &held, QueueStanding &out);

// The two queues just below the lowest common ancestor of a and b, on a's
// path and on b's.  {-1, -1} when one is the other's ancestor (or a == b):
// no reclaim between them, that is preemption within a queue.
std::pair<int32_t, int32_t> sides_below_common_ancestor(const std::vector<QueueSpec> &queues, int32_t a,
                                                        int32_t b);

struct ReclaimQuestion {
    int32_t reclaimer = -1;      // the pending job's queue
    int32_t victim_queue = -1;   // the running job's queue
    Amounts job{};               // what the pending job needs
    Amounts victim{};            // what the running job holds
    // Per queue from victim_queue up to the root: its allocation at the
    // victim's place in the victim walk (R6: the victim and the jobs after
    // it; the jobs walked before it taken off).  Null: `allocated`.
    const Amounts *victim_at = nullptr;
    // Per queue from reclaimer up to the root: what the reclaimer frees
    // inside it in the same preemption (Freeable, engine.hpp), counted off
    // its allocation before its bound is checked: siblings' excess over
    // quota in the step to quota, over their bound in the step to
    // fairshare.  Null: nothing.
    const Amounts *freed_to_quota = nullptr;
    const Amounts *freed_to_bound = nullptr;
};

// What may_reclaim decided, and the queue and resource that decided it.
struct ReclaimCheck {
    enum Outcome {
        Allowed,
        SameSide,          // one queue is the other's ancestor: R4's
        ReclaimerOver,     // `queue` on the reclaimer's side would pass its bound
        VictimSideWithin,  // the victim's side is within its bound (`queue` = B)
        VictimSideToQuota, // taking to fairshare would leave B below its quota
        VictimQueueWithin  // `queue` on the victim's path is within its quota at the victim
    } outcome = SameSide;
    int32_t queue = -1;
    Resource resource = kGpu;
    uint64_t allocated = 0;  // with the job (ReclaimerOver) or at the victim
    uint64_t bound = 0;      // quota, or with ReclaimTo=fairshare max(quota, fairshare)
};

// R5 with levels.  With A and B the sides below the common ancestor:
// - every queue from the reclaimer up to A stays within its bound after the
//   job starts, for each resource the job needs that the queue's quota
//   counts (bound: quota, or with ReclaimTo=fairshare the larger of quota
//   and fairshare);
// - B, at the victim's place in the walk, is above its bound in a resource
//   the job needs, the victim holds and both A's and B's quotas count (a
//   queue with no GPU quota has no GPUs to take back);
// - taking to fairshare (the reclaimer's side past its quota), B after
//   losing the victim stays at or above its quota in each resource it
//   counts and the victim holds;
// - every queue from the victim's up to B that counts a resource the victim
//   holds is, at the victim's place, above its quota in one of them: a
//   queue at or under its quota keeps its jobs, but for the one job that
//   straddles the line.
// The reclaimer's side is judged with what it frees in the same
// preemption counted off (ReclaimQuestion::freed_*).  Since the reclaimer's
// side then ends within its bound and the victim's side must start above
// its own, the victim's side can never reclaim back: no thrash.  `allocated` holds each queue's subtree allocation.
ReclaimCheck check_reclaim(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                           const std::vector<Amounts> &fairshare, const ReclaimQuestion &q, ReclaimTo mode);
inline bool may_reclaim(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                        const std::vector<Amounts> &fairshare, const ReclaimQuestion &q, ReclaimTo mode) {
    return check_reclaim(queues, allocated, fairshare, q, mode).outcome == ReclaimCheck::Allowed;
}

// What each queue lends, per resource: the part of its idle quota (quota
// less allocated) that its siblings' use over quota takes, as lending()
// says of pools (pass.hpp): borrowers draw first on what the parent has
// beyond its children's quotas (the larger of its quota and its
// allocation; the root's quota is `root_has` where it gives none, the
// pool's capacity), then on the siblings' idle quota in tree order.  A
// child with no quota for a resource borrows all it holds of it, as do the
// parent's own jobs (accounts with no entry); it lends none.  For `gpupool
// status`; `allocated` holds each queue's subtree allocation.
// What a job of queue `from` frees in one preemption, per queue on its
// path (its own first, the root last): the amounts of tiers below the
// job's on its line (its own subtree and the path's queues' own jobs) plus,
// for each queue beside the path, its excess over quota (`to_quota`) or
// over `bound` (`to_bound`), at most what that queue's subtree may give.
// In: `lower` and `takeable`, each queue's own jobs' amounts of lower tiers
// and of all preemptible tiers, past MinRuntime; both are turned into
// subtree sums.  `out` is reused: after the first call nothing allocates.
struct PathFreed {
    std::vector<Amounts> to_quota, to_bound;
    std::vector<int32_t> place;  // each queue's place on the path, -1 off it
};
void freed_on_path(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                   const std::vector<Amounts> &bound, std::vector<Amounts> &lower, std::vector<Amounts> &takeable,
                   int32_t from, PathFreed &out);

std::vector<Amounts> lent_by_queues(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                                    const Amounts &root_has);

// R3's lending order among the children of one parent, in one resource:
// the one home of who lends to whom, for pools under their node set and
// queues under their parent alike.  `quota[k]`, `held[k]`: child k's quota
// (0 where it counts none) and what it holds; `own`: what the parent's own
// jobs hold (they borrow all of it); `has`: what the parent divides.
// Borrowers, children in order and then the parent's own jobs, draw first
// on what `has` holds beyond the children's quotas (lender -1), then on
// the children's idle quota in order.  Per borrower (index k; the parent's
// own jobs: quota.size()), its lenders in that order.
struct LentFrom {
    int32_t lender = -1;  // a child's index; -1: what no child's quota holds
    uint64_t amount = 0;
};
std::vector<std::vector<LentFrom>> lend_among(const std::vector<uint64_t> &quota, const std::vector<uint64_t> &held,
                                              uint64_t own, uint64_t has);

}  // namespace gpupool

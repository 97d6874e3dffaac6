#include "queue_tree.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "fairshare.hpp"

namespace gpupool {

namespace {

uint32_t clamp32(uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); }

void check_tree_order(const std::vector<QueueSpec> &queues) {
    for (size_t i = 0; i < queues.size(); ++i) {
        int32_t p = queues[i].parent;
        bool ok = i == 0 ? p == -1 : p >= 0 && static_cast<size_t>(p) < i;
        if (!ok)
            throw std::invalid_argument("queue '" + queues[i].name + "': parent " + std::to_string(p) +
                                        " is not an earlier queue (the tree must list parents first, one root)");
    }
}

// One sibling in a level's division.
struct Sibling {
    int32_t queue;   // -1: the parent's own jobs
    FairshareInput in;
};

// The siblings of node i's division for resource r: its children and, when
// it has jobs of its own, those jobs as one more child holding the quota its
// children do not.
std::vector<Sibling> siblings_of(size_t i, Resource r, const std::vector<QueueSpec> &queues,
                                 const std::vector<std::vector<int32_t>> &children,
                                 const std::vector<QueueLoad> &load, const std::vector<Amounts> &demand,
                                 const std::vector<std::array<double, kResources>> &usage, double parent_frac) {
    std::vector<Sibling> out;
    uint64_t children_quota = 0;
    for (int32_t c : children[i]) {
        const QueueSpec &q = queues[size_t(c)];
        uint64_t quota = q.quota.get(r);
        children_quota += quota;
        Sibling s{c, {}};
        // Deserved is quota only as far as it is asked for (KAI), so
        // quotas a level asks less than are not an overcommitment.
        s.in.quota = clamp32(std::min(quota, demand[size_t(c)][r]));
        // Departments divide in proportion to quota where they have one for r.
        bool department = !children[size_t(c)].empty() && q.quota.has(r);
        s.in.weight = department ? clamp32(quota) : q.weight;
        s.in.demand = clamp32(demand[size_t(c)][r]);
        s.in.usage_share = parent_frac > 0 ? usage[size_t(c)][r] / parent_frac : 0;
        s.in.rank = q.rank;
        out.push_back(s);
    }
    if (load[i].demand[r] > 0) {
        uint64_t quota = queues[i].quota.get(r);
        Sibling own{-1, {}};
        own.in.quota = clamp32(std::min(quota > children_quota ? quota - children_quota : 0, load[i].demand[r]));
        own.in.weight = 1;
        own.in.demand = clamp32(load[i].demand[r]);
        own.in.usage_share = parent_frac > 0 ? load[i].usage[r] / parent_frac : 0;
        out.push_back(own);
    }
    return out;
}

// Departments divide in proportion to quota, so one with no quota gets
// nothing over it while another department asks; what nobody else asks for
// goes to such departments evenly rather than lie idle.
void give_zero_quota_departments_the_rest(const std::vector<Sibling> &sib, std::vector<uint32_t> &fairshare,
                                          uint64_t share, const std::vector<std::vector<int32_t>> &children) {
    uint64_t given = 0;
    for (uint32_t f : fairshare) given += f;
    if (given >= share) return;
    std::vector<double> weight(sib.size(), 0);
    std::vector<uint32_t> want(sib.size(), 0);
    bool any = false;
    for (size_t k = 0; k < sib.size(); ++k) {
        bool zero_department = sib[k].queue >= 0 && !children[size_t(sib[k].queue)].empty() && sib[k].in.weight == 0;
        if (!zero_department || sib[k].in.demand <= fairshare[k]) continue;
        weight[k] = 1;
        want[k] = sib[k].in.demand - fairshare[k];
        any = true;
    }
    if (!any) return;
    std::vector<uint32_t> more = water_fill(clamp32(share - given), weight, want);
    for (size_t k = 0; k < sib.size(); ++k) fairshare[k] += more[k];
}

}  // namespace

QueueShares divide_among_queues(const std::vector<QueueSpec> &queues, const std::vector<QueueLoad> &load,
                                const Amounts &root_share, double usage_weight) {
    check_tree_order(queues);
    if (load.size() != queues.size()) throw std::invalid_argument("one load per queue");
    const size_t n = queues.size();
    QueueShares out;
    out.demand.assign(n, Amounts{});
    out.fairshare.assign(n, Amounts{});
    std::vector<std::array<double, kResources>> usage(n);
    const std::vector<std::vector<int32_t>> children = children_of(queues);

    // Bottom-up: a queue asks for its own and its descendants' demand, up to its limit.
    for (size_t i = n; i-- > 0;) {
        for (size_t r = 0; r < kResources; ++r) {
            out.demand[i][r] += load[i].demand[r];
            usage[i][r] += load[i].usage[r];
            if (queues[i].limit.has(Resource(r))) out.demand[i][r] = std::min(out.demand[i][r], queues[i].limit.value[r]);
            if (i > 0) {
                out.demand[size_t(queues[i].parent)][r] += out.demand[i][r];
                usage[size_t(queues[i].parent)][r] += usage[i][r];
            }
        }
    }
    if (n == 0) return out;

    // Top-down: each queue divides what it has among its children.
    out.fairshare[0] = root_share;
    for (size_t i = 0; i < n; ++i) {
        if (children[i].empty()) continue;
        for (size_t r = 0; r < kResources; ++r) {
            uint64_t share = out.fairshare[i][r];
            // Usage is a part of the pool; against what the parent divides it counts
            // as that part of the parent's share.
            double parent_frac = root_share[r] > 0 ? double(share) / double(root_share[r]) : 0;
            std::vector<Sibling> sib = siblings_of(i, Resource(r), queues, children, load, out.demand, usage,
                                                   parent_frac);
            std::vector<FairshareInput> in;
            for (const Sibling &s : sib) in.push_back(s.in);
            FairshareResult res = compute_fairshare(clamp32(share), in, usage_weight);
            give_zero_quota_departments_the_rest(sib, res.fairshare, share, children);
            for (size_t k = 0; k < sib.size(); ++k)
                if (sib[k].queue >= 0) out.fairshare[size_t(sib[k].queue)][r] = res.fairshare[k];
        }
    }
    return out;
}

QuotaBlock quota_block(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &np_used, int32_t queue,
                       const Amounts &job) {
    for (int32_t q : path_up(queues, queue))
        for (size_t r = 0; r < kResources; ++r) {
            const ResourceAmounts &quota = queues[size_t(q)].quota;
            if (job[r] == 0 || !quota.has(Resource(r))) continue;
            if (room_left(np_used[size_t(q)][r], quota.value[r]) < job[r])
                return {q, Resource(r), np_used[size_t(q)][r], quota.value[r]};
        }
    return {};
}

QuotaBlock limit_block(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                       const std::vector<Amounts> &ahead, int32_t queue, const Amounts &job) {
    for (int32_t q : path_up(queues, queue))
        for (size_t r = 0; r < kResources; ++r) {
            const ResourceAmounts &limit = queues[size_t(q)].limit;
            if (job[r] == 0 || !limit.has(Resource(r))) continue;
            const uint64_t used = allocated[size_t(q)][r] + ahead[size_t(q)][r];
            if (used + job[r] > limit.value[r]) return {q, Resource(r), used, limit.value[r]};
        }
    return {};
}

namespace {

bool on_path(const std::vector<QueueSpec> &queues, int32_t queue, int32_t q) {
    for (int32_t x : path_up(queues, queue))
        if (x == q) return true;
    return false;
}

}  // namespace

QuotaBlock lending_block(const std::vector<QueueSpec> &queues, const std::vector<int32_t> &keepers,
                         const std::vector<Amounts> &allocated, const std::vector<Amounts> &ahead,
                         const Amounts &capacity, int32_t queue, const Amounts &job) {
    for (size_t r = 0; r < kResources; ++r) {
        if (job[r] == 0 || capacity[r] == 0) continue;
        uint64_t kept = 0;
        QuotaBlock first;
        for (int32_t q : keepers) {
            const QueueSpec &s = queues[size_t(q)];
            if (!s.lending_limit.has(Resource(r)) || on_path(queues, queue, q)) continue;
            const uint64_t own = s.quota.get(Resource(r)) - std::min(s.quota.get(Resource(r)), s.lending_limit.value[r]);
            const uint64_t held = allocated[size_t(q)][r] + ahead[size_t(q)][r];
            const uint64_t keeps = own > held ? own - held : 0;
            if (keeps && first.queue < 0) first = {q, Resource(r), keeps, own};
            kept += keeps;
        }
        if (kept == 0) continue;
        const uint64_t used = allocated[0][r] + ahead[0][r];
        const uint64_t free = capacity[r] > used ? capacity[r] - used : 0;
        if (free < kept + job[r]) return first;
    }
    return {};
}

QueueStanding standing(uint64_t allocated, uint64_t quota, uint64_t fairshare) {
    if (allocated <= quota) return QueueStanding::InQuota;
    if (allocated <= fairshare) return QueueStanding::OverQuota;
    return QueueStanding::OverFairshare;
}

double use_ratio(const Amounts &allocated, const Amounts &fairshare) {
    double worst = 0;
    for (size_t k = 0; k < kResources; ++k) {
        if (allocated[k] == 0) continue;
        worst = std::max(worst, fairshare[k] == 0 ? 1e300 : double(allocated[k]) / double(fairshare[k]));
    }
    return worst;
}

bool standing_at(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &fairshare, int32_t queue,
                 const Amounts &at, const Amounts &held, QueueStanding &out) {
    const ResourceAmounts &quota = queues[size_t(queue)].quota;
    bool counted = false;
    out = QueueStanding::InQuota;
    for (size_t r = 0; r < kResources; ++r) {
        if (held[r] == 0 || !quota.has(Resource(r))) continue;
        counted = true;
        out = std::max(out, standing(at[r], quota.value[r], fairshare[size_t(queue)][r]));
    }
    return counted;
}

namespace {

// Which of two resources a refusal shows: the fuller one (amount over bound).
bool fuller(uint64_t amount, uint64_t bound, uint64_t than_amount, uint64_t than_bound) {
    return double(amount) * double(than_bound) > double(than_amount) * double(bound);
}

}  // namespace

// Without allocating: preemptable() asks it for every victim Slurm offers.
std::pair<int32_t, int32_t> sides_below_common_ancestor(const std::vector<QueueSpec> &queues, int32_t a,
                                                        int32_t b) {
    auto up = [&](int32_t q) { return queues[size_t(q)].parent; };
    int da = depth_of(queues, a), db = depth_of(queues, b);
    for (; da > db; --da) a = up(a);
    for (; db > da; --db) b = up(b);
    if (a == b) return {-1, -1};
    while (up(a) != up(b)) {
        a = up(a);
        b = up(b);
    }
    return {a, b};
}

namespace {

// check_reclaim's question on one tree, its sides below the common
// ancestor found: the reclaimer's side (reclaimer_within), then the
// victim's (victim_side).
class ReclaimJudge {
public:
    ReclaimJudge(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                 const std::vector<Amounts> &fairshare, const ReclaimQuestion &q, ReclaimTo mode, int32_t side_a,
                 int32_t side_b)
        : queues_(queues), allocated_(allocated), fairshare_(fairshare), q_(q), mode_(mode), side_a_(side_a),
          side_b_(side_b) {}

    // Two steps, as KAI reclaims to deserved quota, then to fair share: a
    // reclaimer's side that stays within its quota takes from a side over
    // its quota; one that passes its quota (ReclaimTo=fairshare) but stays
    // within its fairshare takes only from a side over its fairshare.
    // Either way the victim's side cannot take back: the reclaimer's side
    // ends within the bound the victim's side would have to find it over.
    // False (with `out` said) when the reclaimer's side passes its bound.
    bool reclaimer_within(ReclaimCheck &out) {
        to_quota_ = first_over(false).queue < 0;
        if (to_quota_) return true;
        const Over o = first_over(true);
        if (o.queue < 0) return true;
        out = ReclaimCheck{ReclaimCheck::ReclaimerOver, o.queue, Resource(o.r), o.amount, bound(o.queue, o.r)};
        return false;
    }

    ReclaimCheck victim_side() const {
        size_t k_b = 0;
        for (int32_t x : path_up(queues_, q_.victim_queue, side_b_)) {
            (void)x;
            ++k_b;
        }
        const Amounts &at_b = at(side_b_, k_b);
        // The transfer is owed in a resource both sides count.
        size_t owed_in = kResources, shown = kResources;
        for (size_t r = 0; r < kResources && owed_in == kResources; ++r) {
            if (q_.job[r] == 0 || q_.victim[r] == 0 || !counts(side_a_, r) || !counts(side_b_, r)) continue;
            if (shown == kResources || fuller(at_b[r], owed(side_b_, r), at_b[shown], owed(side_b_, shown))) shown = r;
            if (at_b[r] > owed(side_b_, r)) owed_in = r;
        }
        if (owed_in == kResources) {
            const size_t r = shown == kResources ? size_t(kGpu) : shown;
            return says(ReclaimCheck::VictimSideWithin, side_b_, r, at_b[r], owed(side_b_, r));
        }
        // Taking to fairshare never takes B below its quota in a resource it
        // counts: B would then reclaim back to quota from A, which ends over
        // its quota (within its fairshare), and the two would evict each other
        // for ever (seen with memory counted: one job of A and two of B).
        if (!to_quota_)
            for (size_t r = 0; r < kResources; ++r)
                if (q_.victim[r] > 0 && counts(side_b_, r) && at_b[r] >= quota(side_b_, r) &&
                    at_b[r] - q_.victim[r] < quota(side_b_, r))
                    return says(ReclaimCheck::VictimSideToQuota, side_b_, r, at_b[r] - q_.victim[r],
                                quota(side_b_, r));
        // No queue on the way keeps the victim within its quota.
        size_t k = 0;
        for (int32_t x = q_.victim_queue; x != side_b_; x = queues_[size_t(x)].parent, ++k) {
            QueueStanding st;
            if (!standing_at(queues_, fairshare_, x, at(x, k), q_.victim, st) || st != QueueStanding::InQuota)
                continue;
            size_t shown_here = kResources;
            for (size_t r = 0; r < kResources; ++r)
                if (q_.victim[r] > 0 && counts(x, r) &&
                    (shown_here == kResources ||
                     fuller(at(x, k)[r], quota(x, r), at(x, k)[shown_here], quota(x, shown_here))))
                    shown_here = r;
            return says(ReclaimCheck::VictimQueueWithin, x, shown_here, at(x, k)[shown_here], quota(x, shown_here));
        }
        return says(ReclaimCheck::Allowed, side_b_, owed_in, at_b[owed_in], owed(side_b_, owed_in));
    }

private:
    struct Over {
        int32_t queue;
        size_t r;
        uint64_t amount;
    };
    bool counts(int32_t queue, size_t r) const { return queues_[size_t(queue)].quota.has(Resource(r)); }
    uint64_t quota(int32_t queue, size_t r) const { return queues_[size_t(queue)].quota.get(Resource(r)); }
    uint64_t bound(int32_t queue, size_t r) const {
        return mode_ == ReclaimTo::Fairshare ? std::max(quota(queue, r), fairshare_[size_t(queue)][r]) : quota(queue, r);
    }
    uint64_t owed(int32_t queue, size_t r) const { return to_quota_ ? quota(queue, r) : bound(queue, r); }
    static ReclaimCheck says(ReclaimCheck::Outcome o, int32_t queue, size_t r, uint64_t amount, uint64_t limit) {
        return ReclaimCheck{o, queue, Resource(r), amount, limit};
    }
    // The victim's queues from its own up to B (the k-th up), each at the victim's place.
    const Amounts &at(int32_t queue, size_t k) const {
        return q_.victim_at ? q_.victim_at[k] : allocated_[size_t(queue)];
    }
    // A queue's allocation (the k-th up from the reclaimer) with the job in
    // and what it frees out.
    uint64_t after(int32_t up, size_t k, size_t r, const Amounts *freed) const {
        const uint64_t with = allocated_[size_t(up)][r] + q_.job[r];
        return freed ? with - std::min(with, freed[k][r]) : with;
    }
    // The first queue from the reclaimer up to A past its quota (or, with
    // `to_bound`, its bound) in a resource the job needs; queue -1: none.
    Over first_over(bool to_bound) const {
        const Amounts *freed = to_bound ? q_.freed_to_bound : q_.freed_to_quota;
        size_t k = 0;
        for (int32_t up = q_.reclaimer;; up = queues_[size_t(up)].parent, ++k) {
            for (size_t r = 0; r < kResources; ++r) {
                const uint64_t limit = to_bound ? bound(up, r) : quota(up, r);
                if (q_.job[r] > 0 && counts(up, r) && after(up, k, r, freed) > limit)
                    return Over{up, r, after(up, k, r, freed)};
            }
            if (up == side_a_) return Over{-1, 0, 0};
        }
    }

    const std::vector<QueueSpec> &queues_;
    const std::vector<Amounts> &allocated_, &fairshare_;
    const ReclaimQuestion &q_;
    ReclaimTo mode_;
    int32_t side_a_, side_b_;
    bool to_quota_ = true;
};

}  // namespace

ReclaimCheck check_reclaim(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                           const std::vector<Amounts> &fairshare, const ReclaimQuestion &q, ReclaimTo mode) {
    const std::pair<int32_t, int32_t> sides = sides_below_common_ancestor(queues, q.reclaimer, q.victim_queue);
    if (sides.first < 0) return ReclaimCheck{};
    ReclaimJudge judge(queues, allocated, fairshare, q, mode, sides.first, sides.second);
    ReclaimCheck out;
    if (!judge.reclaimer_within(out)) return out;
    return judge.victim_side();
}

void freed_on_path(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                   const std::vector<Amounts> &bound, std::vector<Amounts> &lower, std::vector<Amounts> &takeable,
                   int32_t from, PathFreed &out) {
    const size_t n = queues.size();
    for (size_t c = n; c-- > 1;) {  // tree order: children after their parent
        add_to(lower[size_t(queues[c].parent)], lower[c]);
        add_to(takeable[size_t(queues[c].parent)], takeable[c]);
    }
    out.place.assign(n, -1);
    size_t len = 0;
    for (int32_t x : path_up(queues, from)) out.place[size_t(x)] = int32_t(len++);
    out.to_quota.assign(len, Amounts{});
    out.to_bound.assign(len, Amounts{});
    // Beside the path: a child of a path queue above `from`, off the path.
    // It gives its excess to R5; its lower tiers are no R4 candidates, so
    // they come off its parent's subtree sum.
    std::vector<Amounts> &q = out.to_quota, &b = out.to_bound;
    for (size_t c = 1; c < n; ++c) {
        const int32_t k = out.place[size_t(queues[c].parent)];
        if (k < 1 || out.place[c] >= 0) continue;
        for (size_t r = 0; r < kResources; ++r) {
            q[size_t(k)][r] -= lower[c][r];  // wraps; the sum below puts it back in range
            b[size_t(k)][r] -= lower[c][r];
            if (!queues[c].quota.has(Resource(r))) continue;  // nothing of r to take back
            auto excess = [&](uint64_t bd) { return allocated[c][r] > bd ? allocated[c][r] - bd : 0; };
            q[size_t(k)][r] += std::min(excess(queues[c].quota.value[r]), takeable[c][r]);
            b[size_t(k)][r] += std::min(excess(bound[c][r]), takeable[c][r]);
        }
    }
    // Up the path: the subtree's lower tiers less those beside, plus excess.
    Amounts beside_q{}, beside_b{};
    size_t k = 0;
    for (int32_t x : path_up(queues, from)) {
        add_to(beside_q, q[k]);
        add_to(beside_b, b[k]);
        for (size_t r = 0; r < kResources; ++r) {
            q[k][r] = lower[size_t(x)][r] + beside_q[r];
            b[k][r] = lower[size_t(x)][r] + beside_b[r];
        }
        ++k;
    }
}

std::vector<std::vector<LentFrom>> lend_among(const std::vector<uint64_t> &quota, const std::vector<uint64_t> &held,
                                              uint64_t own, uint64_t has) {
    const size_t n = quota.size();
    uint64_t quotas = 0;
    for (uint64_t q : quota) quotas += q;
    std::vector<LentFrom> lenders;
    if (has > quotas) lenders.push_back(LentFrom{-1, has - quotas});
    for (size_t k = 0; k < n; ++k)
        if (quota[k] > held[k]) lenders.push_back(LentFrom{int32_t(k), quota[k] - held[k]});
    std::vector<std::vector<LentFrom>> from(n + 1);
    size_t li = 0;
    for (size_t k = 0; k <= n; ++k) {
        uint64_t need = k < n ? (held[k] > quota[k] ? held[k] - quota[k] : 0) : own;
        while (need > 0 && li < lenders.size()) {
            const uint64_t take = std::min(need, lenders[li].amount);
            from[k].push_back(LentFrom{lenders[li].lender, take});
            need -= take;
            lenders[li].amount -= take;
            if (lenders[li].amount == 0) ++li;
        }
    }
    return from;
}

std::vector<Amounts> lent_by_queues(const std::vector<QueueSpec> &queues, const std::vector<Amounts> &allocated,
                                    const Amounts &root_has) {
    std::vector<Amounts> lent(queues.size(), Amounts{});
    const std::vector<std::vector<int32_t>> children = children_of(queues);
    std::vector<uint64_t> quota, held;
    for (size_t p = 0; p < queues.size(); ++p) {
        if (children[p].empty()) continue;
        for (size_t r = 0; r < kResources; ++r) {
            const ResourceAmounts &pq = queues[p].quota;
            const uint64_t bound = pq.has(Resource(r)) ? pq.value[r] : p == 0 ? root_has[r] : 0;
            quota.clear();
            held.clear();
            uint64_t children_hold = 0;
            for (int32_t c : children[p]) {
                quota.push_back(queues[size_t(c)].quota.get(Resource(r)));
                held.push_back(allocated[size_t(c)][r]);
                children_hold += held.back();
            }
            const uint64_t own = allocated[p][r] - std::min(allocated[p][r], children_hold);
            for (const std::vector<LentFrom> &from : lend_among(quota, held, own, std::max(bound, allocated[p][r])))
                for (const LentFrom &g : from)
                    if (g.lender >= 0) lent[size_t(children[p][size_t(g.lender)])][r] += g.amount;
        }
    }
    return lent;
}

}  // namespace gpupool

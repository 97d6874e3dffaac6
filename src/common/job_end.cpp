// Between passes: a job end admits what now fits (only the jobs it can
// change), and jobs submitted since the pass are placed in R1 order.
#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "fairshare.hpp"
#include "gpupool.h"
#include "levels.hpp"
#include "plugin_apply.hpp"

namespace gpupool {

namespace {
// What job_ended() reports as changed: all that the plugins write but the
// counts in a held job's reason.
struct Decision {
    Admission admission;
    uint32_t admitted_tasks, priority;
    uint64_t refused;  // pools, as bits (pool indices past 63 share one)
    explicit Decision(const PendingResult &r)
        : admission(r.admission), admitted_tasks(r.admitted_tasks), priority(r.priority), refused(0) {
        for (const Refusal &x : r.refused) refused |= uint64_t(1) << std::min(x.pool, 63);
    }
    bool operator!=(const Decision &o) const {
        return admission != o.admission || admitted_tasks != o.admitted_tasks || priority != o.priority ||
               refused != o.refused;
    }
};
}  // namespace

// Of the pass's jobs, those a job end may admit (more of), per pool.
void Engine::build_candidates(Evaluation &ev) const {
    ev.cleared.clear();
    ev.candidates.assign(ev.pools.size(), PoolCandidates{});
    std::vector<std::vector<uint32_t>> gpus(ev.pools.size());
    for (size_t pos = 0; pos < ev.pending.size(); ++pos) {
        const PendingResult &r = ev.pending[pos];
        const bool held = r.admission == Admission::Held;
        const bool more = r.admission == Admission::Quota && r.admitted_tasks < r.task_count();
        if (!held && !more) continue;
        for (int p : r.pools) {
            if (more && r.refuses(p)) continue;
            ev.candidates[static_cast<size_t>(p)].pos.push_back(static_cast<uint32_t>(pos));
            gpus[static_cast<size_t>(p)].push_back(r.gpus);
        }
    }
    for (size_t p = 0; p < ev.pools.size(); ++p) ev.candidates[p].gpus.build(gpus[p]);
}

// After the pass job at `pos` changed: what it may still gain, per pool.
void Engine::update_candidate(Evaluation &ev, uint32_t pos) const {
    const PendingResult &r = ev.pending[pos];
    const bool held = r.admission == Admission::Held;
    const bool more = r.admission == Admission::Quota && r.admitted_tasks < r.task_count();
    for (int p : r.pools) {
        PoolCandidates &c = ev.candidates[static_cast<size_t>(p)];
        auto at = std::lower_bound(c.pos.begin(), c.pos.end(), pos);
        if (at == c.pos.end() || *at != pos) continue;
        const bool stays = held || (more && !r.refuses(p));
        c.gpus.set(static_cast<size_t>(at - c.pos.begin()), stays ? r.gpus : MinTree::kEmpty);
    }
}

// A running (or suspended) job ended: its GPUs leave its pool's use and its
// array's count of running tasks.  Returns its array's id (0: none, or not running).
uint32_t Engine::release_running(uint32_t job_id) {
    auto *held_by = &eval_.running;  // or a suspended job's GPUs
    auto rit = held_by->find(job_id);
    if (rit == held_by->end()) {
        held_by = &eval_.suspended;
        rit = held_by->find(job_id);
        if (rit == held_by->end()) return 0;
    }
    const RunningInfo &r = rit->second;
    if (r.pool >= 0) {
        PoolState &ps = eval_.pools[static_cast<size_t>(r.pool)];
        if (preemptible_tier(r.tier)) {
            uint32_t &tier_used = ps.p_used_by_tier[static_cast<size_t>(r.tier)];
            tier_used -= std::min(tier_used, r.gpus);
        }
        use_in_queues(r, ps, -1);
        sync_node_set_rows(eval_.node_sets, eval_.pools);
    }
    const uint32_t array_record = r.array_job_id;
    if (array_record) {
        auto ait = eval_.array_running.find(array_record);
        if (ait != eval_.array_running.end() && --ait->second == 0) eval_.array_running.erase(ait);
    }
    held_by->erase(rit);
    return array_record;
}

// A pass job gains nothing more before the next pass in any of its pools.
void Engine::drop_candidate(Evaluation &ev, const PendingResult &r, uint32_t pos) {
    for (int p : r.pools) {
        PoolCandidates &c = ev.candidates[static_cast<size_t>(p)];
        auto at = std::lower_bound(c.pos.begin(), c.pos.end(), pos);
        if (at != c.pos.end() && *at == pos) c.gpus.set(static_cast<size_t>(at - c.pos.begin()), MinTree::kEmpty);
    }
}

// Placed again since the pass: that placement stands for the pass job.
bool Engine::superseded(uint32_t job_id) const {
    return !eval_.provisional.empty() && eval_.provisional.contains(job_id);
}

// What the ended job and the jobs that left the queue since held or
// reserved goes back.
void Engine::take_back(uint32_t job_id) {
    // Reservations counted twice go first (admit_more() counts afresh).
    for (PoolState &ps : eval_.pools) {
        add_np(ps.queues, 0, Amounts{ps.np_overcount, 0, 0}, 1, -1, false);  // the pool's row only
        ps.np_overcount = 0;
    }
    // A pending job that goes away no longer reserves anything.
    const bool placed_since = eval_.provisional.contains(job_id);
    if (const PendingResult *pr = eval_.provisional.find(job_id)) {
        add_reservation(*pr, eval_, -1);
        uncount_held(*pr, eval_);
        eval_.provisional.erase(job_id);
    }
    uint32_t pos = eval_.pending_index.find(job_id);
    if (pos != IdIndex::kNone) {
        PendingResult &r = eval_.pending[pos];
        // Placed again since the pass, that placement reserved (and was
        // counted held) instead.
        if (!r.pools.empty() && !placed_since) {
            add_reservation(r, eval_, -1);
            uncount_held(r, eval_);
        }
        drop_candidate(eval_, r, pos);
        r.pools.clear();
        r.refused.clear();
        r.gpus = 0;
        clear_left(r, eval_);
    }
    for (uint32_t id : eval_.cleared) {
        uint32_t at = eval_.pending_index.find(id);
        if (at == IdIndex::kNone || superseded(id)) continue;
        PendingResult &r = eval_.pending[at];
        const Decision was(r);
        clear_left(r, eval_);
        if (Decision(r) != was && id != job_id) changes_.push_back(id);
    }
    eval_.cleared.clear();
}

// One job of the walk: admitted (more tasks) if it fits now; false if
// nothing changed.
bool Engine::readmit(PendingResult &r) {
    if (r.admission == Admission::Held) {
        // A heterogeneous job's components together, those without GPUs too.
        if (r.het_job_id) return readmit_het(r);
        bool fits = false;
        for (int p : r.pools) fits |= r.gpus > 0 && eval_.pools[static_cast<size_t>(p)].quota_room() >= r.gpus;
        if (!fits) return false;
        uncount_held(r, eval_);
        r.priority = r.nominal;
        admit_one(r, eval_.pools);
        count_held(r, eval_);
        return true;
    }
    return r.admission == Admission::Quota && admit_more_tasks(r, eval_.pools) > 0;
}

// A held heterogeneous job at a job end: its held components together, as
// a pass admits them, so that later jobs do not take the room it was first
// in line for.  Those admitted since (the plugins place a component alone
// at submit) keep their admission.
bool Engine::readmit_het(PendingResult &r) {
    std::vector<PendingResult *> parts;
    auto held = [&](const PendingResult &x) {
        return x.het_job_id == r.het_job_id && x.admission == Admission::Held && !x.pools.empty();
    };
    auto at = eval_.het_parts.find(r.het_job_id);
    if (at != eval_.het_parts.end())
        for (uint32_t i : at->second) {  // in R1 order
            PendingResult &x = eval_.pending[i];
            if (held(x) && !eval_.provisional.contains(x.job_id)) parts.push_back(&x);
        }
    for (PendingResult &x : eval_.provisional)  // placed again since the pass
        if (held(x)) parts.push_back(&x);
    std::stable_sort(parts.begin(), parts.end(), [&](const PendingResult *a, const PendingResult *b) {
        return order_before(*a, order_priority(*a), *b, order_priority(*b));
    });
    // Decided where the full walk would, at the component that needs quota
    // (one taking none may be admitted wherever the walk meets it).
    const PendingResult *front = het_front(parts);
    if (!front || (front != &r && !preemptible_tier(front->tier) && front->gpus > 0)) return false;
    for (PendingResult *p : parts) uncount_held(*p, eval_);
    const bool admitted = admit_together_or_keep(parts, eval_.pools);
    for (PendingResult *p : parts) {
        count_held(*p, eval_);
        if (admitted && p != &r) changes_.push_back(p->job_id);
    }
    return admitted;
}

// The first pass job from `from` on that fits some pool's room now.
size_t Engine::next_fit(size_t from) const {
    size_t best = MinTree::kNone;
    for (size_t p = 0; p < eval_.pools.size(); ++p) {
        const uint64_t room = eval_.pools[p].quota_room();
        if (room == 0) continue;
        const PoolCandidates &c = eval_.candidates[p];
        size_t i = static_cast<size_t>(std::lower_bound(c.pos.begin(), c.pos.end(), from) - c.pos.begin());
        if (best != MinTree::kNone)  // only what comes before the best so far
            if (i >= c.pos.size() || c.pos[i] >= best) continue;
        size_t j = c.gpus.first_at_most(i, static_cast<uint32_t>(std::min<uint64_t>(room, MinTree::kEmpty - 1)));
        if (j != MinTree::kNone) best = std::min<size_t>(best, c.pos[j]);
    }
    return best;
}

// Placed since the pass and able to gain: fits the rooms as they are now.
bool Engine::may_gain(const PendingResult &r) const {
    if (r.pools.empty()) return false;
    if (r.admission == Admission::Held && r.het_job_id) return true;  // with its other components
    if (r.gpus == 0) return false;
    if (r.admission == Admission::Held) {
        for (int p : r.pools)
            if (eval_.pools[static_cast<size_t>(p)].quota_room() >= r.gpus) return true;
        return false;
    }
    if (r.admission != Admission::Quota || r.admitted_tasks >= r.task_count()) return false;
    for (int p : r.pools)
        if (!r.refuses(p) && eval_.pools[static_cast<size_t>(p)].quota_room() < r.gpus) return false;
    return true;
}

// The walk of admit_more() over only the jobs it can change: those that fit
// the room some pool has now (found per pool in O(log n), PoolCandidates),
// and the few placed since the pass, in the same order.  A job that does
// not fit is left as it is: admit_more() would give it the same decision.
bool Engine::job_ended(uint32_t job_id, int64_t now) {
    changes_.clear();
    if (!config_ || !eval_.valid) return false;
    const uint32_t array_record = release_running(job_id);
    take_back(job_id);

    auto visit = [&](PendingResult &r) {
        const Decision was(r);
        if (!readmit(r)) return false;
        if (Decision(r) != was && r.job_id != job_id) changes_.push_back(r.job_id);
        return true;
    };
    // Those placed since the pass that may gain (rooms only shrink along
    // the walk), sorted here.
    std::vector<PendingResult *> placed;
    for (PendingResult &r : eval_.provisional)
        if (may_gain(r)) placed.push_back(&r);
    auto before = [&](const PendingResult &a, const PendingResult &b) {
        return order_before(a, order_priority(a), b, order_priority(b));
    };
    std::sort(placed.begin(), placed.end(), [&](const PendingResult *a, const PendingResult *b) { return before(*a, *b); });
    size_t from = 0, next = next_fit(0), y = 0;
    while (true) {
        if (y < placed.size() && (next == MinTree::kNone || before(*placed[y], eval_.pending[next]))) {
            if (visit(*placed[y++])) next = next_fit(from);  // rooms shrank
            continue;
        }
        if (next == MinTree::kNone) break;
        const uint32_t at = static_cast<uint32_t>(next);
        PendingResult &r = eval_.pending[at];
        if (superseded(r.job_id))
            drop_candidate(eval_, r, at);  // its placement since the pass stands for it
        else if (visit(r))
            update_candidate(eval_, at);
        from = next + 1;
        next = next_fit(from);
    }
    if (array_record && array_record != job_id && pending_result(array_record) &&
        std::find(changes_.begin(), changes_.end(), array_record) == changes_.end())
        changes_.push_back(array_record);
    eval_.now = std::max(eval_.now, now);
    preemptor_cache_.valid = false;
    return !changes_.empty();
}

bool Engine::job_ended_full(uint32_t job_id, int64_t now) {
    changes_.clear();
    if (!config_ || !eval_.valid) return false;
    (void) release_running(job_id);
    uint32_t pos = eval_.pending_index.find(job_id);
    if (pos != IdIndex::kNone) {
        // A pending job that goes away no longer reserves anything.
        PendingResult &r = eval_.pending[pos];
        r.pools.clear();
        r.refused.clear();
        r.gpus = 0;
    }
    eval_.provisional.erase(job_id);
    fold_provisional();
    std::vector<std::pair<Admission, uint32_t>> before;
    before.reserve(eval_.pending.size());
    for (const PendingResult &r : eval_.pending) before.emplace_back(r.admission, r.admitted_tasks);
    admit_more(eval_);
    eval_.cleared.clear();
    build_candidates(eval_);
    eval_.now = std::max(eval_.now, now);
    preemptor_cache_.valid = false;
    for (size_t i = 0; i < before.size(); ++i)
        if (before[i] != std::make_pair(eval_.pending[i].admission, eval_.pending[i].admitted_tasks)) return true;
    return false;
}

// Jobs placed between passes join the order by their provisional priority
// (even numbers between the pass's odd ones), so that admission can be
// redone over everything in one walk.
void Engine::fold_provisional() {
    if (eval_.provisional.empty()) return;
    // The pass's jobs are in order already: sort the few placed since and
    // merge, rather than sort the whole queue at every job end.
    auto before = [&](const PendingResult &a, const PendingResult &b) {
        return order_before(a, order_priority(a), b, order_priority(b));
    };
    std::vector<PendingResult> placed;
    placed.reserve(eval_.provisional.size());
    for (PendingResult &r : eval_.provisional) placed.push_back(std::move(r));
    std::sort(placed.begin(), placed.end(), before);
    // The pass sorted by the same key: a merge keeps R1's order.
    std::vector<PendingResult> merged;
    merged.reserve(eval_.pending.size() + placed.size());
    auto p = placed.begin();
    for (PendingResult &r : eval_.pending) {
        if (eval_.provisional.contains(r.job_id)) continue;
        while (p != placed.end() && before(*p, r)) merged.push_back(std::move(*p++));
        merged.push_back(std::move(r));
    }
    for (; p != placed.end(); ++p) merged.push_back(std::move(*p));
    eval_.provisional.clear();
    eval_.pending.swap(merged);
    number_pending(eval_);
}

// A job placed before any pass: the lowest priority; held until the first
// pass when it asks for GPUs of a configured pool (`held`).
static void before_first_pass(PendingResult &r, bool held) {
    r.priority = r.nominal = r.factor_tier = 2;
    if (!held) return;
    r.admission = Admission::Held;
    r.admitted_tasks = 0;
    r.priority = 0;
    r.hold = Hold::Starting;
}

PendingResult Engine::provisional(const SnapJob &job, int64_t now) {
    std::string parts;
    return provisional(job_ref(job, parts), now);
}

// A new job's place in the last pass's order and its priority there: just
// before the first job that orders after it, in the numbers left free
// between that job's and the one before (number_pending).
void Engine::place_between(PendingResult &r) const {
    const uint32_t prio = order_priority(r);
    auto it = std::partition_point(eval_.pending.begin(), eval_.pending.end(), [&](const PendingResult &x) {
        return order_before(x, order_priority(x), r, prio);
    });
    r.position = static_cast<uint32_t>(it - eval_.pending.begin());
    uint32_t tiers_below = 0;
    for (const Tier &t : config_->tiers) tiers_below += t.priority < prio;
    const uint32_t above = priority_slot(eval_.pending.size()) > 1 ? tiers_below + 1 : 0;
    if (it == eval_.pending.end()) {
        r.nominal = r.factor_tier = std::max<uint32_t>(1, above);
    } else {
        r.nominal = it->nominal + above;
        if (order_priority(*it) == prio) {
            r.factor_tier = it->factor_tier;
            r.factor_fairshare = it->factor_fairshare;
            r.factor_age = it->factor_age + above;
        } else {
            r.factor_tier = r.nominal;
        }
    }
}

PendingResult Engine::provisional(const JobRef &job, int64_t now) {
    if (!config_) throw std::logic_error("no configuration loaded");
    PendingResult r;
    r.job_id = job.id;
    r.tier = tier_of_qos(std::string(job.qos));
    r.gpus = admitted_gpus(job.partitions, gpu_ask(job));
    r.array_tasks = job.array_tasks;
    // Only a pass tests Slurm's limits (the plugins' JobRef at submit or
    // update says nothing of them): the last pass's answer stands.
    const PendingResult *last = eval_.valid ? pending_result(job.id) : nullptr;
    r.dependent = job.dependent;
    r.over_limit = job.over_limit || (last && last->over_limit);
    r.het_job_id = job.het_job_id;
    r.het_held_back = last && last->het_held_back;
    r.admitted_tasks = r.task_count();
    if (eval_.levels)
        note_account(*config_, eval_, r, std::string(job.account), job.cpus, job.mem_mb);
    r.orig_submit = note_job(job.id, job.submit_time, job.restart_cnt, now);
    if (!eval_.valid) {
        // Nothing known yet: GPU jobs of configured pools wait for the
        // first pass, NP ones so as not to go over quota, preemptible ones
        // so as not to start ahead of jobs the pass will put first (and
        // be preempted back out).
        before_first_pass(r, names_pool(job.partitions) && (job.gpus > 0 || job.whole_node));
        return r;
    }
    r.pools = managed_pools(job.partitions);
    r.group_standing = job_standing(eval_, r);
    mark_preempted(r);

    // A job already ranked by the last pass keeps its place if its tier
    // and pools are unchanged.
    if (const PendingResult *known = pending_result(job.id))
        if (known->tier == r.tier && known->pools == r.pools && known->gpus == r.gpus && known->held_back() == r.held_back() &&
            known->task_count() == r.task_count())
            return *known;

    place_between(r);
    r.priority = r.nominal;
    if (r.het_job_id && !r.pools.empty()) {
        // A component placed again (an update, a release, a requeue) waits
        // for the pass, which admits its components together, within a
        // second or so; alone it might set quota aside for a job that
        // cannot start.
        r.admission = Admission::Held;
        r.hold = Hold::Starting;
        r.admitted_tasks = 0;
        r.priority = 0;
    } else {
        // Reserve now so that a burst of submits between passes cannot
        // admit more than the quota.
        admit_one(r, eval_.pools);
    }
    // A placement it replaces reserves no more, but stays counted (as it
    // always did, for the placements until the next job end) in
    // np_overcount, which that job end takes back.  Its account queues
    // keep it until the next pass or full walk (admit_more):
    // stricter for that while, never over a quota.
    const PendingResult *prev = eval_.provisional.find(job.id);
    if (!prev) {
        uint32_t at = eval_.pending_index.find(job.id);
        if (at != IdIndex::kNone) prev = &eval_.pending[at];
    }
    if (prev) {
        if (prev->admission == Admission::Quota)
            for (int p : prev->pools)
                if (!prev->refuses(p)) eval_.pools[static_cast<size_t>(p)].np_overcount += prev->admitted_tasks * prev->gpus;
        uncount_held(*prev, eval_);
    }
    count_held(r, eval_);
    eval_.provisional.put(r);
    // Its admission (and where it may start) is what preemptable() reads.
    preemptor_cache_.valid = false;
    return r;
}

}  // namespace gpupool

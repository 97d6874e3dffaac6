// R2/R3 admission: which non-preemptible jobs fit their pools' quota, in
// R1 order, and what a held job's reason says.
#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fairshare.hpp"
#include "gpupool.h"
#include "levels.hpp"
#include "plugin_apply.hpp"

namespace gpupool {

// What R2 checks of an NP job in pool `ps`, for a trace.
static QuotaLine quota_line(int pool, const PoolState &ps, uint32_t gpus) {
    QuotaLine q;
    q.pool = pool;
    q.quota = ps.quota;
    q.np_used = ps.np_used();
    q.reserved = ps.np_reserved();
    q.gpus = gpus;
    const uint64_t want = ps.np_taken() + gpus;
    q.needed = want > q.quota ? static_cast<uint32_t>(std::min<uint64_t>(want - q.quota, UINT32_MAX)) : 0;
    return q;
}

// R2 with levels in pool p, whose GPU quota takes `fit` tasks of the job:
// how many its account queues take too (0: refused, and the refusal, the
// trace's line and `big_enough` say by which queue, in what).
uint64_t Engine::fit_in_queues(PendingResult &r, int p, const PoolState &ps, uint64_t fit, bool &big_enough,
                               QuotaLine *line) {
    if (line) line->checks = queue_checks(r, ps);
    QuotaBlock block;
    fit = tasks_fitting_queues(r, ps, fit, block);
    if (fit > 0) return fit;
    big_enough = !QueueCheck{block.queue, block.resource, block.used, block.quota, task_amounts(r)[block.resource]}
                       .never_fits();
    r.refused.push_back(Refusal{p, static_cast<uint32_t>(std::min<uint64_t>(block.used, UINT32_MAX)),
                                Refusal::level_of(block.queue, block.resource)});
    if (line) {
        line->queue_blocked = true;
        line->queue = block.queue;
        line->resource = block.resource;
        line->queue_used = block.used;
        line->queue_quota = block.quota;
    }
    return 0;
}

// Limit and LendingLimit in pool p for `fit` tasks of a job of
// any tier: how many fit (0: refused, the refusal says by which queue).
static uint64_t fit_in_limits(PendingResult &r, int p, const PoolState &ps, uint64_t fit) {
    QuotaBlock block;
    Hold by = Hold::Limit;
    fit = tasks_within_limits(r, ps, fit, block, by);
    if (fit == 0)
        r.refused.push_back(Refusal{p, static_cast<uint32_t>(std::min<uint64_t>(block.used, UINT32_MAX)),
                                    Refusal::level_of(block.queue, block.resource), by});
    return fit;
}

// R2 for a job listing several pools: it is admitted when its quota fits
// in at least one of them, and may then start only in those (Slurm is told
// not to start it in the others, the refused ones).  A job array record
// gets as many tasks as fit every one of them.  With levels a
// pool's quota fits when its GPU quota does and every account queue on the
// job's path has room in each counted resource.  Then, for a job of any
// tier, the Limit and LendingLimit of the pool's queues (fit_in_limits): a
// pool they refuse is refused as a quota would.  `lines`, when given, gets
// the quota line of each pool checked (NP jobs).
void Engine::decide_admission(PendingResult &r, const std::vector<PoolState> &pools,
                              std::vector<QuotaLine> *lines) const {
    r.admission = Admission::Free;
    r.hold = Hold::None;
    r.hold_pool = -1;
    r.refused.clear();
    r.admitted_tasks = r.task_count();
    if (r.pools.empty()) return;
    const bool np = !preemptible_tier(r.tier) && r.gpus > 0;  // R2 is NP jobs'
    uint64_t k = r.task_count();
    bool fits_one = false, quota_big_enough = false;
    for (int p : r.pools) {
        const PoolState &ps = pools[static_cast<size_t>(p)];
        bool big_enough = true;
        uint64_t fit = k;
        if (np) {
            if (lines) lines->push_back(quota_line(p, ps, r.gpus));
            big_enough = !quota_line(p, ps, r.gpus).never_fits();
            fit = tasks_within(ps.np_taken(), r.gpus, ps.quota);
            if (fit == 0) {
                r.refused.push_back(Refusal{p, static_cast<uint32_t>(std::min<uint64_t>(ps.np_taken(), UINT32_MAX))});
            } else if (ps.queues.tree) {
                fit = fit_in_queues(r, p, ps, fit, big_enough, lines ? &lines->back() : nullptr);
            }
        }
        if (fit > 0 && ps.queues.tree) fit = fit_in_limits(r, p, ps, fit);
        quota_big_enough |= big_enough;
        if (fit == 0) continue;
        fits_one = true;
        k = std::min(k, fit);
    }
    if (!fits_one) {
        const Hold by = r.refused.front().by;
        r.admission = Admission::Held;
        r.hold = by != Hold::Quota ? by : quota_big_enough ? Hold::Quota : Hold::QuotaTooSmall;
        r.hold_pool = r.refused.front().pool;
        r.admitted_tasks = 0;
        r.priority = 0;
        return;
    }
    if (np) r.admission = Admission::Quota;
    r.admitted_tasks = static_cast<uint32_t>(k);
}

// Between passes: the held components of a heterogeneous job admitted
// together if they fit; if not, left as they were (nothing reserved), as a
// held job that does not fit is.  Returns whether they were admitted.
bool Engine::admit_together_or_keep(const std::vector<PendingResult *> &parts, std::vector<PoolState> &pools) const {
    std::vector<PendingResult> was;
    was.reserve(parts.size());
    for (PendingResult *p : parts) {
        was.push_back(*p);
        p->priority = p->nominal;
    }
    admit_together(parts, pools);
    if (parts.front()->admission != Admission::Held) return true;
    for (size_t k = 0; k < parts.size(); ++k) {
        *parts[k] = was[k];
        parts[k]->priority = 0;  // held (number_pending may have renumbered it)
    }
    return false;
}

// Slurm may start an admitted job in any pool it is admitted to, so it
// reserves in each of them.
void Engine::admit_one(PendingResult &r, std::vector<PoolState> &pools) const {
    decide_admission(r, pools, nullptr);
    reserve_admitted(r, pools);
}

AdmissionTrace Engine::admission_trace() const {
    AdmissionTrace t;
    std::vector<PoolState> pools = eval_.pools;
    for (PoolState &ps : pools) clear_reserved(ps.queues);
    t.first.reserve(eval_.pending.size() + 1);
    for (const PendingResult &r : eval_.pending) {
        t.first.push_back(static_cast<uint32_t>(t.lines.size()));
        PendingResult walked = r;
        decide_admission(walked, pools, &t.lines);
        reserve_admitted(r, pools);  // as the pass (and job ends since) left it
    }
    t.first.push_back(static_cast<uint32_t>(t.lines.size()));
    return t;
}

std::string Engine::reason_of(const PendingResult &r) const {
    char buf[512];
    reason_into(r, buf, sizeof(buf));
    return buf;
}

// Into a caller's buffer (cut to fit): the C ABI fills results this way,
// with no heap allocation, on slurmctld's submit path and for every held
// job of a pass.
size_t Engine::reason_into(const PendingResult &r, char *buf, size_t len) const {
    if (!len) return 0;
    buf[0] = '\0';
    size_t n = 0;
    auto add = [&](const char *fmt, auto... args) {
        if (n + 1 >= len) return;
        int w = std::snprintf(buf + n, len - n, fmt, args...);
        if (w > 0) n = std::min(len - 1, n + static_cast<size_t>(w));
    };
    if (r.hold == Hold::Starting) {
        add("%s", starting_reason());
        return n;
    }
    if (r.het_held_for && r.admission == Admission::Held) {
        // Held for another component's refusal: its reason while it stands
        // (the component may have been placed again or left since).
        const PendingResult *by = pending_result(r.het_held_for);
        if (by && by->admission == Admission::Held && !by->het_held_for && !by->refused.empty())
            return reason_into(*by, buf, len);
        add("%scomponent %u", GP_HOLD_PREFIX "Quota:", r.het_held_for);
        return n;
    }
    const char *prefix = r.hold == Hold::Quota           ? GP_HOLD_PREFIX "Quota:"
                         : r.hold == Hold::QuotaTooSmall  ? GP_HOLD_PREFIX "QuotaTooSmall:"
                         : r.hold == Hold::Limit          ? GP_HOLD_PREFIX "Limit:"
                         : r.hold == Hold::LendingLimit   ? GP_HOLD_PREFIX "LendingLimit:"
                                                          : nullptr;
    if (!prefix) return n;
    add("%s", prefix);
    const char *sep = "";
    for (const Refusal &x : r.refused) {
        const bool known = x.pool >= 0 && static_cast<size_t>(x.pool) < eval_.pools.size();
        const char *name = known ? eval_.pools[static_cast<size_t>(x.pool)].name.c_str() : "?";
        const uint32_t quota = known ? eval_.pools[static_cast<size_t>(x.pool)].quota : 0;
        const QueueTree *tree = known ? eval_.pools[static_cast<size_t>(x.pool)].queues.tree.get() : nullptr;
        if (x.level != 0 && tree && static_cast<size_t>(x.queue()) < tree->queues.size()) {
            // An account's quota: "pool1/physics cpu 30/32"; the
            // pool's own CPU or memory quota: "pool1 cpu 30/32"; its Limit:
            // "pool1/astro gpu 3/3"; what a LendingLimit keeps: "pool1/genomics gpu 1".
            const Resource res = x.resource();
            const QueueSpec &level = tree->queues[static_cast<size_t>(x.queue())];
            const unsigned long long need = task_amounts(r)[res];
            const bool by_limit = x.by == Hold::Limit;
            const unsigned long long bound = by_limit ? level.limit.get(res) : level.quota.get(res);
            const char *bound_word = by_limit ? "limit" : "quota";
            const std::string queue = x.queue() > 0 ? "/" + level.name : "";
            if (x.by == Hold::LendingLimit)
                add("%s%s%s %s %u", sep, name, queue.c_str(), resource_word(res), x.taken);
            else if (need > bound)
                add("%s%s%s %s needs %llu %s %llu", sep, name, queue.c_str(), resource_word(res), need, bound_word, bound);
            else
                add("%s%s%s %s %u/%llu", sep, name, queue.c_str(), resource_word(res), x.taken, bound);
        } else if (r.gpus > quota)
            add("%s%s needs %u quota %u", sep, name, r.gpus, quota);
        else
            add("%s%s %u/%u", sep, name, x.taken, quota);
        sep = ",";
    }
    return n;
}

std::string Engine::start_partitions(uint32_t job_id, std::string_view listed) const {
    const PendingResult *r = pending_result(job_id);
    if (!r) throw std::invalid_argument("job " + std::to_string(job_id) + " has no gpupool result");
    std::string out;
    if (r->admission == Admission::Held) return out;
    // A job that preempted starts where it freed GPUs: elsewhere it would
    // borrow, and be reclaimed, while its victims' GPUs go to others.
    auto in = preempted_in_.find(job_id);
    const std::string *only = in != preempted_in_.end() && contains_listed(listed, in->second) ? &in->second : nullptr;
    for_each_listed(listed, [&](std::string_view name) {
        if (only && name != *only) return;
        auto it = eval_.pool_index.find(std::string(name));
        if (it == eval_.pool_index.end() || !r->refuses(it->second)) {
            if (!out.empty()) out += ',';
            out += name;
        }
    });
    return out;
}

// A held job waits in every pool it lists.
void Engine::count_held(const PendingResult &r, Evaluation &ev) {
    if (r.admission == Admission::Held)
        for (const Refusal &x : r.refused) ev.pools[static_cast<size_t>(x.pool)].held_jobs++;
}

// What an admitted job (any tier not held: Limit and LendingLimit count
// them all) holds in the pools it may start in, or gives back (sign < 0).
void Engine::reserve_admitted(const PendingResult &r, std::vector<PoolState> &pools, int sign) {
    if (r.admission == Admission::Held) return;
    for (int p : r.pools)
        if (!r.refuses(p)) reserve_in(r, pools[static_cast<size_t>(p)], r.admitted_tasks, sign);
}

// `tasks` tasks of an admitted job reserved (sign > 0) in pool `ps` and
// its queues, or given back: an NP job's quota, and what any job takes
// ahead of the next under Limit and LendingLimit.
void Engine::reserve_in(const PendingResult &r, PoolState &ps, uint32_t tasks, int sign) {
    if (r.admission == Admission::Quota) add_np(ps.queues, queue_in(ps, r.account), task_amounts(r), tasks, sign, false);
    if (ps.queues.tree) add_ahead(ps.queues, queue_in(ps, r.account), task_amounts(r), tasks, sign);
}

// More tasks of an admitted job array, in the pools it was admitted to, as
// many as their quotas' room takes; the refused ones stay refused until the
// next pass.  Returns how many.
uint32_t Engine::admit_more_tasks(PendingResult &r, std::vector<PoolState> &pools) {
    if (r.admitted_tasks >= r.task_count() || r.gpus == 0) return 0;
    uint64_t extra = r.task_count() - r.admitted_tasks;
    for (int p : r.pools) {
        if (r.refuses(p)) continue;
        const PoolState &ps = pools[static_cast<size_t>(p)];
        extra = std::min(extra, tasks_within(ps.np_taken(), r.gpus, ps.quota));
        QuotaBlock block;
        Hold by = Hold::None;
        if (extra > 0 && ps.queues.tree) extra = tasks_fitting_queues(r, ps, extra, block);
        if (extra > 0 && ps.queues.tree) extra = tasks_within_limits(r, ps, extra, block, by);
    }
    r.admitted_tasks += static_cast<uint32_t>(extra);
    for (int p : r.pools)
        if (!r.refuses(p)) reserve_in(r, pools[static_cast<size_t>(p)], static_cast<uint32_t>(extra), +1);
    return static_cast<uint32_t>(extra);
}

// The components of each heterogeneous job, in order (allocates only if
// there are any).
void Engine::index_het_parts(Evaluation &ev) {
    ev.het_parts.clear();
    for (uint32_t i = 0; i < ev.pending.size(); ++i)
        if (ev.pending[i].het_job_id) ev.het_parts[ev.pending[i].het_job_id].push_back(i);
}

void Engine::admit(Evaluation &ev) const {
    index_het_parts(ev);
    for (uint32_t i = 0; i < ev.pending.size(); ++i) {
        PendingResult &r = ev.pending[i];
        if (!r.het_job_id) {
            admit_one(r, ev.pools);
            count_held(r, ev);
        } else {
            std::vector<PendingResult *> parts;
            for (uint32_t k : ev.het_parts[r.het_job_id]) parts.push_back(&ev.pending[k]);
            if (het_front(parts) != &r) continue;
            admit_together(parts, ev.pools);
            for (PendingResult *p : parts) count_held(*p, ev);
        }
    }
}

// Where a heterogeneous job's components (in R1 order) are admitted: at
// its first that needs quota (non-preemptible, with GPUs), else its first.
// A job end, which visits only the jobs whose GPUs fit the room it freed,
// then decides it where a pass does.
const PendingResult *Engine::het_front(const std::vector<PendingResult *> &parts) const {
    for (const PendingResult *p : parts)
        if (!preemptible_tier(p->tier) && p->gpus > 0 && !p->pools.empty()) return p;
    return parts.empty() ? nullptr : parts.front();
}

// The components of one heterogeneous job, where the first comes in R1:
// all admitted or all held.  Slurm starts them together or not at all, so
// one admitted alone would set quota aside, ahead of other jobs, for a job
// that cannot start.  Those held for another's refusal show its reason; a
// component outside gpupool's pools is left alone.
void Engine::admit_together(const std::vector<PendingResult *> &parts, std::vector<PoolState> &pools) const {
    size_t tried = 0;
    const PendingResult *refused = nullptr;
    while (tried < parts.size() && !refused) {
        PendingResult &r = *parts[tried++];
        r.het_held_for = 0;
        admit_one(r, pools);
        if (r.admission == Admission::Held) refused = &r;
    }
    if (!refused) return;
    for (size_t k = 0; k < parts.size(); ++k) {
        PendingResult &r = *parts[k];
        if (&r == refused || r.pools.empty()) continue;
        if (k < tried) reserve_admitted(r, pools, -1);
        r.admission = Admission::Held;
        r.hold = refused->hold;
        r.hold_pool = refused->hold_pool;
        r.refused.clear();
        r.het_held_for = refused->job_id;
        r.admitted_tasks = 0;
        r.priority = 0;
    }
}

// Between passes admission only grows (a heterogeneous job's held
// components together, as in a pass): a job admitted since the last pass
// may have started already, which the engine learns only at the next pass,
// so taking its admission back to give it to a job ahead of it in the
// order could put two jobs into one job's quota.  What is admitted keeps
// its reservation; held jobs (and arrays' further tasks) get what is left,
// in order.
void Engine::admit_more(Evaluation &ev) const {
    for (PoolState &ps : ev.pools) {
        ps.np_overcount = ps.held_jobs = 0;
        clear_reserved(ps.queues);
    }
    for (const PendingResult &r : ev.pending) reserve_admitted(r, ev.pools);
    // A heterogeneous job's held components, together where the pass would
    // decide them (het_front).
    index_het_parts(ev);
    std::unordered_map<uint32_t, std::vector<PendingResult *>> het;  // allocates only if there are any
    for (const auto &[id, at] : ev.het_parts)
        for (uint32_t i : at)
            if (ev.pending[i].admission == Admission::Held && !ev.pending[i].pools.empty()) het[id].push_back(&ev.pending[i]);
    for (PendingResult &r : ev.pending) {
        if (r.admission == Admission::Quota) {
            admit_more_tasks(r, ev.pools);
        } else if (r.admission == Admission::Held) {
            if (!r.het_job_id || r.pools.empty()) {
                if (!r.het_job_id) {
                    r.priority = r.nominal;
                    admit_one(r, ev.pools);
                }
                count_held(r, ev);
            } else if (const std::vector<PendingResult *> &parts = het[r.het_job_id]; het_front(parts) == &r) {
                // Counted held as they end up (one before the front may be admitted with it).
                admit_together_or_keep(parts, ev.pools);
                for (const PendingResult *p : parts) count_held(*p, ev);
            }
        }
    }
}

void Engine::add_reservation(const PendingResult &r, Evaluation &ev, int sign) { reserve_admitted(r, ev.pools, sign); }

void Engine::uncount_held(const PendingResult &r, Evaluation &ev) {
    if (r.admission != Admission::Held) return;
    for (const Refusal &x : r.refused) {
        uint32_t &h = ev.pools[static_cast<size_t>(x.pool)].held_jobs;
        if (h) --h;
    }
}

// What admit_more() makes of a job that left the queue (its pools cleared):
// held, it is no longer held; an array, all its tasks count as admitted.
void Engine::clear_left(PendingResult &r, Evaluation &ev) const {
    if (r.admission == Admission::Quota) {
        r.admitted_tasks = std::max(r.admitted_tasks, r.task_count());
    } else if (r.admission == Admission::Held) {
        r.priority = r.nominal;
        admit_one(r, ev.pools);
    }
}

}  // namespace gpupool

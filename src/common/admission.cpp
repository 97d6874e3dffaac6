// R2/R3 admission: which non-preemptible jobs fit their pools' quota, in
// R1 order, and what a held job's reason says.
#include "engine.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "fairshare.hpp"
#include "gpupool.h"
#include "placement.hpp"

namespace gpupool {

uint64_t Engine::quota_room(const PoolState &ps) {
    uint64_t taken = uint64_t(ps.np_used) + ps.np_reserved;
    return taken < ps.quota ? ps.quota - taken : 0;
}

bool Engine::fits_quota(const PoolList &pools, uint32_t gpus) const {
    for (int p : pools)
        if (quota_room(eval_.pools[static_cast<size_t>(p)]) < gpus) return false;
    return true;
}

// R2 for a job listing several pools: it is admitted when its quota fits
// in at least one of them, and may then start only in those (Slurm is told
// not to start it in the others, the refused ones).  Slurm may start it in
// any pool it is admitted to, so it reserves in each of them; a job array
// record gets as many tasks as fit every one of them.
void Engine::admit_one(PendingResult &r, Evaluation &ev) const {
    r.admission = Admission::Free;
    r.hold = Hold::None;
    r.hold_pool = -1;
    r.refused.clear();
    r.admitted_tasks = r.task_count();
    if (preemptible_tier(r.tier) || r.gpus == 0 || r.pools.empty()) return;
    uint64_t k = r.task_count();
    bool fits_one = false, quota_big_enough = false;
    for (int p : r.pools) {
        const PoolState &ps = ev.pools[static_cast<size_t>(p)];
        quota_big_enough |= r.gpus <= ps.quota;
        uint64_t fit = quota_room(ps) / r.gpus;
        if (fit == 0) {
            uint64_t taken = uint64_t(ps.np_used) + ps.np_reserved;
            r.refused.push_back(Refusal{p, static_cast<uint32_t>(std::min<uint64_t>(taken, UINT32_MAX))});
            continue;
        }
        fits_one = true;
        k = std::min(k, fit);
    }
    if (!fits_one) {
        r.admission = Admission::Held;
        r.hold = quota_big_enough ? Hold::Quota : Hold::QuotaTooSmall;
        r.hold_pool = r.refused.front().pool;
        r.admitted_tasks = 0;
        r.priority = 0;
        return;
    }
    r.admission = Admission::Quota;
    r.admitted_tasks = static_cast<uint32_t>(k);
    for (int p : r.pools)
        if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += r.admitted_tasks * r.gpus;
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
    if (r.hold != Hold::Quota && r.hold != Hold::QuotaTooSmall) return n;
    add("%s", r.hold == Hold::QuotaTooSmall ? GP_HOLD_PREFIX "QuotaTooSmall:" : GP_HOLD_PREFIX "Quota:");
    const char *sep = "";
    for (const Refusal &x : r.refused) {
        const bool known = x.pool >= 0 && static_cast<size_t>(x.pool) < eval_.pools.size();
        const char *name = known ? eval_.pools[static_cast<size_t>(x.pool)].name.c_str() : "?";
        const uint32_t quota = known ? eval_.pools[static_cast<size_t>(x.pool)].quota : 0;
        if (r.gpus > quota)
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
    for_each_listed(listed, [&](std::string_view name) {
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

// What an admitted job holds in the pools it may start in.
void Engine::reserve_admitted(const PendingResult &r, Evaluation &ev) {
    if (r.admission != Admission::Quota) return;
    for (int p : r.pools)
        if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += r.admitted_tasks * r.gpus;
}

void Engine::admit(Evaluation &ev) const {
    for (PendingResult &r : ev.pending) {
        admit_one(r, ev);
        count_held(r, ev);
    }
}

// Between passes admission only grows: a job admitted since the last pass
// may have started already, which the engine learns only at the next pass,
// so taking its admission back to give it to a job ahead of it in the
// order could put two jobs into one job's quota.  What is admitted keeps
// its reservation; held jobs (and arrays' further tasks) get what is left,
// in order.
void Engine::admit_more(Evaluation &ev) const {
    for (PoolState &ps : ev.pools) ps.np_reserved = ps.np_overcount = ps.held_jobs = 0;
    for (const PendingResult &r : ev.pending) reserve_admitted(r, ev);
    for (PendingResult &r : ev.pending) {
        if (r.admission == Admission::Quota) {
            // More tasks of an array, in the pools it was admitted to; the
            // refused ones stay refused until the next pass.
            if (r.admitted_tasks >= r.task_count()) continue;
            uint64_t extra = r.task_count() - r.admitted_tasks;
            for (int p : r.pools)
                if (!r.refuses(p)) extra = std::min(extra, quota_room(ev.pools[static_cast<size_t>(p)]) / r.gpus);
            r.admitted_tasks += static_cast<uint32_t>(extra);
            for (int p : r.pools)
                if (!r.refuses(p)) ev.pools[static_cast<size_t>(p)].np_reserved += static_cast<uint32_t>(extra) * r.gpus;
        } else if (r.admission == Admission::Held) {
            r.priority = r.nominal;
            admit_one(r, ev);
            count_held(r, ev);
        }
    }
}

void Engine::add_reservation(const PendingResult &r, Evaluation &ev, int sign) {
    if (r.admission != Admission::Quota) return;
    for (int p : r.pools) {
        if (r.refuses(p)) continue;
        uint32_t &res = ev.pools[static_cast<size_t>(p)].np_reserved;
        const uint32_t n = r.admitted_tasks * r.gpus;
        res = sign > 0 ? res + n : res - std::min(res, n);
    }
}

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
        admit_one(r, ev);
    }
}

}  // namespace gpupool

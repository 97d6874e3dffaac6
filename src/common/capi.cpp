// The C ABI over the engine: its handle, the pass's results, job ends,
// preemption verdicts and reports.  Every entry point catches everything:
// no C++ exception may reach slurmctld.  The configuration and state calls
// are in capi_config.cpp, the snapshot's in capi_snapshot.cpp, preemption
// records and pass times in capi_events.cpp.
#include "capi.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "plugin_apply.hpp"

using namespace gpupool;
using namespace gpupool::capi;

namespace {

void fill(gp_pending_result_t *out, const PendingResult &r, const Engine &e) {
    out->job_id = r.job_id;
    out->position = r.position;
    out->priority = r.priority;
    out->admission = static_cast<int>(r.admission);
    out->factor_tier = r.factor_tier;
    out->factor_fairshare = r.factor_fairshare;
    out->factor_age = r.factor_age;
    out->orig_submit_time = r.orig_submit;
    e.reason_into(r, out->reason, sizeof(out->reason));
    out->admitted_tasks = r.admitted_tasks;
    // Also where the record stands for one task only (its throttle full).
    out->array_running = e.array_running(r.job_id);
    out->refused_pools = static_cast<uint32_t>(r.refused.size());
}

JobRef to_ref(const gp_job_t *j) {
    JobRef r;
    r.id = j->job_id;
    if (j->partitions) r.partitions = j->partitions;
    if (j->qos) r.qos = j->qos;
    r.gpus = j->gpus;
    r.start = j->start_time;
    if (j->account) r.account = j->account;
    r.cpus = j->cpus;
    r.mem_mb = j->mem_mb;
    r.nodes = j->nodes;
    r.nodes_given = (j->flags & GP_JOB_NODES_GIVEN) != 0;
    if (r.nodes_given && j->allowed_nodes) r.allowed_nodes = j->allowed_nodes;
    r.whole_node = (j->flags & GP_JOB_WHOLE_NODE) != 0;
    r.gpus_untyped = (j->flags & GP_JOB_GPUS_UNTYPED) != 0;
    r.dependent = (j->flags & GP_JOB_DEPENDENT) != 0;
    r.over_limit = (j->flags & GP_JOB_OVER_LIMIT) != 0;
    r.run_limit = j->run_limit > 0 ? j->run_limit : 0;
    r.het_job_id = j->het_job_id;
    return r;
}

int fill_pool_report(gp_pool_report_t *out, const PoolState &p) {
    put(out->name, p.name);
    out->capacity = p.capacity;
    out->quota = p.quota;
    out->np_used = p.np_used();
    out->p_used = p.p_used();
    out->used = p.used();
    out->borrowed = p.borrowed();
    out->lent = p.lent;
    out->fairshare = p.fairshare;
    out->weight = p.weight;
    out->decayed_usage = p.decayed_usage;
    out->usage_share = p.usage_share;
    out->pending_jobs = p.pending_jobs;
    out->pending_gpus = p.pending_gpus;
    out->held_jobs = p.held_jobs;
    return GP_OK;
}

// The lists the plugins read entry by entry, each under the engine's lock.
const std::vector<PendingResult> &pending_list(const Engine &e) { return e.last().pending; }
const std::vector<uint32_t> &changed_list(const Engine &e) { return e.job_end_changes(); }
const std::vector<PoolState> &pool_list(const Engine &e) { return e.last().pools; }

template <typename List>
size_t count_of(gp_engine_t *e, List list) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return list(e->engine).size();
}

// Entry i of a list into *out; GP_ERR_ARG past its end.
template <typename List, typename Out, typename Fill>
int entry_at(gp_engine_t *e, size_t i, Out *out, List list, Fill fill) {
    if (!e || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    const auto &items = list(e->engine);
    if (i >= items.size()) return GP_ERR_ARG;
    return fill(out, items[i]);
}

}  // namespace

GP_EXPORT uint32_t gp_abi_version(void) { return GP_ABI_VERSION; }

GP_EXPORT int gp_hold_until_pass(gp_pending_result_t *r, uint32_t facts) {
    if (!r) return 0;
    PlaceFacts f;
    f.submit = (facts & GP_PLACE_SUBMIT) != 0;
    f.array = (facts & GP_PLACE_ARRAY) != 0;
    f.untested = (facts & GP_PLACE_UNTESTED) != 0;
    f.no_room = (facts & GP_PLACE_NO_ROOM) != 0;
    f.throttle = (facts & GP_PLACE_THROTTLE) != 0;
    if (!waits_for_pass(r->admission, f)) return 0;
    r->admission = GP_HELD_QUOTA;
    r->priority = 0;
    put(r->reason, starting_reason());
    return 1;
}

GP_EXPORT int gp_array_throttle(gp_array_throttle_t *t, const gp_pending_result_t *r, uint32_t pending_tasks,
                                int lower_only) {
    if (!t) return 0;
    if (r && r->admission == GP_HELD_QUOTA) return 0;  // priority 0 stops it; the cap stays
    uint32_t limit = 0;
    if (r && r->admission == GP_ADMIT_QUOTA && pending_tasks > 1) {
        limit = r->array_running + r->admitted_tasks;
        if (limit < 1) limit = 1;
    } else if (!t->capped) {
        return 0;  // nothing of gpupool's to take back
    } else {
        lower_only = 0;
    }
    ArrayThrottle a;
    a.max_run_tasks = t->max_run_tasks;
    a.capped = t->capped != 0;
    a.user_max = t->user_max;
    a.our_max = t->our_max;
    const bool raised = cap_array(a, limit, lower_only != 0);
    t->max_run_tasks = a.max_run_tasks;
    t->capped = a.capped ? 1 : 0;
    t->user_max = a.user_max;
    t->our_max = a.our_max;
    return raised ? 1 : 0;
}

GP_EXPORT int gp_engine_note_array_cap(gp_engine_t *e, uint32_t job_id, const gp_array_throttle_t *t) {
    if (!e) return GP_ERR_ARG;
    Engine::ArrayCap cap;
    if (t && t->capped) cap = Engine::ArrayCap{t->user_max, t->our_max ? t->our_max : 1};
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        return e->engine.note_array_cap(job_id, cap) ? 1 : 0;
    } catch (...) {
        return GP_ERR_INTERNAL;
    }
}

GP_EXPORT int gp_engine_restore_array_cap(gp_engine_t *e, uint32_t job_id, uint32_t max_run_tasks,
                                          gp_array_throttle_t *out) {
    if (!e || !out) return 0;
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        const std::optional<Engine::ArrayCap> saved = e->engine.array_cap(job_id);
        if (!saved) return 0;
        // gpupool's cap is never 0 (none) nor above the user's throttle:
        // anything else the user set since.
        if (!max_run_tasks || (saved->user_max && max_run_tasks > saved->user_max)) return 0;
        out->max_run_tasks = max_run_tasks;
        out->capped = 1;
        out->user_max = saved->user_max;
        out->our_max = max_run_tasks;
        return 1;
    } catch (...) {
        return 0;
    }
}

GP_EXPORT const char *gp_rule_name(int rule) {
    return rule_name(rule == GP_RULE_INPOOL        ? Rule::InPool
                     : rule == GP_RULE_RECLAIM     ? Rule::Reclaim
                     : rule == GP_RULE_CONSOLIDATE ? Rule::Consolidate
                                                   : Rule::None);
}

GP_EXPORT gp_engine_t *gp_engine_create(void) { return new (std::nothrow) gp_engine; }

GP_EXPORT void gp_engine_destroy(gp_engine_t *e) { delete e; }

GP_EXPORT gp_engine_t *gp_shared_engine(void) {
    // Never destroyed: slurmctld may unload one plugin while the other
    // still uses the engine.
    static gp_engine_t *shared = gp_engine_create();
    return shared;
}

GP_EXPORT int64_t gp_engine_note_job(gp_engine_t *e, uint32_t job_id, int64_t submit_time, uint32_t restart_cnt,
                                     int64_t now) {
    if (!e) return submit_time;
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        return e->engine.note_job(job_id, submit_time, restart_cnt, now);
    } catch (...) {
        return submit_time;
    }
}

GP_EXPORT int gp_engine_evaluate(gp_engine_t *e, const gp_snapshot_t *s, int64_t now) {
    if (!e || !s) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->engine.has_config()) return GP_ERR_NOCONFIG;
    int rc = guarded(GP_ERR_INTERNAL, nullptr, 0, [&] { e->engine.evaluate(s->snap, now); });
    // A staged configuration took effect at the start of the pass.
    e->note_config();
    return rc;
}

GP_EXPORT int gp_engine_refresh_running(gp_engine_t *e, const gp_snapshot_t *s, int64_t now) {
    if (!e || !s) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->engine.has_config()) return GP_ERR_NOCONFIG;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] { e->engine.refresh_running(s->snap, now); });
}

GP_EXPORT int gp_engine_pending_result(gp_engine_t *e, uint32_t job_id, gp_pending_result_t *out) {
    if (!e || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    const PendingResult *r = e->engine.pending_result(job_id);
    if (!r) return GP_ERR_ARG;
    fill(out, *r, e->engine);
    return GP_OK;
}

GP_EXPORT size_t gp_engine_pending_count(gp_engine_t *e) { return count_of(e, pending_list); }

GP_EXPORT int gp_engine_pending_at(gp_engine_t *e, size_t i, gp_pending_result_t *out) {
    return entry_at(e, i, out, pending_list, [e](gp_pending_result_t *o, const PendingResult &r) {
        fill(o, r, e->engine);
        return GP_OK;
    });
}

GP_EXPORT int gp_engine_start_partitions(gp_engine_t *e, uint32_t job_id, const char *partitions, char *buf,
                                         size_t buf_len) {
    if (!e || !partitions || !buf || buf_len == 0) return GP_ERR_ARG;
    buf[0] = '\0';
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->engine.pending_result(job_id)) return GP_ERR_ARG;
    std::string out;
    int rc = guarded(GP_ERR_INTERNAL, nullptr, 0, [&] { out = e->engine.start_partitions(job_id, partitions); });
    if (rc != GP_OK) return rc;
    // Never cut short: a shorter list would still be a list of partitions.
    if (out.size() >= buf_len) return GP_ERR_ARG;
    put(buf, buf_len, out);
    return GP_OK;
}

GP_EXPORT int gp_engine_provisional(gp_engine_t *e, const gp_job_t *job, int64_t now, gp_pending_result_t *out) {
    if (!e || !job || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->engine.has_config()) return GP_ERR_NOCONFIG;
    // The job's strings are read where they are (no copy: slurmctld's
    // submit path calls this once per job, see FlatIdMap).
    JobRef ref = to_ref(job);
    ref.submit_time = job->submit_time;
    ref.restart_cnt = job->restart_cnt;
    ref.array_tasks = job->array_tasks;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] { fill(out, e->engine.provisional(ref, now), e->engine); });
}

GP_EXPORT int gp_engine_job_ended(gp_engine_t *e, uint32_t job_id, int64_t now) {
    if (!e) return -GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    int rc = guarded(GP_ERR_INTERNAL, nullptr, 0, [&] { e->engine.job_ended(job_id, now); });
    if (rc != GP_OK) return -rc;
    return static_cast<int>(std::min<size_t>(e->engine.job_end_changes().size(), INT32_MAX));
}

GP_EXPORT size_t gp_engine_changed_count(gp_engine_t *e) { return count_of(e, changed_list); }

GP_EXPORT int gp_engine_changed_at(gp_engine_t *e, size_t i, gp_pending_result_t *out) {
    return entry_at(e, i, out, changed_list, [e](gp_pending_result_t *o, uint32_t job_id) {
        const PendingResult *r = e->engine.pending_result(job_id);
        if (!r) return GP_ERR_ARG;
        fill(o, *r, e->engine);
        return GP_OK;
    });
}

GP_EXPORT int gp_engine_preemptable(gp_engine_t *e, const gp_job_t *victim, const gp_job_t *preemptor, int64_t now,
                                    gp_verdict_t *out) {
    if (!e || !victim || !preemptor || !out) return GP_ERR_ARG;
    out->allowed = 0;
    out->rule = GP_RULE_NONE;
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->engine.has_config()) return GP_ERR_NOCONFIG;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] {
        Verdict v = e->engine.preemptable(to_ref(victim), to_ref(preemptor), now);
        const auto &pools = e->engine.last().pools;
        out->allowed = v.allowed;
        out->rule = static_cast<int>(v.rule);
        out->victim_pool[0] = out->preemptor_pool[0] = '\0';
        out->victim_pool_used = out->victim_pool_quota = 0;
        if (v.victim_pool >= 0) {
            const PoolState &ps = pools[static_cast<size_t>(v.victim_pool)];
            put(out->victim_pool, ps.name);
            out->victim_pool_used = ps.used();
            out->victim_pool_quota = ps.quota;
        }
        if (v.preemptor_pool >= 0) put(out->preemptor_pool, pools[static_cast<size_t>(v.preemptor_pool)].name);
        std::snprintf(out->why, sizeof(out->why), "%s", v.why.c_str());
    });
}

GP_EXPORT uint32_t gp_engine_victim_rank(gp_engine_t *e, uint32_t job_id) {
    if (!e) return UINT32_MAX - 1;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.victim_rank(job_id);
}
GP_EXPORT uint32_t gp_engine_plan_rank(gp_engine_t *e, uint32_t preemptor_id, uint32_t victim_id) {
    if (!e) return UINT32_MAX - 1;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.plan_rank(preemptor_id, victim_id);
}
GP_EXPORT size_t gp_engine_pool_count(gp_engine_t *e) { return count_of(e, pool_list); }

GP_EXPORT int gp_engine_pool_report(gp_engine_t *e, size_t i, gp_pool_report_t *out) {
    return entry_at(e, i, out, pool_list, fill_pool_report);
}

GP_EXPORT char *gp_engine_report_json(gp_engine_t *e) {
    if (!e) return nullptr;
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        std::string text = e->engine.report_json();
        char *out = static_cast<char *>(std::malloc(text.size() + 1));
        if (out) std::memcpy(out, text.c_str(), text.size() + 1);
        return out;
    } catch (...) {
        return nullptr;
    }
}

GP_EXPORT void gp_free(void *p) { std::free(p); }
GP_EXPORT const char *gp_status_str(int status) {
    switch (status) {
    case GP_OK: return "ok";
    case GP_ERR_CONFIG: return "invalid configuration";
    case GP_ERR_STATE: return "invalid state file";
    case GP_ERR_ARG: return "bad argument";
    case GP_ERR_IO: return "i/o error";
    case GP_ERR_NOCONFIG: return "no configuration loaded";
    default: return "internal error";
    }
}

// The C ABI over the engine.  Every entry point catches everything: no C++
// exception may reach slurmctld.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>

#include "engine.hpp"
#include "events.hpp"
#include "gpupool.h"

#include <unistd.h>
#include "placement.hpp"
#include "preemption.hpp"
#include "stats.hpp"
#include "trust.hpp"

#define GP_EXPORT extern "C" __attribute__((visibility("default")))

using namespace gpupool;

struct gp_engine {
    // engine.config_serial() as of the last call under mu that may have
    // applied a configuration, readable without mu (gp_engine_config_serial).
    std::atomic<uint64_t> config_serial{0};
    std::mutex mu;       // the engine; slurmctld's hooks take it under their locks
    std::mutex save_mu;  // one state save at a time, in the order of their copies
    Engine engine;
    std::string config_text;  // what the configuration in force was parsed from (under mu)
    // Preemption records: queued under slurmctld's job lock (events_mu
    // only, never mu's pass), written out by one flush at a time.
    std::mutex events_mu;
    EventQueue events;
    std::mutex flush_mu;
    // Pass durations, noted by the agent after each pass.
    std::mutex stats_mu;
    PassStats stats;
};

struct gp_snapshot {
    Snapshot snap;
    // Jobs of an earlier snapshot, moved here with the room of their
    // partition lists, for gp_snapshot_add_job to fill again.
    std::vector<SnapJob> spare;
};

namespace {

void put(char *buf, size_t len, const std::string &text) {
    if (!buf || len == 0) return;
    size_t n = std::min(len - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
}

template <size_t N>
void put(char (&buf)[N], const std::string &text) {
    put(buf, N, text);
}

// Run `fn`, turning exceptions into status codes and messages.
template <typename Fn>
int guarded(int error_status, char *err, size_t err_len, Fn &&fn) {
    try {
        fn();
        return GP_OK;
    } catch (const ConfigError &e) {
        put(err, err_len, e.what());
        return GP_ERR_CONFIG;
    } catch (const std::bad_alloc &) {
        put(err, err_len, "out of memory");
        return GP_ERR_INTERNAL;
    } catch (const std::exception &e) {
        put(err, err_len, e.what());
        return error_status;
    } catch (...) {
        put(err, err_len, "unknown error");
        return GP_ERR_INTERNAL;
    }
}

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
    out->array_running = r.array_tasks > 1 ? e.array_running(r.job_id) : 0;
    out->refused_pools = static_cast<uint32_t>(r.refused.size());
}

// Into `s` (a spare job's partition list keeps its room: no allocation).
void fill_snap_job(const gp_job_t *j, SnapJob &s) {
    s.id = j->job_id;
    s.state = j->state == GP_JOB_RUNNING ? JobState::Running
              : j->state == GP_JOB_SUSPENDED ? JobState::Suspended
                                             : JobState::Pending;
    s.partitions.clear();
    for (const char *p = j->partitions; p && *p;) {
        const char *end = std::strchr(p, ',');
        size_t len = end ? static_cast<size_t>(end - p) : std::strlen(p);
        if (len) s.partitions.emplace_back(p, len);  // as split_list()
        p += len + (end ? 1 : 0);
    }
    if (j->qos)
        s.qos = j->qos;
    else
        s.qos.clear();
    s.gpus = j->gpus;
    s.submit_time = j->submit_time;
    s.start_time = j->start_time;
    s.user_held = j->user_held != 0;
    s.restart_cnt = j->restart_cnt;
    s.array_tasks = j->array_tasks;
    s.array_job_id = j->array_job_id;
}

// One emptied snapshot kept for the next gp_snapshot_create(), with its
// jobs' lists as spares.  Every pass builds a snapshot of all jobs: a list
// allocated and freed per job each time churned the heap that slurmctld's
// own job records and job_list nodes come from, scattering them
// (doc/performance.md, live cost).
std::mutex recycle_mu;
gp_snapshot *recycled = nullptr;

JobRef to_ref(const gp_job_t *j) {
    JobRef r;
    r.id = j->job_id;
    if (j->partitions) r.partitions = j->partitions;
    if (j->qos) r.qos = j->qos;
    r.gpus = j->gpus;
    r.start = j->start_time;
    return r;
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

GP_EXPORT const char *gp_rule_name(int rule) {
    return rule_name(rule == GP_RULE_INPOOL ? Rule::InPool : rule == GP_RULE_RECLAIM ? Rule::Reclaim : Rule::None);
}

GP_EXPORT gp_engine_t *gp_engine_create(void) { return new (std::nothrow) gp_engine; }

GP_EXPORT void gp_engine_destroy(gp_engine_t *e) { delete e; }

GP_EXPORT gp_engine_t *gp_shared_engine(void) {
    // Never destroyed: slurmctld may unload one plugin while the other
    // still uses the engine.
    static gp_engine_t *shared = gp_engine_create();
    return shared;
}

GP_EXPORT int gp_engine_load_config_file(gp_engine_t *e, const char *path, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    return guarded(GP_ERR_CONFIG, err, err_len, [&] {
        std::string text;
        Config cfg = load_config_file(path, &text);
        std::lock_guard<std::mutex> lock(e->mu);
        e->engine.set_config(std::move(cfg));
        e->config_serial.store(e->engine.config_serial(), std::memory_order_release);
        e->config_text = std::move(text);
    });
}

GP_EXPORT int gp_engine_load_trusted_config_file(gp_engine_t *e, const char *path, uint32_t slurm_uid,
                                                char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    int fd = -1;
    bool io_error = false;
    std::string why;
    try {
        why = open_trusted_path(path, "gpupool.conf", static_cast<uid_t>(slurm_uid), false, &fd, &io_error);
    } catch (...) {
        put(err, err_len, "out of memory");
        return GP_ERR_INTERNAL;
    }
    if (!why.empty()) {
        put(err, err_len, why);
        return io_error ? GP_ERR_IO : GP_ERR_CONFIG;
    }
    // Parse what was checked: the descriptor, not the name again.
    int rc = guarded(GP_ERR_CONFIG, err, err_len, [&] {
        std::string text;
        Config cfg = load_config_fd(fd, path, &text);
        std::lock_guard<std::mutex> lock(e->mu);
        e->engine.set_config(std::move(cfg));
        e->config_serial.store(e->engine.config_serial(), std::memory_order_release);
        e->config_text = std::move(text);
    });
    ::close(fd);
    return rc;
}

GP_EXPORT int gp_engine_save_config_copy(gp_engine_t *e, const char *path, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    std::string text;
    {
        std::lock_guard<std::mutex> lock(e->mu);
        if (!e->engine.has_config()) {
            put(err, err_len, "no configuration loaded");
            return GP_ERR_NOCONFIG;
        }
        text = e->config_text;
    }
    return guarded(GP_ERR_IO, err, err_len, [&] { Engine::write_state_file(path, text); });
}

GP_EXPORT int gp_engine_load_config_text(gp_engine_t *e, const char *text, const char *source, char *err,
                                         size_t err_len) {
    if (!e || !text) return GP_ERR_ARG;
    return guarded(GP_ERR_CONFIG, err, err_len, [&] {
        Config cfg = parse_config(text, source ? source : "gpupool.conf");
        std::lock_guard<std::mutex> lock(e->mu);
        e->engine.set_config(std::move(cfg));
        e->config_serial.store(e->engine.config_serial(), std::memory_order_release);
        e->config_text = text;
    });
}

GP_EXPORT int gp_engine_has_config(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.has_config();
}

GP_EXPORT size_t gp_engine_warnings(gp_engine_t *e, char *buf, size_t buf_len) {
    if (!e) return 0;
    std::string all;
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        for (const std::string &w : e->engine.warnings()) all += w + "\n";
    } catch (...) {
        return 0;
    }
    put(buf, buf_len, all);
    return all.size();
}

// A configuration loaded after a pass is staged until the next pass
// (Engine::set_config).  The agent's timers and the next pass's snapshot
// (the GPUs it counts, QuotaTRES) follow the staged one: that pass applies
// it.  Decisions (tier_of_qos: preempt mode, grace time; provisional,
// preemptable) keep the configuration of the last pass until then.
GP_EXPORT uint32_t gp_engine_recalc_interval(gp_engine_t *e) {
    if (!e) return 10;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.has_config() ? static_cast<uint32_t>(e->engine.next_config().recalc_interval) : 10;
}

GP_EXPORT uint32_t gp_engine_state_save_interval(gp_engine_t *e) {
    if (!e) return 60;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.has_config() ? static_cast<uint32_t>(e->engine.next_config().state_save_interval) : 60;
}

GP_EXPORT int gp_check_trusted_path(const char *path, const char *what, uint32_t slurm_uid,
                                    int is_dir, char *err, size_t err_len) {
    if (!path || !what) return GP_ERR_ARG;
    try {
        bool io_error = false;
        std::string why = check_trusted_path(path, what, static_cast<uid_t>(slurm_uid),
                                             is_dir != 0, &io_error);
        if (why.empty()) return GP_OK;
        put(err, err_len, why);
        return io_error ? GP_ERR_IO : GP_ERR_CONFIG;
    } catch (...) {
        put(err, err_len, "out of memory");
        return GP_ERR_INTERNAL;
    }
}

GP_EXPORT size_t gp_engine_quota_tres(gp_engine_t *e, char *buf, size_t buf_len) {
    std::string tres = "gres/gpu";
    try {
        if (e) {
            std::lock_guard<std::mutex> lock(e->mu);
            if (e->engine.has_config()) tres = e->engine.next_config().quota_tres;
        }
    } catch (...) {
    }
    put(buf, buf_len, tres);
    return tres.size();
}

GP_EXPORT uint64_t gp_engine_config_serial(gp_engine_t *e) {
    return e ? e->config_serial.load(std::memory_order_acquire) : 0;
}

GP_EXPORT int gp_tier_preempts(const gp_tier_info_t *preemptor, const gp_tier_info_t *preemptee) {
    if (!preemptor || !preemptee) return 0;
    return tier_preempts(preemptor->priority, preemptee->priority, preemptee->preemptible != 0) ? 1 : 0;
}

GP_EXPORT int gp_preempt_mode(const gp_tier_info_t *t, int site_mode, int requeueable) {
    if (!t) return GP_MODE_OFF;  // no tier known (no configuration yet): nothing to preempt for
    return preempt_mode(t->preemptible != 0, t->preempt_mode, site_mode, requeueable != 0);
}

GP_EXPORT int gp_grace_time_from_qos(const gp_tier_info_t *t) { return !t || grace_from_qos(t->grace_time) ? 1 : 0; }

GP_EXPORT uint32_t gp_grace_time(const gp_tier_info_t *t, uint32_t qos_grace_time) {
    return t ? grace_time(t->grace_time, qos_grace_time) : qos_grace_time;
}

GP_EXPORT int gp_engine_tier_of_qos(gp_engine_t *e, const char *qos, gp_tier_info_t *out) {
    if (!e || !out) return GP_ERR_ARG;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] {
        std::lock_guard<std::mutex> lock(e->mu);
        if (!e->engine.has_config()) throw std::runtime_error("no config");
        const Tier &t = e->engine.config().tiers[static_cast<size_t>(e->engine.tier_of_qos(qos ? qos : ""))];
        put(out->name, t.name);
        out->priority = t.priority;
        out->preemptible = t.preemptible;
        out->preempt_mode = static_cast<int>(t.preempt_mode);  // same numbering as GP_MODE_*
        out->grace_time = t.grace_time;
    });
}

GP_EXPORT gp_snapshot_t *gp_snapshot_create(void) {
    {
        std::lock_guard<std::mutex> lock(recycle_mu);
        if (gp_snapshot *s = recycled) {
            recycled = nullptr;
            return s;
        }
    }
    return new (std::nothrow) gp_snapshot;
}

GP_EXPORT void gp_snapshot_destroy(gp_snapshot_t *s) {
    if (!s) return;
    try {
        s->snap.nodes.clear();
        s->snap.partitions.clear();
        s->spare.reserve(s->spare.size() + s->snap.jobs.size());
        for (SnapJob &j : s->snap.jobs) s->spare.push_back(std::move(j));
        s->snap.jobs.clear();
    } catch (...) {
        delete s;
        return;
    }
    {
        // Keep the one with more room (a pass's, not a refresh's).
        std::lock_guard<std::mutex> lock(recycle_mu);
        if (!recycled || recycled->spare.size() < s->spare.size()) std::swap(recycled, s);
    }
    delete s;
}

GP_EXPORT void gp_snapshot_reserve(gp_snapshot_t *s, size_t nodes, size_t jobs) {
    if (!s) return;
    try {
        s->snap.nodes.reserve(nodes);
        s->snap.jobs.reserve(jobs);
    } catch (...) {
    }
}

GP_EXPORT int32_t gp_snapshot_add_node(gp_snapshot_t *s, const char *name, uint32_t gpus) {
    if (!s || !name) return -1;
    try {
        return s->snap.add_node(name, gpus);
    } catch (...) {
        return -1;
    }
}

GP_EXPORT int gp_snapshot_add_partition(gp_snapshot_t *s, const char *name, const int32_t *node_index,
                                        size_t node_count) {
    if (!s || !name || (!node_index && node_count)) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        s->snap.add_partition(name, std::vector<int32_t>(node_index, node_index + node_count));
    });
}

GP_EXPORT int gp_snapshot_add_job(gp_snapshot_t *s, const gp_job_t *job) {
    if (!s || !job) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        SnapJob j;
        if (!s->spare.empty()) {
            j = std::move(s->spare.back());
            s->spare.pop_back();
        }
        fill_snap_job(job, j);
        s->snap.add_job(std::move(j));
    });
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
    e->config_serial.store(e->engine.config_serial(), std::memory_order_release);
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

GP_EXPORT size_t gp_engine_pending_count(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.last().pending.size();
}

GP_EXPORT int gp_engine_pending_at(gp_engine_t *e, size_t i, gp_pending_result_t *out) {
    if (!e || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    const auto &p = e->engine.last().pending;
    if (i >= p.size()) return GP_ERR_ARG;
    fill(out, p[i], e->engine);
    return GP_OK;
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

GP_EXPORT size_t gp_engine_changed_count(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.job_end_changes().size();
}

GP_EXPORT int gp_engine_changed_at(gp_engine_t *e, size_t i, gp_pending_result_t *out) {
    if (!e || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    const auto &ids = e->engine.job_end_changes();
    if (i >= ids.size()) return GP_ERR_ARG;
    const PendingResult *r = e->engine.pending_result(ids[i]);
    if (!r) return GP_ERR_ARG;
    fill(out, *r, e->engine);
    return GP_OK;
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

namespace {
std::string str_or_empty(const char *s) { return s ? s : ""; }

const char *mode_name(int mode) {
    switch (mode) {
    case GP_MODE_REQUEUE: return "requeue";
    case GP_MODE_CANCEL: return "cancel";
    case GP_MODE_SUSPEND: return "suspend";
    default: return "preempt";
    }
}

PreemptionEvent to_event(const gp_preemption_t *p) {
    PreemptionEvent e;
    e.time = p->time;
    e.victim_job_id = p->victim_job_id;
    e.victim_name = str_or_empty(p->victim_name);
    e.victim_user_id = p->victim_user_id;
    e.victim_pool = str_or_empty(p->victim_pool);
    e.victim_tier = str_or_empty(p->victim_tier);
    e.victim_gpus = p->victim_gpus;
    e.victim_start_time = p->victim_start_time;
    e.victim_pool_used = p->victim_pool_used;
    e.victim_pool_quota = p->victim_pool_quota;
    e.preemptor_job_id = p->preemptor_job_id;
    e.preemptor_pool = str_or_empty(p->preemptor_pool);
    e.preemptor_tier = str_or_empty(p->preemptor_tier);
    e.rule = gp_rule_name(p->rule);
    e.mode = mode_name(p->mode);
    e.grace_time = p->grace_time;
    e.why = str_or_empty(p->why);
    return e;
}
}  // namespace

GP_EXPORT int gp_engine_note_preemption(gp_engine_t *e, const gp_preemption_t *p) {
    if (!e || !p) return GP_ERR_ARG;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] {
        std::string line = event_json_line(to_event(p));
        std::lock_guard<std::mutex> lock(e->events_mu);
        e->events.push(std::move(line));
    });
}

GP_EXPORT size_t gp_engine_queued_events(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->events_mu);
    return e->events.size() + (e->events.dropped() ? 1 : 0);
}

GP_EXPORT int gp_engine_flush_events(gp_engine_t *e, const char *path, uint64_t max_bytes, uint32_t keep, int64_t now,
                                     char *err, size_t err_len) {
    if (!e || !path || max_bytes == 0) return GP_ERR_ARG;
    std::lock_guard<std::mutex> flush(e->flush_mu);
    EventQueue::Batch batch;
    {
        std::lock_guard<std::mutex> lock(e->events_mu);
        batch = e->events.take();
    }
    if (batch.lines.empty() && !batch.dropped) return GP_OK;
    int rc = guarded(GP_ERR_IO, err, err_len, [&] {
        if (batch.dropped) {
            batch.lines.push_front(dropped_json_line(batch.dropped, now));
            batch.dropped = 0;
        }
        append_rotated(path, batch.lines, max_bytes, keep);
    });
    if (!batch.lines.empty() || batch.dropped) {
        // Not written: back in front of what came meanwhile.
        try {
            std::lock_guard<std::mutex> lock(e->events_mu);
            e->events.put_back(std::move(batch));
        } catch (...) {
            return GP_ERR_INTERNAL;
        }
    }
    return rc;
}

GP_EXPORT int gp_preemption_comment(const char *old, const gp_preemption_t *p, char *buf, size_t buf_len) {
    if (!p || !buf || buf_len == 0) return GP_ERR_ARG;
    buf[0] = '\0';
    std::string text;
    int rc = guarded(GP_ERR_INTERNAL, nullptr, 0,
                     [&] { text = comment_append(str_or_empty(old), comment_entry(to_event(p)), kSystemCommentMax); });
    if (rc != GP_OK) return rc;
    if (text.size() >= buf_len) return GP_ERR_ARG;
    put(buf, buf_len, text);
    return GP_OK;
}

GP_EXPORT int gp_engine_note_pass(gp_engine_t *e, const gp_pass_time_t *t, int64_t now) {
    if (!e || !t) return GP_ERR_ARG;
    PassTime p;
    p.total = t->total_usec;
    p.lock = t->lock_usec;
    p.snapshot = t->snapshot_usec;
    p.evaluate = t->evaluate_usec;
    p.apply = t->apply_usec;
    return guarded(GP_ERR_INTERNAL, nullptr, 0, [&] {
        std::lock_guard<std::mutex> lock(e->stats_mu);
        e->stats.note(p, now);
    });
}

GP_EXPORT int gp_engine_save_stats(gp_engine_t *e, const char *path, int64_t now, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    return guarded(GP_ERR_IO, err, err_len, [&] {
        std::string text;
        {
            std::lock_guard<std::mutex> lock(e->stats_mu);
            text = e->stats.to_json(now);
        }
        Engine::write_state_file(path, text);
    });
}

GP_EXPORT size_t gp_engine_pool_count(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.last().pools.size();
}

GP_EXPORT int gp_engine_pool_report(gp_engine_t *e, size_t i, gp_pool_report_t *out) {
    if (!e || !out) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    const auto &pools = e->engine.last().pools;
    if (i >= pools.size()) return GP_ERR_ARG;
    const PoolState &p = pools[i];
    put(out->name, p.name);
    out->capacity = p.capacity;
    out->quota = p.quota;
    out->np_used = p.np_used;
    out->p_used = p.p_used;
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

GP_EXPORT int gp_engine_save_state(gp_engine_t *e, const char *path, int64_t now, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    return guarded(GP_ERR_IO, err, err_len, [&] {
        std::lock_guard<std::mutex> saving(e->save_mu);
        // Only the copy is taken under the engine's lock: encoding, write
        // and fsync (slow storage) never stall a hook waiting for it.
        Engine::PersistentState copy;
        {
            std::lock_guard<std::mutex> lock(e->mu);
            copy = e->engine.persistent_state();
        }
        Engine::store_state(path, copy, now);
    });
}

GP_EXPORT int gp_engine_load_state(gp_engine_t *e, const char *path, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    std::lock_guard<std::mutex> lock(e->mu);
    return guarded(GP_ERR_STATE, err, err_len, [&] { e->engine.load_state(path); });
}

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

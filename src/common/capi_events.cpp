// The C ABI: preemption records (the event log, job comments) and the
// agent's pass times.
#include "capi.hpp"

#include <string>

#include "preemption.hpp"

using namespace gpupool;
using namespace gpupool::capi;

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
        {
            std::lock_guard<std::mutex> lock(e->events_mu);
            e->events.push(std::move(line));
        }
        std::lock_guard<std::mutex> lock(e->mu);
        e->engine.note_preempted(p->preemptor_job_id, p->victim_job_id);
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
    // In PassTime's order: total, lock, snapshot, evaluate, apply.
    const PassTime p{t->total_usec, t->lock_usec, t->snapshot_usec, t->evaluate_usec, t->apply_usec};
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

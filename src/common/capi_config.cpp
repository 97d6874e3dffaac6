// The C ABI: configuration (loading, staging, the values the plugins read
// from it), tiers and the state file.
#include "capi.hpp"

#include <stdexcept>
#include <string>

#include <unistd.h>

#include "preemption.hpp"
#include "trust.hpp"

using namespace gpupool;
using namespace gpupool::capi;

namespace {

// A parsed configuration into the engine (applied or staged), with the
// text it came from.
void take_config(gp_engine *e, Config cfg, std::string text) {
    std::lock_guard<std::mutex> lock(e->mu);
    e->engine.set_config(std::move(cfg));
    e->note_config();
    e->config_text = std::move(text);
}

}  // namespace

GP_EXPORT int gp_engine_load_config_file(gp_engine_t *e, const char *path, char *err, size_t err_len) {
    if (!e || !path) return GP_ERR_ARG;
    return guarded(GP_ERR_CONFIG, err, err_len, [&] {
        std::string text;
        Config cfg = load_config_file(path, &text);
        take_config(e, std::move(cfg), std::move(text));
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
        take_config(e, std::move(cfg), std::move(text));
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
        take_config(e, std::move(cfg), text);
    });
}

GP_EXPORT int gp_engine_has_config(gp_engine_t *e) {
    if (!e) return 0;
    std::lock_guard<std::mutex> lock(e->mu);
    return e->engine.has_config();
}

GP_EXPORT size_t gp_engine_node_weights(gp_engine_t *e, const uint32_t *current, uint32_t *want,
                                        size_t count) {
    if (!e || (count && (!current || !want))) return 0;
    try {
        std::lock_guard<std::mutex> lock(e->mu);
        return e->engine.node_weights(current, want, count);
    } catch (...) {
        if (count) std::copy(current, current + count, want);
        return 0;
    }
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

GP_EXPORT uint32_t gp_engine_snapshot_needs(gp_engine_t *e) {
    uint32_t needs = 0;
    try {
        if (e) {
            std::lock_guard<std::mutex> lock(e->mu);
            if (e->engine.has_config()) {
                const Config &c = e->engine.next_config();
                if (!c.accounts.empty()) needs |= GP_NEEDS_ACCOUNTS;
                if (c.counted[kCpu]) needs |= GP_NEEDS_CPU;
                if (c.counted[kMem]) needs |= GP_NEEDS_MEM;
            }
        }
    } catch (...) {
    }
    return needs;
}

GP_EXPORT uint64_t gp_engine_config_serial(gp_engine_t *e) {
    return e ? e->config_serial.load(std::memory_order_acquire) : 0;
}

GP_EXPORT uint32_t gp_engine_waiting_preemptor_priority(gp_engine_t *e) {
    return e ? e->waiting_preemptor_priority.load(std::memory_order_relaxed) : 0;
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

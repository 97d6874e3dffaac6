// What the C ABI's files (capi*.cpp) share: the handles behind gpupool.h's
// opaque types and the guard that keeps C++ exceptions from slurmctld.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "config.hpp"
#include "engine.hpp"
#include "events.hpp"
#include "gpupool.h"
#include "stats.hpp"

#define GP_EXPORT extern "C" __attribute__((visibility("default")))

struct gp_engine {
    // engine.config_serial() as of the last call under mu that may have
    // applied a configuration, readable without mu (gp_engine_config_serial).
    std::atomic<uint64_t> config_serial{0};
    // engine.waiting_preemptor_priority() of that configuration, the same way.
    std::atomic<uint32_t> waiting_preemptor_priority{0};
    void note_config() {
        waiting_preemptor_priority.store(engine.waiting_preemptor_priority(), std::memory_order_relaxed);
        config_serial.store(engine.config_serial(), std::memory_order_release);
    }
    std::mutex mu;       // the engine; slurmctld's hooks take it under their locks
    std::mutex save_mu;  // one state save at a time, in the order of their copies
    gpupool::Engine engine;
    std::string config_text;  // what the configuration in force was parsed from (under mu)
    // Preemption records: queued under slurmctld's job lock (events_mu
    // only, never mu's pass), written out by one flush at a time.
    std::mutex events_mu;
    gpupool::EventQueue events;
    std::mutex flush_mu;
    // Pass durations, noted by the agent after each pass.
    std::mutex stats_mu;
    gpupool::PassStats stats;
};

namespace gpupool::capi {

// The heap rooms of a finished snapshot's names longer than a string keeps
// in itself (QOS, account) and of its running jobs' node lists, taken out
// before its job array is unmapped and handed to the next snapshot: a pass
// over every job then allocates nothing per job from the heap where
// slurmctld's own job records live (an allocation and a free per job and
// pass scattered them: doc/performance.md, "Live cost inside slurmctld").
struct SnapshotSpares {
    std::vector<std::string> names;
    std::vector<std::vector<NodeShare>> node_lists;
};

}  // namespace gpupool::capi

struct gp_snapshot {
    // Built for one pass or refresh, then freed: its job array is mapped
    // (PageAllocator), so nothing of it stays between passes but `spares`.
    gpupool::Snapshot snap;
    gpupool::capi::SnapshotSpares spares;
};

namespace gpupool::capi {

// `text` into a C buffer, cut to fit, NUL-terminated.
inline void put(char *buf, size_t len, const std::string &text) {
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

}  // namespace gpupool::capi

// `gpupool exporter`'s metrics in Prometheus' text exposition format
// (version 0.0.4), from one full pass of the core over a cluster view:
// the figures `gpupool status` and `queue` show, as gauges, and a
// histogram of the waits of jobs seen starting.  No Slurm or HTTP header:
// unit-tested on fixed views.  Names and labels: doc/gpupool.1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "view.hpp"

namespace gpupool::cli {

// Upper bounds of the wait-time buckets in seconds, 1 minute to 48 hours
// (+Inf follows).
const std::vector<double> &wait_buckets();

// gpupool_job_wait_seconds: for each job seen running that started since
// the previous recompute, the time from its submit time (Slurm's, which a
// requeue resets) to its start, by its pool and tier.  Counted once per
// start; jobs that start and end between two recomputes are not seen.
class WaitHistogram {
public:
    // After a pass of `engine` over `view`: count the new starts.  The
    // first call counts none: it only notes what already runs.
    void observe(const Engine &engine, const ClusterView &view);
    // The histogram's exposition (HELP, TYPE, buckets, sum, count).
    std::string text() const;

private:
    struct Series {
        std::vector<uint64_t> le;  // cumulative, one per bucket
        uint64_t count = 0;
        double sum = 0;
    };
    std::map<std::pair<std::string, std::string>, Series> series_;  // (pool, tier)
    bool started_ = false;
    int64_t since_ = 0;
    std::unordered_map<uint32_t, int64_t> counted_;  // job -> the start counted
};

// gpupool_preemptions_total and gpupool_preemption_lost_gpu_seconds_total
// by the victim's pool, the preemptor's pool and the rule, read from the
// plugins' event log (StateSaveLocation/gpupool_events.jsonl, events.hpp):
// the first read counts every line of the files kept (path.N, ...,
// path.1, path), later reads what was appended since, following the
// rotation (each file is known by its inode, which a rename keeps).  A
// line still being written is counted once complete.
class PreemptionLog {
public:
    void read(const std::string &path);
    // The counters, gpupool_preemption_events_dropped_total (events the
    // plugin could not queue) and gpupool_preemption_log_readable.
    std::string text() const;
    // Why the last read failed ("" if it did not): said by the caller.
    const std::string &error() const { return error_; }

private:
    struct Count {
        uint64_t preemptions = 0, gpu_seconds = 0;
    };
    std::map<std::tuple<std::string, std::string, std::string>, Count> counts_;  // (pool, preemptor pool, rule)
    uint64_t dropped_ = 0, bad_lines_ = 0;
    bool readable_ = false;
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> read_;  // (device, inode) -> bytes counted
    std::string error_;
    // Count the complete lines of `file` from `from`; returns where the
    // last complete line ends.
    uint64_t count_lines(const std::string &file, uint64_t from);
    void count_line(const std::string &line);
};

// A full pass of `engine` (configured, history loaded) over `view` at
// view.now, its new starts counted into `waits`, and the gauges:
// usage history, warnings, per pool capacity, quota, weight, fairshare,
// allocated GPUs by tier, borrowed by lender, lent, reclaimable, decayed
// usage, pending jobs and GPUs by tier and reason.
std::string cluster_metrics(Engine &engine, const ClusterView &view, WaitHistogram &waits);

// priority/gpupool's pass durations as slurmctld last wrote them
// (view.passes, StateSaveLocation/gpupool_stats.json):
// gpupool_plugin_stats_readable, and when it is 1 the pass count, the
// duration histogram, the time of each part, the last and the longest
// pass, when the last one ended and when the file was written.
std::string plugin_metrics(const PluginPasses &passes);

// The exporter's own state: gpupool_up (the last recompute read the
// cluster) and gpupool_exporter_* (recomputes, errors, last duration and
// time).
struct ExporterStats {
    bool up = false;
    uint64_t recomputes = 0, errors = 0;
    double duration = 0;     // seconds the last recompute took
    int64_t time = 0;        // when it ran
};
std::string exporter_metrics(const ExporterStats &s);

// Exposition helpers.
void metric_head(std::string &out, const std::string &name, const char *type, const std::string &help);
void metric_sample(std::string &out, const std::string &name,
                   const std::vector<std::pair<std::string, std::string>> &labels, const std::string &value);
std::string metric_value(double v);
std::string metric_value(uint64_t v);

}  // namespace gpupool::cli

// How long priority/gpupool's scheduling passes take.  The plugin measures
// each pass (it alone has a clock and knows slurmctld's locks) and hands
// the times to the core, which keeps the counters and writes them to
// StateSaveLocation/gpupool_stats.json for `gpupool exporter` and
// `gpupool status`, processes that cannot see slurmctld's memory.
// Microseconds as integers, so sums and buckets are exact.  Plain C++17.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpupool {

// One pass, in microseconds.  The parts are measured in turn, so they add
// up to at most `total` (the rest: logging, waking the scheduler).
struct PassTime {
    uint64_t total = 0;     // the whole pass, waiting for locks included
    uint64_t lock = 0;      // waiting for slurmctld's job, node and part locks
    uint64_t snapshot = 0;  // nodes, partitions and jobs copied for the core
    uint64_t evaluate = 0;  // the core's pass (order, admission, victims)
    uint64_t apply = 0;     // priorities, holds and partition lists written back
};

// Upper bounds (microseconds) of the pass duration histogram's buckets,
// 1 ms to 10 s; a +Inf bucket (every pass) follows.
const std::vector<uint64_t> &pass_buckets();

// Version of gpupool_stats.json ("version" key); raised when a key changes
// meaning or goes away.
constexpr int kStatsVersion = 1;

// The counters of one slurmctld's passes since it started.
struct PassStats {
    uint64_t passes = 0;
    int64_t since = 0;      // the first pass counted ended (0: none yet)
    int64_t last_end = 0;   // the last pass ended
    PassTime last, max, sum;  // each part's last, longest and sum
    // (upper bound, passes that took at most that), ascending, cumulative
    // as Prometheus has them; the bounds are pass_buckets() when counted
    // here, whatever the file said when read back.
    std::vector<std::pair<uint64_t, uint64_t>> buckets;
    int64_t written = 0;    // read back: when the file was written

    // Count one pass that ended at `now`.
    void note(const PassTime &t, int64_t now);
    // The file's text (one JSON object and a newline), written at `now`.
    std::string to_json(int64_t now) const;
    // Parses the file's text; std::runtime_error says what is wrong.
    static PassStats from_json(const std::string &text);
};

// Reads and parses gpupool_stats.json (at most 1 MiB); std::runtime_error
// names the file and what is wrong ("...: Permission denied").
PassStats load_stats_file(const std::string &path);

}  // namespace gpupool

// `gpupool exporter`: Prometheus metrics (metrics.hpp) over HTTP with
// libmicrohttpd.  Each scrape of /metrics is answered from the last
// recompute (the live cluster read through libslurm, one pass of the
// core) and recomputes first only when that is at least `min_interval`
// seconds old, so that a storm of scrapes costs slurmctld at most one
// read of nodes, partitions and jobs per interval.
#pragma once

#include <iosfwd>
#include <string>

#include "live.hpp"

namespace gpupool::cli {

struct ExporterOptions {
    std::string listen;      // ADDR:PORT, [ADDR6]:PORT or :PORT (every address)
    long min_interval = 5;   // seconds between recomputes, at least
    LiveOptions live;
};

// Serves until SIGINT or SIGTERM; returns the exit status (1 when it
// cannot listen, with the reason on `log`).  Recompute problems go to
// `log` when they change, and to gpupool_up 0.
int run_exporter(const ExporterOptions &opt, std::ostream &log);

}  // namespace gpupool::cli

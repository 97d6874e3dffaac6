// `gpupool status`, `queue` and `why` over a ClusterView: one full pass of
// the engine over the view's snapshot, explained (explain.hpp), printed as
// Slurm-like tables or JSON.  Formatting only: every figure comes from the
// core.  No Slurm header: tests drive these with fixed views.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "engine.hpp"
#include "view.hpp"

namespace gpupool::cli {

// Version of the JSON documents (doc/gpupool.1): raised only when a field
// changes meaning or goes away; new fields may appear at any time.
constexpr int kJsonVersion = 1;

struct Options {
    bool json = false;
    std::string pool;       // -p POOL (status, queue)
    std::string user;       // -u USER (queue)
    uint32_t job_id = 0;    // why JOBID
};

// Each returns the exit status: 0, or 1 with a message on `err` (an
// unknown pool or job).  `engine` holds the configuration and the usage
// history; its pass is run here, at view.now.
int cmd_status(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);
int cmd_queue(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);
int cmd_why(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);

}  // namespace gpupool::cli

// `gpupool status`, `queue`, `why` and `whatif` over a ClusterView: one
// full pass of the engine over the view's snapshot (two for whatif),
// explained (explain.hpp), printed as Slurm-like tables or JSON.
// Formatting only: every figure comes from the core.  No Slurm header:
// tests drive these with fixed views.  One file per command (cmd_*.cpp):
// a model of what it shows, built from the pass (command_pass.hpp), and a
// renderer per format (command_format.hpp).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

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
    // whatif: the configuration compared with the current one, as given.
    std::string whatif_config;             // --config FILE, or ""
    std::vector<std::string> whatif_set;   // --set NAME.Key=VALUE...
};

// Each returns the exit status: 0, or 1 with a message on `err` (an
// unknown pool or job).  `engine` holds the configuration and the usage
// history; its pass is run here, at view.now.
int cmd_status(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);
int cmd_queue(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);
int cmd_why(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err);

// `whatif`: the same pass over the same view twice, with the engine's
// configuration and with `modified` (an engine of its own that starts
// from the same usage history and job memory), and what differs: each
// pool's figures, pending jobs that would start or stop starting, running
// jobs that would become reclaimable or be preempted, and the warnings of
// the modified configuration.
int cmd_whatif(Engine &engine, Config modified, const ClusterView &view, const Options &opt, std::ostream &out,
               std::ostream &err);

}  // namespace gpupool::cli

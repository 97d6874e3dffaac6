// The live cluster with an engine ready for its pass, as every command
// and the exporter start: slurmctld's configuration, gpupool.conf beside
// slurm.conf, the usage history the plugins save, nodes, partitions and
// jobs through libslurm, and requeued jobs' first submit times.
#pragma once

#include <string>

#include "engine.hpp"
#include "first_submits.hpp"
#include "slurm_view.hpp"
#include "view.hpp"

namespace gpupool::cli {

struct LiveOptions {
    std::string conf_path;   // --conf (empty: beside slurm.conf)
    std::string state_path;  // --state (empty: StateSaveLocation; "none")
    bool node_usage = false; // read node usage (load_cluster): `why`, `queue`
};

struct Live {
    ControllerConf controller;
    ClusterView view;
    Engine engine;           // configured, history loaded; no pass yet
    std::string conf_text;   // the gpupool.conf text it was configured with
};

// gpupool.conf beside slurm.conf, as the plugins find it
// (get_extra_conf_path): the directory of $SLURM_CONF, else of the
// slurm.conf slurmctld reads.
std::string default_conf_path(const ControllerConf &cc);

// Fills `live` at the current time.  Throws (std::exception) when
// slurmctld cannot be read or gpupool.conf is invalid, naming what failed.
// What it could not read but can do without (the usage history, the first
// submit times from slurmdbd) is left in live.view.history.error and
// live.view.notes for the caller to say.  `known` (the exporter's, kept
// between recomputes): slurmdbd is asked only about requeued jobs it does
// not know yet, over records since its last view; without it, about every
// requeued job.
void load_live(const LiveOptions &opt, Live &live, FirstSubmits *known = nullptr);

}  // namespace gpupool::cli

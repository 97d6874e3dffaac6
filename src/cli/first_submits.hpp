// Original submit times of requeued jobs, kept from one exporter recompute
// to the next so slurmdbd is asked only about what changed: the requeued
// jobs whose first submit is not known yet, over records since the last
// recompute, instead of every requeued job's records since the epoch.
// No Slurm: the query itself is first_submit_times (slurm_view.hpp).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "view.hpp"

namespace gpupool::cli {

class FirstSubmits {
public:
    // Records that ended this long before the last recompute are asked for
    // too: the exporter's clock and slurmdbd's may differ a little.
    static constexpr int64_t kClockSlack = 60;

    struct Query {
        std::vector<uint32_t> jobs;  // requeued jobs whose first submit is not known
        int64_t since = 0;           // sacct's start time (0: since the epoch)
        int64_t until = 0;           // sacct's end time: the view's time
    };

    // Before a recompute over `view`: what to ask slurmdbd (no jobs: ask
    // nothing).  A job never requeued shows its first submit itself and is
    // remembered; a requeued job seen before keeps what was learnt; jobs
    // slurmctld no longer has are forgotten.  A job first seen now was
    // submitted after the previous view was read, so its records lie in
    // [previous view's time, now]; the first view asks since the epoch.
    Query plan(const ClusterView &view);
    // What slurmdbd answered for `q` (job -> earliest submit of its
    // records).  A job it did not answer for (slurmdbd down, or its
    // records not there yet) is asked again, from the same start time.
    void merge(const Query &q, const std::unordered_map<uint32_t, int64_t> &found);
    // The first submit of each requeued job of the last planned view that
    // is known.
    std::unordered_map<uint32_t, int64_t> requeued() const;

private:
    std::unordered_map<uint32_t, int64_t> first_;     // job -> first submit, jobs of the last view
    std::unordered_map<uint32_t, int64_t> asked_;     // requeued job not known -> window start
    std::vector<uint32_t> requeued_;                  // requeued jobs of the last view
    int64_t last_ = -1;                               // the last view's time (-1: none yet)
};

}  // namespace gpupool::cli

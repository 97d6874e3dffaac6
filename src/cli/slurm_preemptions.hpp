// `gpupool why` on a preempted job: its preemptions from gpupool's event
// log, else from the SystemComments slurmdbd keeps (libslurmdb).
#pragma once

#include <cstdint>
#include <string>

#include "slurm_view.hpp"
#include "view.hpp"

namespace gpupool::cli {

// Fills view.preemptions for job `job_id`.  `events_path`: the event log
// ("" for StateSaveLocation/gpupool_events.jsonl, "none": not read).
// Accounting is asked when the log names no preemption of a job that was
// requeued, or when slurmctld no longer knows the job.  Never throws for
// what it cannot read: that goes into view.notes.
void load_preemptions(ClusterView &view, const ControllerConf &conf, uint32_t job_id, const std::string &events_path);

}  // namespace gpupool::cli

// Who preempted a job, read back for `gpupool why`: from gpupool's event
// log (StateSaveLocation/gpupool_events.jsonl and its rotated files) when
// this user may read it, else from the SystemComment slurmdbd keeps with
// each preempted run (slurm_preemptions.cpp).  No Slurm header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpupool::cli {

// One preemption of the job `why` asks about.  Fields the source does not
// know stay empty (accounting: the preemptor's tier, the mode, GPUs, why).
struct PreemptionRecord {
    int64_t time = 0;
    uint32_t preemptor_job_id = 0;
    std::string preemptor_pool;
    std::string preemptor_tier;
    std::string victim_pool;
    std::string rule;           // "InPool", "Reclaim", "Consolidation"
    std::string mode;           // "requeue", "cancel", ...
    std::optional<uint32_t> gpus;
    uint64_t gpu_seconds_lost = 0;
    std::string why;
};

// Filled for the job of `gpupool why` only.
struct PreemptionHistory {
    std::string source;                     // "event_log", "accounting", "" (none found)
    std::string event_log;                  // the log's path ("" or "none": not read)
    std::vector<PreemptionRecord> records;  // oldest first
    // The job as accounting knows it, for a job slurmctld has forgotten.
    bool in_accounting = false;
    std::string name, user, state, partition;
};

// Reads the event log at `path` and its rotated files (path.N ... path.1,
// then path: oldest first) for preemptions of `job_id`.  Returns false if
// a file of it could not be read, saying why in `unreadable` (a missing
// log is not an error: nothing logged yet).  A line about the job that is
// not a valid event is skipped and noted as "FILE:LINE: what is wrong".
bool read_event_log(const std::string &path, uint32_t job_id, std::vector<PreemptionRecord> &out,
                    std::vector<std::string> &notes, std::string &unreadable);

// The preemptions in the SystemComments of a job's accounting records,
// each once (a record carries the entries of the runs before it too).
// `records`: (partition of the run, its SystemComment), oldest first.
std::vector<PreemptionRecord> preemptions_from_comments(
    const std::vector<std::pair<std::string, std::string>> &records);

}  // namespace gpupool::cli

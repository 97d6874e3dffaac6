// Text forms Slurm hands its clients, read the way slurmctld counts them:
// TRES strings, GRES specs, durations.  No Slurm header: unit-tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpupool::cli {

// "cpu=2,mem=1G,node=1,billing=2,gres/gpu=2" -> the count of `tres`
// ("gres/gpu" or "gres/gpu:a100", matched exactly); nullopt if absent.
std::optional<uint64_t> tres_count(const std::string &tres_str, const std::string &tres);

// GRES counts of `name` (e.g. "gpu") in a spec such as a node's
// "gpu:a100:2(S:0-1),gpu:1" or a job's tres_per_node "gres:gpu:2"
// ("gres/" and "gres:" prefixes are dropped; a missing count is 1).  With
// `type` empty every type counts; otherwise only that type.  nullopt if
// the spec names no such GRES.
std::optional<uint64_t> gres_count(const std::string &spec, const std::string &name, const std::string &type);

// QuotaTRES "gres/gpu" or "gres/gpu:TYPE" -> name "gpu" and type "" or TYPE.
void split_quota_tres(const std::string &quota_tres, std::string &name, std::string &type);

// Seconds as squeue prints a time: "M:SS", "H:MM:SS", "D-HH:MM:SS".
std::string slurm_duration(int64_t seconds);

// Seconds since the epoch as Slurm prints times: "2026-11-22T10:00:00"
// (local time).
std::string slurm_time(int64_t epoch);

}  // namespace gpupool::cli

// Text forms Slurm hands its clients, read the way slurmctld counts them:
// TRES strings, GRES specs, counts, times and durations, hostlists.  The
// one reader of Slurm's text for the gpupool command (libslurm's records)
// and for `gpupool sim` (slurm.conf, sacct dumps).  No Slurm header:
// unit-tested alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpupool::cli {

// --- Pieces ------------------------------------------------------------------

// Decimal digits only, no sign, at most `max`; false otherwise.
bool parse_uint(std::string_view text, uint64_t max, uint64_t *out);

// A count as Slurm prints one: digits with an optional binary suffix
// ("12", "2K", "1G": k/K, m/M, g/G, t/T); nullopt if not one or over `max`.
std::optional<uint64_t> slurm_count(std::string_view text, uint64_t max = UINT64_MAX);

// Without leading and trailing white space.
std::string_view trim(std::string_view text);

// Cut at `sep` outside [...] and (...) (hostlists, GRES socket lists);
// empty pieces kept.
std::vector<std::string> split_top_level(const std::string &text, char sep);

// --- TRES and GRES -----------------------------------------------------------

// "cpu=2,mem=1G,gres/gpu=2" -> ("cpu", "2"), ("mem", "1G"), ("gres/gpu", "2");
// entries without '=' are left out.
std::vector<std::pair<std::string_view, std::string_view>> tres_entries(std::string_view tres_str);

// "cpu=2,mem=1G,node=1,billing=2,gres/gpu=2" -> the count of `tres`
// ("gres/gpu" or "gres/gpu:a100", matched exactly); nullopt if absent.
std::optional<uint64_t> tres_count(const std::string &tres_str, const std::string &tres);

// The memory of a TRES string ("cpu=2,mem=4G,node=1") in MiB, as
// slurmctld counts it: a suffix (K, M, G, T) in binary units, none MiB
// ("mem=4G" -> 4096); nullopt if absent or not a count.
std::optional<uint64_t> tres_mem_mb(const std::string &tres_str);

// One entry of a GRES spec: `text` as written without its "(...)" suffix
// ("gpu:a100:2"), `fields` its ':'-separated fields after a "gres:" or
// "gres/" prefix ({"gpu", "a100", "2"}; empty fields kept).
struct GresEntry {
    std::string text;
    std::vector<std::string> fields;
};
// The entries of a node's "gpu:a100:2(S:0-1),gpu:1" or a job's
// "gres:gpu:2" (separated by ',' or ';' outside parentheses); a type
// printed "(null)" ("gpu:(null):2(IDX:0-1)") is none.
std::vector<GresEntry> gres_entries(const std::string &spec);

// GRES counts of `name` (e.g. "gpu") in a spec such as a node's
// "gpu:a100:2(S:0-1),gpu:1" or a job's tres_per_node "gres:gpu:2"
// ("gres/" and "gres:" prefixes are dropped; a missing count is 1).  With
// `type` empty every type counts; otherwise only that type.  nullopt if
// the spec names no such GRES.
std::optional<uint64_t> gres_count(const std::string &spec, const std::string &name, const std::string &type);
// The same for the entries that name no type ("gpu:2", not "gpu:a100:2").
std::optional<uint64_t> gres_count_untyped(const std::string &spec, const std::string &name);
// The counts of `name` in a spec by type ("" for entries of no type).
std::map<std::string, uint64_t> gres_count_by_type(const std::string &spec, const std::string &name);
// A pending job's count of one GRES (of one type) from its four requests, as Slurm's
// gres_job_state_validate sets total_gres: the largest of per job, per node
// times its nodes, per socket times its sockets (or times its tasks over
// tasks per socket), per task times its tasks.  A count of the job that is
// 0 is one Slurm was not given (NO_VAL), and multiplies nothing.
struct GresAsk {
    std::optional<uint64_t> per_job, per_node, per_socket, per_task;
    uint64_t nodes = 0, tasks = 0, sockets_per_node = 0, tasks_per_socket = 0;
};
uint64_t gres_ask_total(const GresAsk &a);

// What a job asks per GRES of `name` in its cpus_per_tres or mem_per_tres:
// "gres:gpu:2" (22.05's sbatch), "gres/gpu:2" (later releases') or
// "gpu:2" (cons_tres writes the partition's or slurm.conf's DefCpuPerGPU
// and DefMemPerGPU so when it tests the job); 0 if `name` is absent.
uint64_t per_gres_value(const std::string &list, const std::string &name);

// GPUs with shards or MPS in use, from a node's gres_used: each GPU's
// shards in use, "shard:3(2/4,0/4,1/4,0/4)" (26.05; "-/4" for a GPU held
// whole), "shard:(null):3(...)" or "shard:tesla:3(...)" (22.05-25.11); a
// GPU counts once whatever shares it.  As gpupool_nodes.c's _shared_in_use.
uint64_t shared_gres_gpus(const std::string &gres_used);

// The cores of a reservation's core list for one node ("0-1,3") set in
// `cores` (grown as needed; ids past 65535 left out); a part that is no
// number or range sets none.  Reservations on the same cores (overlapping,
// one after the other) set them once, as Slurm ORs their core bitmaps.
void add_reservation_cores(const std::string &core_ids, std::vector<bool> &cores);
// How many cores `add_reservation_cores` sets in an empty set ("0-1,3": 3).
uint32_t reservation_cores(const std::string &core_ids);

// QuotaTRES "gres/gpu" or "gres/gpu:TYPE" -> name "gpu" and type "" or TYPE.
void split_quota_tres(const std::string &quota_tres, std::string &name, std::string &type);

// --- Times and durations -----------------------------------------------------

// Seconds as squeue prints a time: "M:SS", "H:MM:SS", "D-HH:MM:SS".
std::string slurm_duration(int64_t seconds);

// sacct's Elapsed "[D-]HH:MM:SS" (any of Slurm's duration forms) ->
// seconds; -1 if not a finite duration ("INFINITE", "UNLIMITED", junk).
int64_t elapsed_seconds(const std::string &text);

// Seconds since the epoch as Slurm prints times: "2026-11-22T10:00:00"
// (local time).
std::string slurm_time(int64_t epoch);

// The other way: "YYYY-MM-DDTHH:MM:SS" in this process's local time, or
// seconds since the epoch.  mktime(3) is asked once per hour of the text
// (a zone's offset changes on whole hours), so a million times cost a few
// thousand calls.
class SlurmTimeReader {
public:
    // True and *out = seconds (or -1 for "Unknown"/"None"/empty); false when
    // `s` is not a time.
    bool parse(std::string_view s, int64_t *out);

private:
    int64_t last_key_ = INT64_MIN, last_hour_ = 0;
    std::unordered_map<int64_t, int64_t> hours_;
};

// --- Hostlists ---------------------------------------------------------------

// Slurm hostlist expression -> names, in order: "n[1-4,7]", "gpu[01-10]"
// (zero-padded to the lower bound's width), "r[1-2]n[1-2]" (r1n1 r1n2 r2n1
// r2n2), "a,b[1-2]".  Throws std::invalid_argument saying what is wrong.
std::vector<std::string> expand_hostlist(const std::string &expr);

// --- Reasons ------------------------------------------------------------------

// Is a pending job's reason, as squeue shows it, an association's or
// QOS's limit (Slurm's JSR_QOS_ASSOC reasons: "QOS..." but
// QOSNotAllowed, "Assoc...", "Max...PerAccount"), or its partition's
// (PartitionTimeLimit, PartitionNodeLimit, PartitionConfig, PartitionDown,
// PartitionInactive, MaxMemPerLimit)?  The command's view of GP_JOB_OVER_LIMIT: it sees
// the reason Slurm shows, none behind gpupool's own hold.
bool limit_reason(std::string_view reason);

// --- Dependencies --------------------------------------------------------------

// A job's state as a dependency reads it.
enum class DependedState { Pending, Started, Ended };
// A job's dependency as slurmctld prints it ("afterok:12(unfulfilled),
// afterany:34_*(unfulfilled)"; '?' between entries: any one of them): does
// it still wait for another job, as the plugins judge it
// (gps_job_dependent)?  An unfulfilled entry waits while its job is
// pending, or (every kind but `after`) has not ended; a failed one never
// frees it, nor a singleton one or `after+MIN` on a started job until Slurm
// says so.  `state_of(id, task)`:
// task -1 for the job itself, -2 for the whole array ("_*": its least
// advanced task); Ended also for a job no longer known.
bool dependency_waits(const std::string &dependency,
                      const std::function<DependedState(uint32_t id, int64_t task)> &state_of);

}  // namespace gpupool::cli

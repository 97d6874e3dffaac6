// Preemption records that outlive slurmctld's log: the job's SystemComment
// (kept by slurmdbd, shown by sacct) and a bounded, rotated JSON-lines
// event log beside the state file.  The preempt plugin notes each
// preemption in memory under slurmctld's job lock; the priority plugin's
// agent writes the queue out with no lock held.  Plain C++17, no Slurm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

namespace gpupool {

// One preemption slurmctld carried out.  Strings other than victim_name
// come from gpupool.conf and the engine; victim_name is the user's job
// name (any bytes) and only ever reaches JSON as a string value.
struct PreemptionEvent {
    int64_t time = 0;
    uint32_t victim_job_id = 0;
    std::string victim_name;
    uint32_t victim_user_id = 0;
    std::string victim_pool, victim_tier;
    uint32_t victim_gpus = 0;
    int64_t victim_start_time = 0;
    uint32_t victim_pool_used = 0, victim_pool_quota = 0;
    uint32_t preemptor_job_id = 0;
    std::string preemptor_pool, preemptor_tier;
    std::string rule;   // "InPool", "Reclaim", "Consolidation"
    std::string mode;   // "requeue", "cancel", "suspend", "preempt"
    uint32_t grace_time = 0;
    std::string why;

    // GPU-seconds of the run lost: victim_gpus * (time - victim_start_time).
    uint64_t gpu_seconds_lost() const;
};

// Version of an event log line ("version" key); raised when a key changes
// meaning or goes away.
constexpr int kEventLogVersion = 1;

// One line of the event log, '\n' included.  jansson encodes every string
// (a job name with quotes, newlines, '%' or bytes that are not UTF-8 stays
// one valid JSON line).  Throws std::runtime_error if encoding fails.
std::string event_json_line(const PreemptionEvent &e);
// The line written when events had to be dropped (queue full).
std::string dropped_json_line(uint64_t count, int64_t now);
// Parses a line of the event log.  Returns false for a line that is valid
// but not a preemption (e.g. "dropped"); throws std::runtime_error naming
// what is wrong for a line that is not a valid event.
bool event_from_json(const std::string &line, PreemptionEvent &out);
// The rest of an open file into `text` (appended), as the event log's
// readers (gpupool why-preempted) and the state file's read it; false on a
// read error.  The caller closes the file.
bool read_all(std::FILE *f, std::string &text);

// ---------------------------------------------------------------- SystemComment

// Longest SystemComment gpupool leaves (Slurm's burst buffer plugins stop
// appending at the same length).
constexpr size_t kSystemCommentMax = 1024;

// "gpupool: preempted by JobId=N (pool P) rule R at 2026-11-22T15:00:00,
// lost G GPU-s": local time, as sacct prints times.  Pool and rule are
// reduced to [A-Za-z0-9._-] (slurmdbd stores the text in SQL as given).
std::string comment_entry(const PreemptionEvent &e);
// `old` + "; " + `entry`, at most `cap` bytes: when too long, the oldest
// text goes first, cut at an entry boundary and marked "...; ".  In `old`
// quotes become '`', backslashes '/' and control characters other than
// newline and tab spaces (slurmdbd puts the whole text into its SQL).
std::string comment_append(const std::string &old, const std::string &entry, size_t cap = kSystemCommentMax);

// A preemption read back from a SystemComment.
struct CommentPreemption {
    uint32_t preemptor_job_id = 0;
    std::string preemptor_pool;
    std::string rule;
    int64_t time = 0;           // from local time
    uint64_t gpu_seconds_lost = 0;
};
// Every gpupool entry of a SystemComment, oldest first; other text is
// ignored.
std::vector<CommentPreemption> parse_comment(const std::string &text);

// ---------------------------------------------------------------- queue, file

// Event lines waiting for the agent, at most `max` of them: when full the
// oldest is dropped and counted (the next flush says how many).
class EventQueue {
public:
    static constexpr size_t kDefaultMax = 4096;
    explicit EventQueue(size_t max = kDefaultMax) : max_(max ? max : 1) {}

    void push(std::string line);
    size_t size() const { return lines_.size(); }
    uint64_t dropped() const { return dropped_; }

    struct Batch {
        std::deque<std::string> lines;
        uint64_t dropped = 0;
    };
    // Everything queued, leaving the queue empty.
    Batch take();
    // What a failed write did not write, back in front of newer events
    // (still bounded: the oldest go first).
    void put_back(Batch batch);

private:
    size_t max_;
    std::deque<std::string> lines_;
    uint64_t dropped_ = 0;
};

// Append `lines` to `path` (created 0600, never through a symbolic link),
// rotating before a line would take the file past `max_bytes`:
// path.(keep-1) -> path.keep, ..., path -> path.1 (keep 0: the file is
// removed).  A line longer than max_bytes goes alone into a fresh file.
// Written lines are removed from `lines`; on an error the rest stay and
// std::runtime_error names the file and what failed.
void append_rotated(const std::string &path, std::deque<std::string> &lines, uint64_t max_bytes, unsigned keep);

}  // namespace gpupool

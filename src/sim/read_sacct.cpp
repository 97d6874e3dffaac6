// A site's past month as `gpupool sim` replays it: `sacct --parsable2`
// output, one job per JobID (the rules are in workload.hpp and
// doc/evaluation.md).  Streams the dump: a month of a large cluster is
// millions of lines.
#include <algorithm>
#include <climits>
#include <fstream>
#include <istream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "config.hpp"
#include "input_text.hpp"
#include "resources.hpp"
#include "slurm_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

struct Columns {
    int jobid = -1, jobid_raw = -1, submit = -1, start = -1, end = -1, partition = -1, state = -1;
    int req_tres = -1, alloc_tres = -1, qos = -1, user = -1, account = -1, elapsed = -1;
    size_t count = 0;
    bool trailing = false;  // --parsable: every line ends with '|'
};

// One JobID's records so far.
struct JobRecords {
    std::string label;
    uint64_t raw_id = 0;       // 0: none known
    uint64_t line = 0;         // its first record
    int64_t submit = -1;       // the first record's
    // Its runs: (when, start).  `when` orders them: the start, or the end
    // for a run whose start sacct lost (-1).
    std::vector<std::pair<int64_t, int64_t>> runs;
    uint32_t records = 0;
    bool has_run = false;
    int64_t last_run = -1;     // run time of the last run; -1 unknown
    bool last_run_open = false;  // still running at the dump
    uint32_t gpus = 0;
    uint32_t cpus = 0;
    uint64_t mem_mb = 0;
    std::vector<std::string> pools;
    std::string qos, user, account;
    std::string last_state;
};

std::string first_word(std::string_view s) {
    size_t sp = s.find(' ');
    return std::string(s.substr(0, sp));
}

// GPUs of a TRES list "billing=1,cpu=1,gres/gpu=2,node=1"; typed entries
// (gres/gpu:a100=2) count when the untyped one is missing.  -1: no GPU entry.
int64_t tres_gpus(std::string_view tres, const std::string &source, uint64_t line, const char *column) {
    int64_t untyped = -1, typed = -1;
    for (const auto &[name, value] : cli::tres_entries(tres)) {
        if (name != "gres/gpu" && name.substr(0, 9) != "gres/gpu:") continue;
        uint64_t n = 0;
        if (!parse_uint(value, 1000000000, &n))
            input_error(source, line, std::string(column) + ": " + quote(std::string(name) + "=" + std::string(value)) +
                                          ": expected gres/gpu=COUNT");
        if (name == "gres/gpu") untyped = static_cast<int64_t>(n);
        else typed = (typed < 0 ? 0 : typed) + static_cast<int64_t>(n);
    }
    return untyped >= 0 ? untyped : typed;
}

// CPUs (cpu=N) and memory (mem=SIZE, in MiB as the quotas count it) of a
// TRES list; 0 where absent.
void tres_cpus_mem(std::string_view tres, const std::string &source, uint64_t line, const char *column,
                   uint32_t &cpus, uint64_t &mem_mb) {
    for (const auto &[name, value] : cli::tres_entries(tres)) {
        if (name != "cpu" && name != "mem") continue;
        const std::string item = std::string(name) + "=" + std::string(value);
        try {
            const ResourceAmounts a = parse_resource_amounts(item, "gres/gpu");
            if (name == "cpu") cpus = static_cast<uint32_t>(std::min<uint64_t>(a.get(kCpu), UINT32_MAX));
            else mem_mb = a.get(kMem);
        } catch (const std::invalid_argument &) {
            input_error(source, line, std::string(column) + ": " + quote(item) + ": expected cpu=COUNT or mem=SIZE");
        }
    }
}

// "123", "123_4", "123_[4-9%2]", "123+1", each optionally ".step".
bool valid_job_id(std::string_view id) {
    size_t i = 0;
    auto digits = [&]() {
        size_t b = i;
        while (i < id.size() && id[i] >= '0' && id[i] <= '9') ++i;
        return i > b;
    };
    if (!digits()) return false;
    if (i < id.size() && id[i] == '_') {
        ++i;
        if (i < id.size() && id[i] == '[') {
            size_t close = id.find(']', i);
            if (close == std::string_view::npos) return false;
            i = close + 1;
        } else if (!digits()) {
            return false;
        }
    }
    if (i < id.size() && id[i] == '+') {
        ++i;
        if (!digits()) return false;
    }
    if (i < id.size() && id[i] == '.') return i + 1 < id.size();
    return i == id.size();
}

// The header, line `lineno` of `source`.
Columns read_header(const std::string &line, const std::string &source, uint64_t lineno) {
    std::vector<std::string_view> f;
    split(line, '|', f);
    Columns c;
    if (f.size() > 1 && f.back().empty()) {
        c.trailing = true;
        f.pop_back();
    }
    c.count = f.size();
    struct Named {
        const char *name;
        int Columns::*slot;
    };
    static const Named names[] = {
        {"JobID", &Columns::jobid},         {"JobIDRaw", &Columns::jobid_raw}, {"Submit", &Columns::submit},
        {"Start", &Columns::start},         {"End", &Columns::end},            {"Partition", &Columns::partition},
        {"State", &Columns::state},         {"ReqTRES", &Columns::req_tres},   {"AllocTRES", &Columns::alloc_tres},
        {"QOS", &Columns::qos},             {"User", &Columns::user},          {"Elapsed", &Columns::elapsed},
        {"Account", &Columns::account},
    };
    for (size_t i = 0; i < f.size(); ++i) {
        for (const Named &n : names) {
            if (!iequals(trim(f[i]), n.name)) continue;
            if (c.*n.slot >= 0)
                input_error(source, lineno, "column " + std::string(n.name) + " appears twice in the header");
            c.*n.slot = static_cast<int>(i);
        }
    }
    if (c.jobid < 0 && c.jobid_raw < 0)
        input_error(source, lineno, "no header line naming JobID: run sacct --parsable2 without --noheader/-n, with "
                                    "-o JobID,Submit,Start,End,Elapsed,Partition,QOS,User,State,ReqTRES,AllocTRES");
    std::string missing;
    if (c.submit < 0) missing += " Submit";
    if (c.start < 0) missing += " Start";
    if (c.end < 0) missing += " End";
    if (c.partition < 0) missing += " Partition";
    if (c.state < 0) missing += " State";
    if (c.req_tres < 0 && c.alloc_tres < 0) missing += " ReqTRES|AllocTRES";
    if (!missing.empty()) input_error(source, lineno, "the header lacks required columns:" + missing);
    return c;
}

std::string_view field_of(const std::vector<std::string_view> &f, int c) {
    return c >= 0 ? trim(f[static_cast<size_t>(c)]) : std::string_view();
}

// The first record of JobID `label` (`id` as written), fields `f`.
JobRecords new_job(const std::string &label, std::string_view id, int64_t submit, const std::vector<std::string_view> &f,
                   const Columns &col, const std::string &source, uint64_t lineno) {
    JobRecords j;
    j.label = label;
    j.line = lineno;
    j.submit = submit;
    std::string_view partition = field_of(f, col.partition);
    if (partition.empty()) input_error(source, lineno, "job " + quote(label) + " has no Partition");
    for (const std::string &p : split_top_level(std::string(partition), ',')) {
        if (!valid_name(p)) input_error(source, lineno, "Partition " + quote(p) + ": " + kNameRule);
        j.pools.push_back(p);
    }
    if (col.qos >= 0) j.qos = std::string(field_of(f, col.qos));
    if (col.user >= 0) j.user = std::string(field_of(f, col.user));
    if (col.account >= 0) j.account = std::string(field_of(f, col.account));
    if (col.jobid_raw >= 0) {
        if (!parse_uint(field_of(f, col.jobid_raw), UINT32_MAX, &j.raw_id) || j.raw_id == 0)
            input_error(source, lineno, "JobIDRaw " + quote(std::string(field_of(f, col.jobid_raw))) +
                                            " is not a job id");
    } else {
        // A plain job, or a het job's leader (1234+0 is job 1234).
        std::string_view num = id.substr(0, id.find_first_of("_+"));
        bool plain = id.find('_') == std::string_view::npos &&
                     (id.find('+') == std::string_view::npos || id.substr(id.find('+')) == "+0");
        if (plain && !parse_uint(num, UINT32_MAX, &j.raw_id)) j.raw_id = 0;
    }
    return j;
}

// The jobs that ran, as the replay takes them (job ids, notes on what was
// skipped or changed), in submit order.
Workload to_workload(std::vector<JobRecords> &jobs, bool has_qos, const std::string &source, NoteTally &tally) {
    Workload w;
    if (!has_qos) w.notes.push_back("no QOS column: every job gets gpupool.conf's DefaultTier");

    uint64_t max_id = 0;
    for (const JobRecords &j : jobs) max_id = std::max(max_id, j.raw_id);
    std::unordered_set<uint64_t> used;
    uint64_t next_id = max_id;
    w.jobs.reserve(jobs.size());
    for (JobRecords &j : jobs) {
        if (!j.has_run) {
            if (j.last_state == "PENDING" || j.last_state == "REQUEUED" || j.last_state == "REQUEUE_HOLD" ||
                j.last_state == "REQUEUE_FED")
                tally.add("job[s] still pending at the dump: skipped", j.label);
            else
                tally.add("job[s] " + j.last_state + " before starting: skipped", j.label);
            continue;
        }
        if (j.gpus == 0) {
            tally.add("job[s] without GPUs (no gres/gpu in ReqTRES or AllocTRES): skipped", j.label);
            continue;
        }
        if (j.last_run < 0) {
            tally.add("job[s] running at the dump without an Elapsed column: skipped (add Elapsed)", j.label);
            continue;
        }
        if (j.last_run_open) tally.add("job[s] still running at the dump: replayed with the Elapsed so far", j.label);
        if (j.records > 1)
            tally.add("job[s] with several records (requeued): submit and recorded start from the first, run time "
                      "from the last run",
                      j.label);
        if (j.label.find('+') != std::string::npos)
            tally.add("heterogeneous job component[s]: replayed as jobs of their own", j.label);
        if (j.last_run == 0) {
            tally.add("job[s] that ran 0 s: replayed as 1 s", j.label);
            j.last_run = 1;
        }
        SimJob s;
        if (j.raw_id > 0 && used.insert(j.raw_id).second) {
            s.id = static_cast<uint32_t>(j.raw_id);
        } else {
            if (next_id >= UINT32_MAX) input_error(source, j.line, "more jobs than 32-bit job ids");
            s.id = static_cast<uint32_t>(++next_id);
            used.insert(next_id);
            tally.add("job[s] without a numeric job id (array tasks, het job components; add the JobIDRaw column): "
                      "numbered from " + std::to_string(max_id + 1),
                      j.label);
        }
        s.label = std::move(j.label);
        s.submit = j.submit;
        s.duration = j.last_run;
        s.gpus = j.gpus;
        s.pools = std::move(j.pools);
        s.qos = std::move(j.qos);
        s.user = std::move(j.user);
        s.account = std::move(j.account);
        s.cpus = j.cpus;
        s.mem_mb = j.mem_mb;
        std::sort(j.runs.begin(), j.runs.end());
        s.recorded_start = j.runs.front().second;
        for (size_t k = 1; k < j.runs.size(); ++k) s.recorded_restarts.push_back(j.runs[k].second);
        w.jobs.push_back(std::move(s));
    }
    std::sort(w.jobs.begin(), w.jobs.end(), [](const SimJob &a, const SimJob &b) {
        return a.submit != b.submit ? a.submit < b.submit : a.id < b.id;
    });
    tally.emit(w.notes);
    return w;
}

// One run of `j` from a record (start, end and elapsed as sacct gave them;
// -1: none).  A start of -1 is a run whose start sacct lost; it has an end.
void add_run(JobRecords &j, int64_t start, int64_t end, int64_t elapsed) {
    j.runs.emplace_back(start >= 0 ? start : end, start);
    j.has_run = true;
    j.last_run_open = end < 0;
    j.last_run = elapsed >= 0                 ? elapsed
                 : end >= 0 && start >= 0 ? std::max<int64_t>(0, end - start)
                 : end >= 0               ? 0
                                          : -1;
}

}  // namespace

// Times and durations a dump may hold: 2^40 s (35,000 years).
constexpr int64_t kMaxSeconds = int64_t(1) << 40;

Workload parse_sacct(std::istream &in, const std::string &source) {
    NoteTally tally;
    cli::SlurmTimeReader times;
    Columns col;
    bool have_header = false;
    std::vector<JobRecords> jobs;
    std::unordered_map<std::string, size_t> by_label;
    std::string line;
    std::vector<std::string_view> f;
    uint64_t lineno = 0;

    auto field = [&](int c) { return field_of(f, c); };
    auto time_of = [&](int c, const char *name) {
        int64_t t = -1;
        if (!times.parse(field(c), &t))
            input_error(source, lineno, std::string(name) + " " + quote(std::string(field(c))) +
                                            " is not a time: expected YYYY-MM-DDTHH:MM:SS (SLURM_TIME_FORMAT=standard) "
                                            "or seconds since the epoch (SLURM_TIME_FORMAT=%s)");
        // The replay adds durations to times in int64: bound both, as the
        // Alibaba reader does, so no sum overflows.
        if (t > kMaxSeconds)
            input_error(source, lineno, std::string(name) + " " + quote(std::string(field(c))) +
                                            " is too far ahead (at most 2^40 s after the epoch)");
        return t;
    };

    while (std::getline(in, line)) {
        ++lineno;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (trim(line).empty()) continue;  // blank lines, before the header too (sacct's output may start with one)
        if (!have_header) {
            col = read_header(line, source, lineno);
            have_header = true;
            continue;
        }
        split(line, '|', f);
        if (col.trailing && f.size() > 1 && f.back().empty()) f.pop_back();
        if (f.size() != col.count)
            input_error(source, lineno, std::to_string(f.size()) + " fields where the header has " +
                                            std::to_string(col.count) + " (a '|' in a job name? leave JobName out)");
        std::string_view id = col.jobid >= 0 ? field(col.jobid) : field(col.jobid_raw);
        if (!valid_job_id(id))
            input_error(source, lineno, "JobID " + quote(std::string(id)) + " is not a Slurm job id");
        if (id.find('.') != std::string_view::npos) continue;  // a step: part of its job

        std::string state = first_word(field(col.state));
        int64_t submit = time_of(col.submit, "Submit");
        int64_t start = time_of(col.start, "Start");
        int64_t end = time_of(col.end, "End");
        if (submit < 0) input_error(source, lineno, "Submit " + quote(std::string(field(col.submit))) + ": a job without a submit time");
        int64_t elapsed = -1;
        if (col.elapsed >= 0) {
            std::string e(field(col.elapsed));
            if (!e.empty() && e != "INVALID") {
                elapsed = cli::elapsed_seconds(e);
                if (elapsed < 0)
                    input_error(source, lineno, "Elapsed " + quote(e) + " is not a duration ([D-]HH:MM:SS)");
                if (elapsed > kMaxSeconds)
                    input_error(source, lineno, "Elapsed " + quote(e) + " is too long (at most 2^40 s)");
            }
        }
        int64_t gpus = -1;
        if (col.req_tres >= 0) gpus = tres_gpus(field(col.req_tres), source, lineno, "ReqTRES");
        if (gpus < 0 && col.alloc_tres >= 0) gpus = tres_gpus(field(col.alloc_tres), source, lineno, "AllocTRES");
        // A run: started, and (when sacct says) with resources allocated.  A
        // requeued job cancelled while pending gets a Start but no AllocTRES.
        // PREEMPTED with resources allocated and no Start: a run whose start
        // Slurm never sent to slurmdbd (22.05, a job preempted in the second
        // it started): it ran, its start is unknown.  (A job cancelled
        // pending may have an AllocTRES without GPUs and no Start too.)
        const bool allocated = col.alloc_tres >= 0 && !field(col.alloc_tres).empty();
        bool ran = start >= 0 ? col.alloc_tres < 0 || allocated : allocated && end >= 0 && state == "PREEMPTED";

        std::string label(id);
        auto [it, fresh] = by_label.emplace(label, jobs.size());
        if (fresh) jobs.push_back(new_job(label, id, submit, f, col, source, lineno));
        JobRecords &j = jobs[it->second];
        ++j.records;
        j.submit = std::min(j.submit, submit);
        if (j.gpus == 0 && gpus > 0) j.gpus = static_cast<uint32_t>(std::min<int64_t>(gpus, UINT32_MAX));
        if (j.cpus == 0 && j.mem_mb == 0) {
            const bool req = col.req_tres >= 0 && !field(col.req_tres).empty();
            const int c = req ? col.req_tres : col.alloc_tres;
            if (c >= 0) tres_cpus_mem(field(c), source, lineno, req ? "ReqTRES" : "AllocTRES", j.cpus, j.mem_mb);
        }
        j.last_state = state;
        if (ran) add_run(j, start, end, elapsed);
    }
    if (!have_header) input_error(source, 0, "empty: no header line and no jobs");
    return to_workload(jobs, col.qos >= 0, source, tally);
}

Workload read_sacct(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) input_error(path, 0, "cannot read the file");
    return parse_sacct(in, path);
}

}  // namespace gpupool::sim

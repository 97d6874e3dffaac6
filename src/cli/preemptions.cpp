#include "preemptions.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <sstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "events.hpp"

namespace gpupool::cli {

namespace {

bool exists(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

// The fields the event log and accounting both know.
PreemptionRecord record(int64_t time, uint32_t preemptor_job_id, const std::string &preemptor_pool,
                        const std::string &rule, uint64_t gpu_seconds_lost, const std::string &victim_pool) {
    PreemptionRecord r;
    r.time = time;
    r.preemptor_job_id = preemptor_job_id;
    r.preemptor_pool = preemptor_pool;
    r.rule = rule;
    r.gpu_seconds_lost = gpu_seconds_lost;
    r.victim_pool = victim_pool;
    return r;
}

PreemptionRecord from_event(const PreemptionEvent &e) {
    PreemptionRecord r = record(e.time, e.preemptor_job_id, e.preemptor_pool, e.rule, e.gpu_seconds_lost(), e.victim_pool);
    r.preemptor_tier = e.preemptor_tier;
    r.mode = e.mode;
    r.gpus = e.victim_gpus;
    r.why = e.why;
    return r;
}

}  // namespace

bool read_event_log(const std::string &path, uint32_t job_id, std::vector<PreemptionRecord> &out,
                    std::vector<std::string> &notes, std::string &unreadable) {
    // Rotated files: path.1 is the newest of them.  Read oldest first.
    std::vector<std::string> files;
    for (int i = 1; i <= 1000 && exists(path + "." + std::to_string(i)); ++i) files.push_back(path + "." + std::to_string(i));
    files.insert(files.begin(), path);
    bool readable = true;
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
        const std::string &f = *it;
        FILE *fp = std::fopen(f.c_str(), "rb");
        if (!fp) {
            if (errno == ENOENT && f == path) continue;  // nothing logged yet
            if (unreadable.empty()) unreadable = f + ": " + std::strerror(errno);
            readable = false;
            continue;
        }
        std::string text;
        const bool failed = !read_all(fp, text);  // events.hpp
        std::fclose(fp);
        if (failed) {
            if (unreadable.empty()) unreadable = f + ": read error";
            readable = false;
        }
        std::istringstream in(text);
        std::string line;
        size_t n = 0;
        while (std::getline(in, line)) {
            ++n;
            // Cheap filter: only lines naming the job are parsed.
            if (line.find("\"victim_job_id\":" + std::to_string(job_id)) == std::string::npos) continue;
            PreemptionEvent e;
            try {
                if (!event_from_json(line, e) || e.victim_job_id != job_id) continue;
            } catch (const std::exception &ex) {
                notes.push_back(f + ":" + std::to_string(n) + ": " + ex.what() + "; line skipped");
                continue;
            }
            out.push_back(from_event(e));
        }
    }
    return readable;
}

std::vector<PreemptionRecord> preemptions_from_comments(
    const std::vector<std::pair<std::string, std::string>> &records) {
    std::vector<PreemptionRecord> out;
    std::set<std::tuple<int64_t, uint32_t, std::string>> seen;
    for (const auto &[partition, comment] : records)
        for (const CommentPreemption &c : parse_comment(comment)) {
            if (!seen.insert({c.time, c.preemptor_job_id, c.rule}).second) continue;
            // First seen on this record: the run preempted (`partition`).
            out.push_back(record(c.time, c.preemptor_job_id, c.preemptor_pool, c.rule, c.gpu_seconds_lost, partition));
        }
    return out;
}

}  // namespace gpupool::cli

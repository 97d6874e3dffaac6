#include "slurm_preemptions.hpp"

#include <algorithm>
#include <tuple>
#include <vector>

#include "preemptions.hpp"
#include "slurm_compat.hpp"

namespace gpupool::cli {

namespace {

std::string str(const char *s) { return s ? s : ""; }

struct AcctRecord {
    int64_t submit = 0, start = 0;
    std::string partition, comment, name, user, state;
};

// Every record of the job (sacct -D -j JOBID), oldest first; false with
// `why_not` when slurmdbd could not be asked.
bool accounting_records(uint32_t job_id, const ControllerConf &conf, int64_t now, std::vector<AcctRecord> &out,
                        std::string &why_not) {
    bool ok = for_each_job_record(
        {job_id}, conf, 0, now,
        [&](const slurmdb_job_rec_t &r) {
            if (r.jobid != job_id) return;
            AcctRecord a;
            a.submit = r.submit;
            a.start = r.start;
            a.partition = str(r.partition);
            a.comment = str(r.system_comment);
            a.name = str(r.jobname);
            a.user = user_name(r.user, r.uid);
            a.state = str(slurm_job_state_string(r.state));
            out.push_back(std::move(a));
        },
        why_not);
    std::stable_sort(out.begin(), out.end(), [](const AcctRecord &a, const AcctRecord &b) {
        return std::tie(a.submit, a.start) < std::tie(b.submit, b.start);
    });
    return ok;
}

}  // namespace

void load_preemptions(ClusterView &view, const ControllerConf &conf, uint32_t job_id, const std::string &events_path) {
    PreemptionHistory &h = view.preemptions;
    h.event_log = events_path.empty() ? conf.state_save + "/gpupool_events.jsonl" : events_path;
    std::string unreadable = h.event_log == "none" ? "not read (--events=none)" : "";
    if (h.event_log != "none") read_event_log(h.event_log, job_id, h.records, view.notes, unreadable);
    if (!h.records.empty()) h.source = "event_log";

    // A job slurmctld still has and never requeued was never preempted
    // (a cancelled one is gone from its queue).
    const JobMeta *m = view.job(job_id);
    uint32_t restarts = 0;
    for (const SnapJob &j : view.snap.jobs)
        if (j.id == job_id) restarts = j.restart_cnt;
    if (m && (!h.records.empty() || restarts == 0)) return;

    std::vector<AcctRecord> recs;
    std::string why_not;
    if (!accounting_records(job_id, conf, view.now, recs, why_not)) {
        if (h.records.empty())
            view.notes.push_back("preemptions of job " + std::to_string(job_id) + " unknown (event log " +
                                 (unreadable.empty() ? "names none" : unreadable) + "; accounting: " + why_not + ")");
        return;
    }
    if (!recs.empty()) {
        const AcctRecord &last = recs.back();
        h.in_accounting = true;
        h.name = last.name;
        h.user = last.user;
        h.state = last.state;
        h.partition = last.partition;
    }
    if (h.records.empty()) {
        std::vector<std::pair<std::string, std::string>> comments;
        for (const AcctRecord &a : recs) comments.emplace_back(a.partition, a.comment);
        h.records = preemptions_from_comments(comments);
        if (!h.records.empty()) h.source = "accounting";
    }
}

}  // namespace gpupool::cli

#include "slurm_preemptions.hpp"

#include <pwd.h>

#include <algorithm>
#include <cstring>
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

std::string user_name(const slurmdb_job_rec_t &r) {
    if (r.user && *r.user) return r.user;
    struct passwd pw, *res = nullptr;
    char buf[4096];
    if (getpwuid_r(r.uid, &pw, buf, sizeof buf, &res) == 0 && res) return pw.pw_name;
    return std::to_string(r.uid);
}

// Every record of the job (sacct -D -j JOBID), oldest first; false with
// `why_not` when slurmdbd could not be asked.
bool accounting_records(uint32_t job_id, const ControllerConf &conf, int64_t now, std::vector<AcctRecord> &out,
                        std::string &why_not) {
    uint16_t flags = 0;
    void *db = slurmdb_connection_get(&flags);
    if (!db) {
        why_not = "slurmdbd not reachable";
        return false;
    }
    slurm_selected_step_t step;
    std::memset(&step, 0, sizeof step);
    step.array_task_id = NO_VAL;
    step.het_job_offset = NO_VAL;
    step.step_id.job_id = job_id;
    step.step_id.step_id = NO_VAL;
    step.step_id.step_het_comp = NO_VAL;
    // Our lists own nothing: the items live here and in `conf`.
    compat::list_ptr step_list = slurm_list_create(nullptr);
    slurm_list_append(step_list, &step);
    compat::list_ptr cluster_list = slurm_list_create(nullptr);
    std::string cluster = conf.cluster;
    if (!cluster.empty()) slurm_list_append(cluster_list, cluster.data());
    slurmdb_job_cond_t cond;
    std::memset(&cond, 0, sizeof cond);
    cond.flags = JOBCOND_FLAG_DUP | JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_DEFAULT_USAGE;
    cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;  // 0 would select records with no flag bit set: none
    cond.step_list = step_list;
    cond.cluster_list = cluster.empty() ? nullptr : cluster_list;
    cond.usage_start = 0;
    cond.usage_end = static_cast<time_t>(now);
    compat::list_ptr recs = slurmdb_jobs_get(db, &cond);
    bool ok = true;
    if (!recs) {
        why_not = "slurmdbd gave no job records";
        ok = false;
    } else {
        compat::list_itr_ptr it = slurm_list_iterator_create(recs);
        while (auto *r = static_cast<slurmdb_job_rec_t *>(slurm_list_next(it))) {
            if (r->jobid != job_id) continue;
            AcctRecord a;
            a.submit = r->submit;
            a.start = r->start;
            a.partition = str(r->partition);
            a.comment = str(r->system_comment);
            a.name = str(r->jobname);
            a.user = user_name(*r);
            a.state = str(slurm_job_state_string(r->state));
            out.push_back(std::move(a));
        }
        slurm_list_iterator_destroy(it);
        slurm_list_destroy(recs);
        std::stable_sort(out.begin(), out.end(), [](const AcctRecord &a, const AcctRecord &b) {
            return std::tie(a.submit, a.start) < std::tie(b.submit, b.start);
        });
    }
    slurm_list_destroy(step_list);
    slurm_list_destroy(cluster_list);
    slurmdb_connection_close(&db);
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

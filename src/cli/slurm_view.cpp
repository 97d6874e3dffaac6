// libslurm -> ClusterView.  Each job, node and partition is mapped the way
// gps_snapshot_build() maps slurmctld's own records, from the structures
// slurmctld sends its clients (job_info_t, node_info_t, partition_info_t).
#include "slurm_view.hpp"

#include <pwd.h>
#include "slurm_compat.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "gpupool.h"
#include "slurm_text.hpp"

namespace gpupool::cli {

namespace {

std::string str(const char *s) { return s ? s : ""; }

[[noreturn]] void fail(const std::string &what) {
    throw std::runtime_error(what + ": " + slurm_strerror(compat::slurm_errno()));
}

// gps_snapshot_build's _node_unusable: DOWN, FUTURE or DRAINED (drain set
// and nothing allocated) nodes count no capacity.
bool node_unusable(const node_info_t &n) {
    uint32_t base = n.node_state & NODE_STATE_BASE;
    if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE) return true;
    bool drain = n.node_state & NODE_STATE_DRAIN;
    bool busy = base == NODE_STATE_ALLOCATED || base == NODE_STATE_MIXED;
    return drain && !busy;
}

// gps_job_state: -1 for jobs that hold and want nothing.
int job_state(const slurm_job_info_t &j) {
    if (j.job_state & JOB_REVOKED) return -1;
    switch (j.job_state & JOB_STATE_BASE) {
    case JOB_PENDING: return static_cast<int>(JobState::Pending);
    case JOB_RUNNING: return static_cast<int>(JobState::Running);
    case JOB_SUSPENDED: return static_cast<int>(JobState::Suspended);
    default: return -1;  // ended (maybe still completing): given back already
    }
}

// gps_job_gpus: allocated for jobs that hold resources, requested for the
// rest, from the TRES counts when QuotaTRES is an accounted TRES, else
// from the GRES requests.
uint32_t job_gpus(const slurm_job_info_t &j, bool allocated, const std::string &quota_tres,
                  const std::string &gres, const std::string &type) {
    std::optional<uint64_t> n;
    if (allocated && j.tres_alloc_str) n = tres_count(j.tres_alloc_str, quota_tres);
    if (!n && j.tres_req_str) n = tres_count(j.tres_req_str, quota_tres);
    if (!n) {
        // Not an accounted TRES: the job's own request.
        uint64_t total = 0;
        if (j.tres_per_job)
            if (auto c = gres_count(j.tres_per_job, gres, type)) total += *c;
        if (j.tres_per_node)
            if (auto c = gres_count(j.tres_per_node, gres, type)) total += *c * std::max<uint32_t>(1, j.num_nodes);
        if (j.tres_per_task)
            if (auto c = gres_count(j.tres_per_task, gres, type)) total += *c * std::max<uint32_t>(1, j.num_tasks);
        n = total;
    }
    return *n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(*n);
}

// gps_hold_is_ours (src/plugins/common/gpupool_hold.c): pending, priority 0, WAIT_HELD (or no
// reason) with gpupool's reason text.
bool our_hold(const slurm_job_info_t &j) {
    if (j.priority != 0) return false;
    if (j.state_reason != WAIT_HELD && j.state_reason != WAIT_NO_REASON) return false;
    return j.state_desc && std::strncmp(j.state_desc, GP_HOLD_PREFIX, sizeof(GP_HOLD_PREFIX) - 1) == 0;
}

bool not_eligible(const slurm_job_info_t &j) {
    switch (j.state_reason) {
    case WAIT_DEPENDENCY:
    case WAIT_DEP_INVALID:
    case WAIT_TIME:
    case WAIT_PART_DOWN:
    case WAIT_PART_INACTIVE: return true;
    default: return false;
    }
}

std::string user_name(const slurm_job_info_t &j) {
    if (j.user_name && *j.user_name) return j.user_name;
    struct passwd pw, *res = nullptr;
    char buf[4096];
    if (getpwuid_r(j.user_id, &pw, buf, sizeof buf, &res) == 0 && res) return pw.pw_name;
    return std::to_string(j.user_id);
}

}  // namespace

ControllerConf load_controller_conf() {
    slurm_conf_t *c = nullptr;
    if (slurm_load_ctl_conf(0, &c) != SLURM_SUCCESS) fail("cannot read slurmctld's configuration");
    ControllerConf out;
    out.cluster = str(c->cluster_name);
    out.slurm_conf = str(c->slurm_conf);
    out.state_save = str(c->state_save_location);
    out.private_jobs = c->private_data & PRIVATE_DATA_JOBS;
    compat::free_ctl_conf(c);
    return out;
}

void load_cluster(ClusterView &view, const std::string &quota_tres, const ControllerConf &conf) {
    std::string gres, type;
    split_quota_tres(quota_tres, gres, type);

    node_info_msg_t *nodes = nullptr;
    if (slurm_load_node(0, &nodes, SHOW_ALL) != SLURM_SUCCESS) fail("cannot read nodes");
    // Node table index -> snapshot index (-1: an empty slot of the table).
    std::vector<int32_t> node_map(nodes->record_count, -1);
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
        const node_info_t &n = nodes->node_array[i];
        if (!n.name) continue;
        uint64_t gpus = 0;
        if (!node_unusable(n) && n.gres) gpus = gres_count(n.gres, gres, type).value_or(0);
        node_map[i] = view.snap.add_node(n.name, gpus > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(gpus));
    }
    slurm_free_node_info_msg(nodes);

    partition_info_msg_t *parts = nullptr;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS) fail("cannot read partitions");
    for (uint32_t i = 0; i < parts->record_count; ++i) {
        const partition_info_t &p = parts->partition_array[i];
        if (!p.name) continue;
        std::vector<int32_t> idx;
        // node_inx: pairs of first/last node table index, then -1.
        for (int k = 0; p.node_inx && p.node_inx[k] >= 0; k += 2)
            for (int32_t n = p.node_inx[k]; n <= p.node_inx[k + 1]; ++n)
                if (n >= 0 && size_t(n) < node_map.size() && node_map[size_t(n)] >= 0) idx.push_back(node_map[size_t(n)]);
        view.snap.add_partition(p.name, std::move(idx));
    }
    slurm_free_partition_info_msg(parts);

    job_info_msg_t *jobs = nullptr;
    if (slurm_load_jobs(0, &jobs, SHOW_ALL) != SLURM_SUCCESS) fail("cannot read jobs");
    for (uint32_t i = 0; i < jobs->record_count; ++i) {
        const slurm_job_info_t &j = jobs->job_array[i];
        int state = job_state(j);
        if (state < 0) continue;
        SnapJob sj;
        sj.id = j.job_id;
        sj.state = static_cast<JobState>(state);
        // Running: the one partition it runs in (Slurm rebuilds the field
        // then); pending: every partition it may run in.
        sj.partitions = split_list(str(j.partition));
        sj.qos = str(j.qos);
        sj.gpus = job_gpus(j, sj.state != JobState::Pending, quota_tres, gres, type);
        sj.submit_time = j.submit_time > 0 ? int64_t(j.submit_time) : view.now;
        sj.start_time = j.start_time;
        sj.restart_cnt = j.restart_cnt;
        if (sj.state == JobState::Pending && j.array_task_id == NO_VAL && j.array_bitmap) {
            int64_t tasks = slurm_bit_set_count(static_cast<bitstr_t *>(j.array_bitmap));
            if (tasks > 1) sj.array_tasks = static_cast<uint32_t>(std::min<int64_t>(tasks, UINT32_MAX));
        }
        sj.array_job_id = j.array_job_id;
        // Priority 0 that is not gpupool's quota hold: the user's or an
        // admin's hold, never undone.
        sj.user_held = sj.state == JobState::Pending && j.priority == 0 && !our_hold(j);

        JobMeta m;
        m.name = str(j.name);
        m.user = user_name(j);
        m.partition = str(j.partition);
        m.state = str(slurm_job_state_string(j.job_state));
        // As squeue's %r: the reason's text when Slurm (or gpupool) set one.
        m.slurm_reason = j.state_desc && *j.state_desc
                             ? str(j.state_desc)
                             : str(compat::job_reason_string(static_cast<job_state_reason>(j.state_reason)));
        m.state_desc = str(j.state_desc);
        m.slurm_priority = j.priority;
        m.array_job_id = j.array_job_id;
        if (j.array_job_id) {
            if (j.array_task_id != NO_VAL)
                m.array_task = std::to_string(j.array_task_id);
            else
                m.array_task = str(j.array_task_str);
        }
        m.submit_time = j.submit_time;
        m.start_time = j.start_time;
        if (sj.state == JobState::Pending && not_eligible(j)) view.not_eligible.insert(j.job_id);
        view.meta.emplace(j.job_id, std::move(m));
        view.snap.add_job(std::move(sj));
    }
    slurm_free_job_info_msg(jobs);

    if (conf.private_jobs && getuid() != 0)
        view.notes.push_back("PrivateData=jobs: only the jobs you may see are counted; figures of other users' jobs "
                             "are missing");
}

std::unordered_map<uint32_t, int64_t> first_submit_times(const std::vector<uint32_t> &jobs, int64_t since,
                                                         int64_t until, const ControllerConf &conf,
                                                         std::string &why_not) {
    std::unordered_map<uint32_t, int64_t> out;
    std::vector<slurm_selected_step_t> steps;
    for (uint32_t id : jobs) {
        slurm_selected_step_t s;
        std::memset(&s, 0, sizeof s);
        s.array_task_id = NO_VAL;
        s.het_job_offset = NO_VAL;
        s.step_id.job_id = id;
        s.step_id.step_id = NO_VAL;
        s.step_id.step_het_comp = NO_VAL;
        steps.push_back(s);
    }
    if (steps.empty()) return out;

    uint16_t flags = 0;
    void *db = slurmdb_connection_get(&flags);
    if (!db) {
        why_not = "slurmdbd not reachable";
        return out;
    }
    // Our lists own nothing: the items live in `steps` and `conf`.
    compat::list_ptr step_list = slurm_list_create(nullptr);
    for (slurm_selected_step_t &s : steps) slurm_list_append(step_list, &s);
    compat::list_ptr cluster_list = slurm_list_create(nullptr);
    std::string cluster = conf.cluster;
    if (!cluster.empty()) slurm_list_append(cluster_list, cluster.data());
    slurmdb_job_cond_t cond;
    std::memset(&cond, 0, sizeof cond);
    // With a job list, slurmdbd applies the window only without
    // NO_DEFAULT_USAGE: records submitted before `until` that ended at or
    // after `since` (or run still).  since 0: every record.
    cond.flags = JOBCOND_FLAG_DUP | JOBCOND_FLAG_NO_STEP | (since > 0 ? 0 : JOBCOND_FLAG_NO_DEFAULT_USAGE);
    cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;  // 0 would select jobs with no flag bit set: none
    cond.step_list = step_list;
    cond.cluster_list = cluster.empty() ? nullptr : cluster_list;
    cond.usage_start = static_cast<time_t>(since);
    cond.usage_end = static_cast<time_t>(until + 1);  // [since, until]
    compat::list_ptr recs = slurmdb_jobs_get(db, &cond);
    if (!recs) {
        why_not = "slurmdbd gave no job records";
    } else {
        compat::list_itr_ptr it = slurm_list_iterator_create(recs);
        while (auto *r = static_cast<slurmdb_job_rec_t *>(slurm_list_next(it))) {
            if (r->submit <= 0) continue;
            auto [pos, fresh] = out.emplace(r->jobid, int64_t(r->submit));
            if (!fresh) pos->second = std::min<int64_t>(pos->second, r->submit);
        }
        slurm_list_iterator_destroy(it);
        slurm_list_destroy(recs);
    }
    slurm_list_destroy(step_list);
    slurm_list_destroy(cluster_list);
    slurmdb_connection_close(&db);
    return out;
}

}  // namespace gpupool::cli

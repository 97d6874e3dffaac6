// `gpupool queue`: pending jobs in gpupool's order, as a table or JSON.
#include <algorithm>
#include <ostream>

#include "command_pass.hpp"
#include "slurm_text.hpp"

namespace gpupool::cli {

namespace {

// What queue shows: the pending jobs asked for (-p, -u) in the pass's
// order, and the jobs slurmctld's last pass ranks differently.
struct QueueModel {
    int only = -1;                            // -p's pool index, -1 for all
    std::vector<const PendingExplain *> jobs;
    std::vector<uint32_t> disagreements;
};

bool selected(const Pass &p, const PendingExplain &pe, const Options &opt, int only_pool) {
    if (only_pool >= 0 && std::find(pe.pools.begin(), pe.pools.end(), only_pool) == pe.pools.end()) return false;
    if (!opt.user.empty()) {
        const JobMeta *m = p.view.job(pe.job_id);
        if (!m || m->user != opt.user) return false;
    }
    return true;
}

// Does slurmctld's last pass order the jobs gpupool ranks (not held) the
// way this pass does?  Slurm's priorities are that pass's ranks.
std::vector<uint32_t> order_disagreements(const Pass &p) {
    std::vector<std::pair<uint32_t, uint32_t>> ranked;  // (slurm priority, id) in this pass's order
    for (const PendingExplain &pe : p.x.pending) {
        if (pe.position < 0) continue;
        const PendingResult *r = p.engine.pending_result(pe.job_id);
        const JobMeta *m = p.view.job(pe.job_id);
        if (!r || !m || r->priority == 0 || m->slurm_priority == 0) continue;
        ranked.emplace_back(m->slurm_priority, pe.job_id);
    }
    std::vector<uint32_t> out;
    for (size_t i = 1; i < ranked.size(); ++i)
        if (ranked[i].first >= ranked[i - 1].first) out.push_back(ranked[i].second);
    return out;
}

QueueModel queue_model(const Pass &p, const Options &opt, int only) {
    QueueModel q;
    q.only = only;
    for (const PendingExplain &pe : p.x.pending)
        if (selected(p, pe, opt, only)) q.jobs.push_back(&pe);
    q.disagreements = order_disagreements(p);
    return q;
}

void queue_json(const Pass &p, const QueueModel &q, std::ostream &out) {
    JsonPtr root = document(p, "queue");
    json_t *jobs = json_array();
    for (const PendingExplain *pe : q.jobs) json_array_append_new(jobs, pending_json(p, *pe));
    put(root.get(), "jobs", jobs);
    put(root.get(), "order_agrees", json_boolean(q.disagreements.empty()));
    add_warnings(p, root.get());
    print_json(out, root.get());
}

void queue_table(const Pass &p, const QueueModel &q, std::ostream &out) {
    Table t({"POS", "POOL_POS", "JOBID", "PARTITION", "NAME", "USER", "TIER", "GPUS", "WAIT", "PRIORITY", "REASON"},
            "rllllllrrrl");
    for (const PendingExplain *pe : q.jobs) {
        const JobMeta *m = p.view.job(pe->job_id);
        const PendingResult *r = p.engine.pending_result(pe->job_id);
        std::string pool_pos = "-";
        for (const auto &[pool, n] : pe->pool_position)
            if (q.only < 0 || pool == q.only) {
                pool_pos = p.pool_name(pool) + ":" + num(n + 1);
                break;
            }
        std::string name = m ? m->name.substr(0, 12) : "";
        t.add({pe->position >= 0 ? num(pe->position + 1) : "-", pool_pos, p.job_label(pe->job_id),
               m ? m->partition : "", name, p.user_of(pe->job_id), p.tier_name(pe->tier), num(pe->pending_gpus()),
               m ? slurm_duration(p.view.now - m->submit_time) : "", num(r ? r->priority : 0), reason_text(p, *pe)});
    }
    t.print(out);
}

}  // namespace

int cmd_queue(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, 0);
    int only;
    if (!pool_option(p, opt, err, only)) return 1;
    const QueueModel q = queue_model(p, opt, only);
    if (!q.disagreements.empty()) {
        std::vector<std::string> ids;
        for (uint32_t id : q.disagreements) ids.push_back(std::to_string(id));
        err << "gpupool: note: slurmctld's last pass ranks job(s) " << joined(ids) << " differently (a pass is due"
            << (view.history.available ? "" : ", or the usage history this view lacks orders pools differently")
            << ")\n";
    }
    (opt.json ? queue_json : queue_table)(p, q, out);
    return 0;
}

}  // namespace gpupool::cli

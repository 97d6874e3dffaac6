#include "command_pass.hpp"

#include <algorithm>
#include <ostream>

#include "queue_figures.hpp"
#include "slurm_text.hpp"

namespace gpupool::cli {

std::vector<std::string> Pass::pool_names(const std::vector<int> &pools) const {
    std::vector<std::string> names;
    for (int q : pools) names.push_back(pool_name(q));
    return names;
}

std::string Pass::job_label(uint32_t id) const {
    const JobMeta *m = view.job(id);
    if (!m || !m->array_job_id || m->array_task.empty()) return std::to_string(id);
    bool range = m->array_task.find_first_of("-,%:") != std::string::npos;
    return std::to_string(m->array_job_id) + "_" + (range ? "[" + m->array_task + "]" : m->array_task);
}

Pass run_pass(Engine &engine, const ClusterView &view, uint32_t detail_job) {
    engine.evaluate(view.snap, view.now);
    ExplainInput in;
    in.not_eligible = view.not_eligible;
    in.detail_job = detail_job;
    Pass p{engine, view, explain(engine, view.snap, in, view.now)};
    p.usage_known = view.history.available;
    p.fairshare_known = view.history.available || engine.config().usage_weight == 0;
    return p;
}

bool pool_option(const Pass &p, const Options &opt, std::ostream &err, int &only) {
    only = -1;
    if (opt.pool.empty()) return true;
    only = p.pool_index(opt.pool);
    if (only < 0) err << "gpupool: no pool " << opt.pool << " in " << p.view.conf_path << "\n";
    return only >= 0;
}

namespace {

json_t *history_json(const ClusterView &v) {
    json_t *h = json_object();
    put(h, "available", json_boolean(v.history.available));
    put(h, "path", jstr(v.history.path));
    put(h, "saved_at", v.history.available && v.history.saved_at ? jint(v.history.saved_at) : json_null());
    put(h, "error", v.history.error.empty() ? json_null() : jstr(v.history.error));
    return h;
}

}  // namespace

JsonPtr document(const Pass &p, const char *command) {
    JsonPtr root(json_object());
    put(root.get(), "command", json_string(command));
    put(root.get(), "version", json_integer(kJsonVersion));
    put(root.get(), "now", jint(p.view.now));
    put(root.get(), "cluster", jstr(p.view.cluster));
    put(root.get(), "config", jstr(p.view.conf_path));
    put(root.get(), "usage_history", history_json(p.view));
    return root;
}

void add_warnings(const Pass &p, json_t *root) {
    json_t *w = jstr_array(p.engine.warnings());
    for (const std::string &s : p.view.notes) json_array_append_new(w, jstr(s));
    put(root, "warnings", w);
}

json_t *pool_gpus_json(const Pass &p, const std::vector<PoolGpus> &v) {
    return jarray_of(v, [&](json_t *o, const PoolGpus &g) {
        put(o, "pool", g.pool >= 0 ? jstr(p.pool_name(g.pool)) : json_null());
        put(o, "gpus", jint(g.gpus));
    });
}

std::string pool_gpus_text(const Pass &p, const std::vector<PoolGpus> &v) {
    std::vector<std::string> items;
    for (const PoolGpus &g : v)
        items.push_back((g.pool >= 0 ? p.pool_name(g.pool) : std::string("(unassigned)")) + ":" + num(g.gpus));
    return items.empty() ? "-" : joined(items);
}

std::string queue_quota_text(const Pass &p, const QuotaLine &q) {
    const QueueTree &tree = *p.ev().pools[size_t(q.pool)].queues.tree;
    const Resource r = q.resource;
    // The pool's own CPU or memory quota (queue 0): "pool1 cpu 6/8".
    const std::string queue = q.queue > 0 ? "/" + tree.queues[size_t(q.queue)].name : "";
    std::string text = p.pool_name(q.pool) + queue + " " + resource_word(r) + " ";
    for (const QueueCheck &k : q.checks)
        if (k.queue == q.queue && k.resource == r && k.never_fits())
            return text + "quota " + amount_text(r, k.quota) + " < " + amount_text(r, k.job);
    return text + amount_text(r, q.queue_used) + "/" + amount_text(r, q.queue_quota);
}

std::string reason_text(const Pass &p, const PendingExplain &pe) {
    std::string pool = p.pool_name(pe.reason_pool);
    const JobMeta *m = p.view.job(pe.job_id);
    auto line_of = [&](int pool_ix) -> const QuotaLine * {
        for (const QuotaLine &q : pe.quota)
            if (q.pool == pool_ix) return &q;
        return nullptr;
    };
    auto victims = [&]() {
        std::vector<std::string> labels;
        for (const VictimRef &v : pe.victims) labels.push_back(p.job_label(v.job_id));
        return joined(labels);
    };
    std::string base = wait_reason_text(pe.reason);
    if (pe.held_with)  // the quota line, if any, is of the component that did not fit
        return base + " in " + pool + ": held with job " + std::to_string(pe.held_with) +
               ", the component of its heterogeneous job that did not fit";
    const QuotaLine *q = line_of(pe.reason_pool);
    if (q && q->queue_blocked && (pe.reason == WaitReason::QuotaFull || pe.reason == WaitReason::QuotaTooSmall))
        return base + ": " + queue_quota_text(p, *q);
    switch (pe.reason) {
    case WaitReason::QuotaFull:
        if (q) return base + ": " + pool + " " + num(q->np_used + q->reserved) + "/" + num(q->quota);
        return base;
    case WaitReason::QuotaTooSmall:
        if (q) return base + ": " + pool + " quota " + num(q->quota) + " < " + num(q->gpus) + " GPUs";
        return base;
    case WaitReason::WaitingForReclaim: {
        bool reclaim = !pe.victims.empty() && pe.victims.front().rule == Rule::Reclaim;
        return std::string(reclaim ? "waiting for a reclaim" : "waiting for a preemption in " + pool) + " of " +
               victims();
    }
    case WaitReason::MinRuntime:
        return base + " of " + victims() + " until " + slurm_time(pe.protected_until);
    case WaitReason::NoOneNode:
        return base + ": " + num(pe.free_on_nodes) + (pe.free_on_nodes == 1 ? " GPU" : " GPUs") + " free over " + pool + "'s nodes, " +
               num(pe.most_free_on_a_node) + " at most on one" +
               (pe.most_free_on_a_node >= pe.gpus ? ", none with the CPUs and memory it asks" : "");
    case WaitReason::NotEligible:
        return m && !m->slurm_reason.empty() ? base + " (" + m->slurm_reason + ")" : base;
    default: return base;
    }
}

const char *admission_code(const Pass &p, const PendingExplain &pe) {
    if (pe.reason == WaitReason::Held) return "user_held";
    const PendingResult *r = p.engine.pending_result(pe.job_id);
    if (!r) return "free";
    switch (r->admission) {
    case Admission::Quota: return "admitted";
    case Admission::Held: return "held";
    default: return "free";
    }
}

json_t *pending_json(const Pass &p, const PendingExplain &pe) {
    const JobMeta *m = p.view.job(pe.job_id);
    const PendingResult *r = p.engine.pending_result(pe.job_id);
    json_t *o = json_object();
    put(o, "job_id", jint(pe.job_id));
    put(o, "job", jstr(p.job_label(pe.job_id)));
    put(o, "array_job_id", m && m->array_job_id ? jint(m->array_job_id) : json_null());
    put(o, "name", jstr(m ? m->name : ""));
    put(o, "user", jstr(p.user_of(pe.job_id)));
    put(o, "partition", jstr(m ? m->partition : ""));
    put(o, "pools", jstr_array(p.pool_names(pe.pools)));
    put(o, "tier", jstr(p.tier_name(pe.tier)));
    put_ints(o, {{"gpus", pe.gpus}, {"tasks", pe.tasks}, {"pending_gpus", static_cast<int64_t>(pe.pending_gpus())}});
    put(o, "position", pe.position >= 0 ? jint(pe.position + 1) : json_null());
    json_t *pp = json_object();
    for (const auto &[q, n] : pe.pool_position) put(pp, p.pool_name(q).c_str(), jint(n + 1));
    put(o, "pool_position", pp);
    put_ints(o, {{"priority", r ? r->priority : 0}, {"slurm_priority", m ? m->slurm_priority : 0}});
    put(o, "admission", json_string(admission_code(p, pe)));
    put(o, "submit_time", jint(m ? m->submit_time : 0));
    put(o, "orig_submit_time", r ? jint(r->orig_submit) : json_null());
    put(o, "wait", jint(m ? std::max<int64_t>(0, p.view.now - m->submit_time) : 0));
    put(o, "reason", json_string(wait_reason_code(pe.reason)));
    put(o, "reason_text", jstr(reason_text(p, pe)));
    put(o, "reason_pool", pe.reason_pool >= 0 ? jstr(p.pool_name(pe.reason_pool)) : json_null());
    put(o, "protected_until", pe.protected_until ? jint(pe.protected_until) : json_null());
    put(o, "slurm_reason", jstr(m ? m->slurm_reason : ""));
    if (pe.reason == WaitReason::NoOneNode)
        put_ints(o, {{"free_on_nodes", static_cast<int64_t>(pe.free_on_nodes)},
                     {"most_free_on_a_node", pe.most_free_on_a_node}});
    return o;
}

}  // namespace gpupool::cli

#include "commands.hpp"

#include <jansson.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "explain.hpp"
#include "slurm_text.hpp"
#include "json_ptr.hpp"

namespace gpupool::cli {

namespace {

// ------------------------------------------------------------------ JSON

using Json = JsonPtr;

json_t *jstr(const std::string &s) { return json_stringn(s.data(), s.size()); }
json_t *jint(int64_t v) { return json_integer(static_cast<json_int_t>(v)); }
void put(json_t *o, const char *key, json_t *v) { json_object_set_new(o, key, v ? v : json_null()); }

void print_json(std::ostream &out, json_t *root) {
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    if (text) {
        out << text << "\n";
        std::free(text);
    }
}

// ------------------------------------------------------------------ tables

// Columns two spaces apart; numbers right-aligned, text left-aligned, the
// way sinfo and squeue print.
class Table {
public:
    // `align`: one 'l' or 'r' per column.
    Table(std::vector<std::string> head, std::string align) : head_(std::move(head)), align_(std::move(align)) {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    bool empty() const { return rows_.empty(); }
    void print(std::ostream &out) const {
        std::vector<size_t> w(head_.size());
        for (size_t c = 0; c < head_.size(); ++c) w[c] = head_[c].size();
        for (const auto &r : rows_)
            for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
        auto line = [&](const std::vector<std::string> &r) {
            std::string s;
            for (size_t c = 0; c < head_.size(); ++c) {
                const std::string cell = c < r.size() ? r[c] : "";
                std::string pad(w[c] - std::min(w[c], cell.size()), ' ');
                if (c) s += "  ";
                s += align_[c] == 'r' ? pad + cell : cell + pad;
            }
            while (!s.empty() && s.back() == ' ') s.pop_back();
            out << s << "\n";
        };
        line(head_);
        for (const auto &r : rows_) line(r);
    }

private:
    std::vector<std::string> head_;
    std::string align_;
    std::vector<std::vector<std::string>> rows_;
};

std::string num(uint64_t v) { return std::to_string(v); }

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// ------------------------------------------------------------------ the pass

// Everything a command prints comes from here.
struct Pass {
    Engine &engine;
    const ClusterView &view;
    Explanation x;
    bool usage_known = false;      // decayed usage figures
    bool fairshare_known = false;  // fairshare (depends on usage when UsageWeight > 0)

    const Config &cfg() const { return engine.config(); }
    const Evaluation &ev() const { return engine.last(); }
    std::string pool_name(int p) const { return p >= 0 ? ev().pools[static_cast<size_t>(p)].name : ""; }
    std::string tier_name(int t) const { return t >= 0 ? cfg().tiers[static_cast<size_t>(t)].name : ""; }
    int pool_index(const std::string &name) const {
        auto it = ev().pool_index.find(name);
        return it == ev().pool_index.end() ? -1 : it->second;
    }
    std::string user_of(uint32_t id) const {
        const JobMeta *m = view.job(id);
        return m && !m->user.empty() ? m->user : "?";
    }
    // "123", "123_4", "123_[1-5%2]" as squeue's %i.
    std::string job_label(uint32_t id) const {
        const JobMeta *m = view.job(id);
        if (!m || !m->array_job_id || m->array_task.empty()) return std::to_string(id);
        bool range = m->array_task.find_first_of("-,%:") != std::string::npos;
        return std::to_string(m->array_job_id) + "_" + (range ? "[" + m->array_task + "]" : m->array_task);
    }
};

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

json_t *history_json(const ClusterView &v) {
    json_t *h = json_object();
    put(h, "available", json_boolean(v.history.available));
    put(h, "path", jstr(v.history.path));
    put(h, "saved_at", v.history.available && v.history.saved_at ? jint(v.history.saved_at) : json_null());
    put(h, "error", v.history.error.empty() ? json_null() : jstr(v.history.error));
    return h;
}

// priority/gpupool's passes (gpupool_stats.json); figures null when the
// file could not be read.
json_t *passes_json(const ClusterView &v) {
    const PluginPasses &pp = v.passes;
    const PassStats &s = pp.stats;
    const bool ok = pp.available;
    auto secs = [&](uint64_t us) { return ok ? json_real(static_cast<double>(us) / 1e6) : json_null(); };
    json_t *o = json_object();
    put(o, "available", json_boolean(ok));
    put(o, "path", jstr(pp.path));
    put(o, "error", pp.error.empty() ? json_null() : jstr(pp.error));
    put(o, "written_at", ok ? jint(s.written) : json_null());
    put(o, "passes", ok ? jint(s.passes) : json_null());
    put(o, "since", ok && s.passes ? jint(s.since) : json_null());
    put(o, "last_end", ok && s.passes ? jint(s.last_end) : json_null());
    put(o, "last_seconds", secs(s.last.total));
    put(o, "max_seconds", secs(s.max.total));
    put(o, "mean_seconds", ok && s.passes ? json_real(static_cast<double>(s.sum.total) / 1e6 / s.passes) : json_null());
    return o;
}

// "priority/gpupool: last pass 2.1 ms, ended ...": nothing when unknown.
void print_passes(const ClusterView &v, std::ostream &out) {
    const PassStats &s = v.passes.stats;
    if (!v.passes.available || s.passes == 0) return;
    auto ms = [](double us) { return fixed(us / 1000.0, 1) + " ms"; };
    out << "\npriority/gpupool: last pass " << ms(double(s.last.total)) << ", ended " << slurm_time(s.last_end) << "; "
        << s.passes << " passes since " << slurm_time(s.since) << ", mean " << ms(double(s.sum.total) / s.passes)
        << ", longest " << ms(double(s.max.total)) << "\n";
}

Json document(const Pass &p, const char *command) {
    Json root(json_object());
    put(root.get(), "command", json_string(command));
    put(root.get(), "version", json_integer(kJsonVersion));
    put(root.get(), "now", jint(p.view.now));
    put(root.get(), "cluster", jstr(p.view.cluster));
    put(root.get(), "config", jstr(p.view.conf_path));
    put(root.get(), "usage_history", history_json(p.view));
    return root;
}

void add_warnings(const Pass &p, json_t *root) {
    json_t *w = json_array();
    for (const std::string &s : p.engine.warnings()) json_array_append_new(w, jstr(s));
    for (const std::string &s : p.view.notes) json_array_append_new(w, jstr(s));
    put(root, "warnings", w);
}

json_t *pool_gpus_json(const Pass &p, const std::vector<PoolGpus> &v) {
    json_t *a = json_array();
    for (const PoolGpus &g : v) {
        json_t *o = json_object();
        put(o, "pool", g.pool >= 0 ? jstr(p.pool_name(g.pool)) : json_null());
        put(o, "gpus", jint(g.gpus));
        json_array_append_new(a, o);
    }
    return a;
}

// "pool2:1,(unassigned):1" or "-".
std::string pool_gpus_text(const Pass &p, const std::vector<PoolGpus> &v) {
    std::string s;
    for (const PoolGpus &g : v)
        s += (s.empty() ? "" : ",") + (g.pool >= 0 ? p.pool_name(g.pool) : std::string("(unassigned)")) + ":" +
             num(g.gpus);
    return s.empty() ? "-" : s;
}

// ------------------------------------------------------------------ status

int status(Pass &p, const Options &opt, std::ostream &out, std::ostream &err) {
    const Evaluation &ev = p.ev();
    int only = -1;
    if (!opt.pool.empty() && (only = p.pool_index(opt.pool)) < 0) {
        err << "gpupool: no pool " << opt.pool << " in " << p.view.conf_path << "\n";
        return 1;
    }
    auto shown = [&](size_t i) { return only < 0 || size_t(only) == i; };

    if (opt.json) {
        Json root = document(p, "status");
        json_t *tiers = json_array();
        for (const Tier &t : p.cfg().tiers) {
            json_t *o = json_object();
            put(o, "name", jstr(t.name));
            put(o, "priority", jint(t.priority));
            put(o, "preemptible", json_boolean(t.preemptible));
            json_array_append_new(tiers, o);
        }
        put(root.get(), "tiers", tiers);
        json_t *pools = json_array();
        for (size_t i = 0; i < ev.pools.size(); ++i) {
            if (!shown(i)) continue;
            const PoolState &ps = ev.pools[i];
            const PoolExplain &px = p.x.pools[i];
            json_t *o = json_object();
            put(o, "name", jstr(ps.name));
            put(o, "node_set", px.node_set >= 0 ? jint(px.node_set) : json_null());
            put(o, "shared", json_boolean(px.shared));
            put(o, "capacity", jint(ps.capacity));
            put(o, "quota", jint(ps.quota));
            put(o, "weight", jint(ps.weight));
            put(o, "min_runtime", jint(ps.min_runtime));
            put(o, "np_used", jint(ps.np_used));
            put(o, "p_used", jint(ps.p_used));
            put(o, "p_in_quota", jint(px.p_in_quota));
            put(o, "used", jint(ps.used()));
            put(o, "np_reserved", jint(ps.np_reserved));
            put(o, "borrowed", jint(ps.borrowed()));
            put(o, "borrowed_from", pool_gpus_json(p, px.borrowed_from));
            put(o, "lent", jint(ps.lent));
            put(o, "lent_to", pool_gpus_json(p, px.lent_to));
            put(o, "reclaimable", jint(px.reclaimable));
            put(o, "free_quota", jint(px.free_quota));
            put(o, "free_gpus", jint(px.free_gpus));
            put(o, "fairshare", p.fairshare_known ? jint(ps.fairshare) : json_null());
            put(o, "decayed_usage", p.usage_known ? json_real(ps.decayed_usage) : json_null());
            put(o, "usage_share", p.usage_known ? json_real(ps.usage_share) : json_null());
            put(o, "pending_jobs", jint(ps.pending_jobs));
            put(o, "pending_gpus", jint(ps.pending_gpus));
            put(o, "held_jobs", jint(ps.held_jobs));
            json_t *by_tier = json_array();
            for (size_t t = 0; t < p.cfg().tiers.size(); ++t) {
                json_t *bt = json_object();
                put(bt, "tier", jstr(p.cfg().tiers[t].name));
                put(bt, "jobs", jint(px.pending_jobs_by_tier[t]));
                put(bt, "gpus", jint(px.pending_gpus_by_tier[t]));
                json_array_append_new(by_tier, bt);
            }
            put(o, "pending_by_tier", by_tier);
            json_array_append_new(pools, o);
        }
        put(root.get(), "pools", pools);
        json_t *sets = json_array();
        for (const NodeSetExplain &ns : p.x.node_sets) {
            if (only >= 0 && std::find(ns.pools.begin(), ns.pools.end(), only) == ns.pools.end()) continue;
            json_t *o = json_object();
            put(o, "id", jint(ns.id));
            json_t *names = json_array();
            for (int q : ns.pools) json_array_append_new(names, jstr(p.pool_name(q)));
            put(o, "pools", names);
            put(o, "capacity", jint(ns.capacity));
            put(o, "quota", jint(ns.quota));
            put(o, "used", jint(ns.used));
            put(o, "free_gpus", jint(ns.free_gpus));
            put(o, "unassigned", jint(ns.unassigned));
            json_array_append_new(sets, o);
        }
        put(root.get(), "node_sets", sets);
        put(root.get(), "plugin_passes", passes_json(p.view));
        add_warnings(p, root.get());
        print_json(out, root.get());
        return 0;
    }

    Table main({"POOL", "CAPACITY", "QUOTA", "NP_USED", "P_USED", "P_IN_QUOTA", "FREE_QUOTA", "FREE_GPUS",
                "FAIRSHARE", "USAGE_GPU_H", "USAGE_SHARE", "WEIGHT"},
               "lrrrrrrrrrrr");
    Table borrow({"POOL", "USED", "QUOTA", "BORROWED", "FROM", "LENT", "TO", "RECLAIMABLE"}, "lrrrlrlr");
    std::string tier_head = "PENDING(";
    for (size_t t = 0; t < p.cfg().tiers.size(); ++t) tier_head += (t ? "/" : "") + p.cfg().tiers[t].name;
    tier_head += ")";
    Table pend({"POOL", "PENDING_JOBS", "PENDING_GPUS", "HELD", tier_head}, "lrrrl");
    bool any_shared = false;
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        if (!shown(i)) continue;
        const PoolState &ps = ev.pools[i];
        const PoolExplain &px = p.x.pools[i];
        any_shared |= px.shared;
        main.add({ps.name, num(ps.capacity) + (px.shared ? "*" : ""), num(ps.quota), num(ps.np_used), num(ps.p_used),
                  num(px.p_in_quota), num(px.free_quota), num(px.free_gpus),
                  p.fairshare_known ? num(ps.fairshare) : "?",
                  p.usage_known ? fixed(ps.decayed_usage / 3600.0, 1) : "?",
                  p.usage_known ? fixed(ps.usage_share, 3) : "?", num(ps.weight)});
        borrow.add({ps.name, num(ps.used()), num(ps.quota), num(ps.borrowed()), pool_gpus_text(p, px.borrowed_from),
                    num(ps.lent), pool_gpus_text(p, px.lent_to), num(px.reclaimable)});
        std::string per_tier;
        for (size_t t = 0; t < px.pending_jobs_by_tier.size(); ++t)
            per_tier += (t ? "/" : "") + num(px.pending_jobs_by_tier[t]);
        pend.add({ps.name, num(ps.pending_jobs), num(ps.pending_gpus), num(ps.held_jobs), per_tier});
    }
    main.print(out);
    if (any_shared) {
        Table sets({"NODE_SET", "POOLS", "CAPACITY", "QUOTA", "USED", "FREE_GPUS", "UNASSIGNED"}, "rlrrrrr");
        for (const NodeSetExplain &ns : p.x.node_sets) {
            if (ns.pools.size() < 2) continue;
            if (only >= 0 && std::find(ns.pools.begin(), ns.pools.end(), only) == ns.pools.end()) continue;
            std::string names;
            for (int q : ns.pools) names += (names.empty() ? "" : ",") + p.pool_name(q);
            sets.add({num(ns.id), names, num(ns.capacity), num(ns.quota), num(ns.used), num(ns.free_gpus),
                      num(ns.unassigned)});
        }
        out << "* shared: pools on the same nodes share their capacity; one line per node set:\n";
        sets.print(out);
    }
    out << "\n";
    borrow.print(out);
    out << "\n";
    pend.print(out);
    print_passes(p.view, out);
    return 0;
}

// ------------------------------------------------------------------ queue

std::string reason_text(const Pass &p, const PendingExplain &pe) {
    std::string pool = p.pool_name(pe.reason_pool);
    const JobMeta *m = p.view.job(pe.job_id);
    auto line_of = [&](int pool_ix) -> const QuotaLine * {
        for (const QuotaLine &q : pe.quota)
            if (q.pool == pool_ix) return &q;
        return nullptr;
    };
    auto victims = [&]() {
        std::string s;
        for (const VictimRef &v : pe.victims) s += (s.empty() ? "" : ",") + p.job_label(v.job_id);
        return s;
    };
    std::string base = wait_reason_text(pe.reason);
    switch (pe.reason) {
    case WaitReason::QuotaFull:
        if (const QuotaLine *q = line_of(pe.reason_pool))
            return base + ": " + pool + " " + num(q->np_used + q->reserved) + "/" + num(q->quota);
        return base;
    case WaitReason::QuotaTooSmall:
        if (const QuotaLine *q = line_of(pe.reason_pool))
            return base + ": " + pool + " quota " + num(q->quota) + " < " + num(q->gpus) + " GPUs";
        return base;
    case WaitReason::WaitingForReclaim: {
        bool reclaim = !pe.victims.empty() && pe.victims.front().rule == Rule::Reclaim;
        return std::string(reclaim ? "waiting for a reclaim" : "waiting for a preemption in " + pool) + " of " +
               victims();
    }
    case WaitReason::MinRuntime:
        return base + " of " + victims() + " until " + slurm_time(pe.protected_until);
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
    json_t *pools = json_array();
    for (int q : pe.pools) json_array_append_new(pools, jstr(p.pool_name(q)));
    put(o, "pools", pools);
    put(o, "tier", jstr(p.tier_name(pe.tier)));
    put(o, "gpus", jint(pe.gpus));
    put(o, "tasks", jint(pe.tasks));
    put(o, "pending_gpus", jint(static_cast<int64_t>(pe.pending_gpus())));
    put(o, "position", pe.position >= 0 ? jint(pe.position + 1) : json_null());
    json_t *pp = json_object();
    for (const auto &[q, n] : pe.pool_position) put(pp, p.pool_name(q).c_str(), jint(n + 1));
    put(o, "pool_position", pp);
    put(o, "priority", jint(r ? r->priority : 0));
    put(o, "slurm_priority", jint(m ? m->slurm_priority : 0));
    put(o, "admission", json_string(admission_code(p, pe)));
    put(o, "submit_time", jint(m ? m->submit_time : 0));
    put(o, "orig_submit_time", r ? jint(r->orig_submit) : json_null());
    put(o, "wait", jint(m ? std::max<int64_t>(0, p.view.now - m->submit_time) : 0));
    put(o, "reason", json_string(wait_reason_code(pe.reason)));
    put(o, "reason_text", jstr(reason_text(p, pe)));
    put(o, "reason_pool", pe.reason_pool >= 0 ? jstr(p.pool_name(pe.reason_pool)) : json_null());
    put(o, "protected_until", pe.protected_until ? jint(pe.protected_until) : json_null());
    put(o, "slurm_reason", jstr(m ? m->slurm_reason : ""));
    return o;
}

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

int queue(Pass &p, const Options &opt, std::ostream &out, std::ostream &err) {
    int only = -1;
    if (!opt.pool.empty() && (only = p.pool_index(opt.pool)) < 0) {
        err << "gpupool: no pool " << opt.pool << " in " << p.view.conf_path << "\n";
        return 1;
    }
    std::vector<uint32_t> off = order_disagreements(p);
    if (!off.empty()) {
        std::string ids;
        for (uint32_t id : off) ids += (ids.empty() ? "" : ",") + std::to_string(id);
        err << "gpupool: note: slurmctld's last pass ranks job(s) " << ids
            << " differently (a pass is due"
            << (p.view.history.available ? "" : ", or the usage history this view lacks orders pools differently")
            << ")\n";
    }
    if (opt.json) {
        Json root = document(p, "queue");
        json_t *jobs = json_array();
        for (const PendingExplain &pe : p.x.pending)
            if (selected(p, pe, opt, only)) json_array_append_new(jobs, pending_json(p, pe));
        put(root.get(), "jobs", jobs);
        put(root.get(), "order_agrees", json_boolean(off.empty()));
        add_warnings(p, root.get());
        print_json(out, root.get());
        return 0;
    }
    Table t({"POS", "POOL_POS", "JOBID", "PARTITION", "NAME", "USER", "TIER", "GPUS", "WAIT", "PRIORITY", "REASON"},
            "rllllllrrrl");
    for (const PendingExplain &pe : p.x.pending) {
        if (!selected(p, pe, opt, only)) continue;
        const JobMeta *m = p.view.job(pe.job_id);
        const PendingResult *r = p.engine.pending_result(pe.job_id);
        std::string pool_pos = "-";
        for (const auto &[q, n] : pe.pool_position)
            if (only < 0 || q == only) {
                pool_pos = p.pool_name(q) + ":" + num(n + 1);
                break;
            }
        std::string name = m ? m->name.substr(0, 12) : "";
        t.add({pe.position >= 0 ? num(pe.position + 1) : "-", pool_pos, p.job_label(pe.job_id),
               m ? m->partition : "", name, p.user_of(pe.job_id), p.tier_name(pe.tier), num(pe.pending_gpus()),
               m ? slurm_duration(p.view.now - m->submit_time) : "", num(r ? r->priority : 0), reason_text(p, pe)});
    }
    t.print(out);
    return 0;
}

// ------------------------------------------------------------------ why

// A job's preemptions (PreemptionHistory), oldest first.
json_t *preemptions_json(const PreemptionHistory &h) {
    json_t *a = json_array();
    for (const PreemptionRecord &r : h.records) {
        json_t *o = json_object();
        put(o, "time", jint(r.time));
        put(o, "preemptor_job_id", jint(r.preemptor_job_id));
        put(o, "preemptor_pool", jstr(r.preemptor_pool));
        put(o, "preemptor_tier", r.preemptor_tier.empty() ? json_null() : jstr(r.preemptor_tier));
        put(o, "victim_pool", r.victim_pool.empty() ? json_null() : jstr(r.victim_pool));
        put(o, "rule", jstr(r.rule));
        put(o, "mode", r.mode.empty() ? json_null() : jstr(r.mode));
        put(o, "gpus", r.gpus ? jint(*r.gpus) : json_null());
        put(o, "gpu_seconds_lost", jint(static_cast<int64_t>(r.gpu_seconds_lost)));
        put(o, "rule_detail", r.why.empty() ? json_null() : jstr(r.why));
        json_array_append_new(a, o);
    }
    return a;
}

// "Preempted 2 times (gpupool's event log):" and a line for each.
void preemptions_text(const PreemptionHistory &h, std::ostream &s) {
    if (h.records.empty()) return;
    size_t n = h.records.size();
    s << "Preempted " << n << " time" << (n == 1 ? "" : "s") << " ("
      << (h.source == "event_log" ? "gpupool's event log " + h.event_log : std::string("accounting: sacct SystemComment"))
      << "):\n";
    for (const PreemptionRecord &r : h.records) {
        s << "  " << slurm_time(r.time) << " by job " << r.preemptor_job_id << " (pool " << r.preemptor_pool;
        if (!r.preemptor_tier.empty()) s << ", tier " << r.preemptor_tier;
        s << ") under rule " << r.rule;
        if (!r.why.empty()) s << " (" << r.why << ")";
        if (!r.victim_pool.empty()) s << " in " << r.victim_pool;
        s << ": ";
        if (r.mode == "requeue") s << "requeued, ";
        else if (r.mode == "cancel") s << "cancelled, ";
        else if (r.mode == "suspend") s << "suspended, ";
        if (r.gpus) s << *r.gpus << " GPU" << (*r.gpus == 1 ? "" : "s") << ", ";
        s << r.gpu_seconds_lost << " GPU-seconds lost.\n";
    }
}

// A job slurmctld no longer has, with its preemptions on record.
int why_gone(Pass &p, const Options &opt, std::ostream &out) {
    const uint32_t id = opt.job_id;
    const PreemptionHistory &h = p.view.preemptions;
    if (opt.json) {
        Json root = document(p, "why");
        json_t *job = json_object();
        put(job, "job_id", jint(id));
        put(job, "state", h.in_accounting ? jstr(h.state) : json_null());
        put(job, "job", jstr(std::to_string(id)));
        put(job, "name", h.in_accounting ? jstr(h.name) : json_null());
        put(job, "user", h.in_accounting ? jstr(h.user) : json_null());
        put(job, "in_queue", json_false());
        put(job, "preemptions", preemptions_json(h));
        put(job, "preemptions_source", jstr(h.source));
        put(root.get(), "job", job);
        add_warnings(p, root.get());
        print_json(out, root.get());
        return 0;
    }
    std::ostringstream s;
    s << "Job " << id;
    if (h.in_accounting) {
        if (!h.name.empty()) s << " (" << h.name << ")";
        s << " of " << h.user << " is " << h.state;
        if (!h.partition.empty()) s << " in " << h.partition;
        s << "; slurmctld no longer has it.\n";
    } else {
        s << " is no longer in slurmctld's queue.\n";
    }
    preemptions_text(h, s);
    out << s.str();
    return 0;
}

int why(Pass &p, const Options &opt, std::ostream &out, std::ostream &err) {
    const uint32_t id = opt.job_id;
    const JobMeta *m = p.view.job(id);
    const PendingExplain *pe = p.x.find_pending(id);
    const RunningExplain *re = p.x.find_running(id);
    const PreemptionHistory &ph = p.view.preemptions;
    if (!m && !pe && !re) {
        if (!ph.records.empty()) return why_gone(p, opt, out);
        err << "gpupool: job " << id << " is not in slurmctld's queue (ended, or never existed)\n";
        return 1;
    }
    const std::string state = m ? m->state : (pe ? "PENDING" : "RUNNING");

    if (opt.json) {
        Json root = document(p, "why");
        json_t *job = pe ? pending_json(p, *pe) : json_object();
        put(job, "job_id", jint(id));
        put(job, "state", jstr(state));
        if (pe) {
            json_t *quota = json_array();
            for (const QuotaLine &q : pe->quota) {
                json_t *o = json_object();
                put(o, "pool", jstr(p.pool_name(q.pool)));
                put(o, "quota", jint(q.quota));
                put(o, "np_used", jint(q.np_used));
                put(o, "reserved", jint(q.reserved));
                put(o, "gpus", jint(q.gpus));
                put(o, "needed", jint(q.needed));
                json_array_append_new(quota, o);
            }
            put(job, "quota", quota);
            json_t *users = json_array();
            for (const QuotaUser &u : pe->quota_users) {
                json_t *o = json_object();
                put(o, "job_id", jint(u.job_id));
                put(o, "user", jstr(p.user_of(u.job_id)));
                put(o, "gpus", jint(u.gpus));
                put(o, "state", json_string(u.running ? "running" : "admitted"));
                json_array_append_new(users, o);
            }
            put(job, "quota_users", users);
            json_t *ahead = json_array();
            for (uint32_t a : pe->ahead) {
                const PendingExplain *ae = p.x.find_pending(a);
                json_t *o = json_object();
                put(o, "job_id", jint(a));
                put(o, "user", jstr(p.user_of(a)));
                put(o, "tier", jstr(ae ? p.tier_name(ae->tier) : ""));
                put(o, "gpus", jint(ae ? ae->gpus : 0));
                put(o, "position", ae && ae->position >= 0 ? jint(ae->position + 1) : json_null());
                put(o, "reason", json_string(ae ? wait_reason_code(ae->reason) : ""));
                json_array_append_new(ahead, o);
            }
            put(job, "ahead", ahead);
            json_t *victims = json_array();
            for (const VictimRef &v : pe->victims) {
                const RunningExplain *vr = p.x.find_running(v.job_id);
                json_t *o = json_object();
                put(o, "job_id", jint(v.job_id));
                put(o, "user", jstr(p.user_of(v.job_id)));
                put(o, "pool", jstr(vr ? p.pool_name(vr->pool) : ""));
                put(o, "gpus", jint(vr ? vr->gpus : 0));
                put(o, "rule", json_string(rule_name(v.rule)));
                put(o, "protected_until", v.protected_until ? jint(v.protected_until) : json_null());
                json_array_append_new(victims, o);
            }
            put(job, "victims", victims);
        } else if (re) {
            put(job, "job", jstr(p.job_label(id)));
            put(job, "name", jstr(m ? m->name : ""));
            put(job, "user", jstr(p.user_of(id)));
            put(job, "pool", re->pool >= 0 ? jstr(p.pool_name(re->pool)) : json_null());
            put(job, "tier", jstr(p.tier_name(re->tier)));
            put(job, "gpus", jint(re->gpus));
            put(job, "start_time", jint(re->start));
            put(job, "preemptible", json_boolean(re->preemptible));
            put(job, "victim_class", json_string(victim_class_name(re->cls)));
            put(job, "reclaim_rank", re->preemptible ? jint(re->rank) : json_null());
            put(job, "borrowed", jint(re->borrowed));
            put(job, "lenders", pool_gpus_json(p, re->lenders));
            put(job, "protected_until", re->protected_until ? jint(re->protected_until) : json_null());
        } else {
            put(job, "job", jstr(p.job_label(id)));
            put(job, "name", jstr(m ? m->name : ""));
            put(job, "user", jstr(p.user_of(id)));
        }
        put(job, "in_queue", json_true());
        put(job, "preemptions", preemptions_json(ph));
        put(job, "preemptions_source", ph.records.empty() ? json_null() : jstr(ph.source));
        put(root.get(), "job", job);
        add_warnings(p, root.get());
        print_json(out, root.get());
        return 0;
    }

    std::ostringstream s;
    s << "Job " << p.job_label(id);
    if (m && !m->name.empty()) s << " (" << m->name << ")";
    s << " of " << p.user_of(id) << " is " << state;
    if (pe) {
        std::string pools;
        for (int q : pe->pools) pools += (pools.empty() ? "" : ",") + p.pool_name(q);
        s << " in " << (pools.empty() ? (m ? m->partition : std::string("?")) : pools) << ", tier "
          << p.tier_name(pe->tier) << ", " << pe->gpus << " GPU" << (pe->gpus == 1 ? "" : "s");
        if (m) s << ", waiting " << slurm_duration(p.view.now - m->submit_time);
        s << ".\n";
        if (pe->position >= 0) {
            size_t ordered = 0;
            for (const PendingExplain &q : p.x.pending) ordered += q.position >= 0;
            s << "Position " << pe->position + 1 << " of " << ordered << " pending";
            for (const auto &[q, n] : pe->pool_position) s << ", " << n + 1 << " in " << p.pool_name(q);
            s << ".\n";
        }
        s << "Reason: " << reason_text(p, *pe) << ".\n";
        if (m && !m->slurm_reason.empty() && m->slurm_reason != "None") s << "Slurm's reason: " << m->slurm_reason << ".\n";
        for (const QuotaLine &q : pe->quota) {
            s << "Quota of " << p.pool_name(q.pool) << ": " << q.quota << " GPUs; non-preemptible jobs use "
              << q.np_used << ", " << q.reserved << " reserved for admitted jobs ahead, this job needs " << q.gpus;
            if (q.needed)
                s << ": " << q.needed << " GPU" << (q.needed == 1 ? "" : "s") << " of quota missing.\n";
            else
                s << ": it fits.\n";
        }
        if (!pe->quota_users.empty()) {
            s << "Jobs using the quota of " << p.pool_name(pe->reason_pool) << ":\n";
            Table t({"JOBID", "USER", "GPUS", "STATE"}, "llrl");
            for (const QuotaUser &u : pe->quota_users)
                t.add({p.job_label(u.job_id), p.user_of(u.job_id), num(u.gpus), u.running ? "running" : "admitted"});
            t.print(s);
        }
        if (!pe->victims.empty()) {
            s << "Jobs it may preempt:\n";
            Table t({"JOBID", "USER", "POOL", "GPUS", "RULE", "PROTECTED_UNTIL"}, "lllrll");
            for (const VictimRef &v : pe->victims) {
                const RunningExplain *vr = p.x.find_running(v.job_id);
                t.add({p.job_label(v.job_id), p.user_of(v.job_id), vr ? p.pool_name(vr->pool) : "",
                       num(vr ? vr->gpus : 0), rule_name(v.rule),
                       v.protected_until ? slurm_time(v.protected_until) : "-"});
            }
            t.print(s);
        }
        if (!pe->ahead.empty()) {
            s << "Jobs ahead of it in its pools:\n";
            Table t({"POS", "JOBID", "USER", "TIER", "GPUS", "REASON"}, "rlllrl");
            for (uint32_t a : pe->ahead) {
                const PendingExplain *ae = p.x.find_pending(a);
                t.add({ae && ae->position >= 0 ? num(ae->position + 1) : "-", p.job_label(a), p.user_of(a),
                       ae ? p.tier_name(ae->tier) : "", num(ae ? ae->gpus : 0), ae ? reason_text(p, *ae) : ""});
            }
            t.print(s);
        } else if (pe->position >= 0) {
            s << "No job is ahead of it in its pools.\n";
        }
    } else if (re) {
        s << " in " << (re->pool >= 0 ? p.pool_name(re->pool) : (m ? m->partition : std::string("?"))) << ", tier "
          << p.tier_name(re->tier) << ", " << re->gpus << " GPU" << (re->gpus == 1 ? "" : "s") << ", started "
          << slurm_time(re->start) << ".\n";
        if (re->pool < 0) {
            s << "Its partition is not a gpupool pool: gpupool never preempts it.\n";
        } else if (!re->preemptible) {
            s << "Tier " << p.tier_name(re->tier) << " is not preemptible: it counts against the quota of "
              << p.pool_name(re->pool) << " and is never preempted.\n";
        } else {
            if (re->borrowed)
                s << "It borrows " << re->borrowed << " GPU" << (re->borrowed == 1 ? "" : "s") << " from "
                  << pool_gpus_text(p, re->lenders) << " (" << victim_class_name(re->cls) << " of "
                  << p.pool_name(re->pool) << "): an entitled job of the lender may reclaim it.\n";
            else
                s << "It runs inside the quota of " << p.pool_name(re->pool)
                  << ": no other pool may reclaim it; a higher tier of its own pool may preempt it.\n";
            if (re->protected_until)
                s << "MinRuntime protects it until " << slurm_time(re->protected_until) << ".\n";
            s << "Reclaim rank " << re->rank << " (R6 victim order: 1 goes first).\n";
        }
    } else if (ph.records.empty()) {
        s << ": gpupool has nothing to explain for it now.\n";
    } else {
        s << ".\n";
    }
    preemptions_text(ph, s);
    out << s.str();
    return 0;
}

// ------------------------------------------------------------------ whatif

// One pool's figures on one side of the comparison.
struct PoolSide {
    bool present = false;
    uint32_t capacity = 0, quota = 0, weight = 0;
    int64_t min_runtime = 0;
    bool fairshare_known = false;
    uint32_t fairshare = 0, borrowable = 0, used = 0, borrowed = 0, lent = 0, reclaimable = 0, free_quota = 0;
    uint32_t held_jobs = 0;
};

PoolSide pool_side(const Pass &p, const std::string &name) {
    PoolSide s;
    int i = p.pool_index(name);
    if (i < 0) return s;
    const PoolState &ps = p.ev().pools[static_cast<size_t>(i)];
    const PoolExplain &px = p.x.pools[static_cast<size_t>(i)];
    s.present = true;
    s.capacity = ps.capacity;
    s.quota = ps.quota;
    s.weight = ps.weight;
    s.min_runtime = ps.min_runtime;
    s.fairshare_known = p.fairshare_known;
    s.fairshare = ps.fairshare;
    s.borrowable = px.borrowable;
    s.used = ps.used();
    s.borrowed = ps.borrowed();
    s.lent = ps.lent;
    s.reclaimable = px.reclaimable;
    s.free_quota = px.free_quota;
    s.held_jobs = ps.held_jobs;
    return s;
}

json_t *pool_side_json(const PoolSide &s) {
    if (!s.present) return json_null();
    json_t *o = json_object();
    put(o, "capacity", jint(s.capacity));
    put(o, "quota", jint(s.quota));
    put(o, "weight", jint(s.weight));
    put(o, "min_runtime", jint(s.min_runtime));
    put(o, "fairshare", s.fairshare_known ? jint(s.fairshare) : json_null());
    put(o, "borrowable", jint(s.borrowable));
    put(o, "used", jint(s.used));
    put(o, "borrowed", jint(s.borrowed));
    put(o, "lent", jint(s.lent));
    put(o, "reclaimable", jint(s.reclaimable));
    put(o, "free_quota", jint(s.free_quota));
    put(o, "held_jobs", jint(s.held_jobs));
    return o;
}

// Lent GPUs (some pool's quota) a running job holds that an entitled job
// of the lender may take back now (past MinRuntime): 0 if none.
uint32_t reclaimable_gpus(const RunningExplain &r) {
    if (!r.preemptible || r.protected_until) return 0;
    uint32_t n = 0;
    for (const PoolGpus &g : r.lenders)
        if (g.pool >= 0) n += g.gpus;
    return n;
}

bool starts(const PendingExplain &pe) { return pe.reason == WaitReason::Starting; }

// Running jobs the pending jobs of a pass would preempt now: victim ->
// (preemptor, rule).
std::map<uint32_t, std::pair<uint32_t, Rule>> preemptions(const Pass &p) {
    std::map<uint32_t, std::pair<uint32_t, Rule>> out;
    for (const PendingExplain &pe : p.x.pending)
        if (pe.reason == WaitReason::WaitingForReclaim)
            for (const VictimRef &v : pe.victims) out.emplace(v.job_id, std::make_pair(pe.job_id, v.rule));
    return out;
}

json_t *pending_side_json(const Pass &p, const PendingExplain &pe) {
    const PendingResult *r = p.engine.pending_result(pe.job_id);
    json_t *o = json_object();
    put(o, "position", pe.position >= 0 ? jint(pe.position + 1) : json_null());
    put(o, "priority", jint(r ? r->priority : 0));
    put(o, "admission", json_string(admission_code(p, pe)));
    put(o, "reason", json_string(wait_reason_code(pe.reason)));
    put(o, "reason_text", jstr(reason_text(p, pe)));
    put(o, "reason_pool", pe.reason_pool >= 0 ? jstr(p.pool_name(pe.reason_pool)) : json_null());
    return o;
}

json_t *running_side_json(const Pass &p, const RunningExplain &re) {
    json_t *o = json_object();
    put(o, "victim_class", json_string(victim_class_name(re.cls)));
    put(o, "reclaim_rank", re.preemptible ? jint(re.rank) : json_null());
    put(o, "borrowed", jint(re.borrowed));
    put(o, "lenders", pool_gpus_json(p, re.lenders));
    put(o, "reclaimable", jint(reclaimable_gpus(re)));
    put(o, "protected_until", re.protected_until ? jint(re.protected_until) : json_null());
    return o;
}

// "2", or "2->3" when the sides differ ("none" for a side without the pool).
template <typename F>
std::string side_cell(const PoolSide &b, const PoolSide &a, F text) {
    std::string tb = b.present ? text(b) : "none", ta = a.present ? text(a) : "none";
    return tb == ta ? tb : tb + "->" + ta;
}

std::string side_num(uint32_t b, uint32_t a) { return b == a ? num(a) : num(b) + "->" + num(a); }

int whatif(Pass &before, Pass &after, const Options &opt, std::ostream &out, std::ostream &err) {
    const ClusterView &view = before.view;
    if (!opt.pool.empty() && before.pool_index(opt.pool) < 0 && after.pool_index(opt.pool) < 0) {
        err << "gpupool: no pool " << opt.pool << " in " << view.conf_path << " or the modified configuration\n";
        return 1;
    }
    auto pool_shown = [&](const std::string &name) { return opt.pool.empty() || name == opt.pool; };
    // Pools of both configurations: the current ones in order, then new ones.
    std::vector<std::string> names;
    for (const PoolState &ps : before.ev().pools) names.push_back(ps.name);
    for (const PoolState &ps : after.ev().pools)
        if (before.pool_index(ps.name) < 0) names.push_back(ps.name);
    auto job_in_shown_pool = [&](const Pass &p, const std::vector<int> &pools) {
        if (opt.pool.empty()) return true;
        for (int q : pools)
            if (p.pool_name(q) == opt.pool) return true;
        return false;
    };

    // Pending jobs whose reason changes, in the modified order.
    std::unordered_map<uint32_t, const PendingExplain *> was;
    for (const PendingExplain &pe : before.x.pending) was.emplace(pe.job_id, &pe);
    struct PendingChange {
        const PendingExplain *b, *a;
    };
    std::vector<PendingChange> pend;
    std::vector<uint32_t> start, stop;
    for (const PendingExplain &a : after.x.pending) {
        auto it = was.find(a.job_id);
        if (it == was.end()) continue;
        const PendingExplain &b = *it->second;
        if (!job_in_shown_pool(after, a.pools) && !job_in_shown_pool(before, b.pools)) continue;
        bool moved = b.reason != a.reason ||
                     (b.reason_pool >= 0 ? before.pool_name(b.reason_pool) : "") !=
                         (a.reason_pool >= 0 ? after.pool_name(a.reason_pool) : "");
        if (!moved) continue;
        pend.push_back(PendingChange{&b, &a});
        // A job in no pool is gpupool's to order only: whether it starts
        // is Slurm's, on both sides.
        const bool managed = a.reason != WaitReason::NotManaged && b.reason != WaitReason::NotManaged;
        if (managed && starts(a) && !starts(b)) start.push_back(a.job_id);
        if (managed && starts(b) && !starts(a)) stop.push_back(a.job_id);
    }

    // Running jobs whose borrowing, protection or reclaimability changes.
    std::unordered_map<uint32_t, const RunningExplain *> ran;
    for (const RunningExplain &re : before.x.running) ran.emplace(re.job_id, &re);
    struct RunningChange {
        const RunningExplain *b, *a;
    };
    std::vector<RunningChange> run;
    std::vector<uint32_t> become, cease;
    for (const RunningExplain &a : after.x.running) {
        auto it = ran.find(a.job_id);
        if (it == ran.end()) continue;
        const RunningExplain &b = *it->second;
        std::string pool_a = a.pool >= 0 ? after.pool_name(a.pool) : "", pool_b = b.pool >= 0 ? before.pool_name(b.pool) : "";
        if (!pool_shown(pool_a) && !pool_shown(pool_b)) continue;
        uint32_t rb = reclaimable_gpus(b), ra = reclaimable_gpus(a);
        if (rb == ra && b.borrowed == a.borrowed && b.protected_until == a.protected_until && b.cls == a.cls)
            continue;
        run.push_back(RunningChange{&b, &a});
        if (ra && !rb) become.push_back(a.job_id);
        if (rb && !ra) cease.push_back(a.job_id);
    }

    // Running jobs the modified configuration would have preempted now.
    auto pre_b = preemptions(before), pre_a = preemptions(after);
    struct Preempted {
        uint32_t victim, preemptor;
        Rule rule;
    };
    std::vector<Preempted> preempted;
    for (const RunningExplain &re : after.x.running) {  // reclaim order
        auto it = pre_a.find(re.job_id);
        if (it == pre_a.end() || pre_b.count(re.job_id)) continue;
        if (!pool_shown(re.pool >= 0 ? after.pool_name(re.pool) : "")) continue;
        preempted.push_back(Preempted{re.job_id, it->second.first, it->second.second});
    }

    if (opt.json) {
        Json root = document(before, "whatif");
        put(root.get(), "modified_config", opt.whatif_config.empty() ? json_null() : jstr(opt.whatif_config));
        json_t *set = json_array();
        for (const std::string &s : opt.whatif_set) json_array_append_new(set, jstr(s));
        put(root.get(), "set", set);
        json_t *pools = json_array();
        for (const std::string &n : names) {
            if (!pool_shown(n)) continue;
            json_t *o = json_object();
            put(o, "name", jstr(n));
            put(o, "before", pool_side_json(pool_side(before, n)));
            put(o, "after", pool_side_json(pool_side(after, n)));
            json_array_append_new(pools, o);
        }
        put(root.get(), "pools", pools);
        auto ids = [](const std::vector<uint32_t> &v) {
            json_t *a = json_array();
            for (uint32_t id : v) json_array_append_new(a, jint(id));
            return a;
        };
        put(root.get(), "would_start", ids(start));
        put(root.get(), "would_not_start", ids(stop));
        put(root.get(), "would_be_reclaimable", ids(become));
        put(root.get(), "would_not_be_reclaimable", ids(cease));
        json_t *pj = json_array();
        for (const PendingChange &c : pend) {
            const JobMeta *m = view.job(c.a->job_id);
            json_t *o = json_object();
            put(o, "job_id", jint(c.a->job_id));
            put(o, "job", jstr(after.job_label(c.a->job_id)));
            put(o, "name", jstr(m ? m->name : ""));
            put(o, "user", jstr(after.user_of(c.a->job_id)));
            put(o, "partition", jstr(m ? m->partition : ""));
            json_t *pl = json_array();
            for (int q : c.a->pools) json_array_append_new(pl, jstr(after.pool_name(q)));
            put(o, "pools", pl);
            put(o, "tier", jstr(after.tier_name(c.a->tier)));
            put(o, "gpus", jint(c.a->gpus));
            put(o, "before", pending_side_json(before, *c.b));
            put(o, "after", pending_side_json(after, *c.a));
            json_array_append_new(pj, o);
        }
        put(root.get(), "pending", pj);
        json_t *rj = json_array();
        for (const RunningChange &c : run) {
            json_t *o = json_object();
            put(o, "job_id", jint(c.a->job_id));
            put(o, "job", jstr(after.job_label(c.a->job_id)));
            put(o, "user", jstr(after.user_of(c.a->job_id)));
            put(o, "pool", c.a->pool >= 0 ? jstr(after.pool_name(c.a->pool)) : json_null());
            put(o, "tier", jstr(after.tier_name(c.a->tier)));
            put(o, "gpus", jint(c.a->gpus));
            put(o, "before", running_side_json(before, *c.b));
            put(o, "after", running_side_json(after, *c.a));
            json_array_append_new(rj, o);
        }
        put(root.get(), "running", rj);
        json_t *vj = json_array();
        for (const Preempted &v : preempted) {
            const RunningExplain *re = after.x.find_running(v.victim);
            json_t *o = json_object();
            put(o, "job_id", jint(v.victim));
            put(o, "user", jstr(after.user_of(v.victim)));
            put(o, "pool", re && re->pool >= 0 ? jstr(after.pool_name(re->pool)) : json_null());
            put(o, "gpus", jint(re ? re->gpus : 0));
            put(o, "rule", json_string(rule_name(v.rule)));
            put(o, "preemptor", jint(v.preemptor));
            json_array_append_new(vj, o);
        }
        put(root.get(), "would_be_preempted", vj);
        add_warnings(after, root.get());
        json_t *wb = json_array();
        for (const std::string &s : before.engine.warnings()) json_array_append_new(wb, jstr(s));
        put(root.get(), "warnings_before", wb);
        print_json(out, root.get());
        return 0;
    }

    std::string change;
    if (!opt.whatif_config.empty()) change = "gpupool.conf were " + opt.whatif_config;
    if (!opt.whatif_set.empty()) {
        std::string sets;
        for (const std::string &s : opt.whatif_set) sets += (sets.empty() ? "" : ", ") + s;
        change += (change.empty() ? "" : " with ") + sets;
    }
    out << "What if " << change << " (figures now->with the change):\n";
    Table t({"POOL", "CAPACITY", "QUOTA", "WEIGHT", "MIN_RUNTIME", "FAIRSHARE", "BORROWABLE", "BORROWED", "LENT",
             "RECLAIMABLE", "HELD"},
            "lrrrrrrrrrr");
    for (const std::string &n : names) {
        if (!pool_shown(n)) continue;
        PoolSide b = pool_side(before, n), a = pool_side(after, n);
        t.add({n, side_cell(b, a, [](const PoolSide &s) { return num(s.capacity); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.quota); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.weight); }),
               side_cell(b, a, [](const PoolSide &s) { return slurm_duration(s.min_runtime); }),
               side_cell(b, a, [](const PoolSide &s) { return s.fairshare_known ? num(s.fairshare) : "?"; }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.borrowable); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.borrowed); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.lent); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.reclaimable); }),
               side_cell(b, a, [](const PoolSide &s) { return num(s.held_jobs); })});
    }
    t.print(out);

    auto pending_table = [&](const char *title, const std::vector<uint32_t> &ids, bool show_after) {
        out << "\n";
        if (ids.empty()) {
            out << title << ": none.\n";
            return;
        }
        out << title << ":\n";
        Table jt({"JOBID", "PARTITION", "NAME", "USER", "TIER", "GPUS", show_after ? "WITH_THE_CHANGE" : "NOW"},
                 "lllllrl");
        for (const PendingChange &c : pend) {
            if (std::find(ids.begin(), ids.end(), c.a->job_id) == ids.end()) continue;
            const JobMeta *m = view.job(c.a->job_id);
            jt.add({after.job_label(c.a->job_id), m ? m->partition : "", m ? m->name.substr(0, 12) : "",
                    after.user_of(c.a->job_id), after.tier_name(c.a->tier), num(c.a->gpus),
                    show_after ? reason_text(after, *c.a) : reason_text(before, *c.b)});
        }
        jt.print(out);
    };
    pending_table("Pending jobs that would start", start, false);
    pending_table("Pending jobs that would no longer start", stop, true);
    std::vector<uint32_t> other;
    for (const PendingChange &c : pend)
        if (std::find(start.begin(), start.end(), c.a->job_id) == start.end() &&
            std::find(stop.begin(), stop.end(), c.a->job_id) == stop.end())
            other.push_back(c.a->job_id);
    if (!other.empty()) {
        out << "\nPending jobs that would wait for another reason:\n";
        Table jt({"JOBID", "PARTITION", "USER", "TIER", "GPUS", "NOW", "WITH_THE_CHANGE"}, "llllrll");
        for (const PendingChange &c : pend) {
            if (std::find(other.begin(), other.end(), c.a->job_id) == other.end()) continue;
            const JobMeta *m = view.job(c.a->job_id);
            jt.add({after.job_label(c.a->job_id), m ? m->partition : "", after.user_of(c.a->job_id),
                    after.tier_name(c.a->tier), num(c.a->gpus), reason_text(before, *c.b), reason_text(after, *c.a)});
        }
        jt.print(out);
    }

    auto running_table = [&](const char *title, const std::vector<uint32_t> &ids) {
        out << "\n";
        if (ids.empty()) {
            out << title << ": none.\n";
            return;
        }
        out << title << ":\n";
        Table jt({"JOBID", "POOL", "USER", "TIER", "GPUS", "BORROWED", "FROM", "PROTECTED_UNTIL"}, "llllrrll");
        for (const RunningChange &c : run) {
            if (std::find(ids.begin(), ids.end(), c.a->job_id) == ids.end()) continue;
            jt.add({after.job_label(c.a->job_id), c.a->pool >= 0 ? after.pool_name(c.a->pool) : "",
                    after.user_of(c.a->job_id), after.tier_name(c.a->tier), num(c.a->gpus),
                    side_num(c.b->borrowed, c.a->borrowed), pool_gpus_text(after, c.a->lenders),
                    c.a->protected_until ? slurm_time(c.a->protected_until) : "-"});
        }
        jt.print(out);
    };
    running_table("Running jobs that would become reclaimable", become);
    running_table("Running jobs that would no longer be reclaimable", cease);
    out << "\n";
    if (preempted.empty()) {
        out << "Running jobs that would be preempted now: none.\n";
    } else {
        out << "Running jobs that would be preempted now:\n";
        Table jt({"JOBID", "POOL", "USER", "GPUS", "RULE", "FOR_JOB"}, "lllrll");
        for (const Preempted &v : preempted) {
            const RunningExplain *re = after.x.find_running(v.victim);
            jt.add({after.job_label(v.victim), re && re->pool >= 0 ? after.pool_name(re->pool) : "",
                    after.user_of(v.victim), num(re ? re->gpus : 0), rule_name(v.rule), after.job_label(v.preemptor)});
        }
        jt.print(out);
    }
    std::vector<std::string> warnings = after.engine.warnings();
    if (!warnings.empty()) {
        out << "\n";
        for (const std::string &w : warnings) out << "Warning with the change: " << w << "\n";
    }
    return 0;
}

}  // namespace

int cmd_status(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, 0);
    return status(p, opt, out, err);
}

int cmd_queue(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, 0);
    return queue(p, opt, out, err);
}

int cmd_why(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, opt.job_id);
    return why(p, opt, out, err);
}

int cmd_whatif(Engine &engine, Config modified, const ClusterView &view, const Options &opt, std::ostream &out,
               std::ostream &err) {
    // The modified engine starts where this one starts: the same usage
    // history and remembered submit times, so the two passes differ only
    // by the configuration.
    Engine twin;
    twin.set_config(std::move(modified));
    twin.load_state_json(engine.state_json(view.now));
    Pass before = run_pass(engine, view, 0);
    Pass after = run_pass(twin, view, 0);
    return whatif(before, after, opt, out, err);
}

}  // namespace gpupool::cli

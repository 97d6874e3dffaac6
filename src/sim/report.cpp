#include "report.hpp"
#include "json_ptr.hpp"

#include <jansson.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>

namespace gpupool::sim {

namespace {

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string dur(int64_t s) { return format_duration(s); }

std::string job_name(const Workload &w, uint32_t j) {
    const SimJob &s = w.jobs[j];
    return s.label.empty() ? std::to_string(s.id) : s.label;
}

// Columns padded to their widest cell, Slurm style: a header, a line of
// dashes, the rows; numbers right-aligned, text left-aligned.
class Table {
public:
    explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    void print(std::ostream &out, const std::vector<bool> &right) const {
        std::vector<size_t> width(rows_.front().size(), 0);
        for (const auto &r : rows_)
            for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
        auto line = [&](const std::vector<std::string> &r) {
            std::string s;
            for (size_t c = 0; c < r.size(); ++c) {
                if (c) s += ' ';
                const std::string pad(width[c] - r[c].size(), ' ');
                s += right[c] ? pad + r[c] : r[c] + (c + 1 < r.size() ? pad : "");
            }
            out << s << "\n";
        };
        line(rows_.front());
        std::string dashes;
        for (size_t c = 0; c < width.size(); ++c) dashes += (c ? " " : "") + std::string(width[c], '-');
        out << dashes << "\n";
        for (size_t i = 1; i < rows_.size(); ++i) line(rows_[i]);
    }

private:
    std::vector<std::vector<std::string>> rows_;
};

uint64_t cluster_gpus(const SimCluster &c) {
    uint64_t g = 0;
    for (const SimNode &n : c.nodes) g += n.gpus;
    return g;
}


// jansson refuses strings that are not UTF-8: names from a site's files
// are checked by the readers, but a label may be anything.
json_t *jstr(const std::string &s) {
    json_t *j = json_stringn(s.data(), s.size());
    if (!j) {
        std::string clean;
        for (unsigned char c : s) clean += c < 0x80 ? static_cast<char>(c) : '?';
        j = json_stringn(clean.data(), clean.size());
    }
    return j;
}

json_t *jint(int64_t v) { return json_integer(v); }
json_t *jreal(double v) { return json_real(std::isfinite(v) ? v : 0.0); }

json_t *percentiles_json(const Percentiles &p) {
    json_t *o = json_object();
    json_object_set_new(o, "jobs", jint(static_cast<int64_t>(p.jobs)));
    json_object_set_new(o, "p50", jint(p.p50));
    json_object_set_new(o, "p95", jint(p.p95));
    json_object_set_new(o, "p99", jint(p.p99));
    json_object_set_new(o, "max", jint(p.max));
    json_object_set_new(o, "mean", jreal(p.mean));
    return o;
}

// Seconds under quota with NP demand by cause (BelowCause), by name.
static json_t *below_by_cause_json(const BelowByCause &b) {
    json_t *o = json_object();
    for (size_t c = 0; c < kBelowCauses; ++c)
        json_object_set_new(o, below_cause_name(static_cast<BelowCause>(c)), jint(b[c]));
    return o;
}

// The figures a pool and an account both have, in the pools' order.
template <typename Figures>
void quota_figures_json(json_t *o, const Figures &f, const char *hours_key, double hours) {
    json_object_set_new(o, "jobs", jint(static_cast<int64_t>(f.jobs)));
    json_object_set_new(o, "wait", percentiles_json(f.wait));
    json_object_set_new(o, "preemptions", jint(static_cast<int64_t>(f.preemptions)));
    json_object_set_new(o, hours_key, jreal(hours));
    json_object_set_new(o, "np_over_quota_seconds", jint(f.np_over_quota_seconds));
    json_object_set_new(o, "below_quota_seconds", jint(f.below_quota_seconds));
}

// One policy's replay: metrics, per tier and pool, the start order
// check, stats and notes.
json_t *policy_json(const ReplayResult &res, const Workload &workload) {
    const Metrics &m = res.metrics;
    json_t *p = json_object();
    json_object_set_new(p, "policy", jstr(policy_name(res.policy)));
    json_object_set_new(p, "begin", jint(m.begin));
    json_object_set_new(p, "end", jint(m.end));
    json_object_set_new(p, "gpus", jint(m.gpus));
    json_object_set_new(p, "utilisation", jreal(m.utilisation));
    json_object_set_new(p, "busy_gpu_hours", jreal(m.busy_gpu_seconds / 3600.0));
    json_object_set_new(p, "waiting_seconds", jint(m.waiting_seconds));
    json_object_set_new(p, "utilisation_waiting", jreal(m.utilisation_waiting));
    json_object_set_new(p, "utilisation_useful", jreal(m.utilisation_useful));
    json_object_set_new(p, "arriving_seconds", jint(m.arriving_seconds));
    json_object_set_new(p, "utilisation_arriving", jreal(m.utilisation_arriving));
    json_object_set_new(p, "jobs", jint(static_cast<int64_t>(m.jobs)));
    json_object_set_new(p, "completed", jint(static_cast<int64_t>(m.completed)));
    json_object_set_new(p, "cancelled", jint(static_cast<int64_t>(m.cancelled)));
    json_object_set_new(p, "never_started", jint(static_cast<int64_t>(m.never_started)));
    json_object_set_new(p, "requeue_limit", jint(static_cast<int64_t>(m.requeue_limit)));
    json_object_set_new(p, "wait", percentiles_json(m.wait));
    json_object_set_new(p, "preemptions", jint(static_cast<int64_t>(m.preemptions)));
    json_object_set_new(p, "lost_gpu_hours", jreal(m.lost_gpu_hours));
    json_object_set_new(p, "np_over_quota_seconds", jint(m.np_over_quota_seconds));
    json_object_set_new(p, "below_quota_seconds", jint(m.below_quota_seconds));
    json_object_set_new(p, "below_quota_by_cause", below_by_cause_json(m.below_by_cause));
    json_object_set_new(p, "within_quota_wait", percentiles_json(m.within_quota_wait));
    json_t *by_gpus = json_object();
    for (const auto &[g, w] : m.within_quota_wait_by_gpus)
        json_object_set_new(by_gpus, std::to_string(g).c_str(), percentiles_json(w));
    json_object_set_new(p, "within_quota_wait_by_gpus", by_gpus);
    json_object_set_new(p, "prompt_window", jint(m.prompt_window));
    json_object_set_new(p, "within_quota_prompt", jint(static_cast<int64_t>(m.within_quota_prompt)));
    json_object_set_new(p, "jain", jreal(m.jain));
    json_object_set_new(p, "samples", jint(static_cast<int64_t>(m.samples)));
    json_object_set_new(p, "tiers", jarray_of(m.tiers, [](json_t *to, const TierMetrics &tm) {
        json_object_set_new(to, "tier", jstr(tm.name));
        json_object_set_new(to, "preemptible", json_boolean(tm.preemptible));
        json_object_set_new(to, "jobs", jint(static_cast<int64_t>(tm.jobs)));
        json_object_set_new(to, "wait", percentiles_json(tm.wait));
    }));
    json_object_set_new(p, "pools", jarray_of(m.pools, [](json_t *po, const PoolMetrics &pm) {
        json_object_set_new(po, "pool", jstr(pm.name));
        json_object_set_new(po, "quota", jint(pm.quota));
        quota_figures_json(po, pm, "lost_gpu_hours", pm.lost_gpu_hours);
        json_object_set_new(po, "mean_used", jreal(pm.mean_used));
        json_object_set_new(po, "mean_share", jreal(pm.mean_share));
        json_object_set_new(po, "below_quota_by_cause", below_by_cause_json(pm.below_by_cause));
    }));
    if (!m.accounts.empty())
        json_object_set_new(p, "accounts", jarray_of(m.accounts, [](json_t *ao, const AccountMetrics &am) {
            json_object_set_new(ao, "account", jstr(am.name));
            json_object_set_new(ao, "parent", am.parent.empty() ? json_null() : jstr(am.parent));
            json_object_set_new(ao, "depth", jint(am.depth));
            json_object_set_new(ao, "quota", am.has_quota ? jint(static_cast<int64_t>(am.quota)) : json_null());
            json_object_set_new(ao, "rank", jint(am.rank));
            quota_figures_json(ao, am, "gpu_hours", am.gpu_hours);
            json_object_set_new(ao, "np_peak", jint(static_cast<int64_t>(am.np_peak)));
        }));
    const StartOrderCheck &oc = res.order_check;
    json_t *ord = json_object();
    json_object_set_new(ord, "tolerance", jint(oc.tolerance));
    json_object_set_new(ord, "jobs", jint(static_cast<int64_t>(oc.jobs)));
    json_object_set_new(ord, "starts", jint(static_cast<int64_t>(oc.starts)));
    json_object_set_new(ord, "unmatched_restarts", jint(static_cast<int64_t>(oc.unmatched_restarts)));
    json_object_set_new(ord, "pairs", jint(static_cast<int64_t>(oc.pairs)));
    json_object_set_new(ord, "discordant", jint(static_cast<int64_t>(oc.discordant)));
    json_object_set_new(ord, "first_mismatch",
                        oc.first_mismatch >= 0 ? jstr(job_name(workload, static_cast<uint32_t>(oc.first_mismatch)))
                                               : json_null());
    json_object_set_new(p, "start_order", ord);
    json_t *st = json_object();
    json_object_set_new(st, "instants", jint(static_cast<int64_t>(res.stats.instants)));
    json_object_set_new(st, "walks", jint(static_cast<int64_t>(res.stats.walks)));
    json_object_set_new(st, "passes", jint(static_cast<int64_t>(res.stats.passes)));
    json_object_set_new(st, "refreshes", jint(static_cast<int64_t>(res.stats.refreshes)));
    json_object_set_new(st, "preemption_searches", jint(static_cast<int64_t>(res.stats.preemption_searches)));
    json_object_set_new(st, "wall_seconds", jreal(res.stats.wall_seconds));
    json_object_set_new(p, "stats", st);
    json_t *pn = json_array();
    for (const std::string &n : res.notes) json_array_append_new(pn, jstr(n));
    json_object_set_new(p, "notes", pn);
    return p;
}

}  // namespace

std::string csv_field(const std::string &text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

// The accounts table, where the replay had accounts (a department's
// figures include its projects').
static void write_accounts_text(std::ostream &out, const std::vector<ReplayResult> &results) {
    if (results.front().metrics.accounts.empty()) return;
    out << "\nAccounts (a department's figures include its projects'; NP_PEAK: most NP GPUs at once)\n";
    Table ta({"ACCOUNT", "POLICY", "QUOTA", "JOBS", "WAIT_P50", "WAIT_P95", "PREEMPT", "GPU_H", "NP_PEAK",
              "NP_OVER_QUOTA", "BELOW_QUOTA"});
    for (size_t k = 0; k < results.front().metrics.accounts.size(); ++k)
        for (const ReplayResult &r : results) {
            const AccountMetrics &am = r.metrics.accounts[k];
            ta.add({std::string(2 * am.depth, ' ') + am.name, policy_name(r.policy),
                    am.has_quota ? std::to_string(am.quota) : "-", std::to_string(am.jobs), dur(am.wait.p50),
                    dur(am.wait.p95), std::to_string(am.preemptions), fixed(am.gpu_hours, 1),
                    std::to_string(am.np_peak), am.has_quota ? dur(am.np_over_quota_seconds) : "-",
                    am.has_quota ? dur(am.below_quota_seconds) : "-"});
        }
    ta.print(out, {false, false, true, true, true, true, true, true, true, true, true});
}

void write_text(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                const RunInfo &info, const std::vector<ReplayResult> &results) {
    out << "Cluster: " << cluster.nodes.size() << " nodes, " << cluster_gpus(cluster) << " GPUs, "
        << cluster.partitions.size() << " partitions (" << info.cluster_source << ")\n";
    out << "Workload: " << workload.jobs.size() << " jobs (" << info.workload_source << ")\n";
    out << "Policy config: " << config.pools.size() << " pools, " << config.tiers.size() << " tiers ("
        << info.config_source << ")\n";
    for (const std::string &n : workload.notes) out << "Note: " << n << "\n";
    if (results.empty()) return;
    const Metrics &m0 = results.front().metrics;
    out << "Replayed: " << dur(m0.end - m0.begin) << " of simulated time, cred_expire " << info.options.cred_expire
        << " s";
    if (info.options.sched_interval > 0) out << ", scheduling every " << info.options.sched_interval << " s";
    if (info.options.pass_interval > 1) out << ", gpupool passes at least " << info.options.pass_interval << " s apart";
    out << "\n\n";

    Table t({"POLICY", "JOBS", "DONE", "CANCEL", "NEVER", "UTIL%", "WAIT_P50", "WAIT_P95", "WAIT_P99", "PREEMPT",
             "LOST_GPU_H", "NP_OVER_QUOTA", "BELOW_QUOTA", "JAIN"});
    for (const ReplayResult &r : results) {
        const Metrics &m = r.metrics;
        t.add({policy_name(r.policy), std::to_string(m.jobs), std::to_string(m.completed), std::to_string(m.cancelled),
               std::to_string(m.never_started), fixed(100.0 * m.utilisation, 1), dur(m.wait.p50), dur(m.wait.p95),
               dur(m.wait.p99), std::to_string(m.preemptions), fixed(m.lost_gpu_hours, 1), dur(m.np_over_quota_seconds),
               dur(m.below_quota_seconds), fixed(m.jain, 3)});
    }
    t.print(out, {false, true, true, true, true, true, true, true, true, true, true, true, true, true});

    out << "\nWait by tier\n";
    Table tt({"TIER", "POLICY", "JOBS", "WAIT_P50", "WAIT_P95", "WAIT_P99", "WAIT_MAX"});
    for (size_t k = 0; k < config.tiers.size(); ++k)
        for (const ReplayResult &r : results) {
            const TierMetrics &tm = r.metrics.tiers[k];
            tt.add({tm.name, policy_name(r.policy), std::to_string(tm.jobs), dur(tm.wait.p50), dur(tm.wait.p95),
                    dur(tm.wait.p99), dur(tm.wait.max)});
        }
    tt.print(out, {false, false, true, true, true, true, true});

    out << "\nPools (SHARE: mean of GPUs used / min(fairshare, demand) over samples with demand)\n";
    Table tp({"POOL", "POLICY", "QUOTA", "JOBS", "WAIT_P50", "WAIT_P95", "WAIT_P99", "PREEMPT", "LOST_GPU_H",
              "MEAN_USED", "SHARE", "NP_OVER_QUOTA", "BELOW_QUOTA"});
    for (size_t k = 0; k < config.pools.size(); ++k)
        for (const ReplayResult &r : results) {
            const PoolMetrics &pm = r.metrics.pools[k];
            tp.add({pm.name, policy_name(r.policy), std::to_string(pm.quota), std::to_string(pm.jobs),
                    dur(pm.wait.p50), dur(pm.wait.p95), dur(pm.wait.p99), std::to_string(pm.preemptions),
                    fixed(pm.lost_gpu_hours, 1), fixed(pm.mean_used, 1), fixed(pm.mean_share, 2),
                    dur(pm.np_over_quota_seconds), dur(pm.below_quota_seconds)});
        }
    tp.print(out, {false, false, true, true, true, true, true, true, true, true, true, true, true});

    out << "\nBelow quota with NP demand, by cause, summed over the pools (KILL: waits for its victims' kill;\n"
           "CANNOT_FREE: free, killed and preemptible GPUs together too few; NO_SINGLE_NODE: enough, on no one node;\n"
           "PROTECTED: a node has them only with other pools' preemptible jobs within their quota; OTHER: a node has them;\n"
           "see doc/evaluation.md)\n";
    Table tc({"POLICY", "BELOW_QUOTA_SUM", "KILL", "CANNOT_FREE", "NO_SINGLE_NODE", "PROTECTED", "OTHER"});
    for (const ReplayResult &r : results) {
        const BelowByCause &b = r.metrics.below_by_cause;
        tc.add({policy_name(r.policy), dur(b[0] + b[1] + b[2] + b[3] + b[4]), dur(b[0]), dur(b[1]), dur(b[2]),
                dur(b[3]), dur(b[4])});
    }
    tc.print(out, {false, true, true, true, true, true, true});

    out << "\nNP jobs within quota (from the instant one fits its pool's quota, after the NP jobs running and those\n"
           "before it in tier and submit order, to its start; PROMPT: started within the kill delay and one cycle)\n";
    Table tw({"POLICY", "JOBS", "WAIT_P50", "WAIT_P95", "WAIT_P99", "WAIT_MAX", "PROMPT_WINDOW", "PROMPT%"});
    for (const ReplayResult &r : results) {
        const Metrics &m = r.metrics;
        const Percentiles &w = m.within_quota_wait;
        tw.add({policy_name(r.policy), std::to_string(w.jobs), dur(w.p50), dur(w.p95), dur(w.p99), dur(w.max),
                dur(m.prompt_window),
                w.jobs ? fixed(100.0 * static_cast<double>(m.within_quota_prompt) / static_cast<double>(w.jobs), 1)
                       : "-"});
    }
    tw.print(out, {false, true, true, true, true, true, true, true});

    write_accounts_text(out, results);

    bool any_recorded = false;
    for (const ReplayResult &r : results) any_recorded |= r.order_check.jobs > 0;
    if (any_recorded) {
        out << "\nStart order against the recorded starts (pairs more than " << results.front().order_check.tolerance
            << " s apart)\n";
        Table to({"POLICY", "JOBS", "STARTS", "UNMATCHED_RESTARTS", "PAIRS", "DISCORDANT", "FIRST_MISMATCH"});
        for (const ReplayResult &r : results) {
            const StartOrderCheck &c = r.order_check;
            to.add({policy_name(r.policy), std::to_string(c.jobs), std::to_string(c.starts),
                    std::to_string(c.unmatched_restarts), std::to_string(c.pairs), std::to_string(c.discordant),
                    c.first_mismatch >= 0 ? job_name(workload, static_cast<uint32_t>(c.first_mismatch)) : "-"});
        }
        to.print(out, {false, true, true, true, true, true, false});
    }
    for (const ReplayResult &r : results)
        for (const std::string &n : r.notes) out << "Note (" << policy_name(r.policy) << "): " << n << "\n";
}

void write_json(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                const RunInfo &info, const std::vector<ReplayResult> &results) {
    JsonPtr root(json_object());
    json_t *r = root.get();
    json_object_set_new(r, "version", jint(kSimJsonVersion));
    json_t *c = json_object();
    json_object_set_new(c, "source", jstr(info.cluster_source));
    json_object_set_new(c, "nodes", jint(static_cast<int64_t>(cluster.nodes.size())));
    json_object_set_new(c, "gpus", jint(static_cast<int64_t>(cluster_gpus(cluster))));
    json_t *parts = json_array();
    for (const SimPartition &p : cluster.partitions) {
        uint64_t g = 0;
        for (uint32_t n : p.nodes) g += cluster.nodes[n].gpus;
        json_t *po = json_object();
        json_object_set_new(po, "name", jstr(p.name));
        json_object_set_new(po, "nodes", jint(static_cast<int64_t>(p.nodes.size())));
        json_object_set_new(po, "gpus", jint(static_cast<int64_t>(g)));
        json_array_append_new(parts, po);
    }
    json_object_set_new(c, "partitions", parts);
    json_object_set_new(r, "cluster", c);
    json_t *w = json_object();
    json_object_set_new(w, "source", jstr(info.workload_source));
    json_object_set_new(w, "jobs", jint(static_cast<int64_t>(workload.jobs.size())));
    json_t *notes = json_array();
    for (const std::string &n : workload.notes) json_array_append_new(notes, jstr(n));
    json_object_set_new(w, "notes", notes);
    json_object_set_new(r, "workload", w);
    json_t *o = json_object();
    json_object_set_new(o, "config", jstr(info.config_source));
    json_object_set_new(o, "cred_expire", jint(info.options.cred_expire));
    json_object_set_new(o, "pass_interval", jint(info.options.pass_interval));
    json_object_set_new(o, "sched_interval", jint(info.options.sched_interval));
    json_object_set_new(o, "max_requeues", jint(info.options.max_requeues));
    json_object_set_new(o, "order_tolerance", jint(info.options.order_tolerance));
    json_object_set_new(r, "options", o);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "tiers", jarray_of(config.tiers, [](json_t *to, const Tier &t) {
        json_object_set_new(to, "tier", jstr(t.name));
        json_object_set_new(to, "priority", jint(t.priority));
        json_object_set_new(to, "preemptible", json_boolean(t.preemptible));
    }));
    json_object_set_new(cfg, "pools", jarray_of(config.pools, [](json_t *po, const Pool &pl) {
        json_object_set_new(po, "pool", jstr(pl.name));
        json_object_set_new(po, "quota", jint(pl.quota));
        json_object_set_new(po, "weight", jint(pl.weight));
        json_object_set_new(po, "rank", jint(pl.rank));
    }));
    json_object_set_new(r, "config", cfg);

    json_t *pols = json_array();
    for (const ReplayResult &res : results) json_array_append_new(pols, policy_json(res, workload));
    json_object_set_new(r, "policies", pols);
    char *text = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
    if (!text) throw std::runtime_error("cannot encode the JSON report");
    out << text << "\n";
    free(text);
}

void write_jobs_csv(std::ostream &out, const SimCluster &cluster, const Workload &workload, const Config &config,
                    const std::vector<ReplayResult> &results) {
    out << "policy,job_id,label,pool,tier,gpus,submit,first_start,last_start,end,wait,preemptions,"
           "lost_gpu_seconds,state\n";
    for (const ReplayResult &r : results)
        for (size_t j = 0; j < workload.jobs.size(); ++j) {
            const SimJob &s = workload.jobs[j];
            const JobOutcome &o = r.jobs[j];
            std::string pool;
            if (o.partition >= 0) {
                pool = cluster.partitions[static_cast<size_t>(o.partition)].name;
            } else {
                for (const std::string &p : s.pools) pool += (pool.empty() ? "" : ",") + p;
            }
            auto t = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string(); };
            out << policy_name(r.policy) << ',' << s.id << ',' << csv_field(s.label) << ',' << csv_field(pool) << ','
                << (o.tier >= 0 ? csv_field(config.tiers[static_cast<size_t>(o.tier)].name) : "") << ',' << s.gpus
                << ',' << s.submit << ',' << t(o.first_start) << ',' << t(o.last_start) << ',' << t(o.end) << ','
                << o.wait << ',' << o.preemptions << ',' << o.lost_gpu_seconds << ',' << job_end_name(o.state) << "\n";
        }
}

void write_pools_csv(std::ostream &out, const Config &config, const std::vector<ReplayResult> &results) {
    out << "policy,time,pool,quota,used,np_used,p_used,pending_gpus,fairshare\n";
    for (const ReplayResult &r : results)
        for (const PoolSample &s : r.samples) {
            const Pool &p = config.pools[s.pool];
            out << policy_name(r.policy) << ',' << s.time << ',' << csv_field(p.name) << ',' << p.quota << ','
                << s.used << ',' << s.np_used << ',' << s.p_used << ',' << s.pending_gpus << ',' << s.fairshare
                << "\n";
        }
}

void write_start_log(std::ostream &out, const SimCluster &cluster, const Workload &workload,
                     const std::vector<ReplayResult> &results) {
    out << "policy,order,time,job_id,label,partition,victims,node\n";
    for (const ReplayResult &r : results) {
        uint64_t k = 0;
        for (const StartRecord &s : r.starts) {
            std::string victims;
            for (uint32_t v : s.victims) victims += (victims.empty() ? "" : " ") + std::to_string(workload.jobs[v].id);
            out << policy_name(r.policy) << ',' << ++k << ',' << s.time << ',' << workload.jobs[s.job].id << ','
                << csv_field(workload.jobs[s.job].label) << ','
                << csv_field(cluster.partitions[static_cast<size_t>(s.partition)].name) << ',' << victims << ','
                << (s.node >= 0 ? csv_field(cluster.nodes[static_cast<size_t>(s.node)].name) : std::string()) << "\n";
        }
    }
}

}  // namespace gpupool::sim

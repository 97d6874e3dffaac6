#include "metrics.hpp"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <tuple>

#include "events.hpp"
#include "explain.hpp"
#include "queue_figures.hpp"

namespace gpupool::cli {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Label values: backslash, double quote and newline escaped.
std::string escape_label(const std::string &v) {
    std::string s;
    for (char c : v) {
        if (c == '\\' || c == '"')
            s += std::string("\\") + c;
        else if (c == '\n')
            s += "\\n";
        else
            s += c;
    }
    return s;
}

// Lent GPUs that are in nobody's quota.
const char kUnassigned[] = "(unassigned)";

}  // namespace

std::string metric_value(uint64_t v) { return std::to_string(v); }

std::string metric_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

void metric_head(std::string &out, const std::string &name, const char *type, const std::string &help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void metric_sample(std::string &out, const std::string &name, const Labels &labels, const std::string &value) {
    out += name;
    if (!labels.empty()) {
        out += "{";
        for (size_t i = 0; i < labels.size(); ++i)
            out += (i ? "," : "") + labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
        out += "}";
    }
    out += " " + value + "\n";
}

const std::vector<double> &wait_buckets() {
    static const std::vector<double> b{60,    300,   600,   1800,  3600,  7200,
                                       14400, 28800, 43200, 86400, 172800};
    return b;
}

void WaitHistogram::observe(const Engine &engine, const ClusterView &view) {
    const Evaluation &ev = engine.last();
    const Config &cfg = engine.config();
    // Every pool and tier has its series from the start, at 0.
    for (const Pool &p : cfg.pools)
        for (const Tier &t : cfg.tiers) {
            Series &s = series_[{p.name, t.name}];
            s.le.resize(wait_buckets().size(), 0);
        }
    const bool first = !started_;
    started_ = true;
    for (const SnapJob &j : view.snap.jobs) {
        if (j.state != JobState::Running) continue;
        auto r = ev.running.find(j.id);
        if (r == ev.running.end() || r->second.pool < 0 || r->second.tier < 0) continue;
        if (!first && j.start_time < since_) continue;
        auto seen = counted_.find(j.id);
        if (seen != counted_.end() && seen->second == j.start_time) continue;
        counted_[j.id] = j.start_time;
        if (first) continue;
        double wait = static_cast<double>(std::max<int64_t>(0, j.start_time - j.submit_time));
        Series &s = series_[{ev.pools[static_cast<size_t>(r->second.pool)].name,
                             cfg.tiers[static_cast<size_t>(r->second.tier)].name}];
        s.le.resize(wait_buckets().size(), 0);
        for (size_t b = 0; b < wait_buckets().size(); ++b)
            if (wait <= wait_buckets()[b]) s.le[b]++;
        s.count++;
        s.sum += wait;
    }
    // No later job can have started before this recompute's time.
    since_ = view.now;
    for (auto it = counted_.begin(); it != counted_.end();)
        it = it->second < since_ ? counted_.erase(it) : std::next(it);
}

std::string WaitHistogram::text() const {
    std::string out;
    const std::string name = "gpupool_job_wait_seconds";
    metric_head(out, name, "histogram",
                "Time from submit to start of jobs seen starting, by pool and tier (since the exporter started).");
    for (const auto &[key, s] : series_) {
        for (size_t b = 0; b < wait_buckets().size(); ++b)
            metric_sample(out, name + "_bucket",
                          {{"pool", key.first}, {"tier", key.second}, {"le", metric_value(wait_buckets()[b])}},
                          metric_value(s.le[b]));
        metric_sample(out, name + "_bucket", {{"pool", key.first}, {"tier", key.second}, {"le", "+Inf"}},
                      metric_value(s.count));
        metric_sample(out, name + "_sum", {{"pool", key.first}, {"tier", key.second}}, metric_value(s.sum));
        metric_sample(out, name + "_count", {{"pool", key.first}, {"tier", key.second}}, metric_value(s.count));
    }
    return out;
}

std::string exporter_metrics(const ExporterStats &s) {
    std::string b;
    metric_head(b, "gpupool_up", "gauge", "1 if the last recompute read slurmctld and gpupool.conf.");
    metric_sample(b, "gpupool_up", {}, s.up ? "1" : "0");
    metric_head(b, "gpupool_exporter_recomputes_total", "counter", "Recomputes: reads of the cluster and passes.");
    metric_sample(b, "gpupool_exporter_recomputes_total", {}, metric_value(s.recomputes));
    metric_head(b, "gpupool_exporter_recompute_errors_total", "counter", "Recomputes that failed.");
    metric_sample(b, "gpupool_exporter_recompute_errors_total", {}, metric_value(s.errors));
    metric_head(b, "gpupool_exporter_recompute_duration_seconds", "gauge", "How long the last recompute took.");
    metric_sample(b, "gpupool_exporter_recompute_duration_seconds", {}, metric_value(s.duration));
    metric_head(b, "gpupool_exporter_last_recompute_timestamp_seconds", "gauge", "When the last recompute ran.");
    metric_sample(b, "gpupool_exporter_last_recompute_timestamp_seconds", {}, metric_value(uint64_t(s.time)));
    return b;
}

void PreemptionLog::count_line(const std::string &line) {
    if (line.empty()) return;
    try {
        PreemptionEvent e;
        if (event_from_json(line, e)) {
            Count &c = counts_[{e.victim_pool, e.preemptor_pool, e.rule}];
            c.preemptions++;
            c.gpu_seconds += e.gpu_seconds_lost();
            return;
        }
        // Not a preemption: the count of events the plugin had to drop.
        json_error_t jerr;
        if (json_t *o = json_loadb(line.data(), line.size(), 0, &jerr)) {
            json_t *ev = json_object_get(o, "event"), *n = json_object_get(o, "count");
            if (json_is_string(ev) && std::strcmp(json_string_value(ev), "dropped") == 0 && json_is_integer(n) &&
                json_integer_value(n) > 0)
                dropped_ += static_cast<uint64_t>(json_integer_value(n));
            json_decref(o);
        }
    } catch (const std::exception &) {
        bad_lines_++;
    }
}

uint64_t PreemptionLog::count_lines(const std::string &file, uint64_t from) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        error_ = file + ": " + std::strerror(errno);
        return from;
    }
    in.seekg(static_cast<std::streamoff>(from));
    std::string line;
    uint64_t end = from;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline yet: still being written
        end += line.size() + 1;
        count_line(line);
    }
    return end;
}

void PreemptionLog::read(const std::string &path) {
    error_.clear();
    // Oldest first: path.N, ..., path.1, path.  A file keeps its inode when
    // rotated, so each is read on from where it was left, wherever it is.
    std::vector<std::string> files;
    for (int i = 1; i <= 64; ++i) {
        std::string f = path + "." + std::to_string(i);
        if (::access(f.c_str(), F_OK) != 0) break;
        files.insert(files.begin(), f);
    }
    files.push_back(path);
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> now_read;
    readable_ = true;
    for (const std::string &f : files) {
        struct stat st;
        if (::stat(f.c_str(), &st) != 0) {
            if (errno == ENOENT) continue;  // no event yet, or rotated this moment
            error_ = f + ": " + std::strerror(errno);
            readable_ = false;
            continue;
        }
        const std::pair<uint64_t, uint64_t> id{uint64_t(st.st_dev), uint64_t(st.st_ino)};
        auto it = read_.find(id);
        uint64_t from = it == read_.end() ? 0 : it->second;
        if (uint64_t(st.st_size) < from) from = 0;  // not the file it was: read it again
        uint64_t to = count_lines(f, from);
        if (!error_.empty()) readable_ = false;
        now_read[id] = to;
    }
    read_.swap(now_read);  // files gone are forgotten
}

std::string PreemptionLog::text() const {
    std::string out;
    metric_head(out, "gpupool_preemption_log_readable", "gauge",
                "1 if the event log in StateSaveLocation could be read (root or SlurmUser).");
    metric_sample(out, "gpupool_preemption_log_readable", {}, readable_ ? "1" : "0");
    // A counter by (victim's pool, preemptor's pool, rule).
    auto by_pools_and_rule = [&](const char *name, const char *help, uint64_t Count::*field) {
        metric_head(out, name, "counter", help);
        for (const auto &[k, c] : counts_)
            metric_sample(out, name,
                          {{"pool", std::get<0>(k)}, {"preemptor_pool", std::get<1>(k)}, {"rule", std::get<2>(k)}},
                          metric_value(c.*field));
    };
    by_pools_and_rule("gpupool_preemptions_total",
                      "Preemptions in the event log, by the victim's pool, the preemptor's pool and the rule.",
                      &Count::preemptions);
    by_pools_and_rule("gpupool_preemption_lost_gpu_seconds_total",
                      "GPU-seconds of runs preempted (GPUs times time run), by the same labels.", &Count::gpu_seconds);
    metric_head(out, "gpupool_preemption_events_dropped_total", "counter",
                "Preemptions the plugin could not record (its queue was full), as the event log says.");
    metric_sample(out, "gpupool_preemption_events_dropped_total", {}, metric_value(dropped_));
    metric_head(out, "gpupool_preemption_log_bad_lines_total", "counter", "Lines of the event log that were not valid.");
    metric_sample(out, "gpupool_preemption_log_bad_lines_total", {}, metric_value(bad_lines_));
    return out;
}

std::string plugin_metrics(const PluginPasses &passes) {
    const PassStats &s = passes.stats;
    const bool ok = passes.available;
    auto seconds = [](uint64_t us) { return metric_value(static_cast<double>(us) / 1e6); };
    std::string out;
    metric_head(out, "gpupool_plugin_stats_readable", "gauge",
                "1 if priority/gpupool's pass statistics in StateSaveLocation could be read (on the controller, root "
                "or SlurmUser).");
    metric_sample(out, "gpupool_plugin_stats_readable", {}, ok ? "1" : "0");
    metric_head(out, "gpupool_plugin_passes_total", "counter", "Scheduling passes of priority/gpupool since slurmctld started.");
    if (ok) metric_sample(out, "gpupool_plugin_passes_total", {}, metric_value(s.passes));
    const std::string hist = "gpupool_plugin_pass_duration_seconds";
    metric_head(out, hist, "histogram",
                "Wall time of priority/gpupool's passes, waiting for slurmctld's locks included, since slurmctld "
                "started.");
    if (ok) {
        for (const auto &[le, count] : s.buckets)
            metric_sample(out, hist + "_bucket", {{"le", seconds(le)}}, metric_value(count));
        metric_sample(out, hist + "_bucket", {{"le", "+Inf"}}, metric_value(s.passes));
        metric_sample(out, hist + "_sum", {}, seconds(s.sum.total));
        metric_sample(out, hist + "_count", {}, metric_value(s.passes));
    }
    metric_head(out, "gpupool_plugin_pass_part_seconds_total", "counter",
                "Time of the passes by part: lock_wait (for slurmctld's locks), snapshot, evaluate, apply.");
    if (ok)
        for (const auto &[part, us] : {std::pair<const char *, uint64_t>{"lock_wait", s.sum.lock},
                                       {"snapshot", s.sum.snapshot},
                                       {"evaluate", s.sum.evaluate},
                                       {"apply", s.sum.apply}})
            metric_sample(out, "gpupool_plugin_pass_part_seconds_total", {{"part", part}}, seconds(us));
    metric_head(out, "gpupool_plugin_last_pass_duration_seconds", "gauge", "How long the last pass took.");
    if (ok) metric_sample(out, "gpupool_plugin_last_pass_duration_seconds", {}, seconds(s.last.total));
    metric_head(out, "gpupool_plugin_max_pass_duration_seconds", "gauge", "The longest pass since slurmctld started.");
    if (ok) metric_sample(out, "gpupool_plugin_max_pass_duration_seconds", {}, seconds(s.max.total));
    metric_head(out, "gpupool_plugin_last_pass_timestamp_seconds", "gauge", "When the last pass ended.");
    if (ok) metric_sample(out, "gpupool_plugin_last_pass_timestamp_seconds", {}, metric_value(uint64_t(s.last_end)));
    metric_head(out, "gpupool_plugin_stats_timestamp_seconds", "gauge",
                "When slurmctld wrote the statistics (every 10 s while it runs).");
    if (ok) metric_sample(out, "gpupool_plugin_stats_timestamp_seconds", {}, metric_value(uint64_t(s.written)));
    return out;
}

namespace {

// A pool's name, or (unassigned) for -1: GPUs in nobody's quota.
std::string lender_name(const Evaluation &ev, int p) {
    return p >= 0 ? ev.pools[static_cast<size_t>(p)].name : std::string(kUnassigned);
}

// GPUs of running jobs by pool and tier.
void allocated_metrics(std::string &out, const Evaluation &ev, const Config &cfg) {
    std::vector<std::vector<uint64_t>> alloc(ev.pools.size(), std::vector<uint64_t>(cfg.tiers.size(), 0));
    for (const auto &[id, r] : ev.running)
        if (r.pool >= 0 && r.tier >= 0) alloc[size_t(r.pool)][size_t(r.tier)] += r.gpus;
    metric_head(out, "gpupool_pool_allocated_gpus", "gauge", "GPUs held by the pool's running jobs, by tier.");
    for (size_t p = 0; p < ev.pools.size(); ++p)
        for (size_t t = 0; t < cfg.tiers.size(); ++t)
            metric_sample(out, "gpupool_pool_allocated_gpus", {{"pool", ev.pools[p].name}, {"tier", cfg.tiers[t].name}},
                          metric_value(alloc[p][t]));
}

// Borrowed, by lender: every pool of its node set, and GPUs in nobody's
// quota when there are any, 0 where nothing is borrowed.
void borrowed_metrics(std::string &out, const Evaluation &ev, const Explanation &x) {
    metric_head(out, "gpupool_pool_borrowed_gpus", "gauge",
                "GPUs the pool uses over its quota, by lender: another pool of its nodes, or (unassigned): GPUs in no "
                "pool's quota.");
    for (size_t p = 0; p < ev.pools.size(); ++p) {
        const PoolExplain &px = x.pools[p];
        if (px.node_set < 0) continue;
        const NodeSetExplain &ns = x.node_sets[static_cast<size_t>(px.node_set)];
        std::vector<int> lenders;
        if (ns.unassigned) lenders.push_back(-1);
        for (int q : ns.pools)
            if (q != int(p)) lenders.push_back(q);
        for (const PoolGpus &g : px.borrowed_from)
            if (std::find(lenders.begin(), lenders.end(), g.pool) == lenders.end()) lenders.push_back(g.pool);
        for (int q : lenders) {
            uint64_t n = 0;
            for (const PoolGpus &g : px.borrowed_from)
                if (g.pool == q) n += g.gpus;
            metric_sample(out, "gpupool_pool_borrowed_gpus",
                          {{"pool", ev.pools[p].name}, {"lender", lender_name(ev, q)}}, metric_value(n));
        }
    }
}

// Pending jobs (records) and their GPUs (every pending task of an
// array) by pool, tier and reason; a job counts in each of its pools.
void pending_metrics(std::string &out, const Evaluation &ev, const Config &cfg, const Explanation &x) {
    std::map<std::tuple<int, int, size_t>, std::pair<uint64_t, uint64_t>> pend;  // (pool, tier, reason)
    for (const PendingExplain &pe : x.pending) {
        if (pe.tier < 0) continue;
        uint64_t gpus = pe.pending_gpus();
        for (int p : pe.pools) {
            auto &c = pend[{p, pe.tier, size_t(pe.reason)}];
            c.first++;
            c.second += gpus;
        }
    }
    for (int which = 0; which < 2; ++which) {
        const char *name = which ? "gpupool_pending_gpus" : "gpupool_pending_jobs";
        metric_head(out, name, "gauge",
                    which ? "GPUs asked for by pending jobs (all tasks of an array), by pool, tier and reason."
                          : "Pending jobs (an array counts once), by pool, tier and reason; left out when 0.");
        for (const auto &[key, c] : pend)
            metric_sample(out, name,
                          {{"pool", lender_name(ev, std::get<0>(key))},
                           {"tier", cfg.tiers[size_t(std::get<1>(key))].name},
                           {"reason", wait_reason_code(static_cast<WaitReason>(std::get<2>(key)))}},
                          metric_value(which ? c.second : c.first));
    }
}

// Per account queue, by pool, account, level (1: just below the
// pool) and resource; nothing at all without Account= entries.
void queue_metrics(std::string &out, const Evaluation &ev, const Config &cfg) {
    std::vector<std::vector<QueueRow>> rows;
    for (const PoolState &ps : ev.pools) rows.push_back(queue_rows(ps));
    if (std::all_of(rows.begin(), rows.end(), [](const std::vector<QueueRow> &r) { return r.empty(); })) return;
    struct Series {
        const char *name, *help;
        uint64_t QueueAmounts::*field;
    };
    static const Series series[] = {
        {"gpupool_queue_quota", "The account queue's quota (only where its quota gives the resource).",
         &QueueAmounts::quota},
        {"gpupool_queue_fairshare", "The queue's fairshare: quota plus its share of what its siblings leave unused.",
         &QueueAmounts::fairshare},
        {"gpupool_queue_used", "Held by the running jobs of the queue and the queues below it.", &QueueAmounts::used},
        {"gpupool_queue_np_used", "Of that, held by non-preemptible jobs.", &QueueAmounts::np_used},
        {"gpupool_queue_pending", "Asked for by the pending jobs of the queue and the queues below it.",
         &QueueAmounts::pending},
    };
    for (const Series &m : series) {
        metric_head(out, m.name, "gauge",
                    std::string(m.help) + " By pool, account, level (1: just below the pool) and resource (gpu; cpu "
                                          "and mem, in MiB, where QuotaTRES counts them).");
        for (size_t p = 0; p < ev.pools.size(); ++p)
            for (const QueueRow &row : rows[p])
                for (Resource r : shown_resources(cfg)) {
                    const QueueAmounts &a = row.res[r];
                    if (m.field == &QueueAmounts::quota && !a.has_quota) continue;
                    metric_sample(out, m.name,
                                  {{"pool", ev.pools[p].name}, {"account", row.spec->name},
                                   {"level", std::to_string(row.level)}, {"resource", resource_word(r)}},
                                  metric_value(a.*m.field));
                }
    }
    metric_head(out, "gpupool_queue_rank", "gauge",
                "The account queue's rank among its siblings (higher: over-quota first, served first; 0 by default). "
                "By pool, account and level.");
    for (size_t p = 0; p < ev.pools.size(); ++p)
        for (const QueueRow &row : rows[p])
            metric_sample(out, "gpupool_queue_rank",
                          {{"pool", ev.pools[p].name}, {"account", row.spec->name}, {"level", std::to_string(row.level)}},
                          metric_value(uint64_t(row.spec->rank)));
}

}  // namespace

std::string cluster_metrics(Engine &engine, const ClusterView &view, WaitHistogram &waits) {
    engine.evaluate(view.snap, view.now);
    ExplainInput in;
    in.not_eligible = view.not_eligible;
    const Explanation x = explain(engine, view.snap, in, view.now);
    waits.observe(engine, view);
    const Evaluation &ev = engine.last();
    const Config &cfg = engine.config();
    const bool usage_known = view.history.available;
    const bool fairshare_known = usage_known || cfg.usage_weight == 0;

    std::string out;
    metric_head(out, "gpupool_usage_history_available", "gauge",
                "1 if the usage history in StateSaveLocation was read (else usage and, with UsageWeight, fairshare "
                "are left out).");
    metric_sample(out, "gpupool_usage_history_available", {}, usage_known ? "1" : "0");
    metric_head(out, "gpupool_config_warnings", "gauge",
                "Warnings about the configuration (e.g. quotas adding up to more than their nodes).");
    metric_sample(out, "gpupool_config_warnings", {}, metric_value(uint64_t(engine.warnings().size())));

    auto per_pool = [&](const char *name, const char *help, auto value) {
        metric_head(out, name, "gauge", help);
        for (const PoolState &ps : ev.pools) metric_sample(out, name, {{"pool", ps.name}}, metric_value(uint64_t(value(ps))));
    };
    per_pool("gpupool_pool_capacity_gpus", "GPUs on the pool's usable nodes.", [](const PoolState &ps) { return ps.capacity; });
    per_pool("gpupool_pool_quota_gpus", "GPUs guaranteed to the pool's non-preemptible jobs.",
             [](const PoolState &ps) { return ps.quota; });
    per_pool("gpupool_pool_weight", "The pool's over-quota weight.", [](const PoolState &ps) { return ps.weight; });
    per_pool("gpupool_pool_rank", "The pool's rank (higher: over-quota GPUs first, served first; 0 by default).",
             [&cfg](const PoolState &ps) { return cfg.pools[size_t(ps.config_index)].rank; });
    metric_head(out, "gpupool_pool_fairshare_gpus", "gauge", "The pool's fairshare in GPUs (quota and over-quota share).");
    if (fairshare_known)
        for (const PoolState &ps : ev.pools)
            metric_sample(out, "gpupool_pool_fairshare_gpus", {{"pool", ps.name}}, metric_value(uint64_t(ps.fairshare)));
    allocated_metrics(out, ev, cfg);
    borrowed_metrics(out, ev, x);
    per_pool("gpupool_pool_lent_gpus", "GPUs of the pool's idle quota other pools use.",
             [](const PoolState &ps) { return ps.lent; });
    metric_head(out, "gpupool_pool_reclaimable_gpus", "gauge",
                "Lent GPUs held by borrowers past their MinRuntime: what the pool can take back now.");
    for (size_t p = 0; p < ev.pools.size(); ++p)
        metric_sample(out, "gpupool_pool_reclaimable_gpus", {{"pool", ev.pools[p].name}},
                      metric_value(uint64_t(x.pools[p].reclaimable)));
    metric_head(out, "gpupool_pool_decayed_usage_gpu_seconds", "gauge", "The pool's time-decayed GPU usage.");
    if (usage_known)
        for (const PoolState &ps : ev.pools)
            metric_sample(out, "gpupool_pool_decayed_usage_gpu_seconds", {{"pool", ps.name}}, metric_value(ps.decayed_usage));
    metric_head(out, "gpupool_pool_usage_share_ratio", "gauge", "Decayed usage over decayed capacity of its nodes.");
    if (usage_known)
        for (const PoolState &ps : ev.pools)
            metric_sample(out, "gpupool_pool_usage_share_ratio", {{"pool", ps.name}}, metric_value(ps.usage_share));
    pending_metrics(out, ev, cfg, x);
    queue_metrics(out, ev, cfg);
    return out;
}

}  // namespace gpupool::cli

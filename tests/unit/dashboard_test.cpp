// The Grafana dashboard etc/grafana/gpupool.json against what `gpupool
// exporter` serves: every query names only series the exporter serves,
// with only labels those series carry, and only the dashboard's own
// variables; the dashboard covers each figure the administrator's guide
// promises (per pool and per queue quota, used, borrowed, lent, pending,
// fairshare, preemptions by rule, pass time).
#include <gtest/gtest.h>
#include <jansson.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "events.hpp"
#include "json_ptr.hpp"
#include "metrics.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

std::string srcdir() {
    const char *d = std::getenv("srcdir");  // set by `make check`
    return d ? d : ".";
}

// Series name -> the label names its samples carry.
using Served = std::map<std::string, std::set<std::string>>;

Served served_series(const std::string &exposition) {
    Served s;
    std::istringstream in(exposition);
    static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? \S+$)");
    static const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)=\"(?:[^\"\\]|\\.)*\")");
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::smatch m;
        if (!std::regex_match(line, m, sample)) {
            ADD_FAILURE() << "not a sample: " << line;
            continue;
        }
        std::set<std::string> &labels = s[m[1]];
        const std::string body = m[3];
        for (std::sregex_iterator it(body.begin(), body.end(), label), end; it != end; ++it) labels.insert((*it)[1]);
    }
    return s;
}

// Everything the exporter serves, each kind of series with samples:
// OSMO's borrowing example (two pools on the same nodes: borrowed, lent,
// pending, usage), departments and projects on Slurm's account tree (the
// queue series), a job seen starting (the wait histogram), a preemption
// in the event log and priority/gpupool's pass statistics.
std::string everything_served() {
    std::string all;
    ExporterStats st;
    st.up = true;
    all += exporter_metrics(st);

    WaitHistogram waits;
    {
        Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=1\nPool=pool2 Quota=2\n");
        ClusterView v;
        v.now = T0 + 10;
        v.history.available = true;
        v.snap = cluster(4);
        partition(v.snap, "pool1", 0, 3);
        partition(v.snap, "pool2", 0, 3);
        v.snap.add_job(running(1, "pool1", "normal", 1, T0));
        v.snap.add_job(running(2, "pool1", "low", 2, T0 + 1));
        v.snap.add_job(pending(3, "pool2", "normal", 2, T0 + 2));
        all += cluster_metrics(e, v, waits);
        v.now += 10;
        v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 12, T0 + 3));
        cluster_metrics(e, v, waits);
    }
    {
        Engine e = engine_with(kOsmoTiers +
                               "QuotaTRES=gres/gpu,cpu\n"
                               "Pool=pool1 Quota=8\n"
                               "Account=physics Pool=pool1 Quota=gres/gpu=4,cpu=32\n"
                               "Account=phys-a  Pool=pool1 Quota=gres/gpu=3,cpu=24\n");
        ClusterView v;
        v.now = T0 + 100;
        v.history.available = true;
        v.snap = cluster(2, 4);
        for (SnapNode &n : v.snap.nodes) n.cpus = 64;
        partition(v.snap, "pool1", 0, 1);
        v.snap.account_parent = {{"physics", "root"}, {"phys-a", "physics"}};
        SnapJob j = running(11, "pool1", "normal", 2, T0);
        j.account = "phys-a";
        j.cpus = 8;
        v.snap.add_job(j);
        WaitHistogram other;
        all += cluster_metrics(e, v, other);
    }
    all += waits.text();

    char tmpl[] = "/tmp/gpupool-dashboard-XXXXXX";
    if (!mkdtemp(tmpl)) return all;
    const std::string path = std::string(tmpl) + "/gpupool_events.jsonl";
    PreemptionEvent ev;
    ev.time = T0 + 50;
    ev.victim_job_id = 2;
    ev.victim_pool = "pool1";
    ev.victim_tier = "low";
    ev.victim_gpus = 1;
    ev.victim_start_time = T0 + 1;
    ev.preemptor_job_id = 3;
    ev.preemptor_pool = "pool2";
    ev.preemptor_tier = "normal";
    ev.rule = "Reclaim";
    ev.mode = "requeue";
    std::deque<std::string> lines{event_json_line(ev)};
    append_rotated(path, lines, 1 << 20, 4);
    PreemptionLog log;
    log.read(path);
    all += log.text();
    std::remove(path.c_str());
    rmdir(tmpl);

    PluginPasses passes;
    passes.available = true;
    PassTime t;
    t.total = 800;
    passes.stats.note(t, T0);
    all += plugin_metrics(passes);
    return all;
}

const Served &served() {
    static const Served s = served_series(everything_served());
    return s;
}

// Label names in "(a, b)" of by/without/on/ignoring/group_left/group_right.
const std::regex kGrouping(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\))");
// A series name and, when it has them, its label matchers.
const std::regex kSeries(R"(\b(gpupool_[a-z0-9_]+)(\{([^}]*)\})?)");
const std::regex kMatcher(R"(([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"(?:[^\"\\]|\\.)*\")");
const std::regex kVariable(R"(\$(\{)?([a-zA-Z_][a-zA-Z0-9_]*))");

// What is wrong with one PromQL query of the dashboard ("" if nothing):
// a series the exporter does not serve, a label it does not carry, a
// variable the dashboard does not define.  `names` gets the series named.
std::string check_query(const std::string &q, const std::set<std::string> &variables, std::set<std::string> &names) {
    std::set<std::string> labels_of_query;
    size_t series = 0;
    for (std::sregex_iterator it(q.begin(), q.end(), kSeries), end; it != end; ++it, ++series) {
        const std::string name = (*it)[1];
        auto s = served().find(name);
        if (s == served().end()) return "names " + name + ", which the exporter does not serve";
        names.insert(name);
        labels_of_query.insert(s->second.begin(), s->second.end());
        const std::string matchers = (*it)[3];
        for (std::sregex_iterator m(matchers.begin(), matchers.end(), kMatcher); m != end; ++m)
            if (!s->second.count((*m)[1])) return "matches label " + std::string((*m)[1]) + ", which " + name + " lacks";
    }
    if (series == 0) return "names no gpupool series";
    for (std::sregex_iterator it(q.begin(), q.end(), kGrouping), end; it != end; ++it) {
        std::stringstream list((*it)[2]);
        for (std::string l; std::getline(list, l, ',');) {
            l = std::regex_replace(l, std::regex(R"(^\s+|\s+$)"), "");
            if (!l.empty() && !labels_of_query.count(l)) return "groups by " + l + ", which no series of it carries";
        }
    }
    for (std::sregex_iterator it(q.begin(), q.end(), kVariable), end; it != end; ++it)
        if (!variables.count((*it)[2])) return "uses $" + std::string((*it)[2]) + ", which the dashboard does not define";
    return "";
}

struct Dashboard {
    JsonPtr root;
    std::set<std::string> variables;  // its own and Grafana's built-in ones it may use
    std::vector<std::pair<std::string, std::string>> queries;  // (where, PromQL)
};

Dashboard load_dashboard() {
    Dashboard d;
    const std::string path = srcdir() + "/etc/grafana/gpupool.json";
    json_error_t err;
    d.root.reset(json_load_file(path.c_str(), 0, &err));
    if (!d.root) {
        ADD_FAILURE() << path << ":" << err.line << ": " << err.text;
        return d;
    }
    d.variables = {"__rate_interval", "__interval", "__range"};
    json_t *vars = json_object_get(json_object_get(d.root.get(), "templating"), "list");
    size_t i;
    json_t *v;
    json_array_foreach(vars, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name) d.variables.insert(name);
        json_t *q = json_object_get(v, "query");
        if (json_is_object(q)) q = json_object_get(q, "query");
        const char *type = json_string_value(json_object_get(v, "type"));
        if (json_is_string(q) && type && std::string(type) == "query")
            d.queries.push_back({std::string("variable ") + (name ? name : "?"), json_string_value(q)});
    }
    json_t *p;
    json_array_foreach(json_object_get(d.root.get(), "panels"), i, p) {
        const char *title = json_string_value(json_object_get(p, "title"));
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(p, "targets"), k, t) {
            const char *expr = json_string_value(json_object_get(t, "expr"));
            if (!expr) ADD_FAILURE() << "panel '" << (title ? title : "?") << "': a target without expr";
            else d.queries.push_back({std::string("panel '") + (title ? title : "?") + "'", expr});
        }
    }
    return d;
}
}  // namespace

// What the checks below hold the dashboard to: the exporter's series as
// the fixtures serve them.
TEST(Dashboard, TheFixturesServeEverySeriesOfTheExporter) {
    std::set<std::string> types;
    const std::string all = everything_served();
    std::regex type(R"(# TYPE ([a-z_]+) )");
    for (std::sregex_iterator it(all.begin(), all.end(), type), end; it != end; ++it) types.insert((*it)[1]);
    EXPECT_EQ(types.size(), 40u);  // Metrics.EveryMetricIsDocumented's 34 and the 6 queue series
    for (const std::string &t : types) {
        const bool histogram = t == "gpupool_job_wait_seconds" || t == "gpupool_plugin_pass_duration_seconds";
        EXPECT_TRUE(served().count(histogram ? t + "_bucket" : t)) << t << " has no sample in the fixtures";
    }
    EXPECT_EQ(served().at("gpupool_pool_borrowed_gpus"), (std::set<std::string>{"pool", "lender"}));
    EXPECT_EQ(served().at("gpupool_queue_used"), (std::set<std::string>{"pool", "account", "level", "resource"}));
    EXPECT_EQ(served().at("gpupool_preemptions_total"), (std::set<std::string>{"pool", "preemptor_pool", "rule"}));
    EXPECT_EQ(served().at("gpupool_job_wait_seconds_bucket"), (std::set<std::string>{"pool", "tier", "le"}));
}

// The checker finds what it is there to find.
TEST(Dashboard, TheQueryCheckRefusesUnknownSeriesLabelsAndVariables) {
    const std::set<std::string> vars{"pool", "__rate_interval"};
    std::set<std::string> names;
    EXPECT_EQ(check_query("sum by (pool, tier) (gpupool_pool_allocated_gpus{pool=~\"$pool\"})", vars, names), "");
    EXPECT_EQ(check_query("gpupool_pool_quota{pool=\"a\"}", vars, names),
              "names gpupool_pool_quota, which the exporter does not serve");
    EXPECT_EQ(check_query("gpupool_pool_lent_gpus{tier=\"low\"}", vars, names),
              "matches label tier, which gpupool_pool_lent_gpus lacks");
    EXPECT_EQ(check_query("sum by (rule) (gpupool_pool_lent_gpus)", vars, names),
              "groups by rule, which no series of it carries");
    EXPECT_EQ(check_query("gpupool_pool_lent_gpus{pool=~\"$tenant\"}", vars, names),
              "uses $tenant, which the dashboard does not define");
    EXPECT_EQ(check_query("up", vars, names), "names no gpupool series");
    EXPECT_EQ(names, (std::set<std::string>{"gpupool_pool_allocated_gpus", "gpupool_pool_lent_gpus"}));
}

// Every query of the dashboard, panels and variables, passes the check,
// and together they name exactly these series.
TEST(Dashboard, EveryQueryNamesSeriesAndLabelsTheExporterServes) {
    Dashboard d = load_dashboard();
    ASSERT_TRUE(d.root);
    EXPECT_EQ(d.queries.size(), 34u);  // 32 panel targets, 2 variables
    std::set<std::string> names;
    for (const auto &[where, q] : d.queries) EXPECT_EQ(check_query(q, d.variables, names), "") << where << ": " << q;
    EXPECT_EQ(names, (std::set<std::string>{
                         // per pool: quota, fairshare, used (by tier), capacity
                         "gpupool_pool_quota_gpus", "gpupool_pool_fairshare_gpus", "gpupool_pool_allocated_gpus",
                         "gpupool_pool_capacity_gpus",
                         // borrowed, lent, reclaimable, pending
                         "gpupool_pool_borrowed_gpus", "gpupool_pool_lent_gpus", "gpupool_pool_reclaimable_gpus",
                         "gpupool_pending_gpus", "gpupool_pending_jobs",
                         // fairshare standing, waits
                         "gpupool_pool_usage_share_ratio", "gpupool_job_wait_seconds_bucket",
                         // per account queue
                         "gpupool_queue_quota", "gpupool_queue_fairshare", "gpupool_queue_used",
                         "gpupool_queue_np_used", "gpupool_queue_pending",
                         // preemptions by rule and pool, GPU time lost
                         "gpupool_preemptions_total", "gpupool_preemption_lost_gpu_seconds_total",
                         // pass time
                         "gpupool_plugin_pass_duration_seconds_bucket", "gpupool_plugin_last_pass_duration_seconds",
                         "gpupool_plugin_max_pass_duration_seconds", "gpupool_plugin_pass_part_seconds_total",
                         "gpupool_plugin_passes_total",
                         // health
                         "gpupool_up", "gpupool_plugin_stats_readable", "gpupool_preemption_log_readable",
                         "gpupool_usage_history_available", "gpupool_config_warnings"}));
}

// Grafana imports it: panels with distinct ids, a place on the grid that
// no other panel takes, every query on the dashboard's Prometheus
// variable with a distinct refId in its panel.
TEST(Dashboard, PanelsHaveDistinctIdsPlacesAndRefIdsOnTheDatasourceVariable) {
    Dashboard d = load_dashboard();
    ASSERT_TRUE(d.root);
    EXPECT_STREQ(json_string_value(json_object_get(d.root.get(), "uid")), "slurm-gpupool");
    std::set<json_int_t> ids;
    std::set<std::pair<json_int_t, json_int_t>> cells;  // (x, y) of each grid unit taken
    size_t i, panels = 0, rows = 0;
    json_t *p;
    json_array_foreach(json_object_get(d.root.get(), "panels"), i, p) {
        const std::string title = json_string_value(json_object_get(p, "title"));
        EXPECT_TRUE(ids.insert(json_integer_value(json_object_get(p, "id"))).second) << title;
        json_t *g = json_object_get(p, "gridPos");
        const json_int_t x = json_integer_value(json_object_get(g, "x")), y = json_integer_value(json_object_get(g, "y")),
                         w = json_integer_value(json_object_get(g, "w")), h = json_integer_value(json_object_get(g, "h"));
        EXPECT_TRUE(w > 0 && h > 0 && x >= 0 && x + w <= 24) << title;
        for (json_int_t a = x; a < x + w; ++a)
            for (json_int_t b = y; b < y + h; ++b) EXPECT_TRUE(cells.insert({a, b}).second) << title << " overlaps";
        const std::string type = json_string_value(json_object_get(p, "type"));
        if (type == "row") {
            ++rows;
            continue;
        }
        ++panels;
        EXPECT_EQ(type, "timeseries") << title;
        EXPECT_STREQ(json_string_value(json_object_get(json_object_get(p, "datasource"), "uid")), "${datasource}");
        std::set<std::string> refs;
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(p, "targets"), k, t) {
            EXPECT_TRUE(refs.insert(json_string_value(json_object_get(t, "refId"))).second) << title;
            EXPECT_STREQ(json_string_value(json_object_get(json_object_get(t, "datasource"), "uid")), "${datasource}");
        }
        EXPECT_FALSE(refs.empty()) << title;
    }
    EXPECT_EQ(rows, 4u);
    EXPECT_EQ(panels, 19u);
}

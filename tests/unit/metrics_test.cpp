// `gpupool exporter`'s metrics: the text exposition on a fixed cluster,
// the wait histogram over two recomputes, and gpupool(1) documenting
// every metric.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <deque>
#include <unistd.h>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "events.hpp"
#include "first_submits.hpp"
#include "metrics.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;
const std::string kTwoPools = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";

// OSMO's borrowing example (pool1 borrows pool2's idle GPU), with pending
// jobs of each kind of wait.
ClusterView borrowing_view() {
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0 + 7;
    v.history.available = false;
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "low", 1, T0 + 1));
    v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    v.snap.add_job(running(3, "pool1", "low", 1, T0 + 5, T0 + 3));
    v.snap.add_job(pending(5, "pool2", "normal", 1, T0 + 6));  // reclaims WF3's GPU
    v.snap.add_job(pending(6, "pool1", "normal", 2, T0 + 6));  // quota full
    SnapJob arr = pending(7, "pool1", "low", 1, T0 + 6);        // 3 tasks, no GPU free
    arr.array_tasks = 3;
    arr.array_job_id = 7;
    v.snap.add_job(arr);
    SnapJob held = pending(8, "pool1,pool2", "high", 1, T0 + 6);  // held by its user
    held.user_held = true;
    v.snap.add_job(held);
    return v;
}

std::string srcdir() {
    const char *d = std::getenv("srcdir");  // set by `make check`
    return d ? d : ".";
}
}  // namespace

// The gauges of OSMO's borrowing example, exactly: pool1 borrows 1 GPU
// from pool2, which has lent it and may reclaim it; pending jobs by
// pool, tier and reason (the held job lists both pools and counts in
// each; the array's 3 tasks ask for 3 GPUs).  Without the usage history
// its figures are left out (fairshare does not depend on it here:
// UsageWeight=0).
TEST(Metrics, ExpositionOfTheBorrowingExample) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = borrowing_view();
    WaitHistogram waits;
    EXPECT_EQ(cluster_metrics(e, v, waits), R"(# HELP gpupool_usage_history_available 1 if the usage history in StateSaveLocation was read (else usage and, with UsageWeight, fairshare are left out).
# TYPE gpupool_usage_history_available gauge
gpupool_usage_history_available 0
# HELP gpupool_config_warnings Warnings about the configuration (e.g. quotas adding up to more than their nodes).
# TYPE gpupool_config_warnings gauge
gpupool_config_warnings 0
# HELP gpupool_pool_capacity_gpus GPUs on the pool's usable nodes.
# TYPE gpupool_pool_capacity_gpus gauge
gpupool_pool_capacity_gpus{pool="pool1"} 4
gpupool_pool_capacity_gpus{pool="pool2"} 4
# HELP gpupool_pool_quota_gpus GPUs guaranteed to the pool's non-preemptible jobs.
# TYPE gpupool_pool_quota_gpus gauge
gpupool_pool_quota_gpus{pool="pool1"} 2
gpupool_pool_quota_gpus{pool="pool2"} 2
# HELP gpupool_pool_weight The pool's over-quota weight.
# TYPE gpupool_pool_weight gauge
gpupool_pool_weight{pool="pool1"} 1
gpupool_pool_weight{pool="pool2"} 1
# HELP gpupool_pool_rank The pool's rank (higher: over-quota GPUs first, served first; 0 by default).
# TYPE gpupool_pool_rank gauge
gpupool_pool_rank{pool="pool1"} 0
gpupool_pool_rank{pool="pool2"} 0
# HELP gpupool_pool_fairshare_gpus The pool's fairshare in GPUs (quota and over-quota share).
# TYPE gpupool_pool_fairshare_gpus gauge
gpupool_pool_fairshare_gpus{pool="pool1"} 2
gpupool_pool_fairshare_gpus{pool="pool2"} 2
# HELP gpupool_pool_allocated_gpus GPUs held by the pool's running jobs, by tier.
# TYPE gpupool_pool_allocated_gpus gauge
gpupool_pool_allocated_gpus{pool="pool1",tier="high"} 0
gpupool_pool_allocated_gpus{pool="pool1",tier="normal"} 1
gpupool_pool_allocated_gpus{pool="pool1",tier="low"} 2
gpupool_pool_allocated_gpus{pool="pool2",tier="high"} 0
gpupool_pool_allocated_gpus{pool="pool2",tier="normal"} 1
gpupool_pool_allocated_gpus{pool="pool2",tier="low"} 0
# HELP gpupool_pool_borrowed_gpus GPUs the pool uses over its quota, by lender: another pool of its nodes, or (unassigned): GPUs in no pool's quota.
# TYPE gpupool_pool_borrowed_gpus gauge
gpupool_pool_borrowed_gpus{pool="pool1",lender="pool2"} 1
gpupool_pool_borrowed_gpus{pool="pool2",lender="pool1"} 0
# HELP gpupool_pool_lent_gpus GPUs of the pool's idle quota other pools use.
# TYPE gpupool_pool_lent_gpus gauge
gpupool_pool_lent_gpus{pool="pool1"} 0
gpupool_pool_lent_gpus{pool="pool2"} 1
# HELP gpupool_pool_reclaimable_gpus Lent GPUs held by borrowers past their MinRuntime: what the pool can take back now.
# TYPE gpupool_pool_reclaimable_gpus gauge
gpupool_pool_reclaimable_gpus{pool="pool1"} 0
gpupool_pool_reclaimable_gpus{pool="pool2"} 1
# HELP gpupool_pool_decayed_usage_gpu_seconds The pool's time-decayed GPU usage.
# TYPE gpupool_pool_decayed_usage_gpu_seconds gauge
# HELP gpupool_pool_usage_share_ratio Decayed usage over decayed capacity of its nodes.
# TYPE gpupool_pool_usage_share_ratio gauge
# HELP gpupool_pending_jobs Pending jobs (an array counts once), by pool, tier and reason; left out when 0.
# TYPE gpupool_pending_jobs gauge
gpupool_pending_jobs{pool="pool1",tier="high",reason="held"} 1
gpupool_pending_jobs{pool="pool1",tier="normal",reason="quota_full"} 1
gpupool_pending_jobs{pool="pool1",tier="low",reason="waiting_for_gpus"} 1
gpupool_pending_jobs{pool="pool2",tier="high",reason="held"} 1
gpupool_pending_jobs{pool="pool2",tier="normal",reason="waiting_for_reclaim"} 1
# HELP gpupool_pending_gpus GPUs asked for by pending jobs (all tasks of an array), by pool, tier and reason.
# TYPE gpupool_pending_gpus gauge
gpupool_pending_gpus{pool="pool1",tier="high",reason="held"} 1
gpupool_pending_gpus{pool="pool1",tier="normal",reason="quota_full"} 2
gpupool_pending_gpus{pool="pool1",tier="low",reason="waiting_for_gpus"} 3
gpupool_pending_gpus{pool="pool2",tier="high",reason="held"} 1
gpupool_pending_gpus{pool="pool2",tier="normal",reason="waiting_for_reclaim"} 1
)");
}

// With the usage history: decayed usage and its share are there; GPUs in
// nobody's quota are a lender of their own.
TEST(Metrics, UsageAndUnassignedLender) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=1\nPool=pool2 Quota=2\n");
    ClusterView v = borrowing_view();
    v.history.available = true;
    WaitHistogram waits;
    const std::string m = cluster_metrics(e, v, waits);
    EXPECT_NE(m.find("\ngpupool_usage_history_available 1\n"), std::string::npos) << m;
    // pool1 uses 3 of quota 1: 1 GPU in nobody's quota, 1 of pool2's.
    EXPECT_NE(m.find("\ngpupool_pool_borrowed_gpus{pool=\"pool1\",lender=\"(unassigned)\"} 1\n"
                     "gpupool_pool_borrowed_gpus{pool=\"pool1\",lender=\"pool2\"} 1\n"
                     "gpupool_pool_borrowed_gpus{pool=\"pool2\",lender=\"(unassigned)\"} 0\n"
                     "gpupool_pool_borrowed_gpus{pool=\"pool2\",lender=\"pool1\"} 0\n"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("\ngpupool_pool_decayed_usage_gpu_seconds{pool=\"pool1\"} 0\n"), std::string::npos) << m;
    EXPECT_NE(m.find("\ngpupool_pool_usage_share_ratio{pool=\"pool2\"} 0\n"), std::string::npos) << m;
}

// Waits of jobs seen starting: none counted at the first recompute (what
// runs then started before it), then each new start once, by pool and
// tier, cumulative buckets; a job requeued and started again counts again.
TEST(Metrics, WaitHistogramCountsEachStartOnce) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = borrowing_view();
    WaitHistogram waits;
    cluster_metrics(e, v, waits);
    const std::string zero = waits.text();
    EXPECT_NE(zero.find("\ngpupool_job_wait_seconds_count{pool=\"pool1\",tier=\"low\"} 0\n"), std::string::npos) << zero;

    // 60 s later: job 5 started 10 s after v.now, 1 h 10 min after its submit.
    ClusterView later = borrowing_view();
    later.now = v.now + 60;
    for (SnapJob &j : later.snap.jobs)
        if (j.id == 5) {
            j.state = JobState::Running;
            j.start_time = v.now + 10;
            j.submit_time = j.start_time - 4200;
        }
    cluster_metrics(e, later, waits);
    cluster_metrics(e, later, waits);  // seen again: not counted again
    const std::string t = waits.text();
    EXPECT_NE(t.find("# HELP gpupool_job_wait_seconds Time from submit to start of jobs seen starting, by pool and "
                     "tier (since the exporter started).\n# TYPE gpupool_job_wait_seconds histogram\n"),
              std::string::npos);
    EXPECT_NE(t.find(R"(gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="60"} 0
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="300"} 0
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="600"} 0
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="1800"} 0
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="3600"} 0
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="7200"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="14400"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="28800"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="43200"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="86400"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="172800"} 1
gpupool_job_wait_seconds_bucket{pool="pool2",tier="normal",le="+Inf"} 1
gpupool_job_wait_seconds_sum{pool="pool2",tier="normal"} 4200
gpupool_job_wait_seconds_count{pool="pool2",tier="normal"} 1
)"),
              std::string::npos)
        << t;
    // Nothing else was counted.
    std::regex counts(R"(gpupool_job_wait_seconds_count\{[^}]*\} ([0-9]+))");
    int total = 0;
    for (std::sregex_iterator it(t.begin(), t.end(), counts), end; it != end; ++it) total += std::stoi((*it)[1]);
    EXPECT_EQ(total, 1);

    // Requeued and started again 2 min later, 30 s after its new submit.
    ClusterView again = later;
    again.now = later.now + 120;
    for (SnapJob &j : again.snap.jobs)
        if (j.id == 5) {
            j.submit_time = later.now + 60;
            j.start_time = later.now + 90;
        }
    cluster_metrics(e, again, waits);
    const std::string t2 = waits.text();
    EXPECT_NE(t2.find("\ngpupool_job_wait_seconds_bucket{pool=\"pool2\",tier=\"normal\",le=\"60\"} 1\n"), std::string::npos) << t2;
    EXPECT_NE(t2.find("\ngpupool_job_wait_seconds_sum{pool=\"pool2\",tier=\"normal\"} 4230\n"), std::string::npos) << t2;
    EXPECT_NE(t2.find("\ngpupool_job_wait_seconds_count{pool=\"pool2\",tier=\"normal\"} 2\n"), std::string::npos) << t2;
}

TEST(Metrics, ExporterStateAndEscaping) {
    ExporterStats s;
    s.up = true;
    s.recomputes = 3;
    s.errors = 1;
    s.duration = 0.25;
    s.time = T0;
    EXPECT_EQ(exporter_metrics(s), R"(# HELP gpupool_up 1 if the last recompute read slurmctld and gpupool.conf.
# TYPE gpupool_up gauge
gpupool_up 1
# HELP gpupool_exporter_recomputes_total Recomputes: reads of the cluster and passes.
# TYPE gpupool_exporter_recomputes_total counter
gpupool_exporter_recomputes_total 3
# HELP gpupool_exporter_recompute_errors_total Recomputes that failed.
# TYPE gpupool_exporter_recompute_errors_total counter
gpupool_exporter_recompute_errors_total 1
# HELP gpupool_exporter_recompute_duration_seconds How long the last recompute took.
# TYPE gpupool_exporter_recompute_duration_seconds gauge
gpupool_exporter_recompute_duration_seconds 0.25
# HELP gpupool_exporter_last_recompute_timestamp_seconds When the last recompute ran.
# TYPE gpupool_exporter_last_recompute_timestamp_seconds gauge
gpupool_exporter_last_recompute_timestamp_seconds 1700000000
)");
    std::string out;
    metric_sample(out, "m", {{"a", "x\"y\\z\nw"}}, metric_value(1.5));
    EXPECT_EQ(out, "m{a=\"x\\\"y\\\\z\\nw\"} 1.5\n");
    EXPECT_EQ(metric_value(std::nan("")), "NaN");
    EXPECT_EQ(metric_value(1e300 * 1e300), "+Inf");
}

// priority/gpupool's pass durations, as slurmctld wrote them: the count,
// the histogram in seconds (its buckets from the file, +Inf = every
// pass), each part's total, the last and longest pass and the times.
TEST(Metrics, PluginPassDurations) {
    PluginPasses p;
    p.available = true;
    PassTime t;
    t.total = 800;
    t.lock = 100;
    t.snapshot = 200;
    t.evaluate = 300;
    t.apply = 150;
    p.stats.note(t, T0);
    t.total = 30000;
    t.evaluate = 25000;
    p.stats.note(t, T0 + 10);
    p.stats = PassStats::from_json(p.stats.to_json(T0 + 12));  // as read from the file
    EXPECT_EQ(plugin_metrics(p), R"(# HELP gpupool_plugin_stats_readable 1 if priority/gpupool's pass statistics in StateSaveLocation could be read (on the controller, root or SlurmUser).
# TYPE gpupool_plugin_stats_readable gauge
gpupool_plugin_stats_readable 1
# HELP gpupool_plugin_passes_total Scheduling passes of priority/gpupool since slurmctld started.
# TYPE gpupool_plugin_passes_total counter
gpupool_plugin_passes_total 2
# HELP gpupool_plugin_pass_duration_seconds Wall time of priority/gpupool's passes, waiting for slurmctld's locks included, since slurmctld started.
# TYPE gpupool_plugin_pass_duration_seconds histogram
gpupool_plugin_pass_duration_seconds_bucket{le="0.001"} 1
gpupool_plugin_pass_duration_seconds_bucket{le="0.0025"} 1
gpupool_plugin_pass_duration_seconds_bucket{le="0.005"} 1
gpupool_plugin_pass_duration_seconds_bucket{le="0.01"} 1
gpupool_plugin_pass_duration_seconds_bucket{le="0.025"} 1
gpupool_plugin_pass_duration_seconds_bucket{le="0.05"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="0.1"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="0.25"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="0.5"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="1"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="2.5"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="5"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="10"} 2
gpupool_plugin_pass_duration_seconds_bucket{le="+Inf"} 2
gpupool_plugin_pass_duration_seconds_sum 0.0308
gpupool_plugin_pass_duration_seconds_count 2
# HELP gpupool_plugin_pass_part_seconds_total Time of the passes by part: lock_wait (for slurmctld's locks), snapshot, evaluate, apply.
# TYPE gpupool_plugin_pass_part_seconds_total counter
gpupool_plugin_pass_part_seconds_total{part="lock_wait"} 2e-04
gpupool_plugin_pass_part_seconds_total{part="snapshot"} 4e-04
gpupool_plugin_pass_part_seconds_total{part="evaluate"} 0.0253
gpupool_plugin_pass_part_seconds_total{part="apply"} 3e-04
# HELP gpupool_plugin_last_pass_duration_seconds How long the last pass took.
# TYPE gpupool_plugin_last_pass_duration_seconds gauge
gpupool_plugin_last_pass_duration_seconds 0.03
# HELP gpupool_plugin_max_pass_duration_seconds The longest pass since slurmctld started.
# TYPE gpupool_plugin_max_pass_duration_seconds gauge
gpupool_plugin_max_pass_duration_seconds 0.03
# HELP gpupool_plugin_last_pass_timestamp_seconds When the last pass ended.
# TYPE gpupool_plugin_last_pass_timestamp_seconds gauge
gpupool_plugin_last_pass_timestamp_seconds 1700000010
# HELP gpupool_plugin_stats_timestamp_seconds When slurmctld wrote the statistics (every 10 s while it runs).
# TYPE gpupool_plugin_stats_timestamp_seconds gauge
gpupool_plugin_stats_timestamp_seconds 1700000012
)");
}

// Where the file cannot be read (a login node, another user): readable 0
// and no figures, rather than zeros.
TEST(Metrics, PluginPassDurationsUnreadable) {
    PluginPasses p;
    p.error = "/var/spool/slurmctld/gpupool_stats.json: Permission denied";
    const std::string m = plugin_metrics(p);
    EXPECT_NE(m.find("\ngpupool_plugin_stats_readable 0\n"), std::string::npos) << m;
    size_t samples = 0;
    std::istringstream in(m);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') ++samples;
    EXPECT_EQ(samples, 1u) << m;
}

// gpupool(1) documents every metric the exporter serves.
TEST(Metrics, EveryMetricIsDocumented) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = borrowing_view();
    v.history.available = true;
    WaitHistogram waits;
    PluginPasses passes;
    passes.available = true;
    passes.stats.note(PassTime{}, T0);
    const std::string all = exporter_metrics(ExporterStats{}) + cluster_metrics(e, v, waits) + waits.text() +
                            PreemptionLog().text() + plugin_metrics(passes);
    std::set<std::string> names;
    std::regex type(R"(# TYPE ([a-z_]+) )");
    for (std::sregex_iterator it(all.begin(), all.end(), type), end; it != end; ++it) names.insert((*it)[1]);
    ASSERT_EQ(names.size(), 34u);
    std::ifstream in(srcdir() + "/doc/gpupool.1");
    ASSERT_TRUE(in) << srcdir() << "/doc/gpupool.1 not found";
    std::stringstream ss;
    ss << in.rdbuf();
    std::string man = std::regex_replace(ss.str(), std::regex(R"(\\f[BIRP])"), "");
    man = std::regex_replace(man, std::regex(R"(\\-)"), "-");
    for (const std::string &n : names)
        EXPECT_TRUE(std::regex_search(man, std::regex("(^|[^a-z_])" + n + "([^a-z_]|$)")))
            << "gpupool(1) does not document the metric " << n;
    // And its labels.
    for (const char *label : {"pool", "tier", "lender", "reason", "le", "preemptor_pool", "rule", "part"})
        EXPECT_TRUE(std::regex_search(man, std::regex(std::string("(^|[^a-z_])") + label + "([^a-z_]|$)"))) << label;
}

namespace {
std::string preemption(uint32_t victim, const std::string &pool, const std::string &by_pool, const std::string &rule,
                       uint32_t gpus, int64_t ran) {
    PreemptionEvent e;
    e.time = T0 + 1000;
    e.victim_job_id = victim;
    e.victim_name = "name \"with\" quotes\n";
    e.victim_pool = pool;
    e.victim_tier = "low";
    e.victim_gpus = gpus;
    e.victim_start_time = e.time - ran;
    e.preemptor_job_id = victim + 100;
    e.preemptor_pool = by_pool;
    e.preemptor_tier = "normal";
    e.rule = rule;
    e.mode = "requeue";
    return event_json_line(e);
}

void append(const std::string &path, std::deque<std::string> lines, uint64_t max_bytes) {
    append_rotated(path, lines, max_bytes, 4);
    ASSERT_TRUE(lines.empty());
}

// A value of the exposition, or "" when the sample is absent.
std::string sample(const std::string &text, const std::string &series) {
    size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return "";
    size_t from = at + series.size() + 2;
    return text.substr(from, text.find('\n', from) - from);
}
}  // namespace

// Preemptions and GPU-seconds lost, from the event log as the plugins
// write it (append_rotated): every kept file at the first read, then only
// what was appended, across rotations, each line once; a line being
// written counts once whole.
TEST(Metrics, PreemptionsFromTheEventLog) {
    char tmpl[] = "/tmp/gpupool-metrics-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    const std::string dir = tmpl, path = dir + "/gpupool_events.jsonl";
    const std::string reclaim = preemption(3, "pool1", "pool2", "Reclaim", 1, 100);
    const uint64_t max = 2 * reclaim.size() + 10;  // two lines a file
    append(path, {reclaim, preemption(7, "pool1", "pool1", "InPool", 2, 50), reclaim}, max);  // rotates once
    PreemptionLog log;
    log.read(path);
    EXPECT_EQ(log.error(), "");
    EXPECT_EQ(log.text(), R"(# HELP gpupool_preemption_log_readable 1 if the event log in StateSaveLocation could be read (root or SlurmUser).
# TYPE gpupool_preemption_log_readable gauge
gpupool_preemption_log_readable 1
# HELP gpupool_preemptions_total Preemptions in the event log, by the victim's pool, the preemptor's pool and the rule.
# TYPE gpupool_preemptions_total counter
gpupool_preemptions_total{pool="pool1",preemptor_pool="pool1",rule="InPool"} 1
gpupool_preemptions_total{pool="pool1",preemptor_pool="pool2",rule="Reclaim"} 2
# HELP gpupool_preemption_lost_gpu_seconds_total GPU-seconds of runs preempted (GPUs times time run), by the same labels.
# TYPE gpupool_preemption_lost_gpu_seconds_total counter
gpupool_preemption_lost_gpu_seconds_total{pool="pool1",preemptor_pool="pool1",rule="InPool"} 100
gpupool_preemption_lost_gpu_seconds_total{pool="pool1",preemptor_pool="pool2",rule="Reclaim"} 200
# HELP gpupool_preemption_events_dropped_total Preemptions the plugin could not record (its queue was full), as the event log says.
# TYPE gpupool_preemption_events_dropped_total counter
gpupool_preemption_events_dropped_total 0
# HELP gpupool_preemption_log_bad_lines_total Lines of the event log that were not valid.
# TYPE gpupool_preemption_log_bad_lines_total counter
gpupool_preemption_log_bad_lines_total 0
)");
    const std::string reclaims = R"(gpupool_preemptions_total{pool="pool1",preemptor_pool="pool2",rule="Reclaim"})";
    log.read(path);  // nothing new
    EXPECT_EQ(sample(log.text(), reclaims), "2");

    // Three more lines: the file rotates twice before the next read.
    append(path, {reclaim, reclaim, reclaim, dropped_json_line(5, T0 + 2000)}, max);
    log.read(path);
    EXPECT_EQ(sample(log.text(), reclaims), "5");
    EXPECT_EQ(sample(log.text(), "gpupool_preemption_events_dropped_total"), "5");

    // Half a line, as a writer leaves it for a moment, then the rest.
    {
        std::ofstream out(path, std::ios::app | std::ios::binary);
        out << reclaim.substr(0, 40);
    }
    log.read(path);
    EXPECT_EQ(sample(log.text(), reclaims), "5");
    {
        std::ofstream out(path, std::ios::app | std::ios::binary);
        out << reclaim.substr(40) << "not json\n";
    }
    log.read(path);
    EXPECT_EQ(sample(log.text(), reclaims), "6");
    EXPECT_EQ(sample(log.text(), "gpupool_preemption_log_bad_lines_total"), "1");

    // A second reader started now counts what the kept files hold.
    PreemptionLog fresh;
    fresh.read(path);
    EXPECT_EQ(sample(fresh.text(), reclaims), "6");
    EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

// ---------------------------------------------------------------- the exporter's requeue records
// The exporter asks slurmdbd only about requeued jobs it does not know
// yet, over records since its previous view (less the clock slack), and
// keeps what it learnt: not every requeued job's records since the epoch
// on every recompute.
namespace {
SnapJob seen_job(uint32_t id, int64_t submit, uint32_t restarts) {
    SnapJob j = pending(id, "pool1", "low", 1, submit);
    j.restart_cnt = restarts;
    return j;
}
ClusterView jobs_view(int64_t now, std::vector<SnapJob> jobs) {
    ClusterView v;
    v.now = now;
    for (SnapJob &j : jobs) v.snap.add_job(std::move(j));
    return v;
}
using Firsts = std::unordered_map<uint32_t, int64_t>;
}  // namespace

TEST(FirstSubmits, AsksOnlyAboutNewRequeuedJobsSinceTheLastView) {
    const int64_t slack = FirstSubmits::kClockSlack;
    FirstSubmits fs;
    // The first view: every requeued job, since the epoch.
    FirstSubmits::Query q = fs.plan(jobs_view(1000, {seen_job(1, 100, 0), seen_job(2, 500, 2)}));
    EXPECT_EQ(q.jobs, std::vector<uint32_t>{2});
    EXPECT_EQ(q.since, 0);
    EXPECT_EQ(q.until, 1000);
    fs.merge(q, {{2, 50}});
    EXPECT_EQ(fs.requeued(), (Firsts{{2, 50}}));

    // Job 1 requeued since (slurmctld shows its new submit), job 3 new and
    // requeued, job 4 new: only job 3 is asked about, since the last view.
    q = fs.plan(jobs_view(1100, {seen_job(1, 1050, 1), seen_job(2, 1020, 3), seen_job(3, 1080, 1), seen_job(4, 1090, 0)}));
    EXPECT_EQ(q.jobs, std::vector<uint32_t>{3});
    EXPECT_EQ(q.since, 1000 - slack);
    EXPECT_EQ(q.until, 1100);
    fs.merge(q, {});  // slurmdbd has no record of it yet
    EXPECT_EQ(fs.requeued(), (Firsts{{1, 100}, {2, 50}}));

    // Job 3 is asked about again from the same start; job 2 has ended and
    // is forgotten.
    q = fs.plan(jobs_view(1200, {seen_job(1, 1050, 1), seen_job(3, 1080, 1), seen_job(4, 1090, 0)}));
    EXPECT_EQ(q.jobs, std::vector<uint32_t>{3});
    EXPECT_EQ(q.since, 1000 - slack);
    fs.merge(q, {{3, 1070}});
    EXPECT_EQ(fs.requeued(), (Firsts{{1, 100}, {3, 1070}}));

    // Nothing new: slurmdbd is not asked at all.
    q = fs.plan(jobs_view(1300, {seen_job(1, 1050, 1), seen_job(3, 1080, 1), seen_job(4, 1290, 1)}));
    EXPECT_TRUE(q.jobs.empty());
    EXPECT_EQ(fs.requeued(), (Firsts{{1, 100}, {3, 1070}, {4, 1090}}));
}

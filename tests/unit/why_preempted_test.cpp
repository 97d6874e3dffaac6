// `gpupool why` on a preempted job: its preemptions read back from the
// event log (with rotated files and bad lines) or from accounting's
// SystemComments, printed as text and JSON, every JSON field documented.
#include <gtest/gtest.h>
#include <jansson.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "commands.hpp"
#include "events.hpp"
#include "preemptions.hpp"
#include "test_helpers.hpp"
#include "json_ptr.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {

constexpr int64_t T0 = 1'795'000'000;  // 2026-11-18T11:06:40Z

using Json = JsonPtr;

Json parse(const std::string &text) {
    json_error_t err;
    Json j(json_loads(text.c_str(), 0, &err));
    EXPECT_TRUE(j) << err.text << "\n" << text;
    return j;
}

// Local time is UTC inside these tests; the caller's TZ comes back after.
class WhyPreempted : public ::testing::Test {
protected:
    void SetUp() override {
        const char *tz = std::getenv("TZ");
        had_tz_ = tz != nullptr;
        if (tz) old_tz_ = tz;
        setenv("TZ", "UTC", 1);
        tzset();
    }
    void TearDown() override {
        if (had_tz_)
            setenv("TZ", old_tz_.c_str(), 1);
        else
            unsetenv("TZ");
        tzset();
    }

private:
    bool had_tz_ = false;
    std::string old_tz_;
};

std::string temp_dir(const std::string &name) {
    std::string tmpl = std::string(::testing::TempDir()) + "gpupool_why_" + name + "_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    EXPECT_NE(mkdtemp(buf.data()), nullptr);
    return buf.data();
}

PreemptionEvent event(uint32_t victim, uint32_t preemptor, int64_t time) {
    PreemptionEvent e;
    e.time = time;
    e.victim_job_id = victim;
    e.victim_name = "wf3";
    e.victim_pool = "pool1";
    e.victim_tier = "low";
    e.victim_gpus = 1;
    e.victim_start_time = time - 120;
    e.preemptor_job_id = preemptor;
    e.preemptor_pool = "pool2";
    e.preemptor_tier = "normal";
    e.rule = "Reclaim";
    e.mode = "requeue";
    e.why = "borrowed excess (over-fairshare) of pool1";
    return e;
}

void meta(ClusterView &v, uint32_t id, const std::string &name, const std::string &user, const std::string &part,
          const std::string &state, int64_t submit) {
    JobMeta m;
    m.name = name;
    m.user = user;
    m.partition = part;
    m.state = state;
    m.submit_time = submit;
    v.meta[id] = m;
}

const std::string kTwoPools = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";

// After OSMO's reclaim: WF5 (5) of pool2 runs, WF3 (3) of pool1 was
// requeued and waits again.
ClusterView reclaimed_view() {
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0 + 300;
    v.history.available = true;
    v.history.path = "state.json";
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "low", 1, T0 + 1));
    v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    v.snap.add_job(running(5, "pool2", "normal", 1, T0 + 200));
    SnapJob wf3 = pending(3, "pool1", "low", 1, T0 + 201);
    wf3.restart_cnt = 1;
    v.snap.add_job(wf3);
    meta(v, 1, "wf1", "alice", "pool1", "RUNNING", T0);
    meta(v, 2, "wf2", "alice", "pool1", "RUNNING", T0 + 1);
    meta(v, 4, "wf4", "bob", "pool2", "RUNNING", T0 + 2);
    meta(v, 5, "wf5", "bob", "pool2", "RUNNING", T0 + 199);
    meta(v, 3, "wf3", "alice", "pool1", "PENDING", T0 + 201);
    return v;
}

// slurmctld no longer has the job.
void forget(ClusterView &v, uint32_t id) {
    v.meta.erase(id);
    decltype(v.snap.jobs) left;
    for (const SnapJob &j : v.snap.jobs)
        if (j.id != id) left.push_back(j);
    v.snap.jobs = left;
}

PreemptionRecord from_log(int64_t time) {
    PreemptionRecord r;
    r.time = time;
    r.preemptor_job_id = 5;
    r.preemptor_pool = "pool2";
    r.preemptor_tier = "normal";
    r.victim_pool = "pool1";
    r.rule = "Reclaim";
    r.mode = "requeue";
    r.gpus = 1;
    r.gpu_seconds_lost = 120;
    r.why = "borrowed excess (over-fairshare) of pool1";
    return r;
}

}  // namespace

// ---------------------------------------------------------------- event log

TEST(EventLogRead, RotatedFilesOldestFirstBadLinesNoted) {
    const std::string dir = temp_dir("log"), path = dir + "/gpupool_events.jsonl";
    { std::ofstream(path + ".2") << event_json_line(event(13, 21, T0)) << event_json_line(event(130, 22, T0 + 1)); }
    { std::ofstream(path + ".1") << dropped_json_line(3, T0 + 2) << "{\"victim_job_id\":13,\"version\":1,\"ev\n"; }
    { std::ofstream(path) << event_json_line(event(14, 23, T0 + 3)) << event_json_line(event(13, 24, T0 + 4)); }
    std::vector<PreemptionRecord> got;
    std::vector<std::string> notes;
    std::string unreadable;
    EXPECT_TRUE(read_event_log(path, 13, got, notes, unreadable));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].preemptor_job_id, 21u);
    EXPECT_EQ(got[1].preemptor_job_id, 24u);
    EXPECT_EQ(got[1].time, T0 + 4);
    EXPECT_EQ(got[1].preemptor_pool, "pool2");
    EXPECT_EQ(got[1].preemptor_tier, "normal");
    EXPECT_EQ(got[1].victim_pool, "pool1");
    EXPECT_EQ(got[1].rule, "Reclaim");
    EXPECT_EQ(got[1].mode, "requeue");
    ASSERT_TRUE(got[1].gpus.has_value());
    EXPECT_EQ(*got[1].gpus, 1u);
    EXPECT_EQ(got[1].gpu_seconds_lost, 120u);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].rfind(path + ".1:2: not JSON: ", 0), 0u) << notes[0];
    EXPECT_NE(notes[0].find("; line skipped"), std::string::npos) << notes[0];
    EXPECT_EQ(unreadable, "");
}

TEST(EventLogRead, MissingLogIsNoError) {
    const std::string dir = temp_dir("missing");
    std::vector<PreemptionRecord> got;
    std::vector<std::string> notes;
    std::string unreadable;
    EXPECT_TRUE(read_event_log(dir + "/gpupool_events.jsonl", 13, got, notes, unreadable));
    EXPECT_TRUE(got.empty());
    EXPECT_TRUE(notes.empty());
}

TEST(EventLogRead, UnreadableSaysWhy) {
    const std::string dir = temp_dir("unreadable"), path = dir + "/gpupool_events.jsonl";
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);  // not a file: reading it fails
    std::vector<PreemptionRecord> got;
    std::vector<std::string> notes;
    std::string unreadable;
    EXPECT_FALSE(read_event_log(path, 13, got, notes, unreadable));
    EXPECT_EQ(unreadable, path + ": read error");
}

// ---------------------------------------------------------------- accounting

// Each record carries the entries of the runs before it: every preemption
// once, in the partition of the run it ended.
TEST_F(WhyPreempted, FromSystemComments) {
    std::string c1 = comment_append("", comment_entry(event(3, 5, T0 + 200)));
    std::string c2 = comment_append(c1, comment_entry(event(3, 9, T0 + 900)));
    auto got = preemptions_from_comments({{"pool1", c1}, {"pool3", c2}, {"pool1", c2}, {"pool1", ""}});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].preemptor_job_id, 5u);
    EXPECT_EQ(got[0].victim_pool, "pool1");
    EXPECT_EQ(got[0].time, T0 + 200);
    EXPECT_EQ(got[0].gpu_seconds_lost, 120u);
    EXPECT_EQ(got[1].preemptor_job_id, 9u);
    EXPECT_EQ(got[1].victim_pool, "pool3");
    EXPECT_EQ(got[1].rule, "Reclaim");
    EXPECT_FALSE(got[1].gpus.has_value());
    EXPECT_EQ(got[1].mode, "");
}

// ---------------------------------------------------------------- why

// Acceptance: why on WF3, requeued by WF5's reclaim and pending again,
// names WF5, pool2 and the rule.
TEST_F(WhyPreempted, RequeuedJobNamesItsPreemptor) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = reclaimed_view();
    v.preemptions.source = "event_log";
    v.preemptions.event_log = "/state/gpupool_events.jsonl";
    v.preemptions.records = {from_log(T0 + 200)};
    Options o;
    o.job_id = 3;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    const std::string t = text.str();
    EXPECT_NE(t.find("Job 3 (wf3) of alice is PENDING in pool1, tier low"), std::string::npos) << t;
    EXPECT_NE(t.find("Preempted 1 time (gpupool's event log /state/gpupool_events.jsonl):\n"
                     "  2026-11-18T11:10:00 by job 5 (pool pool2, tier normal) under rule Reclaim (borrowed excess "
                     "(over-fairshare) of pool1) in pool1: requeued, 1 GPU, 120 GPU-seconds lost.\n"),
              std::string::npos)
        << t;

    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_why(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *job = json_object_get(root.get(), "job");
    EXPECT_TRUE(json_is_true(json_object_get(job, "in_queue")));
    EXPECT_STREQ(json_string_value(json_object_get(job, "preemptions_source")), "event_log");
    json_t *p = json_array_get(json_object_get(job, "preemptions"), 0);
    ASSERT_NE(p, nullptr) << js.str();
    EXPECT_EQ(json_integer_value(json_object_get(p, "preemptor_job_id")), 5);
    EXPECT_STREQ(json_string_value(json_object_get(p, "preemptor_pool")), "pool2");
    EXPECT_STREQ(json_string_value(json_object_get(p, "rule")), "Reclaim");
    EXPECT_EQ(json_integer_value(json_object_get(p, "time")), T0 + 200);
    EXPECT_EQ(json_integer_value(json_object_get(p, "gpu_seconds_lost")), 120);
    EXPECT_STREQ(json_string_value(json_object_get(p, "mode")), "requeue");
}

// A cancelled job slurmctld has forgotten, known to accounting only.
TEST_F(WhyPreempted, EndedJobFromAccounting) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = reclaimed_view();
    forget(v, 3);
    PreemptionRecord r;
    r.time = T0 + 200;
    r.preemptor_job_id = 5;
    r.preemptor_pool = "pool2";
    r.victim_pool = "pool1";
    r.rule = "Reclaim";
    r.gpu_seconds_lost = 120;
    v.preemptions.source = "accounting";
    v.preemptions.records = {r};
    v.preemptions.in_accounting = true;
    v.preemptions.name = "wf3";
    v.preemptions.user = "alice";
    v.preemptions.state = "PREEMPTED";
    v.preemptions.partition = "pool1";
    Options o;
    o.job_id = 3;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    EXPECT_EQ(text.str(),
              "Job 3 (wf3) of alice is PREEMPTED in pool1; slurmctld no longer has it.\n"
              "Preempted 1 time (accounting: sacct SystemComment):\n"
              "  2026-11-18T11:10:00 by job 5 (pool pool2) under rule Reclaim in pool1: 120 GPU-seconds lost.\n");

    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_why(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *job = json_object_get(root.get(), "job");
    EXPECT_TRUE(json_is_false(json_object_get(job, "in_queue")));
    EXPECT_STREQ(json_string_value(json_object_get(job, "state")), "PREEMPTED");
    EXPECT_STREQ(json_string_value(json_object_get(job, "preemptions_source")), "accounting");
    json_t *p = json_array_get(json_object_get(job, "preemptions"), 0);
    EXPECT_TRUE(json_is_null(json_object_get(p, "gpus")));
    EXPECT_TRUE(json_is_null(json_object_get(p, "mode")));
    EXPECT_TRUE(json_is_null(json_object_get(p, "preemptor_tier")));

    // Nothing on record: the job is unknown, as before.
    v.preemptions = PreemptionHistory();
    std::ostringstream out2, err2;
    o.json = false;
    EXPECT_EQ(cmd_why(e, v, o, out2, err2), 1);
    EXPECT_EQ(err2.str(), "gpupool: job 3 is not in slurmctld's queue (ended, or never existed)\n");
}

// gpupool(1) documents every field of these documents too.
TEST_F(WhyPreempted, EveryFieldIsDocumented) {
    std::set<std::string> keys;
    std::function<void(json_t *)> collect = [&](json_t *j) {
        const char *k;
        json_t *v;
        size_t i;
        if (json_is_object(j)) {
            json_object_foreach(j, k, v) {
                keys.insert(k);
                if (std::string(k) != "pool_position") collect(v);
            }
        } else if (json_is_array(j)) {
            json_array_foreach(j, i, v) collect(v);
        }
    };
    Engine e = engine_with(kTwoPools);
    ClusterView v = reclaimed_view();
    v.preemptions.source = "event_log";
    v.preemptions.records = {from_log(T0 + 200)};
    Options o;
    o.json = true;
    o.job_id = 3;
    std::ostringstream out, err;
    ASSERT_EQ(cmd_why(e, v, o, out, err), 0);
    collect(parse(out.str()).get());
    forget(v, 3);
    v.preemptions.in_accounting = true;
    v.preemptions.name = "wf3";
    v.preemptions.user = "alice";
    v.preemptions.state = "PREEMPTED";
    std::ostringstream out2;
    ASSERT_EQ(cmd_why(e, v, o, out2, err), 0);
    collect(parse(out2.str()).get());
    o.job_id = 5;  // running, never preempted
    std::ostringstream out3;
    ASSERT_EQ(cmd_why(e, v, o, out3, err), 0);
    collect(parse(out3.str()).get());

    const char *d = std::getenv("srcdir");  // set by `make check`
    std::ifstream in(std::string(d ? d : ".") + "/doc/gpupool.1");
    ASSERT_TRUE(in) << "doc/gpupool.1 not found";
    std::stringstream ss;
    ss << in.rdbuf();
    std::string man = std::regex_replace(ss.str(), std::regex(R"(\\f[BIRP])"), "");
    man = std::regex_replace(man, std::regex(R"(\\-)"), "-");
    for (const char *k : {"preemptions", "preemptions_source", "in_queue", "preemptor_job_id", "preemptor_pool",
                          "preemptor_tier", "victim_pool", "gpu_seconds_lost", "rule_detail", "mode"})
        EXPECT_TRUE(keys.count(k)) << k << " not in the documents";
    for (const std::string &k : keys)
        EXPECT_TRUE(std::regex_search(man, std::regex("(^|[^a-z_])" + k + "([^a-z_]|$)")))
            << "gpupool(1) does not document the JSON field " << k;
}

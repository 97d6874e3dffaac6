// Bad or extreme input to the core: state files, clocks, long downtimes,
// names, oversized config files, the state file on disk, reconfigure.
// Each test names the defect of issue 6 it guards against.
#include <gtest/gtest.h>
#include <jansson.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

constexpr int64_t T0 = 1'700'000'000;
constexpr int64_t kThreeYears = 3 * 365 * 86400;

std::string temp_path(const std::string &name) {
    return std::string(::testing::TempDir()) + "gpupool_" + name + "_" + std::to_string(::getpid());
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// Pool p over 4 one-GPU nodes, with one job holding `gpus` of them.
Snapshot pool_p_busy(uint32_t gpus) {
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    if (gpus) s.add_job(running(1, "p", "normal", gpus, T0 - 100));
    return s;
}

// A state file whose pool p held `used` of `capacity` GPUs when it was last
// accounted at `last_account`, with the given usage buckets.
std::string state_with(int64_t last_account, uint32_t used, uint32_t capacity, const std::string &usage_buckets = "") {
    return R"({"format":"gpupool-state","version":1,"saved_at":0,"last_account":)" + std::to_string(last_account) +
           R"(,"jobs":[],"pools":{"p":{"last_used":)" + std::to_string(used) + R"(,"last_capacity":)" +
           std::to_string(capacity) + R"(,"usage":{"tail":0,"tail_time":0,"buckets":[)" + usage_buckets +
           R"(]},"capacity":{"tail":0,"tail_time":0,"buckets":[]}}}})";
}

// Usage buckets of pool p in the engine's state.
size_t usage_buckets(const Engine &e, int64_t now) {
    json_error_t err;
    json_t *root = json_loads(e.state_json(now).c_str(), 0, &err);
    EXPECT_NE(root, nullptr) << err.text;
    if (!root) return SIZE_MAX;
    json_t *b = json_object_get(json_object_get(json_object_get(json_object_get(root, "pools"), "p"), "usage"),
                                "buckets");
    size_t n = json_array_size(b);
    json_decref(root);
    return n;
}

std::string load_error(Engine &e, const std::string &text) {
    try {
        e.load_state_json(text);
    } catch (const std::runtime_error &ex) {
        return ex.what();
    }
    return "accepted";
}

}  // namespace

// Defect 1: times far outside any clock in a well-formed state file made the
// next pass overflow signed arithmetic.  They are rejected, naming where.
TEST(Robustness, StateTimesOutOfRangeAreRejectedAndChangeNothing) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    e.evaluate(pool_p_busy(2), T0);
    const std::string before = e.state_json(T0);
    const std::string range = " out of range 0..1099511627776";

    EXPECT_EQ(load_error(e, state_with(T0, 2, 4, "[9223372036854775000,9223372036854775807,1.0]")),
              "pool p usage: bucket 0: time 9223372036854775000" + range);
    EXPECT_EQ(load_error(e, state_with(T0, 2, 4, "[-20,-10,1.0]")), "pool p usage: bucket 0: time -20" + range);
    EXPECT_EQ(load_error(e, state_with(INT64_MAX, 2, 4)), "state: 'last_account' 9223372036854775807" + range);
    EXPECT_EQ(load_error(e, state_with(-1, 2, 4)), "state: 'last_account' -1" + range);
    std::string tail = state_with(T0, 2, 4);
    tail.replace(tail.find("\"tail_time\":0"), 13, "\"tail_time\":-9223372036854775808");
    EXPECT_EQ(load_error(e, tail), "pool p usage: 'tail_time' -9223372036854775808" + range);
    std::string jobs = state_with(T0, 2, 4);
    jobs.replace(jobs.find("\"jobs\":[]"), 9, "\"jobs\":[[7,-9223372036854775808,5]]");
    EXPECT_EQ(load_error(e, jobs), "job entry 0: orig_submit -9223372036854775808" + range);
    jobs = state_with(T0, 2, 4);
    jobs.replace(jobs.find("\"jobs\":[]"), 9, "\"jobs\":[[7,5,9223372036854775807]]");
    EXPECT_EQ(load_error(e, jobs), "job entry 0: last_seen 9223372036854775807" + range);
    EXPECT_EQ(e.state_json(T0), before);
    // The largest time taken is accepted.
    EXPECT_EQ(load_error(e, state_with(kMaxTime, 2, 4, "[1099511627775,1099511627776,1.0]")), "accepted");
}

// Defect 1: extreme times through the API are defined behaviour (the unit
// tests also run under -fsanitize=undefined), and what the engine keeps
// stays loadable.
TEST(Robustness, ExtremeTimesThroughTheApiAreDefined) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2 MinRuntime=10\n");
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    s.add_job(pending(1, "p", "normal", 1, INT64_MIN));
    s.add_job(pending(2, "p", "normal", 1, INT64_MAX));
    SnapJob oldest = running(3, "p", "low", 1, INT64_MIN, INT64_MIN);
    SnapJob newest = running(4, "p", "low", 1, INT64_MAX, INT64_MAX);
    s.add_job(oldest);
    s.add_job(newest);
    EXPECT_EQ(e.note_job(9, INT64_MAX, 0, INT64_MIN), kMaxTime);
    EXPECT_EQ(e.note_job(9, INT64_MIN, 1, INT64_MAX), kMaxTime);  // a requeue with no real submit time
    for (int64_t now : {INT64_MIN, int64_t(-1), int64_t(0), T0, INT64_MAX - 1, INT64_MAX, T0, INT64_MIN}) {
        e.evaluate(s, now);
        EXPECT_EQ(order_of(e), (std::vector<uint32_t>{1, 2})) << now;
        e.refresh_running(s, now);
        EXPECT_EQ(e.provisional(pending(5, "p", "high", 1, now), now).job_id, 5u);
        e.preemptable(ref(oldest), ref(pending(6, "p", "high", 1, now)), now);
        e.preemptable(ref(newest), ref(pending(6, "p", "high", 1, now)), now);
        e.job_ended(5, now);
        EXPECT_GE(pool(e, "p").decayed_usage, 0.0);
    }
    // Under PreemptionOrder=newest the job that started last goes first.
    EXPECT_LT(e.victim_rank(4), e.victim_rank(3));
    Engine again = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    EXPECT_EQ(load_error(again, e.state_json(INT64_MAX)), "accepted");

    DecayParams dp{3600, 0}, windowed{3600, 7200};
    for (const DecayParams &p : {dp, windowed}) {
        UsageSeries u;
        u.add(1, INT64_MIN, INT64_MIN + 5, p);
        u.add(1, INT64_MAX - 5, INT64_MAX, p);
        u.add(1, INT64_MIN, INT64_MAX, p);
        EXPECT_GE(u.decayed(INT64_MIN, p), 0.0);
        EXPECT_GE(u.decayed(INT64_MAX, p), 0.0);
        u.prune(INT64_MIN, p);
        u.prune(INT64_MAX, p);
        EXPECT_LE(u.buckets().size(), 65u);
        u.drop_future(INT64_MIN, INT64_MAX);
    }
}

// Defect 2: a state saved by a clock set ahead froze accounting until the
// clock caught up.  Now the future is dropped with a warning, and usage
// accrues again from the first pass: 4 GPUs over 19 gaps of 600 s.
TEST(Robustness, LastAccountInTheFutureRestartsAccounting) {
    Engine e = engine_with(kOsmoTiers + "DecayHalfLife=0\nUsageWindow=0\nPool=p Quota=4\n");
    const int64_t ahead = T0 + 365 * 86400;
    e.load_state_json(state_with(ahead, 4, 4, "[" + std::to_string(ahead - 100) + "," + std::to_string(ahead + 1250) +
                                                  ",1000000.0]"));
    e.evaluate(pool_p_busy(4), T0);
    ASSERT_EQ(e.warnings().size(), 1u);
    EXPECT_EQ(e.warnings()[0], "clock went back: usage was accounted up to " + std::to_string(ahead) + ", now is " +
                                   std::to_string(T0) +
                                   "; history after now dropped, usage accounting restarts from now");
    EXPECT_EQ(pool(e, "p").decayed_usage, 0.0);
    for (int pass = 1; pass < 20; ++pass) e.evaluate(pool_p_busy(4), T0 + 600 * pass);
    EXPECT_TRUE(e.warnings().empty());
    EXPECT_EQ(pool(e, "p").decayed_usage, 19 * 600 * 4.0);
    EXPECT_EQ(pool(e, "p").usage_share, 1.0);
}

// Defect 2: buckets after now (last_account in the past) are dropped too;
// the bucket across now keeps only its part before now.
TEST(Robustness, UsageBucketsAfterNowAreDropped) {
    UsageSeries u;
    u.restore({{0, 100, 100.0}, {100, 200, 100.0}, {200, 300, 100.0}}, 5.0, 400);
    EXPECT_TRUE(u.drop_future(150, 300));
    ASSERT_EQ(u.buckets().size(), 2u);
    EXPECT_EQ(u.buckets()[1].value, 50.0);
    EXPECT_EQ(u.tail_time(), 150);
    EXPECT_FALSE(u.drop_future(150, 150));

    Engine e = engine_with(kOsmoTiers + "DecayHalfLife=0\nUsageWindow=0\nPool=p Quota=4\n");
    e.load_state_json(state_with(T0 - 600, 1, 4, "[" + std::to_string(T0 + 1000) + "," + std::to_string(T0 + 2000) +
                                                     ",5000.0]"));
    e.evaluate(pool_p_busy(0), T0);
    ASSERT_EQ(e.warnings().size(), 1u);
    EXPECT_EQ(e.warnings()[0], "usage history of pool p lies after now (" + std::to_string(T0) + "): dropped");
    EXPECT_EQ(pool(e, "p").decayed_usage, 600.0);  // 1 GPU over the 600 s since the last pass
}

// Defect 3: after a long downtime the first pass made a bucket for every
// width of the gap (3 years, 1 s buckets: 94.6M buckets, 2.9 GB) before
// pruning.  Only what a window keeps is made.
TEST(Robustness, LongGapWithWindowMakesOnlyTheBucketsKept) {
    const DecayParams dp{0, 60};  // UsageWindow=1 (minute): buckets of 1 s
    UsageSeries u;
    u.add(2, T0 - 60, T0, dp);
    ASSERT_EQ(u.buckets().size(), 60u);
    u.add(2, T0, T0 + kThreeYears, dp);
    EXPECT_LE(u.buckets().size(), 60u + 65u);  // the next prune drops the first 60
    u.prune(T0 + kThreeYears, dp);
    EXPECT_EQ(u.buckets().size(), 60u);
    EXPECT_EQ(u.decayed(T0 + kThreeYears, dp), 120.0);  // 2 GPUs over the last 60 s

    Engine e = engine_with(kOsmoTiers + "UsageWindow=1\nDecayHalfLife=0\nPool=p Quota=4\n");
    e.load_state_json(state_with(T0, 2, 4));
    e.evaluate(pool_p_busy(2), T0 + kThreeYears);
    EXPECT_EQ(pool(e, "p").decayed_usage, 120.0);
    EXPECT_EQ(pool(e, "p").usage_share, 0.5);
    EXPECT_EQ(usage_buckets(e, T0 + kThreeYears), 60u);
}

// Defect 3: without a window, the part of the gap older than the buckets
// goes straight into the decayed tail.  2 GPUs over 3 years with a
// half-life h decay to 2 h / ln 2 (1 - 2^(-3 years / h)); buckets count at
// their midpoint, within 1e-5 of that integral.
TEST(Robustness, LongGapWithoutWindowFoldsIntoTheTail) {
    const int64_t h = 86400;
    const DecayParams dp{h, 0};
    const double expected = 2 * h / M_LN2 * -std::expm1(-double(kThreeYears) / h * M_LN2);
    UsageSeries u;
    u.add(2, T0, T0 + kThreeYears, dp);
    EXPECT_LE(u.buckets().size(), 65u);
    EXPECT_NEAR(u.decayed(T0 + kThreeYears, dp), expected, 1e-5 * expected);
    u.prune(T0 + kThreeYears, dp);
    EXPECT_LE(u.buckets().size(), 65u);
    EXPECT_NEAR(u.decayed(T0 + kThreeYears, dp), expected, 1e-5 * expected);
    // Without decay the tail holds the plain sum.
    const DecayParams flat{0, 0};
    UsageSeries v;
    v.add(2, T0, T0 + kThreeYears, flat);
    EXPECT_LE(v.buckets().size(), 65u);
    EXPECT_EQ(v.decayed(T0 + kThreeYears, flat), 2.0 * kThreeYears);

    Engine e = engine_with(kOsmoTiers + "UsageWindow=0\nDecayHalfLife=1-0\nPool=p Quota=4\n");
    e.load_state_json(state_with(T0, 2, 4));
    e.evaluate(pool_p_busy(2), T0 + kThreeYears);
    EXPECT_NEAR(pool(e, "p").decayed_usage, expected, 1e-5 * expected);
    EXPECT_NEAR(pool(e, "p").usage_share, 0.5, 1e-9);
    EXPECT_LE(usage_buckets(e, T0 + kThreeYears), 65u);
}

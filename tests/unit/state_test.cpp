// The state file: decayed usage and original submit times survive a
// restart; a bad file changes nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {
const std::string kConf = kOsmoTiers + "DecayHalfLife=1-0\nPool=p Quota=2\nPool=q Quota=2\n";

std::string temp_path(const char *name) {
    return std::string(::testing::TempDir()) + name + std::to_string(::getpid());
}

Snapshot busy_cluster() {
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    partition(s, "q", 0, 3);
    s.add_job(running(1, "p", "low", 2, 1000, 900));
    s.add_job(pending(2, "q", "normal", 1, 950));
    return s;
}
}  // namespace

TEST(State, RoundTripKeepsUsageAndOriginalSubmitTimes) {
    Engine a = engine_with(kConf);
    a.evaluate(busy_cluster(), 1000);
    a.evaluate(busy_cluster(), 5000);
    std::string path = temp_path("gpupool_state");
    a.save_state(path, 5000);

    Engine b = engine_with(kConf);
    b.load_state(path);
    EXPECT_EQ(b.state_json(5000), a.state_json(5000));
    // After a restart, job 1 is requeued with a new submit time and still
    // orders by its first one.
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    partition(s, "q", 0, 3);
    SnapJob requeued = pending(1, "p", "low", 2, 6000);
    requeued.restart_cnt = 1;
    s.add_job(requeued);
    s.add_job(pending(3, "p", "low", 2, 1200));
    b.evaluate(s, 6000);
    EXPECT_EQ(order_of(b), (std::vector<uint32_t>{1, 3}));
    EXPECT_EQ(b.pending_result(1)->orig_submit, 900);
    // Usage continued from the saved history.
    EXPECT_GT(pool(b, "p").decayed_usage, 0.0);
    std::remove(path.c_str());
}

TEST(State, SaveIsAtomicAndLeavesNoTemporaryFile) {
    Engine a = engine_with(kConf);
    a.evaluate(busy_cluster(), 1000);
    std::string path = temp_path("gpupool_atomic");
    a.save_state(path, 1000);
    a.save_state(path, 2000);
    EXPECT_NE(::access(path.c_str(), R_OK), -1);
    EXPECT_EQ(::access((path + ".new").c_str(), F_OK), -1);
    std::remove(path.c_str());
}

TEST(State, BadFilesChangeNothingAndSayWhy) {
    Engine a = engine_with(kConf);
    a.evaluate(busy_cluster(), 1000);
    const std::string before = a.state_json(1000);
    struct Case {
        std::string text, message;
    } cases[] = {
        {"{not json", "line 1: string or '}' expected near 'not'"},
        {"[]", "top level must be an object"},
        {R"({"format":"other","version":1})", "not a gpupool state file (format)"},
        {R"({"format":"gpupool-state","version":9,"last_account":0,"pools":{},"jobs":[]})",
         "unsupported state version 9"},
        {R"({"format":"gpupool-state","version":1,"last_account":0,"pools":{},"jobs":[[1,2]]})",
         "job entry 0 must be [job_id, orig_submit, last_seen]"},
        {R"({"format":"gpupool-state","version":1,"last_account":0,"jobs":[],"pools":{"p":{"usage":{"tail":0,"tail_time":0,"buckets":[[5,1,2.0]]}}}})",
         "pool p usage: bucket 0 must be [start, end > start, value >= 0]"},
    };
    for (const Case &c : cases) {
        try {
            a.load_state_json(c.text);
            ADD_FAILURE() << "accepted: " << c.text;
        } catch (const std::runtime_error &e) {
            EXPECT_EQ(std::string(e.what()), c.message);
        }
        EXPECT_EQ(a.state_json(1000), before);
    }
    EXPECT_THROW(a.load_state("/nonexistent/gpupool_state.json"), std::runtime_error);
}

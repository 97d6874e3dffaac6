// priority/gpupool's pass durations: the counters the core keeps, their
// file (StateSaveLocation/gpupool_stats.json) and the C ABI the agent
// calls.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gpupool.h"
#include "stats.hpp"

using namespace gpupool;

namespace {

constexpr int64_t T0 = 1'795'000'000;

PassTime pass(uint64_t total, uint64_t lock, uint64_t snapshot, uint64_t evaluate, uint64_t apply) {
    PassTime t;
    t.total = total;
    t.lock = lock;
    t.snapshot = snapshot;
    t.evaluate = evaluate;
    t.apply = apply;
    return t;
}

std::string temp_dir() {
    char tmpl[] = "/tmp/gpupool-stats-XXXXXX";
    EXPECT_TRUE(mkdtemp(tmpl));
    return tmpl;
}

std::string read_all(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_all(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

}  // namespace

// Three passes: counts, each part's last, longest and sum, and the
// cumulative buckets (a pass of exactly a bound counts in its bucket).
TEST(PassStats, CountsPartsAndBuckets) {
    PassStats s;
    EXPECT_EQ(s.passes, 0u);
    s.note(pass(800, 100, 200, 300, 150), T0);
    s.note(pass(2500, 1500, 400, 300, 250), T0 + 1);
    s.note(pass(30000, 50, 10000, 19000, 900), T0 + 11);
    EXPECT_EQ(s.passes, 3u);
    EXPECT_EQ(s.since, T0);
    EXPECT_EQ(s.last_end, T0 + 11);
    EXPECT_EQ(s.last.total, 30000u);
    EXPECT_EQ(s.last.lock, 50u);
    EXPECT_EQ(s.max.total, 30000u);
    EXPECT_EQ(s.max.lock, 1500u);
    EXPECT_EQ(s.max.snapshot, 10000u);
    EXPECT_EQ(s.max.evaluate, 19000u);
    EXPECT_EQ(s.max.apply, 900u);
    EXPECT_EQ(s.sum.total, 33300u);
    EXPECT_EQ(s.sum.lock, 1650u);
    EXPECT_EQ(s.sum.snapshot, 10600u);
    EXPECT_EQ(s.sum.evaluate, 19600u);
    EXPECT_EQ(s.sum.apply, 1300u);
    ASSERT_EQ(s.buckets.size(), pass_buckets().size());
    std::vector<std::pair<uint64_t, uint64_t>> want = {
        {1000, 1},   {2500, 2},   {5000, 2},    {10000, 2},   {25000, 2},   {50000, 3},   {100000, 3},
        {250000, 3}, {500000, 3}, {1000000, 3}, {2500000, 3}, {5000000, 3}, {10000000, 3}};
    EXPECT_EQ(s.buckets, want);
}

// The file, exactly, and back: what the exporter and status read is what
// the agent counted.
TEST(PassStats, FileRoundTrips) {
    PassStats s;
    s.note(pass(800, 100, 200, 300, 150), T0);
    s.note(pass(12000000, 11000000, 400, 300, 250), T0 + 30);
    const std::string text = s.to_json(T0 + 35);
    EXPECT_EQ(text,
              "{\"version\":1,\"time\":1795000035,\"passes\":2,\"since\":1795000000,\"last_end\":1795000030,"
              "\"duration_us\":{\"last\":12000000,\"max\":12000000,\"sum\":12000800,\"buckets\":["
              "{\"le\":1000,\"count\":1},{\"le\":2500,\"count\":1},{\"le\":5000,\"count\":1},"
              "{\"le\":10000,\"count\":1},{\"le\":25000,\"count\":1},{\"le\":50000,\"count\":1},"
              "{\"le\":100000,\"count\":1},{\"le\":250000,\"count\":1},{\"le\":500000,\"count\":1},"
              "{\"le\":1000000,\"count\":1},{\"le\":2500000,\"count\":1},{\"le\":5000000,\"count\":1},"
              "{\"le\":10000000,\"count\":1}]},"
              "\"parts_us\":{\"lock_wait\":{\"last\":11000000,\"max\":11000000,\"sum\":11000100},"
              "\"snapshot\":{\"last\":400,\"max\":400,\"sum\":600},"
              "\"evaluate\":{\"last\":300,\"max\":300,\"sum\":600},"
              "\"apply\":{\"last\":250,\"max\":250,\"sum\":400}}}\n");
    PassStats back = PassStats::from_json(text);
    EXPECT_EQ(back.written, T0 + 35);
    EXPECT_EQ(back.passes, 2u);
    EXPECT_EQ(back.since, T0);
    EXPECT_EQ(back.last_end, T0 + 30);
    EXPECT_EQ(back.buckets, s.buckets);
    for (auto f : {&PassTime::total, &PassTime::lock, &PassTime::snapshot, &PassTime::evaluate, &PassTime::apply}) {
        EXPECT_EQ(back.last.*f, s.last.*f);
        EXPECT_EQ(back.max.*f, s.max.*f);
        EXPECT_EQ(back.sum.*f, s.sum.*f);
    }
}

// Before the first pass: every bucket there, at 0.
TEST(PassStats, NoPassYet) {
    PassStats back = PassStats::from_json(PassStats().to_json(T0));
    EXPECT_EQ(back.passes, 0u);
    EXPECT_EQ(back.since, 0);
    ASSERT_EQ(back.buckets.size(), pass_buckets().size());
    for (const auto &[le, count] : back.buckets) EXPECT_EQ(count, 0u) << le;
}

// A bad file says what is wrong, naming the key.
TEST(PassStats, BadFilesSayWhatIsWrong) {
    PassStats s;
    s.note(pass(800, 100, 200, 300, 150), T0);
    const std::string good = s.to_json(T0);
    auto error_of = [](const std::string &text) {
        try {
            PassStats::from_json(text);
        } catch (const std::runtime_error &e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    auto with = [&](const std::string &from, const std::string &to) {
        std::string t = good;
        size_t at = t.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return t.replace(at, from.size(), to);
    };
    EXPECT_EQ(error_of("{\"version\":1,"), "not JSON: string or '}' expected near end of file (line 1)");
    EXPECT_EQ(error_of("[]"), "not a JSON object");
    EXPECT_EQ(error_of(with("\"version\":1", "\"version\":2")), "unsupported version 2");
    EXPECT_EQ(error_of(with("\"passes\":1", "\"passes\":-1")), "passes must not be negative");
    EXPECT_EQ(error_of(with("\"passes\":1", "\"passes\":\"1\"")), "passes must be an integer");
    EXPECT_EQ(error_of(with("{\"le\":2500,", "{\"le\":1000,")),
              "duration_us.buckets[1].le must be larger than the one before");
    EXPECT_EQ(error_of(with("{\"le\":1000,\"count\":1}", "{\"le\":1000,\"count\":2}")),
              "duration_us.buckets[0].count must not be more than passes");
    EXPECT_EQ(error_of(with("\"evaluate\":{\"last\":300", "\"evaluation\":{\"last\":300")),
              "parts_us.evaluate must be an object");
    EXPECT_EQ(error_of(with("\"apply\":{\"last\":150", "\"apply\":{\"first\":150")),
              "parts_us.apply.last must be an integer");
}

// The agent's calls: note each pass, write the file (0600, atomically,
// never through a symbolic link) with no lock held; the file reads back.
TEST(PassStatsAbi, NoteThenSave) {
    gp_engine_t *e = gp_engine_create();
    ASSERT_NE(e, nullptr);
    const std::string dir = temp_dir(), path = dir + "/gpupool_stats.json";
    gp_pass_time_t t = {3000, 1000, 500, 1200, 300};
    EXPECT_EQ(gp_engine_note_pass(e, &t, T0), GP_OK);
    t.total_usec = 70000;
    EXPECT_EQ(gp_engine_note_pass(e, &t, T0 + 2), GP_OK);
    char err[256] = "";
    ASSERT_EQ(gp_engine_save_stats(e, path.c_str(), T0 + 5, err, sizeof err), GP_OK) << err;
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    PassStats back = load_stats_file(path);
    EXPECT_EQ(back.passes, 2u);
    EXPECT_EQ(back.written, T0 + 5);
    EXPECT_EQ(back.since, T0);
    EXPECT_EQ(back.last_end, T0 + 2);
    EXPECT_EQ(back.sum.total, 73000u);
    EXPECT_EQ(back.max.total, 70000u);
    EXPECT_EQ(back.sum.evaluate, 2400u);
    EXPECT_EQ(back.buckets[2], (std::pair<uint64_t, uint64_t>{5000, 1}));
    EXPECT_EQ(back.buckets[6], (std::pair<uint64_t, uint64_t>{100000, 2}));
    EXPECT_EQ(access((path + ".new").c_str(), F_OK), -1);

    // A symbolic link where the new file goes is never written through.
    const std::string target = dir + "/elsewhere";
    write_all(target, "keep\n");
    ASSERT_EQ(symlink(target.c_str(), (path + ".new").c_str()), 0);
    EXPECT_EQ(gp_engine_save_stats(e, path.c_str(), T0 + 15, err, sizeof err), GP_ERR_IO);
    EXPECT_NE(std::string(err).find(path + ".new: exists and is not a regular file"), std::string::npos) << err;
    EXPECT_EQ(read_all(target), "keep\n");
    EXPECT_EQ(load_stats_file(path).written, T0 + 5);  // the last good file stays

    EXPECT_EQ(gp_engine_note_pass(nullptr, &t, T0), GP_ERR_ARG);
    EXPECT_EQ(gp_engine_note_pass(e, nullptr, T0), GP_ERR_ARG);
    EXPECT_EQ(gp_engine_save_stats(e, nullptr, T0, err, sizeof err), GP_ERR_ARG);
    err[0] = '\0';
    EXPECT_EQ(gp_engine_save_stats(e, (dir + "/no/such/dir/s.json").c_str(), T0, err, sizeof err), GP_ERR_IO);
    EXPECT_EQ(std::string(err), dir + "/no/such/dir/s.json.new: open: No such file or directory");
    gp_engine_destroy(e);
    unlink((path + ".new").c_str());
    unlink(path.c_str());
    unlink(target.c_str());
    rmdir(dir.c_str());
}

// Reading the file: a missing one and a bad one name the file.
TEST(PassStatsFile, ErrorsNameTheFile) {
    const std::string dir = temp_dir(), path = dir + "/gpupool_stats.json";
    auto error_of = [&] {
        try {
            load_stats_file(path);
        } catch (const std::runtime_error &e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of(), path + ": No such file or directory");
    write_all(path, "{\"version\":1}");
    EXPECT_EQ(error_of(), path + ": time must be an integer");
    write_all(path, std::string((1 << 20) + 1, ' '));
    EXPECT_EQ(error_of(), path + ": larger than 1 MiB");
    unlink(path.c_str());
    rmdir(dir.c_str());
}

// Bad or extreme input to the core: state files, clocks, long downtimes,
// names, oversized config files, the state file on disk, reconfigure.
// Each test names the defect it guards against.
#include <gtest/gtest.h>
#include <jansson.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "gpupool.h"
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

std::string config_error(const std::string &text) {
    try {
        parse_config(text, "gp.conf");
    } catch (const ConfigError &ex) {
        return ex.what();
    }
    return "accepted";
}

std::string file_config_error(const std::string &path) {
    try {
        load_config_file(path);
    } catch (const ConfigError &ex) {
        return ex.what();
    }
    return "accepted";
}

// A string literal with NUL bytes in it, whole.
template <size_t N>
std::string bytes(const char (&text)[N]) {
    return std::string(text, N - 1);
}

const std::string kNameRuleText = "names may contain only letters, digits, '_', '-' and '.'";

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

// Defect 4: a NUL in a name cut it (it could never match a partition), and
// a name jansson cannot encode made the state save drop that pool.  Names
// are what Slurm takes for partitions and QOS, said with file and line.
TEST(Robustness, NamesWithNulControlOrNonAsciiBytesAreRefused) {
    const std::string tiers = "Tier=n Priority=1 Preemptible=no\n";
    EXPECT_EQ(config_error(bytes("Tier=a\0b Priority=1 Preemptible=no\n")),
              "gp.conf:1: bad name 'a\\x00b' for Tier: " + kNameRuleText);
    EXPECT_EQ(config_error(tiers + "Pool=p\xff\xfe Quota=1\n"), "gp.conf:2: bad name 'p\\xff\\xfe' for Pool: " + kNameRuleText);
    EXPECT_EQ(config_error(tiers + "Pool=caf\xc3\xa9 Quota=1\n"),
              "gp.conf:2: bad name 'caf\\xc3\\xa9' for Pool: " + kNameRuleText);
    EXPECT_EQ(config_error("Tier=n QOS=a,b\x01 Priority=1 Preemptible=no\n"),
              "gp.conf:1: bad name 'b\\x01' for QOS: " + kNameRuleText);
    EXPECT_EQ(config_error(tiers + "DefaultTier=n\x7f\n"), "gp.conf:2: bad name 'n\\x7f' for DefaultTier: " + kNameRuleText);
    EXPECT_EQ(config_error(tiers + bytes("QuotaTRES=gres/gpu:a\0" "100\n")),
              "gp.conf:2: bad value 'gres/gpu:a\\x00100' for QuotaTRES: expected gres/gpu or gres/gpu:TYPE");
    // What Slurm itself takes is fine (a QOS in Slurm's lower case).
    Config ok = parse_config("Tier=t-1.x_Y QOS=t-1.x_y Priority=1 Preemptible=no\nPool=gpu.A-100_x Quota=1\n",
                             "gp.conf");
    EXPECT_EQ(ok.pools.at(0).name, "gpu.A-100_x");

    // The state loader refuses such names too, and changes nothing.
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    e.evaluate(pool_p_busy(2), T0);
    const std::string before = e.state_json(T0);
    std::string bad = state_with(T0, 2, 4);
    bad.replace(bad.find("\"p\":"), 4, "\"p q\\u00e9\":");
    EXPECT_EQ(load_error(e, bad), "pool 'p q\\xc3\\xa9': bad name: " + kNameRuleText);
    EXPECT_EQ(e.state_json(T0), before);
}

// Defect 4: a pool name jansson refuses fails the save loudly; the file
// in place keeps the last good state.
TEST(Robustness, StateSaveFailsLoudlyInsteadOfDroppingAPool) {
    Config cfg = parse_config(kOsmoTiers + "Pool=p Quota=2\nPool=q Quota=2\n", "test.conf");
    const std::string odd = "q\xff";
    cfg.pools[1].name = odd;  // past the parser, as a program could
    Engine e;
    e.set_config(cfg);
    Snapshot s = cluster(4);
    partition(s, "p", 0, 1);
    partition(s, odd, 2, 3);
    s.add_job(running(1, odd, "normal", 2, T0 - 10));
    e.evaluate(s, T0);
    e.evaluate(s, T0 + 60);
    const std::string path = temp_path("state_odd_name");
    write_file(path, "last good state");
    try {
        e.save_state(path, T0 + 60);
        ADD_FAILURE() << "saved without pool " << odd;
    } catch (const std::runtime_error &ex) {
        EXPECT_EQ(std::string(ex.what()), "cannot encode state: pool name 'q\\xff': " + kNameRuleText);
    }
    EXPECT_EQ(read_file(path), "last good state");
    EXPECT_NE(::access((path + ".new").c_str(), F_OK), 0);
    std::remove(path.c_str());
}

// Defect 5: the temporary file was opened through whatever sat at
// PATH.new.  A symbolic link there is neither followed nor replaced.
TEST(Robustness, StateSaveNeverWritesThroughASymlink) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    e.evaluate(pool_p_busy(2), T0);
    const std::string path = temp_path("state_link");
    const std::string target = temp_path("state_link_target");
    write_file(target, "not gpupool's");
    std::remove(path.c_str());
    std::remove((path + ".new").c_str());
    ASSERT_EQ(::symlink(target.c_str(), (path + ".new").c_str()), 0);
    try {
        e.save_state(path, T0);
        ADD_FAILURE() << "wrote through the link";
    } catch (const std::runtime_error &ex) {
        EXPECT_EQ(std::string(ex.what()),
                  path + ".new: exists and is not a regular file (a symbolic link?); not writing through it");
    }
    EXPECT_EQ(read_file(target), "not gpupool's");
    EXPECT_NE(::access(path.c_str(), F_OK), 0);
    struct stat st;
    ASSERT_EQ(::lstat((path + ".new").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    std::remove((path + ".new").c_str());
    std::remove(target.c_str());
}

// Defect 5: a temporary file left by an interrupted save is replaced, not
// truncated in place: another name for the same file keeps its content.
TEST(Robustness, StateSaveReplacesAStaleTemporaryFile) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    e.evaluate(pool_p_busy(2), T0);
    const std::string path = temp_path("state_stale");
    const std::string other = temp_path("state_stale_other");
    write_file(other, "another file");
    std::remove((path + ".new").c_str());
    ASSERT_EQ(::link(other.c_str(), (path + ".new").c_str()), 0);
    e.save_state(path, T0);
    EXPECT_EQ(read_file(other), "another file");
    EXPECT_EQ(read_file(path), e.state_json(T0));
    EXPECT_NE(::access((path + ".new").c_str(), F_OK), 0);
    std::remove(path.c_str());
    std::remove(other.c_str());
}

// Defect 6: a bad token was repeated whole and raw in the error (a 10 MB
// token gave a 10 MB log line, binary went to the log).  It is quoted, cut
// to 64 bytes, other than printable ASCII as \xNN.
TEST(Robustness, ConfigErrorsQuoteTokensShortAndEscaped) {
    EXPECT_EQ(config_error("Tier=a Priority=" + std::string(1000, '7') + "x Preemptible=no\n"),
              "gp.conf:1: bad value '" + std::string(64, '7') +
                  "'... (1001 bytes) for Priority: expected an integer 0..4294967295");
    EXPECT_EQ(config_error(bytes("Tier=a Priority=1\x01\xff\x7f'\\\0z Preemptible=no\n")),
              "gp.conf:1: bad value '1\\x01\\xff\\x7f\\x27\\x5c\\x00z' for Priority: expected an integer 0..4294967295");
    EXPECT_EQ(config_error(std::string(70, 'K') + "=1\n"),
              "gp.conf:1: unknown key '" + std::string(64, 'K') + "'... (70 bytes)");
    EXPECT_EQ(config_error("Tier=" + std::string(100, 'n') + " Priority=1 Preemptible=no Colour=red\n"),
              "gp.conf:1: unknown key 'Colour' in Tier=" + std::string(64, 'n') + "... (100 bytes)");
    // A line, and the text, have a size limit.
    EXPECT_EQ(config_error("# fine\nTier=a Priority=" + std::string(5000, '1') + " Preemptible=no\n"),
              "gp.conf:2: line longer than 4096 bytes");
    EXPECT_EQ(config_error("Tier=a Priority=" + std::string(10 << 20, '1') + "\n"), "gp.conf: larger than 8388608 bytes");
}

// Defect 6: /dev/zero as gpupool.conf ran out of memory without naming the
// file.  Devices and FIFOs are refused, and files over the limit.
TEST(Robustness, ConfigFileMustBeARegularFileOfBoundedSize) {
    EXPECT_EQ(file_config_error("/dev/zero"), "/dev/zero: not a regular file");
    const std::string fifo = temp_path("conf_fifo");
    std::remove(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(file_config_error(fifo), fifo + ": not a regular file");
    std::remove(fifo.c_str());
    const std::string big = temp_path("conf_big");
    std::string text = "Tier=a Priority=1 Preemptible=no\n";
    while (text.size() <= kMaxConfigBytes) text += std::string(99, '#') + "\n";
    write_file(big, text);
    EXPECT_EQ(file_config_error(big), big + ": larger than 8388608 bytes");
    text.resize(kMaxConfigBytes - 1);
    text += "\n";
    write_file(big, text);
    EXPECT_EQ(file_config_error(big), "accepted");
    std::remove(big.c_str());
}

// Defect 6: duplicate checks were quadratic (100k pools: 8.4 s, 100k
// tiers: 13.9 s).  Only correctness is asserted here.
TEST(Robustness, HundredThousandPoolsAndTiersParse) {
    std::string pools = "Tier=n Priority=1 Preemptible=no\n";
    for (int i = 0; i < 100000; ++i) pools += "Pool=p" + std::to_string(i) + " Quota=" + std::to_string(i % 7) + "\n";
    Config c = parse_config(pools, "gp.conf");
    ASSERT_EQ(c.pools.size(), 100000u);
    EXPECT_EQ(c.pools[99999].name, "p99999");
    EXPECT_EQ(c.pools[99999].quota, 99999u % 7);
    EXPECT_EQ(c.pools[99999].line, 100001);
    EXPECT_EQ(config_error(pools + "Pool=p4711 Quota=1\n"),
              "gp.conf:100002: duplicate Pool=p4711 (first defined on line 4713)");
    Engine e;
    e.set_config(c);

    std::string tiers = "DefaultTier=t0\n";
    for (int i = 0; i < 100000; ++i)
        tiers += "Tier=t" + std::to_string(i) + " Priority=" + std::to_string(i + 1) + " Preemptible=" +
                 (i % 2 ? "yes" : "no") + "\n";
    Config t = parse_config(tiers, "gp.conf");
    ASSERT_EQ(t.tiers.size(), 100000u);
    EXPECT_EQ(t.tiers[54321].name, "t54321");
    EXPECT_EQ(t.tiers[54321].priority, 54322u);
    EXPECT_TRUE(t.tiers[54321].preemptible);
    EXPECT_EQ(config_error(tiers + "Tier=x Priority=777 Preemptible=no\n"),
              "gp.conf:100002: Tier=x and Tier=t776 (line 778) have the same Priority=777");
    EXPECT_EQ(config_error(tiers + "Tier=t99 Priority=0 Preemptible=no\n"),
              "gp.conf:100002: duplicate Tier=t99 (first defined on line 101)");
    EXPECT_EQ(config_error(tiers + "Tier=x QOS=t5 Priority=0 Preemptible=no\n"),
              "gp.conf:100002: QOS 't5' is mapped by both Tier=t5 (line 7) and Tier=x");
}

// Defect 7: the state was encoded and written (fsync: seconds on slow
// storage) under the engine's lock, which slurmctld's hooks wait for under
// its job write lock.  While the file is being written another thread's
// call on the same engine completes.  (The 60 s only bounds the wait if
// the lock were held again: then the test fails instead of hanging.)
TEST(Robustness, StateSaveWritesWithoutHoldingTheEngineLock) {
    gp_engine_t *e = gp_engine_create();
    char err[512] = "";
    ASSERT_EQ(gp_engine_load_config_text(e, (kOsmoTiers + "Pool=p Quota=2\n").c_str(), "gp.conf", err, sizeof err),
              GP_OK)
        << err;
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t nodes[2] = {gp_snapshot_add_node(s, "n0", 1), gp_snapshot_add_node(s, "n1", 1)};
    ASSERT_EQ(gp_snapshot_add_partition(s, "p", nodes, 2), GP_OK);
    gp_job_t job{};
    job.job_id = 1;
    job.state = GP_JOB_RUNNING;
    job.partitions = "p";
    job.qos = "normal";
    job.gpus = 2;
    job.submit_time = job.start_time = T0 - 100;
    ASSERT_EQ(gp_snapshot_add_job(s, &job), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, T0), GP_OK);

    std::optional<std::thread> other;
    std::promise<int64_t> noted;
    bool other_done = false;
    std::string written;
    struct Restore {
        ~Restore() { Engine::set_state_writer(nullptr); }
    } restore;
    Engine::set_state_writer([&](const std::string &, const std::string &text) {
        other.emplace([&] { noted.set_value(gp_engine_note_job(e, 77, T0 + 5, 0, T0 + 5)); });
        other_done = noted.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready;
        written = text;
    });
    EXPECT_EQ(gp_engine_save_state(e, temp_path("state_unlocked").c_str(), T0 + 1, err, sizeof err), GP_OK) << err;
    if (other) other->join();
    EXPECT_TRUE(other_done) << "another gp_engine_* call waited for the state write";
    // The file has the state as copied when the save began.
    EXPECT_NE(written.find("[1,1699999900,1700000000]"), std::string::npos) << written;
    EXPECT_EQ(written.find("[77,"), std::string::npos) << written;
    EXPECT_EQ(gp_engine_note_job(e, 77, T0 + 9, 1, T0 + 9), T0 + 5);  // remembered by the other call
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Defect 8: a reconfigure (also `scontrol setdebugflags`) cleared the last
// pass, so until the next pass every new NP job was held (GpuPoolStarting)
// and every preemption refused ("no gpupool pass yet").  The new
// configuration waits for the next pass; until then the old one and its
// pass decide.  pool1 borrows one of pool2's GPUs; the new configuration
// moves one GPU of quota from pool2 to pool1.
TEST(Robustness, ReconfigureKeepsDecidingWithTheLastPassUntilTheNext) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    SnapJob borrower = running(3, "pool1", "low", 1, T0 + 2);
    s.add_job(running(1, "pool1", "low", 1, T0));
    s.add_job(running(2, "pool1", "low", 1, T0 + 1));
    s.add_job(borrower);
    s.add_job(running(4, "pool2", "normal", 1, T0 + 3));
    e.evaluate(s, T0 + 10);

    e.set_config(parse_config(kOsmoTiers + "Pool=pool1 Quota=3\nPool=pool2 Quota=1\n", "test.conf"));
    EXPECT_TRUE(e.has_staged_config());
    EXPECT_EQ(e.config().pools[1].quota, 2u);
    EXPECT_EQ(e.next_config().pools[1].quota, 1u);
    EXPECT_TRUE(e.last().valid);
    const SnapJob np = pending(5, "pool2", "normal", 1, T0 + 20);
    PendingResult r = e.provisional(np, T0 + 20);
    EXPECT_EQ(r.admission, Admission::Quota);  // pool2: 1 + 1 <= old quota 2
    EXPECT_EQ(e.reason_of(r), "");
    Verdict v = e.preemptable(ref(borrower), ref(np), T0 + 20);
    EXPECT_TRUE(v.allowed) << v.why;
    EXPECT_EQ(v.rule, Rule::Reclaim);
    e.refresh_running(s, T0 + 21);
    EXPECT_EQ(pool(e, "pool2").quota, 2u);
    EXPECT_TRUE(e.preemptable(ref(borrower), ref(np), T0 + 21).allowed);

    // The next pass applies it: pool2's quota of 1 is taken by job 4.
    s.add_job(np);
    e.evaluate(s, T0 + 30);
    EXPECT_FALSE(e.has_staged_config());
    EXPECT_EQ(pool(e, "pool1").quota, 3u);
    EXPECT_EQ(pool(e, "pool2").quota, 1u);
    const PendingResult *held = e.pending_result(5);
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(held->admission, Admission::Held);
    EXPECT_EQ(e.reason_of(*held), "GpuPoolQuota:pool2 1/1");
    Verdict refused = e.preemptable(ref(borrower), ref(np), T0 + 30);
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.why, "preemptor is held by quota");

    // Without a pass a new configuration applies at once.
    Engine fresh = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    fresh.set_config(parse_config(kOsmoTiers + "Pool=pool1 Quota=1\n", "test.conf"));
    EXPECT_FALSE(fresh.has_staged_config());
    EXPECT_EQ(fresh.config().pools[0].quota, 1u);
}

// Defect 8 through the C ABI: what the agent needs for the next pass
// (RecalcInterval, StateSaveInterval, QuotaTRES) is the staged
// configuration's; a tier's preemption settings stay the last pass's.
TEST(Robustness, ReconfigureAccessorsServeTheNextPass) {
    const std::string tiers = "Tier=normal Priority=200 Preemptible=no\n"
                              "Tier=low Priority=100 Preemptible=yes PreemptMode=cancel GraceTime=30\n"
                              "DefaultTier=normal\nPool=p Quota=1\n";
    gp_engine_t *e = gp_engine_create();
    char err[512] = "";
    ASSERT_EQ(gp_engine_load_config_text(e, tiers.c_str(), "a.conf", err, sizeof err), GP_OK) << err;
    gp_snapshot_t *s = gp_snapshot_create();
    int32_t node = gp_snapshot_add_node(s, "n0", 1);
    ASSERT_EQ(gp_snapshot_add_partition(s, "p", &node, 1), GP_OK);
    ASSERT_EQ(gp_engine_evaluate(e, s, T0), GP_OK);

    const std::string next = "RecalcInterval=30\nStateSaveInterval=120\nQuotaTRES=gres/gpu:a100\n"
                             "Tier=normal Priority=200 Preemptible=no\n"
                             "Tier=low Priority=100 Preemptible=yes PreemptMode=requeue GraceTime=99\n"
                             "DefaultTier=normal\nPool=p Quota=1\n";
    ASSERT_EQ(gp_engine_load_config_text(e, next.c_str(), "b.conf", err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_recalc_interval(e), 30u);
    EXPECT_EQ(gp_engine_state_save_interval(e), 120u);
    char tres[64];
    gp_engine_quota_tres(e, tres, sizeof tres);
    EXPECT_STREQ(tres, "gres/gpu:a100");
    gp_tier_info_t low{};
    ASSERT_EQ(gp_engine_tier_of_qos(e, "low", &low), GP_OK);
    EXPECT_EQ(low.grace_time, 30);
    EXPECT_EQ(low.preempt_mode, GP_MODE_CANCEL);
    EXPECT_EQ(gp_engine_pool_count(e), 1u);

    ASSERT_EQ(gp_engine_evaluate(e, s, T0 + 10), GP_OK);
    ASSERT_EQ(gp_engine_tier_of_qos(e, "low", &low), GP_OK);
    EXPECT_EQ(low.grace_time, 99);
    EXPECT_EQ(low.preempt_mode, GP_MODE_REQUEUE);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// Since Slurm 23.11 `scontrol reconfigure` restarts slurmctld: a bad
// gpupool.conf must not stop it, so the plugin keeps a copy of the last
// good one.  The copy is exactly the text in force, and a refused load
// leaves it so.
TEST(Robustness, ConfigCopyIsTheTextInForce) {
    gp_engine_t *e = gp_engine_create();
    char err[512] = "";
    const std::string copy = temp_path("conf_copy");
    std::remove(copy.c_str());
    EXPECT_EQ(gp_engine_save_config_copy(e, copy.c_str(), err, sizeof err), GP_ERR_NOCONFIG);
    EXPECT_STREQ(err, "no configuration loaded");

    const std::string good = "Tier=normal Priority=200 Preemptible=no\nDefaultTier=normal\nPool=p Quota=3\n";
    const std::string file = temp_path("conf_good");
    write_file(file, good);
    ASSERT_EQ(gp_engine_load_config_file(e, file.c_str(), err, sizeof err), GP_OK) << err;
    write_file(file, good + "Pool=q Quota=lots\n");
    EXPECT_EQ(gp_engine_load_config_file(e, file.c_str(), err, sizeof err), GP_ERR_CONFIG);
    ASSERT_EQ(gp_engine_save_config_copy(e, copy.c_str(), err, sizeof err), GP_OK) << err;
    EXPECT_EQ(read_file(copy), good);
    struct stat st;
    ASSERT_EQ(::stat(copy.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    // A fresh engine (the restarted slurmctld) starts from the copy.
    gp_engine_t *fresh = gp_engine_create();
    ASSERT_EQ(gp_engine_load_config_file(fresh, copy.c_str(), err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_has_config(fresh), 1);
    ASSERT_EQ(gp_engine_save_config_copy(fresh, copy.c_str(), err, sizeof err), GP_OK) << err;
    EXPECT_EQ(read_file(copy), good);
    gp_engine_destroy(fresh);
    gp_engine_destroy(e);
    std::remove(copy.c_str());
    std::remove(file.c_str());
}

// Array caps in the state file: a bad entry is refused, naming it, and
// changes nothing; a cap is forgotten with its record.
TEST(Robustness, ArrayCapsInTheStateFileAreCheckedAndForgottenWithTheirRecord) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    e.evaluate(pool_p_busy(2), T0);
    const std::string before = e.state_json(T0);
    auto with_caps = [](const std::string &caps) {
        std::string text = state_with(T0, 2, 4);
        text.insert(text.size() - 1, ",\"array_caps\":" + caps);
        return text;
    };
    EXPECT_EQ(load_error(e, with_caps("{}")), "'array_caps' must be an array");
    EXPECT_EQ(load_error(e, with_caps("[[7,2]]")), "array cap entry 0 must be [job_id, user_max, our_max]");
    EXPECT_EQ(load_error(e, with_caps("[[7,2,0]]")), "array cap entry 0: user_max 0..4294967295, our_max 1..4294967295");
    EXPECT_EQ(e.state_json(T0), before);
    EXPECT_EQ(load_error(e, with_caps("[[1,0,1],[7,5,2]]")), "accepted");
    ASSERT_TRUE(e.array_cap(7));
    EXPECT_EQ(e.array_cap(7)->user_max, 5u);
    EXPECT_EQ(e.array_cap(7)->our_max, 2u);
    EXPECT_NE(e.state_json(T0).find("\"array_caps\":[[1,0,1],[7,5,2]]"), std::string::npos);
    // Job 1 is running (remembered); 7 is in no snapshot and no memory.
    e.evaluate(pool_p_busy(2), T0 + 10);
    EXPECT_TRUE(e.array_cap(1));
    EXPECT_FALSE(e.array_cap(7));
    e.evaluate(pool_p_busy(0), T0 + 10 + Engine::kForgetAfter + 1);
    EXPECT_FALSE(e.array_cap(1)) << "forgotten with the job";
    EXPECT_EQ(e.state_json(T0).find("array_caps"), std::string::npos) << "no key while nothing is capped";
}

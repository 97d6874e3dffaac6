// Preemption records: event log lines (escaping of what users control),
// the SystemComment text and its cap, the bounded queue, the rotated file
// and the C ABI over them.
#include <gtest/gtest.h>
#include <jansson.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "events.hpp"
#include "gpupool.h"

using namespace gpupool;

namespace {

constexpr int64_t T0 = 1'795'000'000;  // 2026-11-18T11:06:40Z

PreemptionEvent sample() {
    PreemptionEvent e;
    e.time = T0 + 120;
    e.victim_job_id = 13;
    e.victim_name = "wf3";
    e.victim_user_id = 1000;
    e.victim_pool = "pool1";
    e.victim_tier = "low";
    e.victim_gpus = 2;
    e.victim_start_time = T0;
    e.victim_pool_used = 3;
    e.victim_pool_quota = 2;
    e.preemptor_job_id = 15;
    e.preemptor_pool = "pool2";
    e.preemptor_tier = "normal";
    e.rule = "Reclaim";
    e.mode = "requeue";
    e.grace_time = 0;
    e.why = "borrowed excess (over-quota) of pool1";
    return e;
}

// Local time is UTC inside a test; the caller's TZ comes back after it.
class UtcTime : public ::testing::Test {
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

// A fresh directory per test.
std::string temp_dir(const std::string &name) {
    std::string tmpl = std::string(::testing::TempDir()) + "gpupool_events_" + name + "_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    EXPECT_NE(mkdtemp(buf.data()), nullptr);
    return buf.data();
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool exists(const std::string &path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) out.push_back(l);
    return out;
}

}  // namespace

// ---------------------------------------------------------------- lines

TEST(EventLine, EveryFieldRoundTrips) {
    PreemptionEvent e = sample();
    const std::string line = event_json_line(e);
    ASSERT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    EXPECT_EQ(line,
              "{\"version\":1,\"event\":\"preemption\",\"time\":1795000120,\"victim_job_id\":13,"
              "\"victim_name\":\"wf3\",\"victim_user_id\":1000,\"victim_pool\":\"pool1\",\"victim_tier\":\"low\","
              "\"victim_gpus\":2,\"victim_start_time\":1795000000,\"victim_pool_used\":3,\"victim_pool_quota\":2,"
              "\"preemptor_job_id\":15,\"preemptor_pool\":\"pool2\",\"preemptor_tier\":\"normal\","
              "\"rule\":\"Reclaim\",\"mode\":\"requeue\",\"grace_time\":0,\"gpu_seconds_lost\":240,"
              "\"why\":\"borrowed excess (over-quota) of pool1\"}\n");
    PreemptionEvent back;
    ASSERT_TRUE(event_from_json(line, back));
    EXPECT_EQ(back.victim_job_id, 13u);
    EXPECT_EQ(back.preemptor_job_id, 15u);
    EXPECT_EQ(back.victim_pool, "pool1");
    EXPECT_EQ(back.preemptor_pool, "pool2");
    EXPECT_EQ(back.rule, "Reclaim");
    EXPECT_EQ(back.mode, "requeue");
    EXPECT_EQ(back.time, T0 + 120);
    EXPECT_EQ(back.victim_gpus, 2u);
    EXPECT_EQ(back.gpu_seconds_lost(), 240u);
    EXPECT_EQ(back.why, e.why);
}

// A job name is the user's: quotes, backslashes, newlines, '%' sequences,
// control characters and bytes that are not UTF-8 stay one valid JSON
// line, and the name reads back as written (invalid bytes as U+FFFD).
TEST(EventLine, UserJobNameCannotBreakTheLine) {
    PreemptionEvent e = sample();
    e.victim_name = std::string("a\"b\\c\nd\r%s%n%08x\t}{\"x\":1,\x01\x1f") + "\xff\xc3(" + "\xc3\xa9";
    const std::string line = event_json_line(e);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
    for (char c : line) EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 || c == '\n') << line;
    for (char c : line) EXPECT_LT(static_cast<unsigned char>(c), 0x80u) << line;  // ASCII only
    json_error_t err;
    json_t *root = json_loads(line.c_str(), 0, &err);
    ASSERT_NE(root, nullptr) << err.text;
    EXPECT_EQ(json_object_size(root), 20u);  // no key smuggled in
    EXPECT_EQ(std::string(json_string_value(json_object_get(root, "victim_name"))),
              std::string("a\"b\\c\nd\r%s%n%08x\t}{\"x\":1,\x01\x1f") + "\xef\xbf\xbd\xef\xbf\xbd(" + "\xc3\xa9");
    json_decref(root);
}

TEST(EventLine, DroppedLineAndOtherEvents) {
    EXPECT_EQ(dropped_json_line(7, T0), "{\"version\":1,\"event\":\"dropped\",\"time\":1795000000,\"count\":7}\n");
    PreemptionEvent e;
    EXPECT_FALSE(event_from_json(dropped_json_line(7, T0), e));
}

TEST(EventLine, BadLinesSayWhatIsWrong) {
    PreemptionEvent e;
    EXPECT_THROW(event_from_json("{\"version\":1,\"event\":\"preemp", e), std::runtime_error);
    EXPECT_THROW(event_from_json("[1]", e), std::runtime_error);
    try {
        std::string line = event_json_line(sample());
        line.replace(line.find("\"victim_job_id\":13"), 18, "\"victim_job_id\":\"13\"");
        event_from_json(line, e);
        FAIL() << "accepted a string job id";
    } catch (const std::runtime_error &ex) {
        EXPECT_EQ(std::string(ex.what()), "'victim_job_id' must be an integer");
    }
    try {
        event_from_json("{\"version\":2,\"event\":\"preemption\"}", e);
        FAIL() << "accepted version 2";
    } catch (const std::runtime_error &ex) {
        EXPECT_EQ(std::string(ex.what()), "unsupported version 2");
    }
}

// ---------------------------------------------------------------- SystemComment

TEST_F(UtcTime, CommentEntryFormat) {
    EXPECT_EQ(comment_entry(sample()),
              "gpupool: preempted by JobId=15 (pool pool2) rule Reclaim at 2026-11-18T11:08:40, lost 240 GPU-s");
}

// slurmdbd writes SystemComment into its SQL as it is: only plain
// characters of pool and rule names get there.
TEST_F(UtcTime, CommentKeepsOnlyPlainCharacters) {
    PreemptionEvent e = sample();
    e.preemptor_pool = "p'; drop table x; --";
    EXPECT_EQ(comment_entry(e),
              "gpupool: preempted by JobId=15 (pool p___drop_table_x__--) rule Reclaim at 2026-11-18T11:08:40, lost "
              "240 GPU-s");
}

// What others wrote (an operator's scontrol update) cannot break
// slurmdbd's SQL either: quotes and backslashes are replaced.
TEST_F(UtcTime, CommentMakesEarlierTextSafe) {
    EXPECT_EQ(comment_append("it's a \\'; drop\x01\nok", "gpupool: x"), "it`s a /`; drop \nok; gpupool: x");
}

TEST_F(UtcTime, CommentParsesBack) {
    PreemptionEvent a = sample(), b = sample();
    b.preemptor_job_id = 21;
    b.preemptor_pool = "pool1";
    b.rule = "InPool";
    b.time = T0 + 3600;
    b.victim_start_time = T0 + 3000;
    b.victim_gpus = 1;
    std::string c = comment_append("", comment_entry(a));
    c = comment_append("burst_buffer/lua: setup: ok", c);  // someone else's text first
    c = comment_append(c, comment_entry(b));
    auto got = parse_comment(c);
    ASSERT_EQ(got.size(), 2u) << c;
    EXPECT_EQ(got[0].preemptor_job_id, 15u);
    EXPECT_EQ(got[0].preemptor_pool, "pool2");
    EXPECT_EQ(got[0].rule, "Reclaim");
    EXPECT_EQ(got[0].time, T0 + 120);
    EXPECT_EQ(got[0].gpu_seconds_lost, 240u);
    EXPECT_EQ(got[1].preemptor_job_id, 21u);
    EXPECT_EQ(got[1].rule, "InPool");
    EXPECT_EQ(got[1].time, T0 + 3600);
    EXPECT_EQ(got[1].gpu_seconds_lost, 600u);
    EXPECT_TRUE(parse_comment("").empty());
    EXPECT_TRUE(parse_comment("gpupool: preempted by JobId=x (pool p) rule R at 2026-11-18T11:08:40, lost 1 GPU-s").empty());
}

// A job preempted again and again: the comment stays within the cap, the
// newest entry always in it, older ones dropped whole from the front.
TEST_F(UtcTime, CommentIsCappedKeepingTheNewest) {
    std::string c;
    PreemptionEvent e = sample();
    for (uint32_t i = 1; i <= 40; ++i) {
        e.preemptor_job_id = 1000 + i;
        e.time = T0 + 1000 * i;
        c = comment_append(c, comment_entry(e));
        ASSERT_LE(c.size(), kSystemCommentMax);
    }
    EXPECT_EQ(c.rfind("...; gpupool: preempted by JobId=", 0), 0u) << c;
    auto got = parse_comment(c);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back().preemptor_job_id, 1040u);
    // Consecutive, none cut in half.
    for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i].preemptor_job_id, got[i - 1].preemptor_job_id + 1);
    EXPECT_EQ(got.size(), 40u - (got.front().preemptor_job_id - 1001));
    EXPECT_GT(c.size() + comment_entry(e).size() + 2, kSystemCommentMax);  // it was full
}

// ---------------------------------------------------------------- queue

TEST(EventQueue, BoundedDroppingTheOldest) {
    EventQueue q(3);
    for (int i = 1; i <= 5; ++i) q.push("l" + std::to_string(i) + "\n");
    EXPECT_EQ(q.size(), 3u);
    EXPECT_EQ(q.dropped(), 2u);
    EventQueue::Batch b = q.take();
    EXPECT_EQ(std::vector<std::string>(b.lines.begin(), b.lines.end()),
              (std::vector<std::string>{"l3\n", "l4\n", "l5\n"}));
    EXPECT_EQ(b.dropped, 2u);
    EXPECT_EQ(q.size(), 0u);
    EXPECT_EQ(q.dropped(), 0u);
}

// Lines a failed write kept go back before newer ones, still bounded.
TEST(EventQueue, PutBackKeepsOrderAndBound) {
    EventQueue q(3);
    q.push("a\n");
    q.push("b\n");
    EventQueue::Batch b = q.take();
    q.push("c\n");
    q.push("d\n");
    q.put_back(std::move(b));
    EXPECT_EQ(q.size(), 3u);
    EXPECT_EQ(q.dropped(), 1u);
    EventQueue::Batch all = q.take();
    EXPECT_EQ(std::vector<std::string>(all.lines.begin(), all.lines.end()),
              (std::vector<std::string>{"b\n", "c\n", "d\n"}));
}

// ---------------------------------------------------------------- file

TEST(EventFile, RotatesAtTheSizeKeepingN) {
    const std::string dir = temp_dir("rotate"), path = dir + "/gpupool_events.jsonl";
    std::deque<std::string> lines;
    for (int i = 0; i < 10; ++i) {
        std::string l = "line " + std::to_string(i);
        l.resize(39, '.');
        lines.push_back(l + "\n");  // 40 bytes
    }
    // 100 bytes a file: two lines each; keep 2 old files.
    append_rotated(path, lines, 100, 2);
    EXPECT_TRUE(lines.empty());
    EXPECT_EQ(lines_of(read_file(path)).size(), 2u);
    EXPECT_EQ(lines_of(read_file(path))[0].substr(0, 6), "line 8");
    EXPECT_EQ(lines_of(read_file(path + ".1"))[0].substr(0, 6), "line 6");
    EXPECT_EQ(lines_of(read_file(path + ".2"))[0].substr(0, 6), "line 4");
    EXPECT_FALSE(exists(path + ".3"));
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    for (const std::string &f : {path, path + ".1", path + ".2"}) EXPECT_LE(read_file(f).size(), 100u) << f;

    // Appends go on in the newest file until it is full.
    std::deque<std::string> one{"x\n"};
    append_rotated(path, one, 100, 2);
    EXPECT_EQ(lines_of(read_file(path)).size(), 3u);
}

TEST(EventFile, KeepZeroStartsOver) {
    const std::string dir = temp_dir("keep0"), path = dir + "/events.jsonl";
    std::deque<std::string> lines{std::string(60, 'a') + "\n", std::string(60, 'b') + "\n"};
    append_rotated(path, lines, 100, 0);
    EXPECT_EQ(read_file(path), std::string(60, 'b') + "\n");
    EXPECT_FALSE(exists(path + ".1"));
}

// A symbolic link at the log's name is never written through; nothing is
// lost (the lines stay for the next attempt).
TEST(EventFile, RefusesASymbolicLink) {
    const std::string dir = temp_dir("link"), path = dir + "/events.jsonl", target = dir + "/target";
    { std::ofstream(target) << "keep\n"; }
    ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
    std::deque<std::string> lines{"a\n"};
    try {
        append_rotated(path, lines, 100, 2);
        FAIL() << "wrote through a symbolic link";
    } catch (const std::runtime_error &e) {
        EXPECT_EQ(std::string(e.what()), path + ": is a symbolic link; not writing through it");
    }
    EXPECT_EQ(read_file(target), "keep\n");
    EXPECT_EQ(lines.size(), 1u);
}

// A line cut short (a full disk) is ended before the next one.
TEST(EventFile, EndsALineCutShort) {
    const std::string dir = temp_dir("partial"), path = dir + "/events.jsonl";
    { std::ofstream(path) << "{\"version\":1,\"ev"; }
    std::deque<std::string> lines{"{}\n"};
    append_rotated(path, lines, 1000, 2);
    EXPECT_EQ(read_file(path), "{\"version\":1,\"ev\n{}\n");
}

// ---------------------------------------------------------------- C ABI

namespace {
gp_preemption_t c_sample(const char *name) {
    gp_preemption_t p = {};
    p.time = T0 + 120;
    p.victim_job_id = 13;
    p.victim_name = name;
    p.victim_user_id = 1000;
    p.victim_pool = "pool1";
    p.victim_tier = "low";
    p.victim_gpus = 2;
    p.victim_start_time = T0;
    p.victim_pool_used = 3;
    p.victim_pool_quota = 2;
    p.preemptor_job_id = 15;
    p.preemptor_pool = "pool2";
    p.preemptor_tier = "normal";
    p.rule = GP_RULE_RECLAIM;
    p.mode = GP_MODE_REQUEUE;
    p.why = nullptr;  // NULL is ""
    return p;
}
}  // namespace

TEST(EventAbi, NoteThenFlush) {
    const std::string dir = temp_dir("abi"), path = dir + "/gpupool_events.jsonl";
    gp_engine_t *e = gp_engine_create();
    gp_preemption_t p = c_sample("wf3 \"%s\"\n");
    ASSERT_EQ(gp_engine_note_preemption(e, &p), GP_OK);
    EXPECT_EQ(gp_engine_queued_events(e), 1u);
    char err[256] = "";
    ASSERT_EQ(gp_engine_flush_events(e, path.c_str(), 1 << 20, 4, T0 + 130, err, sizeof err), GP_OK) << err;
    EXPECT_EQ(gp_engine_queued_events(e), 0u);
    auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), 1u);
    PreemptionEvent back;
    ASSERT_TRUE(event_from_json(lines[0], back));
    EXPECT_EQ(back.victim_name, "wf3 \"%s\"\n");
    EXPECT_EQ(back.rule, "Reclaim");
    EXPECT_EQ(back.mode, "requeue");
    EXPECT_EQ(back.why, "");
    // Nothing queued: nothing written, no error.
    ASSERT_EQ(gp_engine_flush_events(e, path.c_str(), 1 << 20, 4, T0 + 140, err, sizeof err), GP_OK);
    EXPECT_EQ(lines_of(read_file(path)).size(), 1u);
    gp_engine_destroy(e);
}

// More preemptions than the queue holds between two flushes: the oldest
// are dropped, and the log says how many.
TEST(EventAbi, QueueBoundAndDroppedCount) {
    const std::string dir = temp_dir("bound"), path = dir + "/gpupool_events.jsonl";
    gp_engine_t *e = gp_engine_create();
    gp_preemption_t p = c_sample("j");
    for (uint32_t i = 1; i <= EventQueue::kDefaultMax + 10; ++i) {
        p.victim_job_id = i;
        ASSERT_EQ(gp_engine_note_preemption(e, &p), GP_OK);
    }
    EXPECT_EQ(gp_engine_queued_events(e), EventQueue::kDefaultMax + 1);  // + the "dropped" line
    char err[256] = "";
    ASSERT_EQ(gp_engine_flush_events(e, path.c_str(), 64 << 20, 4, T0 + 500, err, sizeof err), GP_OK) << err;
    auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), EventQueue::kDefaultMax + 1);
    EXPECT_EQ(lines[0], "{\"version\":1,\"event\":\"dropped\",\"time\":1795000500,\"count\":10}");
    PreemptionEvent first;
    ASSERT_TRUE(event_from_json(lines[1], first));
    EXPECT_EQ(first.victim_job_id, 11u);
    gp_engine_destroy(e);
}

// A failed flush loses nothing: the lines wait for the next one.
TEST(EventAbi, FailedFlushKeepsTheEvents) {
    const std::string dir = temp_dir("fail");
    gp_engine_t *e = gp_engine_create();
    gp_preemption_t p = c_sample("j");
    ASSERT_EQ(gp_engine_note_preemption(e, &p), GP_OK);
    char err[256] = "";
    const std::string missing = dir + "/no/such/dir/events.jsonl";
    EXPECT_EQ(gp_engine_flush_events(e, missing.c_str(), 1 << 20, 4, T0, err, sizeof err), GP_ERR_IO);
    EXPECT_EQ(std::string(err), missing + ": open: No such file or directory");
    EXPECT_EQ(gp_engine_queued_events(e), 1u);
    const std::string path = dir + "/events.jsonl";
    ASSERT_EQ(gp_engine_flush_events(e, path.c_str(), 1 << 20, 4, T0, err, sizeof err), GP_OK) << err;
    EXPECT_EQ(lines_of(read_file(path)).size(), 1u);
    gp_engine_destroy(e);
}

TEST_F(UtcTime, CommentThroughTheAbi) {
    gp_preemption_t p = c_sample("j");
    char buf[GP_SYSTEM_COMMENT_MAX + 1];
    ASSERT_EQ(gp_preemption_comment(nullptr, &p, buf, sizeof buf), GP_OK);
    EXPECT_STREQ(buf, "gpupool: preempted by JobId=15 (pool pool2) rule Reclaim at 2026-11-18T11:08:40, lost 240 GPU-s");
    std::string first = buf;
    p.preemptor_job_id = 16;
    ASSERT_EQ(gp_preemption_comment(first.c_str(), &p, buf, sizeof buf), GP_OK);
    EXPECT_EQ(std::string(buf), first + "; " + "gpupool: preempted by JobId=16 (pool pool2) rule Reclaim at "
                                                "2026-11-18T11:08:40, lost 240 GPU-s");
    char small[16];
    EXPECT_EQ(gp_preemption_comment(nullptr, &p, small, sizeof small), GP_ERR_ARG);
    EXPECT_EQ(small[0], '\0');
}

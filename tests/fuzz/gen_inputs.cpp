// Inputs for the fuzz targets that random mutation rarely reaches:
//
//   gen_inputs scale DIR   worst-case shapes at two sizes, DIR/TARGET/NAME.small
//                          and NAME.large (8x), for scripts/fuzz.sh's check
//                          that time grows about linearly (no quadratic
//                          blow-up) and stays under the hang timeout
//   gen_inputs seeds DIR   state files as the engine writes them, for
//                          tests/fuzz/corpus/state (written once, committed)
//
// Built by tests/fuzz/fuzz.mk over the sanitized core, without libFuzzer.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "config.hpp"
#include "engine.hpp"

using namespace gpupool;

namespace {

// 256 KiB is already a very large gpupool.conf; state files of 100k jobs
// are larger, but work quadratic in the input shows as 64x the time of an
// input 8x smaller at any size, and these stay well under the 10 s hang
// timeout under ASan.
constexpr size_t kLarge = 256 * 1024;
constexpr size_t kSmall = kLarge / 8;

void write_file(const std::string &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        std::perror(path.c_str());
        std::exit(1);
    }
}

// Repeat `line(i)` until the text reaches `size` bytes.
std::string fill(size_t size, const std::string &head, const std::function<std::string(size_t)> &line,
                 const std::string &tail = "") {
    std::string s = head;
    for (size_t i = 0; s.size() + tail.size() < size; ++i) s += line(i);
    return s + tail;
}

void scale_pair(const std::string &dir, const std::string &name,
                const std::function<std::string(size_t)> &make) {
    write_file(dir + "/" + name + ".small", make(kSmall));
    write_file(dir + "/" + name + ".large", make(kLarge));
}

const std::string kTiers =
    "Tier=high Priority=300 Preemptible=no\nTier=normal Priority=200 Preemptible=no\n"
    "Tier=low Priority=100 Preemptible=yes\nDefaultTier=normal\n";

void scale_config(const std::string &dir) {
    auto n = [](size_t i) { return std::to_string(i); };
    scale_pair(dir, "many_tiers", [&](size_t size) {
        return fill(size, "DefaultTier=t0\n", [&](size_t i) {
            return "Tier=t" + n(i) + " QOS=q" + n(i) + " Priority=" + n(i) + " Preemptible=no\n";
        });
    });
    scale_pair(dir, "many_pools", [&](size_t size) {
        return fill(size, kTiers, [&](size_t i) { return "Pool=p" + n(i) + " Quota=1 Weight=1\n"; });
    });
    scale_pair(dir, "many_qos", [&](size_t size) {
        return fill(size, "Tier=t QOS=q", [&](size_t i) { return "," + n(i); }, " Priority=1 Preemptible=no\n");
    });
    scale_pair(dir, "long_token", [&](size_t size) {
        return fill(size, kTiers + "Pool=", [&](size_t) { return std::string("x"); }, " Quota=two\n");
    });
    scale_pair(dir, "comments", [&](size_t size) {
        return fill(size, kTiers, [&](size_t i) { return i % 2 ? "# comment\n" : "   \t\n"; });
    });
}

void scale_state(const std::string &dir) {
    auto n = [](int64_t i) { return std::to_string(i); };
    const std::string head = R"({"format":"gpupool-state","version":1,"saved_at":100000,"last_account":100000,)";
    const std::string empty_series = R"({"tail":0,"tail_time":0,"buckets":[]})";
    scale_pair(dir, "many_jobs", [&](size_t size) {
        return fill(size, head + R"("pools":{},"jobs":[[1,1000,99000])",
                    [&](size_t i) { return ",[" + n(int64_t(i) + 2) + ",1000,99000]"; }, "]}");
    });
    scale_pair(dir, "many_pools", [&](size_t size) {
        return fill(size, head + R"("jobs":[],"pools":{"p":{"usage":)" + empty_series + R"(,"capacity":)" +
                              empty_series + R"(,"last_used":1,"last_capacity":4})",
                    [&](size_t i) {
                        return ",\"x" + n(int64_t(i)) + "\":{\"usage\":" + empty_series + ",\"capacity\":" +
                               empty_series + ",\"last_used\":1,\"last_capacity\":4}";
                    },
                    "}}");
    });
    // Buckets one second wide ending at last_account: all inside the window.
    scale_pair(dir, "many_buckets", [&](size_t size) {
        size_t count = size / 16;
        std::string s = head + R"("jobs":[],"pools":{"p":{"last_used":1,"last_capacity":4,"capacity":)" +
                        empty_series + R"(,"usage":{"tail":0,"tail_time":0,"buckets":[)";
        for (size_t i = 0; i < count; ++i) {
            int64_t t = 100000 - int64_t(count) + int64_t(i);
            s += (i ? "," : "") + std::string("[") + n(t) + "," + n(t + 1) + ",1.5]";
        }
        return s + "]}}}}";
    });
    scale_pair(dir, "deep_nesting", [&](size_t size) {
        return std::string(size / 2, '[') + std::string(size / 2, ']');
    });
}

// FuzzedDataProvider over pseudo-random bytes: a random cluster whose job
// count grows with the input.  The provider decodes integers from the end,
// so both sizes end in the same bytes: the same config, nodes and calls,
// and the larger has more jobs.
void scale_engine(const std::string &dir) {
    auto random = [](size_t size, uint64_t x) {
        std::string s(size, '\0');
        for (char &c : s) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c = static_cast<char>(x >> 56);
        }
        return s;
    };
    const std::string tail = random(kSmall, 88172645463325252ull);
    scale_pair(dir, "random", [&](size_t size) { return random(size - tail.size(), 1181783497276652981ull) + tail; });
}

// State files as the engine writes them after a few passes.
void seeds(const std::string &dir) {
    const std::string conf = kTiers + "DecayHalfLife=1-0\nPool=p Quota=2\nPool=q Quota=2\n";
    for (int64_t window : {int64_t(0), int64_t(3 * 3600)}) {
        Config c = parse_config(conf + "UsageWindow=" + format_duration(window) + "\n", "seed.conf");
        Engine e;
        e.set_config(c);
        Snapshot s;
        for (int i = 0; i < 4; ++i) s.add_node("n" + std::to_string(i), 1);
        s.add_partition("p", {0, 1, 2, 3});
        s.add_partition("q", {0, 1, 2, 3});
        SnapJob r;
        r.id = 1;
        r.state = JobState::Running;
        r.partitions = {"p"};
        r.qos = "low";
        r.gpus = 2;
        r.submit_time = 900;
        r.start_time = 1000;
        s.add_job(r);
        SnapJob p;
        p.id = 2;
        p.partitions = {"q"};
        p.qos = "normal";
        p.gpus = 1;
        p.submit_time = 950;
        p.restart_cnt = 1;
        s.add_job(p);
        int64_t t = 1000;
        for (int pass = 0; pass < 12; ++pass, t += 4000) e.evaluate(s, t);
        write_file(dir + "/engine_written_window" + std::to_string(window) + ".json", e.state_json(t));
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: gen_inputs scale|seeds DIR\n");
        return 2;
    }
    const std::string mode = argv[1], dir = argv[2];
    if (mode == "scale") {
        for (const char *t : {"config", "state", "engine"}) ::mkdir((dir + "/" + t).c_str(), 0755);
        scale_config(dir + "/config");
        scale_state(dir + "/state");
        scale_engine(dir + "/engine");
    } else if (mode == "seeds") {
        seeds(dir);
    } else {
        std::fprintf(stderr, "usage: gen_inputs scale|seeds DIR\n");
        return 2;
    }
    return 0;
}

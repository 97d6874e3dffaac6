// libFuzzer target: state file bytes -> Engine::load_state_json().
//
// A file the engine rejects changes nothing.  A file it accepts is written
// back (state_json) and read again to the same content; then passes over a
// small fixed cluster (under one of three decay/window settings) run on the
// loaded history and submit times, at times after the file's last
// accounting, so that the usage arithmetic runs on whatever the file held;
// and the state they leave must load again.
#include <jansson.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "canonical_state.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "fuzz_check.hpp"

using namespace gpupool;

namespace {

const char kTiersPools[] =
    "Tier=high   QOS=high   Priority=300 Preemptible=no\n"
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low    QOS=low    Priority=100 Preemptible=yes\n"
    "DefaultTier=normal\n"
    "Pool=p Quota=2\n"
    "Pool=q Quota=2\n";

// The history is read under one of these (picked by the input's size, so
// mutation reaches all): decay without a window (old buckets fold into the
// tail), a window (old buckets are dropped), neither.
const char *const kUsage[] = {
    "DecayHalfLife=1-0 UsageWindow=0 UsageWeight=1\n",
    "DecayHalfLife=2:00:00 UsageWindow=1-0 UsageWeight=1\n",
    "DecayHalfLife=0 UsageWindow=0 UsageWeight=0.5\n",
};

// Four 1-GPU nodes under partitions p and q; a borrowing P job in p and
// jobs pending in both.
Snapshot fixed_cluster() {
    Snapshot s;
    for (int i = 0; i < 4; ++i) s.add_node("n" + std::to_string(i), 1);
    s.add_partition("p", {0, 1, 2, 3});
    s.add_partition("q", {0, 1, 2, 3});
    auto job = [&](uint32_t id, JobState st, const char *part, const char *qos, uint32_t gpus, int64_t submit) {
        SnapJob j;
        j.id = id;
        j.state = st;
        j.partitions = {part};
        j.qos = qos;
        j.gpus = gpus;
        j.submit_time = submit;
        j.start_time = st == JobState::Running ? submit + 10 : 0;
        j.restart_cnt = id % 2;
        s.add_job(j);
    };
    job(1, JobState::Running, "p", "low", 3, 900);
    job(2, JobState::Pending, "q", "normal", 1, 950);
    job(3, JobState::Pending, "p", "high", 2, 960);
    return s;
}

const Config &config(size_t which) {
    static const Config c[] = {parse_config(std::string(kTiersPools) + kUsage[0], "fuzz_state.conf"),
                               parse_config(std::string(kTiersPools) + kUsage[1], "fuzz_state.conf"),
                               parse_config(std::string(kTiersPools) + kUsage[2], "fuzz_state.conf")};
    return c[which % 3];
}

int64_t last_account_of(const std::string &state) {
    json_t *root = json_loads(state.c_str(), 0, nullptr);
    FUZZ_CHECK(root != nullptr);
    json_t *v = json_object_get(root, "last_account");
    FUZZ_CHECK(json_is_integer(v));
    int64_t la = json_integer_value(v);
    json_decref(root);
    return la;
}

// Written state loads into a fresh engine and is written again the same.
void check_reloads(const Config &cfg, const std::string &state, int64_t now) {
    Engine fresh;
    fresh.set_config(cfg);
    try {
        fresh.load_state_json(state);
    } catch (const std::runtime_error &e) {
        std::fprintf(stderr, "engine's own state rejected: %s\n", e.what());
        FUZZ_CHECK(!"engine's own state loads");
    }
    FUZZ_CHECK(same_state(state, fresh.state_json(now)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    const Snapshot snap = fixed_cluster();
    Engine e;
    const Config &cfg = config(size);
    e.set_config(cfg);
    // Jobs already seen in this run: a load merges its submit times with them.
    e.evaluate(snap, 1000);
    const std::string before = e.state_json(1000);
    try {
        e.load_state_json(text);
    } catch (const std::runtime_error &err) {
        FUZZ_CHECK(e.state_json(1000) == before);  // a bad file changes nothing
        return 0;
    }
    const std::string loaded = e.state_json(1000);
    check_reloads(cfg, loaded, 1000);

    // Passes after the file's last accounting (where that is a time at
    // all), then one at a fixed time.
    const int64_t la = last_account_of(loaded);
    for (int64_t step : {int64_t(60), int64_t(3 * 86400)}) {
        int64_t now;
        if (__builtin_add_overflow(la, step, &now)) continue;
        e.evaluate(snap, now);
        (void)e.report_json();
        check_reloads(cfg, e.state_json(now), now);
    }
    e.evaluate(snap, 1000000);
    check_reloads(cfg, e.state_json(1000000), 1000000);
    return 0;
}

// libFuzzer target: gpupool.conf text -> parse_config().
//
// Any input either parses or throws a ConfigError naming the file (short,
// printable); nothing else may escape, crash, leak or hang.  A
// configuration that parses must be one the engine accepts, keep R9's
// rules (distinct tier priorities, each QOS in one tier, names of letters,
// digits, '_', '-', '.', no longer than Slurm keeps them), and survive a
// round trip: written back as gpupool.conf text (write_config), it parses
// to the same Config.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "config.hpp"
#include "engine.hpp"
#include "fuzz_check.hpp"

using namespace gpupool;

namespace {

const char kSource[] = "fuzz.conf";

// Tier, QOS and pool names: what Slurm takes (config.hpp's kNameRule).
bool good_name(const std::string &s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return false;
    return true;
}

// An error message shows what it quotes from the file cut short and
// escaped: printable ASCII only, and short whatever the input.
bool printable_and_short(const std::string &msg) {
    if (msg.size() > 1024) return false;
    for (char c : msg)
        if (c < 0x20 || c > 0x7e) return false;
    return true;
}

bool same_amounts(const ResourceAmounts &a, const ResourceAmounts &b) {
    return a.given == b.given && a.value == b.value;
}

bool same_accounts(const Config &a, const Config &b) {
    if (a.accounts.size() != b.accounts.size()) return false;
    for (size_t i = 0; i < a.accounts.size(); ++i) {
        const AccountQuota &x = a.accounts[i], &y = b.accounts[i];
        if (x.account != y.account || x.pool != y.pool || !same_amounts(x.quota, y.quota) ||
            x.weight != y.weight || x.weight_given != y.weight_given || !same_amounts(x.limit, y.limit) ||
            !same_amounts(x.lending_limit, y.lending_limit))
            return false;
    }
    return true;
}

// Everything the parser reads (not the lines records were on).
bool same(const Config &a, const Config &b) {
    if (a.quota_tres != b.quota_tres || a.counted != b.counted || a.preemption_order != b.preemption_order ||
        a.reclaim_by != b.reclaim_by || a.reclaim_to != b.reclaim_to ||
        a.decay_half_life != b.decay_half_life || a.usage_window != b.usage_window ||
        a.usage_weight != b.usage_weight || a.min_runtime != b.min_runtime ||
        a.recalc_interval != b.recalc_interval || a.state_save_interval != b.state_save_interval ||
        a.has_preemptible_priority != b.has_preemptible_priority ||
        (a.has_preemptible_priority && a.preemptible_priority != b.preemptible_priority) ||
        a.default_tier != b.default_tier || a.tiers.size() != b.tiers.size() || a.pools.size() != b.pools.size())
        return false;
    for (size_t i = 0; i < a.tiers.size(); ++i) {
        const Tier &x = a.tiers[i], &y = b.tiers[i];
        if (x.name != y.name || x.qos != y.qos || x.priority != y.priority || x.preemptible != y.preemptible ||
            x.preempt_mode != y.preempt_mode || x.grace_time != y.grace_time)
            return false;
    }
    for (size_t i = 0; i < a.pools.size(); ++i) {
        const Pool &x = a.pools[i], &y = b.pools[i];
        if (x.name != y.name || x.quota != y.quota || !same_amounts(x.quota_by_resource, y.quota_by_resource) ||
            x.weight != y.weight || x.min_runtime != y.min_runtime)
            return false;
    }
    return same_accounts(a, b);
}

void check_duration(int64_t d) {
    FUZZ_CHECK(d >= 0);
    FUZZ_CHECK(parse_duration(format_duration(d)) == d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    Config c;
    try {
        c = parse_config(text, kSource);
    } catch (const ConfigError &e) {
        // Every error names the file (and the line, where there is one).
        const std::string msg = e.what();
        FUZZ_CHECK(msg.compare(0, sizeof kSource, std::string(kSource) + ":") == 0);
        if (!printable_and_short(msg)) std::fprintf(stderr, "message: %s\n", msg.c_str());
        FUZZ_CHECK(printable_and_short(msg));
        return 0;
    }

    // R9's rules hold for whatever parsed.
    FUZZ_CHECK(!c.tiers.empty());
    FUZZ_CHECK(c.find_tier(c.default_tier) != nullptr);
    FUZZ_CHECK(c.recalc_interval >= 1 && c.recalc_interval <= 3600);
    FUZZ_CHECK(c.state_save_interval >= 1 && c.state_save_interval <= 86400);
    FUZZ_CHECK(c.usage_weight >= 0 && c.usage_weight == c.usage_weight && c.usage_weight - c.usage_weight == 0);
    FUZZ_CHECK(c.quota_tres.compare(0, 8, "gres/gpu") == 0);
    check_duration(c.decay_half_life);
    check_duration(c.usage_window);
    check_duration(c.min_runtime);
    std::set<uint32_t> priorities;
    std::set<std::string> tier_names, qos_names, pool_names;
    for (const Tier &t : c.tiers) {
        FUZZ_CHECK(good_name(t.name) && t.name.size() <= kMaxTierNameBytes);
        FUZZ_CHECK(tier_names.insert(t.name).second);
        FUZZ_CHECK(priorities.insert(t.priority).second);
        FUZZ_CHECK(!t.qos.empty());
        for (const std::string &q : t.qos) {
            FUZZ_CHECK(good_name(q) && q.size() <= kMaxQosNameBytes);
            FUZZ_CHECK(qos_names.insert(q).second);
        }
        if (c.has_preemptible_priority) FUZZ_CHECK(t.preemptible == (t.priority <= c.preemptible_priority));
        FUZZ_CHECK(t.grace_time >= -1);
    }
    for (const Pool &p : c.pools) {
        FUZZ_CHECK(good_name(p.name) && p.name.size() <= kMaxPoolNameBytes);
        FUZZ_CHECK(pool_names.insert(p.name).second);
        if (p.min_runtime >= 0) check_duration(p.min_runtime);
        FUZZ_CHECK(p.min_runtime >= -1);
    }

    for (const AccountQuota &a : c.accounts) {
        FUZZ_CHECK(good_name(a.account) && a.account.size() <= kMaxAccountNameBytes);
        FUZZ_CHECK(a.pool == "*" || c.find_pool(a.pool) != nullptr);
    }

    // Written back, it reads the same.
    Config again;
    try {
        again = parse_config(write_config(c), kSource);
    } catch (const ConfigError &e) {
        std::fprintf(stderr, "written-back config rejected: %s\n", e.what());
        FUZZ_CHECK(!"round trip parses");
    }
    FUZZ_CHECK(same(c, again));

    // The engine takes what the parser accepts.
    Engine engine;
    try {
        engine.set_config(c);
    } catch (const ConfigError &e) {
        std::fprintf(stderr, "engine rejected a parsed config: %s\n", e.what());
        FUZZ_CHECK(!"engine accepts a parsed config");
    }
    for (const Tier &t : c.tiers)
        for (const std::string &q : t.qos)
            FUZZ_CHECK(engine.config().tiers[static_cast<size_t>(engine.tier_of_qos(q))].name == t.name);
    return 0;
}

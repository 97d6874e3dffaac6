// Time-based fairshare per pool (Run:ai sets it per node
// pool): DecayHalfLife, UsageWindow and UsageWeight on a Pool= line
// override the global ones for that pool's usage history, its term among
// the pools sharing its nodes and its queues' division.
#include <gtest/gtest.h>

#include "config_parser.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

const std::string kTiers =
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low QOS=low Priority=100 Preemptible=yes\n"
    "DefaultTier=low\n"
    "UsageWeight=1\n";

// Pools a and b (quota 0, weight 1) share one node of 8 GPUs.  a held all
// 8 from t=1000 to t=4600; at t=8200 each asks for 8.  Returns their
// fairshares then.
std::pair<uint32_t, uint32_t> shares_after_a_used_the_node(const std::string &pools) {
    Engine e = engine_with(kTiers + pools);
    Snapshot s = cluster(1, 8);
    partition(s, "a", 0, 0);
    partition(s, "b", 0, 0);
    s.add_job(running(1, "a", "low", 8, 1000));
    e.evaluate(s, 1000);
    s.jobs.clear();
    e.evaluate(s, 4600);
    s.add_job(pending(2, "a", "low", 8, 8000));
    s.add_job(pending(3, "b", "low", 8, 8000));
    e.evaluate(s, 8200);
    return {pool(e, "a").fairshare, pool(e, "b").fairshare};
}

}  // namespace

TEST(PoolDecay, PoolKeysParseAndWriteBack) {
    const Config c = parse_config(kTiers + "Pool=a Quota=2 DecayHalfLife=1:00:00 UsageWindow=2-00:00:00 UsageWeight=0.5\n"
                                           "Pool=b Quota=2\n",
                                  "t.conf");
    EXPECT_EQ(c.pools[0].decay_half_life, 3600);
    EXPECT_EQ(c.pools[0].usage_window, 2 * 86400);
    EXPECT_EQ(c.pools[0].usage_weight, 0.5);
    EXPECT_EQ(c.decay_of(c.pools[1]).half_life, c.decay_half_life);
    EXPECT_EQ(c.usage_weight_of(c.pools[1]), 1.0);
    const Config back = parse_config(write_config(c), "written.conf");
    EXPECT_EQ(back.pools[0].decay_half_life, 3600);
    EXPECT_EQ(back.pools[0].usage_window, 2 * 86400);
    EXPECT_EQ(back.pools[0].usage_weight, 0.5);
    EXPECT_EQ(back.pools[1].usage_weight, -1.0);
    EXPECT_THROW(parse_config(kTiers + "Pool=a Quota=2 UsageWeight=-1\n", "t.conf"), ConfigError);
}

TEST(PoolDecay, APoolsOwnSettingsDecideItsHistorysWeight) {
    const std::string plain = "Pool=a Quota=0\nPool=b Quota=0\n";
    // The global settings: a's hour on the whole node still counts, b gets more.
    EXPECT_EQ(shares_after_a_used_the_node(plain), std::make_pair(3u, 5u));
    // a's history decays with a half-life of 5 minutes (its window of 4
    // hours keeps the buckets finer than that): an hour later it is gone.
    EXPECT_EQ(shares_after_a_used_the_node("Pool=a Quota=0 DecayHalfLife=0:05:00 UsageWindow=4:00:00\nPool=b Quota=0\n"),
              std::make_pair(4u, 4u));
    // a's history outside its window of 30 minutes does not count.
    EXPECT_EQ(shares_after_a_used_the_node("Pool=a Quota=0 UsageWindow=30:00\nPool=b Quota=0\n"),
              std::make_pair(4u, 4u));
    // a's own K of 0: its share is its weight's, b's still its history's (none).
    EXPECT_EQ(shares_after_a_used_the_node("Pool=a Quota=0 UsageWeight=0\nPool=b Quota=0\n"),
              std::make_pair(3u, 5u));
    // b's own K of 0 and a's 0: point-in-time, half each.
    EXPECT_EQ(shares_after_a_used_the_node("Pool=a Quota=0 UsageWeight=0\nPool=b Quota=0 UsageWeight=0\n"),
              std::make_pair(4u, 4u));
}

// Unit tests of the gpupool.conf parser (R9).
#include "config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gpupool;

namespace {

// The message of the ConfigError that parsing `text` throws, or
// "<no error>" when it parses.
std::string error_of(const std::string &text, const std::string &source = "gp.conf") {
    try {
        parse_config(text, source);
    } catch (const ConfigError &e) {
        return e.what();
    }
    return "<no error>";
}

// Three tiers and a default, so that error tests only add what they test.
const std::string kTiers =
    "Tier=high   Priority=300 Preemptible=no\n"    // line 1
    "Tier=normal Priority=200 Preemptible=no\n"    // line 2
    "Tier=low    Priority=100 Preemptible=yes\n"   // line 3
    "DefaultTier=normal\n";                        // line 4

const std::string kR9Example =
    "QuotaTRES=gres/gpu\n"
    "PreemptionOrder=newest\n"
    "ReclaimBy=nonpreemptible\n"
    "DecayHalfLife=7-0\n"
    "Tier=high   QOS=high   Priority=300 Preemptible=no\n"
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low    QOS=low    Priority=100 Preemptible=yes\n"
    "DefaultTier=normal\n"
    "Pool=pool1 Quota=2 Weight=1\n"
    "Pool=pool2 Quota=2 Weight=1 MinRuntime=10:00\n";

}  // namespace

// ---------------------------------------------------------------- ConfigParse

TEST(ConfigParse, PolicyR9Example) {
    Config c = parse_config(kR9Example, "gpupool.conf");
    EXPECT_EQ(c.source, "gpupool.conf");
    EXPECT_EQ(c.quota_tres, "gres/gpu");
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Newest);
    EXPECT_EQ(c.reclaim_by, ReclaimBy::NonPreemptible);
    EXPECT_EQ(c.decay_half_life, 7 * 86400);
    // Not in the example: the defaults of config.hpp.
    EXPECT_EQ(c.usage_window, 7 * 86400);
    EXPECT_DOUBLE_EQ(c.usage_weight, 1.0);
    EXPECT_EQ(c.min_runtime, 0);
    EXPECT_EQ(c.recalc_interval, 10);
    EXPECT_FALSE(c.has_preemptible_priority);
    EXPECT_EQ(c.default_tier, "normal");

    ASSERT_EQ(c.tiers.size(), 3u);
    EXPECT_EQ(c.tiers[0].name, "high");
    EXPECT_EQ(c.tiers[0].qos, std::vector<std::string>{"high"});
    EXPECT_EQ(c.tiers[0].priority, 300u);
    EXPECT_FALSE(c.tiers[0].preemptible);
    EXPECT_EQ(c.tiers[0].preempt_mode, PreemptMode::Default);
    EXPECT_EQ(c.tiers[0].grace_time, -1);
    EXPECT_EQ(c.tiers[0].line, 5);
    EXPECT_EQ(c.tiers[1].name, "normal");
    EXPECT_EQ(c.tiers[1].qos, std::vector<std::string>{"normal"});
    EXPECT_EQ(c.tiers[1].priority, 200u);
    EXPECT_FALSE(c.tiers[1].preemptible);
    EXPECT_EQ(c.tiers[1].line, 6);
    EXPECT_EQ(c.tiers[2].name, "low");
    EXPECT_EQ(c.tiers[2].qos, std::vector<std::string>{"low"});
    EXPECT_EQ(c.tiers[2].priority, 100u);
    EXPECT_TRUE(c.tiers[2].preemptible);
    EXPECT_EQ(c.tiers[2].line, 7);

    ASSERT_EQ(c.pools.size(), 2u);
    EXPECT_EQ(c.pools[0].name, "pool1");
    EXPECT_EQ(c.pools[0].quota, 2u);
    EXPECT_EQ(c.pools[0].weight, 1u);
    EXPECT_EQ(c.pools[0].min_runtime, -1);
    EXPECT_EQ(c.pools[0].line, 9);
    EXPECT_EQ(c.pools[1].name, "pool2");
    EXPECT_EQ(c.pools[1].quota, 2u);
    EXPECT_EQ(c.pools[1].weight, 1u);
    EXPECT_EQ(c.pools[1].min_runtime, 600);
    EXPECT_EQ(c.pools[1].line, 10);

    ASSERT_NE(c.find_tier("low"), nullptr);
    EXPECT_EQ(c.find_tier("low")->priority, 100u);
    EXPECT_EQ(c.find_tier("LOW"), nullptr);  // names are case-sensitive
    EXPECT_EQ(c.find_tier("nope"), nullptr);
    ASSERT_NE(c.find_pool("pool2"), nullptr);
    EXPECT_EQ(c.find_pool("pool2")->min_runtime, 600);
    EXPECT_EQ(c.find_pool("pool3"), nullptr);
}

TEST(ConfigParse, EveryGlobalKey) {
    Config c = parse_config(
        "QuotaTRES=gres/gpu:a100\n"
        "PreemptionOrder=oldest ReclaimBy=all\n"
        "DecayHalfLife=0 UsageWindow=INFINITE UsageWeight=0.25\n"
        "MinRuntime=5:00 RecalcInterval=3600\n"
        "Tier=only Priority=7 Preemptible=no\n",
        "x");
    EXPECT_EQ(c.quota_tres, "gres/gpu:a100");
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Oldest);
    EXPECT_EQ(c.reclaim_by, ReclaimBy::All);
    EXPECT_EQ(c.decay_half_life, 0);
    EXPECT_EQ(c.usage_window, 0);
    EXPECT_DOUBLE_EQ(c.usage_weight, 0.25);
    EXPECT_EQ(c.min_runtime, 300);
    EXPECT_EQ(c.recalc_interval, 3600);
    // One tier and no DefaultTier: that tier is the default.
    EXPECT_EQ(c.default_tier, "only");
    EXPECT_TRUE(c.pools.empty());
}

// Settings that change nothing with the rest of the file load, each with a
// warning naming its line.
TEST(ConfigParse, SettingsWithoutEffectAreWarnedWhere) {
    struct Case {
        const char *sentence;
        std::string text;
        std::vector<std::string> warnings;
    };
    const std::vector<Case> cases = {
        {"none", kTiers + "Pool=p Quota=2\n", {}},
        {"Swap=least-work under ReclaimTo=fairshare",
         kTiers + "ReclaimTo=fairshare\nSwap=least-work\nPool=p Quota=2\n",
         {"x:6: Swap=least-work has no effect with ReclaimTo=fairshare (line 5): a swap weighs pools that "
          "reclaim to their quota"}},
        {"Swap=least-work where every pool has Account= records",
         kTiers + "Swap=least-work\nPool=p Quota=2\nAccount=a Pool=* Quota=1\n",
         {"x:5: Swap=least-work has no effect: every pool has Account= records, and a swap weighs pools "
          "without them"}},
        {"Swap=least-work with one pool without them: none",
         kTiers + "Swap=least-work\nPool=p Quota=2\nPool=q Quota=2\nAccount=a Pool=p Quota=1\n", {}},
        {"ReclaimBy= given under ReclaimTo=fairshare",
         kTiers + "ReclaimBy=all\nReclaimTo=fairshare\nPool=p Quota=2\n",
         {"x:5: ReclaimBy= has no effect with ReclaimTo=fairshare (line 6): there any job of a queue below its "
          "fairshare reclaims"}},
        {"GraceTime= on a tier that is not preemptible",
         "Tier=high Priority=300 Preemptible=no GraceTime=30\nTier=low Priority=100 Preemptible=yes\n"
         "DefaultTier=low\nPool=p Quota=2\n",
         {"x:1: PreemptMode= and GraceTime= in Tier=high have no effect: its jobs are not preemptible"}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(parse_config(c.text, "x").warnings, c.warnings);
    }
}

TEST(ConfigParse, UsageWindowForms) {
    for (const char *w : {"0", "INFINITE", "unlimited", "Unlimited"}) {
        Config c = parse_config(std::string("UsageWindow=") + w + "\n" + kTiers, "x");
        EXPECT_EQ(c.usage_window, 0) << w;
    }
    EXPECT_EQ(parse_config("UsageWindow=1-12\n" + kTiers, "x").usage_window, 36 * 3600);
}

TEST(ConfigParse, UsageWeightForms) {
    EXPECT_DOUBLE_EQ(parse_config("UsageWeight=2\n" + kTiers, "x").usage_weight, 2.0);
    EXPECT_DOUBLE_EQ(parse_config("UsageWeight=0\n" + kTiers, "x").usage_weight, 0.0);
    EXPECT_DOUBLE_EQ(parse_config("UsageWeight=.5\n" + kTiers, "x").usage_weight, 0.5);
    EXPECT_DOUBLE_EQ(parse_config("UsageWeight=1.\n" + kTiers, "x").usage_weight, 1.0);
    EXPECT_DOUBLE_EQ(parse_config("UsageWeight=10.125\n" + kTiers, "x").usage_weight, 10.125);
}

TEST(ConfigParse, TierKeys) {
    Config c = parse_config(
        "Tier=inference QOS=inf,inference,serve Priority=125 Preemptible=false "
        "PreemptMode=CANCEL GraceTime=30\n"
        "Tier=build Priority=100 Preemptible=0 PreemptMode=Requeue GraceTime=2:00\n"
        "Tier=interactive Priority=75 Preemptible=true PreemptMode=cancel GraceTime=0\n"
        "Tier=train Priority=50 Preemptible=1 GraceTime=1-00:00:01\n"
        "DefaultTier=train\n",
        "x");
    ASSERT_EQ(c.tiers.size(), 4u);
    EXPECT_EQ(c.tiers[0].qos, (std::vector<std::string>{"inf", "inference", "serve"}));
    EXPECT_FALSE(c.tiers[0].preemptible);
    EXPECT_EQ(c.tiers[0].preempt_mode, PreemptMode::Cancel);
    EXPECT_EQ(c.tiers[0].grace_time, 30);       // plain integer: seconds
    EXPECT_FALSE(c.tiers[1].preemptible);
    EXPECT_EQ(c.tiers[1].preempt_mode, PreemptMode::Requeue);
    EXPECT_EQ(c.tiers[1].grace_time, 120);      // a duration
    EXPECT_TRUE(c.tiers[2].preemptible);
    EXPECT_EQ(c.tiers[2].preempt_mode, PreemptMode::Cancel);
    EXPECT_EQ(c.tiers[2].grace_time, 0);
    EXPECT_TRUE(c.tiers[3].preemptible);
    EXPECT_EQ(c.tiers[3].preempt_mode, PreemptMode::Default);
    EXPECT_EQ(c.tiers[3].grace_time, 86401);
    EXPECT_EQ(c.default_tier, "train");
}

TEST(ConfigParse, PreemptibleWordsAnyCase) {
    for (const char *w : {"yes", "YES", "True", "1"}) {
        Config c = parse_config(std::string("Tier=a Priority=1 Preemptible=") + w + "\n", "x");
        EXPECT_TRUE(c.tiers[0].preemptible) << w;
    }
    for (const char *w : {"no", "No", "FALSE", "0"}) {
        Config c = parse_config(std::string("Tier=a Priority=1 Preemptible=") + w + "\n", "x");
        EXPECT_FALSE(c.tiers[0].preemptible) << w;
    }
}

TEST(ConfigParse, PoolKeys) {
    Config c = parse_config(kTiers +
                                "Pool=a Quota=0\n"
                                "Pool=b Quota=4294967295 Weight=0 MinRuntime=0\n"
                                "Pool=c Weight=3 Quota=6 MinRuntime=1-00\n",
                            "x");
    ASSERT_EQ(c.pools.size(), 3u);
    EXPECT_EQ(c.pools[0].quota, 0u);
    EXPECT_EQ(c.pools[0].weight, 1u);
    EXPECT_EQ(c.pools[0].min_runtime, -1);
    EXPECT_EQ(c.pools[0].line, 5);
    EXPECT_EQ(c.pools[1].quota, 4294967295u);
    EXPECT_EQ(c.pools[1].weight, 0u);
    EXPECT_EQ(c.pools[1].min_runtime, 0);
    EXPECT_EQ(c.pools[2].quota, 6u);
    EXPECT_EQ(c.pools[2].weight, 3u);
    EXPECT_EQ(c.pools[2].min_runtime, 86400);
}

TEST(ConfigParse, PreemptiblePriority) {
    // Backend.AI style: priority <= N is preemptible.
    Config c = parse_config(
        "PreemptiblePriority=50\n"
        "Tier=urgent Priority=100\n"
        "Tier=normal Priority=51\n"
        "Tier=batch  Priority=50\n"
        "Tier=idle   Priority=0\n"
        "DefaultTier=normal\n",
        "x");
    EXPECT_TRUE(c.has_preemptible_priority);
    EXPECT_EQ(c.preemptible_priority, 50u);
    ASSERT_EQ(c.tiers.size(), 4u);
    EXPECT_FALSE(c.tiers[0].preemptible);
    EXPECT_FALSE(c.tiers[1].preemptible);
    EXPECT_TRUE(c.tiers[2].preemptible);
    EXPECT_TRUE(c.tiers[3].preemptible);
}

TEST(ConfigParse, PreemptiblePriorityAfterTiers) {
    // The global key may come after the tiers it decides.
    Config c = parse_config(
        "Tier=a Priority=10\n"
        "Tier=b Priority=20\n"
        "DefaultTier=b PreemptiblePriority=10\n",
        "x");
    EXPECT_TRUE(c.tiers[0].preemptible);
    EXPECT_FALSE(c.tiers[1].preemptible);
}

TEST(ConfigParse, CommentsBlankLinesAndCase) {
    Config c = parse_config(
        "# gpupool.conf\n"
        "\n"
        "   \t  \n"
        "quotatres=gres/gpu   # trailing comment\n"
        "PREEMPTIONORDER=OLDEST\treclaimby=ALL\n"
        "  # indented comment\n"
        "tier=Hi qos=hiq PRIORITY=2 preemptible=No preemptmode=rEqUeUe\r\n"
        "TIER=lo Priority=1 Preemptible=YES#comment right after a value\n"
        "defaulttier=Hi\n"
        "pool=P1 QUOTA=3 weight=2 minruntime=1:00\n"
        "#Pool=ignored Quota=1\n",
        "x");
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Oldest);
    EXPECT_EQ(c.reclaim_by, ReclaimBy::All);
    ASSERT_EQ(c.tiers.size(), 2u);
    EXPECT_EQ(c.tiers[0].name, "Hi");  // values keep case
    EXPECT_EQ(c.tiers[0].qos, std::vector<std::string>{"hiq"});  // QOS are Slurm's lower-case names
    EXPECT_EQ(c.tiers[0].preempt_mode, PreemptMode::Requeue);
    EXPECT_EQ(c.tiers[0].line, 7);
    EXPECT_TRUE(c.tiers[1].preemptible);
    EXPECT_EQ(c.tiers[1].line, 8);
    EXPECT_EQ(c.default_tier, "Hi");
    ASSERT_EQ(c.pools.size(), 1u);
    EXPECT_EQ(c.pools[0].name, "P1");
    EXPECT_EQ(c.pools[0].quota, 3u);
    EXPECT_EQ(c.pools[0].weight, 2u);
    EXPECT_EQ(c.pools[0].min_runtime, 60);
    EXPECT_EQ(c.pools[0].line, 10);
}

TEST(ConfigParse, NoTrailingNewlineAndEmptyPools) {
    Config c = parse_config("Tier=t Priority=1 Preemptible=no", "x");
    EXPECT_EQ(c.tiers.size(), 1u);
    EXPECT_TRUE(c.pools.empty());
}

TEST(ConfigParse, LoadFile) {
    char path[] = "/tmp/gpupool_config_test_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    {
        std::ofstream out(path);
        out << kR9Example;
    }
    Config c = load_config_file(path);
    EXPECT_EQ(c.source, path);
    EXPECT_EQ(c.tiers.size(), 3u);
    EXPECT_EQ(c.pools.size(), 2u);
    {
        std::ofstream out(path);
        out << kTiers << "Pool=p Quota=x\n";
    }
    try {
        load_config_file(path);
        ADD_FAILURE() << "no error";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), std::string(path) +
                      ":5: bad value 'x' for Quota: expected an integer 0..4294967295");
    }
    std::remove(path);
}

TEST(ConfigParse, ShippedExample) {
    // etc/gpupool.conf.example, from the source tree (automake sets $srcdir).
    const char *srcdir = std::getenv("srcdir");
    std::string path = std::string(srcdir ? srcdir : ".") + "/etc/gpupool.conf.example";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " not found";
    Config c = load_config_file(path);
    EXPECT_EQ(c.quota_tres, "gres/gpu");
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Newest);
    EXPECT_EQ(c.reclaim_by, ReclaimBy::NonPreemptible);
    EXPECT_EQ(c.decay_half_life, 7 * 86400);
    EXPECT_EQ(c.usage_window, 7 * 86400);
    EXPECT_DOUBLE_EQ(c.usage_weight, 1.0);
    EXPECT_EQ(c.recalc_interval, 10);
    EXPECT_EQ(c.default_tier, "normal");
    ASSERT_EQ(c.tiers.size(), 3u);
    EXPECT_EQ(c.find_tier("high")->priority, 300u);
    EXPECT_FALSE(c.find_tier("high")->preemptible);
    EXPECT_EQ(c.find_tier("normal")->priority, 200u);
    EXPECT_FALSE(c.find_tier("normal")->preemptible);
    EXPECT_EQ(c.find_tier("low")->priority, 100u);
    EXPECT_TRUE(c.find_tier("low")->preemptible);
    ASSERT_EQ(c.pools.size(), 3u);
    for (const char *p : {"pool1", "pool2", "pool3"}) {
        ASSERT_NE(c.find_pool(p), nullptr) << p;
        EXPECT_EQ(c.find_pool(p)->quota, 2u) << p;
    }
}

TEST(ConfigParse, LoadMissingFile) {
    try {
        load_config_file("/nonexistent/gpupool.conf");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()),
                  "/nonexistent/gpupool.conf: cannot read: No such file or directory");
    }
}

TEST(ConfigParse, LoadDirectory) {
    try {
        load_config_file("/tmp");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), "/tmp: cannot read: Is a directory");
    }
}

// --------------------------------------------------------------- ConfigErrors

TEST(ConfigErrors, UnknownKey) {
    EXPECT_EQ(error_of("Tier=low Priority=1 Preemptible=yes Foo=1\n"),
              "gp.conf:1: unknown key 'Foo' in Tier=low");
    EXPECT_EQ(error_of(kTiers + "Pool=pool1 Quota=1 Colour=red\n"),
              "gp.conf:5: unknown key 'Colour' in Pool=pool1");
    EXPECT_EQ(error_of("\nPreemptionOrder=newest Bogus=1\n" + kTiers),
              "gp.conf:2: unknown key 'Bogus'");
    // A global key on a record line is unknown there.
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 ReclaimBy=all\n"),
              "gp.conf:5: unknown key 'ReclaimBy' in Pool=p");
    // Tier= / Pool= only start a line.
    EXPECT_EQ(error_of("DefaultTier=a Tier=a Priority=1\n"),
              "gp.conf:1: Tier= must be the first token on its line");
    EXPECT_EQ(error_of(kTiers + "Quota=1 Pool=p\n"),
              "gp.conf:5: unknown key 'Quota'");
}

TEST(ConfigErrors, MissingValueOrEquals) {
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=\n"), "gp.conf:5: missing value for 'Quota'");
    EXPECT_EQ(error_of("ReclaimBy=\n" + kTiers), "gp.conf:1: missing value for 'ReclaimBy'");
    EXPECT_EQ(error_of("Tier= Priority=1\n"), "gp.conf:1: missing value for 'Tier'");
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota 2\n"),
              "gp.conf:5: expected Key=Value, got 'Quota'");
    EXPECT_EQ(error_of("newest\n"), "gp.conf:1: expected Key=Value, got 'newest'");
    EXPECT_EQ(error_of(kTiers + "=3\n"), "gp.conf:5: missing key in '=3'");
}

TEST(ConfigErrors, BadNumber) {
    const std::string u32 = ": expected an integer 0..4294967295";
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=-1\n"),
              "gp.conf:5: bad value '-1' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=two\n"),
              "gp.conf:5: bad value 'two' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=4294967296\n"),
              "gp.conf:5: bad value '4294967296' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=99999999999999999999999\n"),
              "gp.conf:5: bad value '99999999999999999999999' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=2gpus\n"),
              "gp.conf:5: bad value '2gpus' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=+2\n"),
              "gp.conf:5: bad value '+2' for Quota" + u32);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 Weight=1.5\n"),
              "gp.conf:5: bad value '1.5' for Weight" + u32);
    EXPECT_EQ(error_of("Tier=a Priority=high Preemptible=no\n"),
              "gp.conf:1: bad value 'high' for Priority" + u32);
    EXPECT_EQ(error_of("PreemptiblePriority=-5\nTier=a Priority=1\n"),
              "gp.conf:1: bad value '-5' for PreemptiblePriority" + u32);
    EXPECT_EQ(error_of("RecalcInterval=0\n" + kTiers),
              "gp.conf:1: bad value '0' for RecalcInterval: expected an integer 1..3600");
    EXPECT_EQ(error_of("RecalcInterval=3601\n" + kTiers),
              "gp.conf:1: bad value '3601' for RecalcInterval: expected an integer 1..3600");
    EXPECT_EQ(error_of("RecalcInterval=10s\n" + kTiers),
              "gp.conf:1: bad value '10s' for RecalcInterval: expected an integer 1..3600");
    const std::string dec = ": expected a decimal number >= 0";
    EXPECT_EQ(error_of("UsageWeight=-1\n" + kTiers),
              "gp.conf:1: bad value '-1' for UsageWeight" + dec);
    EXPECT_EQ(error_of("UsageWeight=inf\n" + kTiers),
              "gp.conf:1: bad value 'inf' for UsageWeight" + dec);
    EXPECT_EQ(error_of("UsageWeight=nan\n" + kTiers),
              "gp.conf:1: bad value 'nan' for UsageWeight" + dec);
    EXPECT_EQ(error_of("UsageWeight=1e400\n" + kTiers),
              "gp.conf:1: bad value '1e400' for UsageWeight" + dec);
    EXPECT_EQ(error_of("UsageWeight=.\n" + kTiers),
              "gp.conf:1: bad value '.' for UsageWeight" + dec);
    EXPECT_EQ(error_of("UsageWeight=1.5x\n" + kTiers),
              "gp.conf:1: bad value '1.5x' for UsageWeight" + dec);
    const std::string grace =
        ": expected seconds or a duration (MM:SS, HH:MM:SS, D-HH[:MM[:SS]])";
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=no GraceTime=-1\n"),
              "gp.conf:1: bad value '-1' for GraceTime" + grace);
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=no GraceTime=2147483648\n"),
              "gp.conf:1: bad value '2147483648' for GraceTime" + grace);
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=no GraceTime=INFINITE\n"),
              "gp.conf:1: bad value 'INFINITE' for GraceTime" + grace);
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=no GraceTime=1:99\n"),
              "gp.conf:1: bad value '1:99' for GraceTime" + grace);
}

TEST(ConfigErrors, BadDuration) {
    const std::string forms =
        ": expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, 0 or INFINITE";
    EXPECT_EQ(error_of("DecayHalfLife=7d\n" + kTiers),
              "gp.conf:1: bad duration '7d' for DecayHalfLife" + forms);
    EXPECT_EQ(error_of("UsageWindow=-1\n" + kTiers),
              "gp.conf:1: bad duration '-1' for UsageWindow" + forms);
    EXPECT_EQ(error_of("MinRuntime=1:60\n" + kTiers),
              "gp.conf:1: bad duration '1:60' for MinRuntime" + forms);
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 MinRuntime=1-24\n"),
              "gp.conf:5: bad duration '1-24' for MinRuntime" + forms);
    // INFINITE is "no limit" for a window; as a minimum run time it would
    // silently mean the opposite (0), so it is refused there.
    EXPECT_EQ(error_of("MinRuntime=INFINITE\n" + kTiers),
              "gp.conf:1: bad duration 'INFINITE' for MinRuntime: INFINITE is not allowed here");
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 MinRuntime=unlimited\n"),
              "gp.conf:5: bad duration 'unlimited' for MinRuntime: INFINITE is not allowed here");
    // Found by fuzz_engine: a window of 6.7e10 years made usage buckets end
    // past the times a state file takes, so the engine's own state would
    // not load again.
    EXPECT_EQ(error_of("UsageWindow=24695098272672-06:08:40\n" + kTiers),
              "gp.conf:1: duration '24695098272672-06:08:40' for UsageWindow is longer than 36500 days (100 years)");
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 MinRuntime=36501-0\n"),
              "gp.conf:5: duration '36501-0' for MinRuntime is longer than 36500 days (100 years)");
    EXPECT_EQ(parse_config("DecayHalfLife=36500-0\n" + kTiers, "gp.conf").decay_half_life, int64_t(36500) * 86400);
}

TEST(ConfigErrors, BadEnumWord) {
    EXPECT_EQ(error_of("PreemptionOrder=youngest\n" + kTiers),
              "gp.conf:1: bad value 'youngest' for PreemptionOrder: expected newest or oldest");
    EXPECT_EQ(error_of("ReclaimBy=some\n" + kTiers),
              "gp.conf:1: bad value 'some' for ReclaimBy: expected nonpreemptible or all");
    EXPECT_EQ(error_of("Swap=always\n" + kTiers),
              "gp.conf:1: bad value 'always' for Swap: expected needed or least-work");
    // least-work orders sets by the work they lose, which `oldest` does not count.
    EXPECT_EQ(error_of("PreemptionOrder=oldest\nSwap=least-work\n" + kTiers),
              "gp.conf:2: Swap=least-work needs PreemptionOrder=newest (line 1 sets oldest, which counts no "
              "work lost)");
    EXPECT_EQ(parse_config("Swap=least-work\n" + kTiers, "gp.conf").swap, SwapWhen::LeastWork);
    EXPECT_EQ(parse_config(kTiers, "gp.conf").swap, SwapWhen::Needed);
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=maybe\n"),
              "gp.conf:1: bad value 'maybe' for Preemptible: "
              "expected yes, no, true, false, 1 or 0");
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=yes PreemptMode=gang\n"),
              "gp.conf:1: bad value 'gang' for PreemptMode: expected requeue or cancel");
    // Slurm keeps a suspended job's GRES: suspending frees no GPU.
    for (const char *p : {"yes", "no"})
        EXPECT_EQ(error_of(std::string("Tier=a Priority=1 Preemptible=") + p +
                           " PreemptMode=Suspend\n"),
                  "gp.conf:1: PreemptMode=suspend in Tier=a: Slurm keeps a suspended job's GPUs "
                  "allocated, so suspending it frees nothing for the job that preempts; use "
                  "requeue or cancel (jobs that checkpoint: GraceTime= with "
                  "SlurmctldParameters=preempt_send_user_signal, then requeue)");
    const std::string tres = ": expected gres/gpu or gres/gpu:TYPE";
    for (const char *v : {"cpu", "gres/gpu:", "GRES/GPU", "gres/gpus", "gres/gpu:a:b",
                          "gres/mps", "gres/gpu:a,b"})
        EXPECT_EQ(error_of(std::string("QuotaTRES=") + v + "\n" + kTiers),
                  std::string("gp.conf:1: bad value '") + v + "' for QuotaTRES" + tres);
}

TEST(ConfigErrors, DuplicateGlobalKey) {
    EXPECT_EQ(error_of("ReclaimBy=all\n\nreclaimby=all\n" + kTiers),
              "gp.conf:3: duplicate key 'reclaimby' (first set on line 1)");
    EXPECT_EQ(error_of("UsageWeight=1 UsageWeight=2\n" + kTiers),
              "gp.conf:1: duplicate key 'UsageWeight' (first set on line 1)");
    EXPECT_EQ(error_of(kTiers + "DefaultTier=low\n"),
              "gp.conf:5: duplicate key 'DefaultTier' (first set on line 4)");
}

TEST(ConfigErrors, DuplicateKeyInRecord) {
    EXPECT_EQ(error_of("Tier=a Priority=1 Preemptible=no priority=2\n"),
              "gp.conf:1: duplicate key 'priority' in Tier=a");
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1 Quota=2\n"),
              "gp.conf:5: duplicate key 'Quota' in Pool=p");
}

TEST(ConfigErrors, DuplicateTier) {
    EXPECT_EQ(error_of(kTiers + "Tier=low Priority=50 Preemptible=yes\n"),
              "gp.conf:5: duplicate Tier=low (first defined on line 3)");
}

TEST(ConfigErrors, QosMappedTwice) {
    EXPECT_EQ(error_of(kTiers + "Tier=scavenger QOS=scav,low Priority=50 Preemptible=yes\n"),
              "gp.conf:5: QOS 'low' is mapped by both Tier=low (line 3) and Tier=scavenger");
    // The default QOS (the tier's own name) counts too.
    EXPECT_EQ(error_of("Tier=a QOS=b Priority=2 Preemptible=no\n"
                       "Tier=b Priority=1 Preemptible=yes\n"),
              "gp.conf:2: QOS 'b' is mapped by both Tier=a (line 1) and Tier=b");
    EXPECT_EQ(error_of("Tier=a QOS=x,x Priority=2 Preemptible=no\n"),
              "gp.conf:1: QOS 'x' listed twice in Tier=a");
    EXPECT_EQ(error_of("Tier=a QOS=x,,y Priority=2 Preemptible=no\n"),
              "gp.conf:1: empty QOS name in 'x,,y' in Tier=a");
    EXPECT_EQ(error_of("Tier=a QOS=x, Priority=2 Preemptible=no\n"),
              "gp.conf:1: empty QOS name in 'x,' in Tier=a");
}

TEST(ConfigErrors, SamePriority) {
    EXPECT_EQ(error_of(kTiers + "Tier=other Priority=200 Preemptible=no\n"),
              "gp.conf:5: Tier=other and Tier=normal (line 2) have the same Priority=200");
}

TEST(ConfigErrors, DuplicatePool) {
    EXPECT_EQ(error_of(kTiers + "Pool=p Quota=1\n# x\nPool=p Quota=2\n"),
              "gp.conf:7: duplicate Pool=p (first defined on line 5)");
}

TEST(ConfigErrors, MissingRequiredKey) {
    EXPECT_EQ(error_of("Tier=a Preemptible=no\n"),
              "gp.conf:1: missing required key 'Priority' in Tier=a");
    EXPECT_EQ(error_of(kTiers + "Pool=p Weight=2\n"),
              "gp.conf:5: missing required key 'Quota' in Pool=p");
}

TEST(ConfigErrors, PreemptibleMissing) {
    EXPECT_EQ(error_of("Tier=a Priority=2 Preemptible=no\n"
                       "Tier=b Priority=1\n"
                       "DefaultTier=a\n"),
              "gp.conf:2: missing Preemptible= in Tier=b "
              "(required unless PreemptiblePriority= is set)");
}

TEST(ConfigErrors, PreemptibleWithPreemptiblePriority) {
    EXPECT_EQ(error_of("PreemptiblePriority=10\n"
                       "Tier=a Priority=20\n"
                       "Tier=b Priority=10 Preemptible=yes\n"
                       "DefaultTier=a\n"),
              "gp.conf:3: Tier=b sets Preemptible= but PreemptiblePriority= is also set "
              "(line 1): use one or the other");
    // Also when PreemptiblePriority comes later in the file.
    EXPECT_EQ(error_of("Tier=a Priority=20 Preemptible=no\n"
                       "PreemptiblePriority=10\n"),
              "gp.conf:1: Tier=a sets Preemptible= but PreemptiblePriority= is also set "
              "(line 2): use one or the other");
}

TEST(ConfigErrors, NoTier) {
    EXPECT_EQ(error_of(""), "gp.conf: no Tier defined");
    EXPECT_EQ(error_of("# only a comment\nReclaimBy=all\nPool=p Quota=1\n"),
              "gp.conf: no Tier defined");
}

TEST(ConfigErrors, DefaultTierUnknown) {
    EXPECT_EQ(error_of("Tier=a Priority=2 Preemptible=no\n"
                       "DefaultTier=normal\n"),
              "gp.conf:2: DefaultTier=normal names no defined Tier");
}

TEST(ConfigErrors, DefaultTierRequired) {
    EXPECT_EQ(error_of("Tier=a Priority=2 Preemptible=no\n"
                       "Tier=b Priority=1 Preemptible=yes\n"),
              "gp.conf: DefaultTier= is required when more than one Tier is defined");
}

TEST(ConfigErrors, BadNames) {
    const std::string rule = "names may contain only letters, digits, '_', '-' and '.'";
    EXPECT_EQ(error_of("Tier=a=b Priority=2 Preemptible=no\n"), "gp.conf:1: bad name 'a=b' for Tier: " + rule);
    EXPECT_EQ(error_of(kTiers + "Pool=p1,p2 Quota=1\n"), "gp.conf:5: bad name 'p1,p2' for Pool: " + rule);
    EXPECT_EQ(error_of("Tier=a QOS=x=y Priority=2 Preemptible=no\n"), "gp.conf:1: bad name 'x=y' for QOS: " + rule);
    EXPECT_EQ(error_of("Tier=a Priority=2 Preemptible=no\nDefaultTier=a,b\n"),
              "gp.conf:2: bad name 'a,b' for DefaultTier: " + rule);
}

// Slurm keeps QOS names in lower case and a job's tier is found by its
// QOS exactly: a QOS with a capital would silently leave its jobs in
// DefaultTier.  Tier names themselves may have capitals.
TEST(ConfigErrors, QosNamesAreSlurmsLowerCaseNames) {
    struct Case {
        const char *sentence;
        std::string text;
        std::string error;
    };
    const std::vector<Case> cases = {
        {"a tier with no QOS= and a capital in its name would map a QOS no job has",
         "Tier=HIGH Priority=300 Preemptible=no\n",
         "gp.conf:1: Tier=HIGH has no QOS=, so its QOS is its name, but Slurm QOS names are lower case, so no "
         "job's QOS would match it; give QOS=high or rename the tier 'high'"},
        {"a capital anywhere in the name counts", kTiers + "Tier=scavengeR Priority=50 Preemptible=yes\n",
         "gp.conf:5: Tier=scavengeR has no QOS=, so its QOS is its name, but Slurm QOS names are lower case, so "
         "no job's QOS would match it; give QOS=scavenger or rename the tier 'scavenger'"},
        {"a QOS= name with a capital is refused with the name to write", "Tier=high QOS=High Priority=300 "
         "Preemptible=no\n",
         "gp.conf:1: bad name 'High' for QOS in Tier=high: Slurm QOS names are lower case, so no job's QOS would "
         "match it; write 'high'"},
        {"so is one later in a QOS= list", kTiers + "Tier=scavenger QOS=scav,Preempt-Me Priority=50 "
         "Preemptible=yes\n",
         "gp.conf:5: bad name 'Preempt-Me' for QOS in Tier=scavenger: Slurm QOS names are lower case, so no job's "
         "QOS would match it; write 'preempt-me'"},
        {"a tier name with capitals is fine when QOS= gives lower-case names", "Tier=HIGH QOS=high Priority=300 "
         "Preemptible=no\n", "<no error>"},
        {"and tier names stay case-sensitive: HIGH and high are two tiers",
         "Tier=HIGH QOS=high Priority=300 Preemptible=no\nTier=high QOS=top Priority=400 Preemptible=no\n"
         "DefaultTier=HIGH\n",
         "<no error>"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        EXPECT_EQ(error_of(c.text), c.error);
    }
    Config c = parse_config("Tier=HIGH QOS=high,urgent Priority=300 Preemptible=no\n", "gp.conf");
    EXPECT_EQ(c.tiers.at(0).name, "HIGH");
    EXPECT_EQ(c.tiers.at(0).qos, (std::vector<std::string>{"high", "urgent"}));
}

TEST(ConfigErrors, FirstErrorWins) {
    // Line errors are reported as they are met, before whole-file checks.
    EXPECT_EQ(error_of("Tier=a Priority=x\nTier=b Priority=y\n"),
              "gp.conf:1: bad value 'x' for Priority: expected an integer 0..4294967295");
}

TEST(ConfigErrors, SourceNamesFile) {
    EXPECT_EQ(error_of("Bogus=1\n", "/etc/slurm/gpupool.conf"),
              "/etc/slurm/gpupool.conf:1: unknown key 'Bogus'");
}

// ------------------------------------------------------------------- Duration

TEST(Duration, Minutes) {
    EXPECT_EQ(parse_duration("0"), 0);
    EXPECT_EQ(parse_duration("1"), 60);
    EXPECT_EQ(parse_duration("10"), 600);
    EXPECT_EQ(parse_duration("90"), 5400);      // leading field may be large
    EXPECT_EQ(parse_duration("00"), 0);
}

TEST(Duration, MinutesSeconds) {
    EXPECT_EQ(parse_duration("10:00"), 600);
    EXPECT_EQ(parse_duration("1:30"), 90);
    EXPECT_EQ(parse_duration("0:59"), 59);
    EXPECT_EQ(parse_duration("120:05"), 7205);
    EXPECT_EQ(parse_duration("1:60"), -1);
    EXPECT_EQ(parse_duration("1:"), -1);
    EXPECT_EQ(parse_duration(":30"), -1);
}

TEST(Duration, HoursMinutesSeconds) {
    EXPECT_EQ(parse_duration("1:00:00"), 3600);
    EXPECT_EQ(parse_duration("01:02:03"), 3723);
    EXPECT_EQ(parse_duration("48:00:00"), 172800);
    EXPECT_EQ(parse_duration("1:60:00"), -1);
    EXPECT_EQ(parse_duration("1:00:60"), -1);
    EXPECT_EQ(parse_duration("1:2:3:4"), -1);
}

TEST(Duration, DaysForms) {
    EXPECT_EQ(parse_duration("7-0"), 7 * 86400);
    EXPECT_EQ(parse_duration("2-12"), 2 * 86400 + 12 * 3600);
    EXPECT_EQ(parse_duration("1-02:03"), 86400 + 2 * 3600 + 3 * 60);
    EXPECT_EQ(parse_duration("1-02:03:04"), 86400 + 2 * 3600 + 3 * 60 + 4);
    EXPECT_EQ(parse_duration("0-00:00:01"), 1);
    EXPECT_EQ(parse_duration("365-0"), 365 * 86400);
    EXPECT_EQ(parse_duration("1-24"), -1);
    EXPECT_EQ(parse_duration("1-00:60"), -1);
    EXPECT_EQ(parse_duration("1-00:00:60"), -1);
    EXPECT_EQ(parse_duration("1-"), -1);
    EXPECT_EQ(parse_duration("-1"), -1);
    EXPECT_EQ(parse_duration("1-2-3"), -1);
    EXPECT_EQ(parse_duration("1-1:1:1:1"), -1);
}

TEST(Duration, Infinite) {
    EXPECT_EQ(parse_duration("INFINITE"), 0);
    EXPECT_EQ(parse_duration("infinite"), 0);
    EXPECT_EQ(parse_duration("UNLIMITED"), 0);
    EXPECT_EQ(parse_duration("Unlimited"), 0);
}

TEST(Duration, Junk) {
    for (const char *s : {"", " ", "abc", "10m", "1h", "1.5", "+5", "-5", "1 2", "10:0a",
                          "1-x", "x-1", ":", "::", "INF", "99999999999999999999",
                          "9999999999999999-0"})
        EXPECT_EQ(parse_duration(s), -1) << "'" << s << "'";
}

TEST(Duration, Format) {
    EXPECT_EQ(format_duration(0), "00:00:00");
    EXPECT_EQ(format_duration(59), "00:00:59");
    EXPECT_EQ(format_duration(600), "00:10:00");
    EXPECT_EQ(format_duration(3723), "01:02:03");
    EXPECT_EQ(format_duration(86399), "23:59:59");
    EXPECT_EQ(format_duration(86400), "1-00:00:00");
    EXPECT_EQ(format_duration(93784), "1-02:03:04");
    EXPECT_EQ(format_duration(7 * 86400), "7-00:00:00");
    EXPECT_EQ(format_duration(400 * 86400 + 5), "400-00:00:05");
}

TEST(Duration, RoundTrip) {
    for (int64_t s : {0, 1, 59, 60, 3599, 3600, 86399, 86400, 90061, 604800, 31536000})
        EXPECT_EQ(parse_duration(format_duration(s)), s) << s;
}

TEST(ConfigParse, StateSaveInterval) {
    const std::string tiers = "Tier=only Priority=7 Preemptible=no\n";
    EXPECT_EQ(parse_config(tiers, "x").state_save_interval, 60);
    EXPECT_EQ(parse_config("StateSaveInterval=1\n" + tiers, "x").state_save_interval, 1);
    EXPECT_EQ(parse_config("statesaveinterval=86400\n" + tiers, "x").state_save_interval, 86400);
    const std::string bad = ": expected an integer 1..86400";
    EXPECT_EQ(error_of("StateSaveInterval=0\n" + tiers),
              "gp.conf:1: bad value '0' for StateSaveInterval" + bad);
    EXPECT_EQ(error_of("StateSaveInterval=86401\n" + tiers),
              "gp.conf:1: bad value '86401' for StateSaveInterval" + bad);
    EXPECT_EQ(error_of("StateSaveInterval=5m\n" + tiers),
              "gp.conf:1: bad value '5m' for StateSaveInterval" + bad);
    EXPECT_EQ(error_of("StateSaveInterval=5 StateSaveInterval=6\n" + tiers),
              "gp.conf:1: duplicate key 'StateSaveInterval' (first set on line 1)");
}

// Names no longer than Slurm keeps them, and write_config(), the
// writer that never writes a line its parser refuses (the config fuzzer
// found a 2,048-byte tier name written back on a 4,109-byte line).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "config.hpp"

using namespace gpupool;

namespace {

std::string config_error(const std::string &text) {
    try {
        parse_config(text, "gp.conf");
    } catch (const ConfigError &e) {
        return e.what();
    }
    return "accepted";
}

const std::string kTier = "Tier=n Priority=1 Preemptible=no\n";

// Lines of `text` longer than the parser reads.
size_t longest_line(const std::string &text) {
    std::istringstream in(text);
    size_t longest = 0;
    for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
    return longest;
}

// The fuzzer's input: a tier whose name is 2,048 bytes, more keys after it.
TEST(ConfigLimits, TierNameLongerThanAQosNameIsRefusedWithLineAndLimit) {
    const std::string name = "in" + std::string(2046, '_');
    EXPECT_EQ(config_error("# a comment\nTier=" + name + " Priority=1 Preemptible=no GraceTime=5\n"),
              "gp.conf:2: Tier name 'in______________________________________________________________'... "
              "(2048 bytes) is longer than 255 bytes (a tier's name is its QOS name where QOS= is not given, and "
              "slurmdbd keeps QOS names of at most 255 bytes): use a shorter name");
}

TEST(ConfigLimits, EachKindOfNameHasSlurmsLimit) {
    const std::string n255(255, 'a'), n256(256, 'a');
    const std::string q256 = "'" + std::string(64, 'a') + "'... (256 bytes)";
    EXPECT_EQ(config_error("Tier=" + n256 + " QOS=x Priority=1 Preemptible=no\n"),
              "gp.conf:1: Tier name " + q256 + " is longer than 255 bytes (a tier's name is its QOS name where QOS= "
              "is not given, and slurmdbd keeps QOS names of at most 255 bytes): use a shorter name");
    EXPECT_EQ(config_error("Tier=n QOS=x," + n256 + " Priority=1 Preemptible=no\n"),
              "gp.conf:1: QOS name " + q256 + " is longer than 255 bytes (slurmdbd keeps QOS names of at most 255 "
              "bytes): use a shorter name");
    EXPECT_EQ(config_error(kTier + "Pool=" + n256 + " Quota=1\n"),
              "gp.conf:2: Pool name " + q256 + " is longer than 255 bytes (slurmdbd keeps partition names of at most "
              "255 bytes): use a shorter name");
    EXPECT_EQ(config_error(kTier + "Pool=p Quota=1\nAccount=" + n256 + " Pool=p\n"),
              "gp.conf:3: Account name " + q256 + " is longer than 255 bytes (slurmdbd keeps account names of at "
              "most 255 bytes): use a shorter name");
    EXPECT_EQ(config_error(kTier + "Pool=p Quota=1\nAccount=a Pool=" + n256 + "\n"),
              "gp.conf:3: Pool name " + q256 + " is longer than 255 bytes (slurmdbd keeps partition names of at most "
              "255 bytes): use a shorter name");
    EXPECT_EQ(config_error(kTier + "QuotaTRES=gres/gpu:" + std::string(252, 't') + "\n"),
              "gp.conf:2: bad value 'gres/gpu:" + std::string(55, 't') +
                  "'... (261 bytes) for QuotaTRES: a GRES type longer than 251 bytes (slurmdbd keeps the TRES name "
                  "gpu:TYPE in 255 bytes): use a shorter type");
    // At the limit, all parse.
    Config c = parse_config("Tier=" + n255 + " QOS=" + n255 + " Priority=1 Preemptible=no\nPool=" + n255 +
                                " Quota=1\nAccount=" + n255 + " Pool=" + n255 + "\nQuotaTRES=gres/gpu:" +
                                std::string(251, 't') + "\n",
                            "gp.conf");
    EXPECT_EQ(c.tiers.at(0).name.size(), 255u);
    EXPECT_EQ(c.accounts.at(0).account.size(), 255u);
}

TEST(ConfigLimits, QosListOfATierIsBounded) {
    std::string list;
    while (list.size() <= kMaxQosListBytes) list += (list.empty() ? "" : ",") + std::to_string(100000 + list.size());
    EXPECT_EQ(config_error("Tier=n QOS=" + list + " Priority=1 Preemptible=no\n"),
              "gp.conf:1: QOS= list of " + std::to_string(list.size()) +
                  " bytes in Tier=n is longer than 3072 bytes: map fewer QOS to one tier");
    list.resize(list.rfind(','));
    EXPECT_NO_THROW(parse_config("Tier=n QOS=" + list + " Priority=1 Preemptible=no\n", "gp.conf"));
}

// The longest line write_config() can write: every name and list at its
// limit, every number at its largest.  It fits, and reads back the same.
TEST(ConfigLimits, WriterWritesNoLineTheParserRefuses) {
    const std::string n(255, 'n'), p(255, 'p'), a(255, 'a');
    std::string list;
    for (char c = 'a'; list.size() + 256 <= kMaxQosListBytes; ++c) list += (list.empty() ? "" : ",") + std::string(255, c);
    const std::string text =
        "QuotaTRES=gres/gpu:" + std::string(251, 't') + ",cpu,mem\nUsageWeight=0." + std::string(300, '0') +
        "1\nDecayHalfLife=36500-00:00:00\nTier=" + n + " QOS=" + list +
        " Priority=4294967295 Preemptible=yes PreemptMode=requeue GraceTime=2147483647\nPool=" + p +
        " Quota=gres/gpu=4294967295,cpu=18446744073709551615,mem=18446744073709551615 Weight=4294967295 "
        "MinRuntime=36500-00:00:00\nAccount=" + a + " Pool=" + p +
        " Quota=gres/gpu=4294967295,cpu=1,mem=1 Weight=4294967295 Limit=gres/gpu=18446744073709551615,cpu="
        "18446744073709551615,mem=18446744073709551615 LendingLimit=gres/gpu=1,cpu=1,mem=1\n";
    const Config c = parse_config(text, "gp.conf");
    const std::string written = write_config(c);
    EXPECT_LE(longest_line(written), kMaxConfigLineBytes);
    EXPECT_GT(longest_line(written), 3000u);  // the tier line: the case meant
    const Config again = parse_config(written, "written.conf");
    EXPECT_EQ(write_config(again), written);
    EXPECT_EQ(again.tiers.at(0).qos, c.tiers.at(0).qos);
    EXPECT_EQ(again.accounts.at(0).limit.value, c.accounts.at(0).limit.value);
    EXPECT_EQ(again.usage_weight, c.usage_weight);
}

// The fuzzer's case: a long tier name is not written twice (QOS= is left
// out where it is the tier's own name).
TEST(ConfigLimits, WriterLeavesOutTheDefaultQos) {
    const Config c = parse_config("Tier=t Priority=1 Preemptible=no\nTier=u QOS=u,v Priority=2 Preemptible=yes\n"
                                  "DefaultTier=t\nPool=p Quota=gres/gpu=2\n",
                                  "gp.conf");
    const std::string w = write_config(c);
    EXPECT_NE(w.find("\nTier=t Priority=1 Preemptible=no\n"), std::string::npos) << w;
    EXPECT_NE(w.find("\nTier=u QOS=u,v Priority=2 Preemptible=yes\n"), std::string::npos) << w;
    EXPECT_NE(w.find("\nPool=p Quota=2 Weight=1\n"), std::string::npos) << w;
}

}  // namespace

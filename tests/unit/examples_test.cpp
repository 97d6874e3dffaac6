// What ships beside the code: every example gpupool.conf in etc/ parses
// and loads on the cluster it is written for without a warning, and does
// what its comments promise (the live scenarios of
// tests/integration/tests.sh, "example configs", decided by the engine);
// doc/gpupool.conf.5 and doc/admin-guide.md's key table document exactly
// the keys the parser accepts.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

// automake's `make check` sets $srcdir.
std::string srcdir() {
    const char *d = std::getenv("srcdir");
    return d ? d : ".";
}

// etc/*.conf* of the source tree, sorted.
std::vector<std::string> example_configs() {
    std::vector<std::string> out;
    const std::string dir = srcdir() + "/etc";
    if (DIR *d = opendir(dir.c_str())) {
        while (const dirent *e = readdir(d)) {
            std::string name = e->d_name;
            if (name.find(".conf") != std::string::npos) out.push_back(dir + "/" + name);
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Config load_example(const std::string &name) { return load_config_file(srcdir() + "/etc/" + name); }

// The cluster of scripts/cluster.sh the examples are written for: six
// 1-GPU nodes; pool1, pool2 and plain over node[1-4], pool3 over node[5-6].
Snapshot local_cluster() {
    Snapshot s = cluster(6);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    partition(s, "pool3", 4, 5);
    partition(s, "plain", 0, 3);
    return s;
}

Engine engine_for(const std::string &name) {
    Engine e;
    e.set_config(load_example(name));
    return e;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}
}  // namespace

TEST(ShippedExamples, EveryOneLoadsWithoutWarnings) {
    std::vector<std::string> files = example_configs();
    // gpupool.conf.example and the OSMO, Run:ai and Backend.AI styles.
    ASSERT_GE(files.size(), 4u) << "no etc/*.conf* under " << srcdir();
    for (const std::string &path : files) {
        SCOPED_TRACE(path);
        Engine e;
        try {
            e.set_config(load_config_file(path, nullptr));
        } catch (const ConfigError &err) {
            ADD_FAILURE() << err.what();
            continue;
        }
        e.evaluate(local_cluster(), T0);
        EXPECT_EQ(e.warnings(), std::vector<std::string>{});
        EXPECT_EQ(e.last().pools.size(), e.config().pools.size());
    }
}

TEST(ShippedExamples, OsmoTiersAndPools) {
    Config c = load_example("gpupool-osmo.conf");
    ASSERT_EQ(c.tiers.size(), 3u);
    const Tier *high = c.find_tier("HIGH"), *normal = c.find_tier("NORMAL"), *low = c.find_tier("LOW");
    ASSERT_TRUE(high && normal && low);
    EXPECT_EQ(high->qos, std::vector<std::string>{"high"});
    EXPECT_EQ(high->priority, 300u);
    EXPECT_FALSE(high->preemptible);
    EXPECT_EQ(normal->priority, 200u);
    EXPECT_FALSE(normal->preemptible);
    EXPECT_EQ(low->priority, 100u);
    EXPECT_TRUE(low->preemptible);
    EXPECT_EQ(low->preempt_mode, PreemptMode::Requeue);
    EXPECT_EQ(c.default_tier, "NORMAL");
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Newest);
    EXPECT_EQ(c.reclaim_by, ReclaimBy::NonPreemptible);
    EXPECT_DOUBLE_EQ(c.usage_weight, 0.0);
    ASSERT_EQ(c.pools.size(), 3u);
    for (const Pool &p : c.pools) EXPECT_EQ(p.quota, 2u) << p.name;
}

// OSMO's borrowing example: WF3 LOW borrows pool2's idle GPU; WF5 NORMAL
// of pool2 takes it back (Reclaim), not WF2; a NORMAL job of pool1 then
// evicts pool1's own LOW job WF2 (InPool).
TEST(ShippedExamples, OsmoBorrowReclaimThenInPool) {
    Engine e = engine_for("gpupool-osmo.conf");
    Snapshot s = local_cluster();
    SnapJob wf1 = running(1, "pool1", "normal", 1, T0);
    SnapJob wf2 = running(2, "pool1", "low", 1, T0 + 1);
    SnapJob wf4 = running(4, "pool2", "normal", 1, T0 + 2);
    SnapJob wf3 = running(3, "pool1", "low", 1, T0 + 3);
    for (const SnapJob &j : {wf1, wf2, wf4, wf3}) s.add_job(j);
    SnapJob wf5 = pending(5, "pool2", "normal", 1, T0 + 4);
    s.add_job(wf5);
    e.evaluate(s, T0 + 5);
    Verdict v = e.preemptable(ref(wf3), ref(wf5), T0 + 5);
    EXPECT_TRUE(v.allowed);
    EXPECT_EQ(v.rule, Rule::Reclaim);
    EXPECT_FALSE(e.preemptable(ref(wf2), ref(wf5), T0 + 5).allowed);
    EXPECT_LT(e.victim_rank(3), e.victim_rank(2));

    SnapJob wf6 = pending(6, "pool1", "normal", 1, T0 + 6);
    EXPECT_EQ(e.preemptable(ref(wf2), ref(wf6), T0 + 6).rule, Rule::InPool);
    EXPECT_FALSE(e.preemptable(ref(wf1), ref(wf6), T0 + 6).allowed);
}

TEST(ShippedExamples, RunAiPriorityClasses) {
    Config c = load_example("gpupool-runai.conf");
    ASSERT_TRUE(c.has_preemptible_priority);
    EXPECT_EQ(c.preemptible_priority, 99u);
    // Run:ai: >= 100 non-preemptible, < 100 preemptible.
    const std::map<std::string, std::pair<uint32_t, bool>> want = {
        {"inference", {125, false}}, {"build", {100, false}}, {"interactive", {75, true}}, {"train", {50, true}}};
    ASSERT_EQ(c.tiers.size(), want.size());
    for (const auto &[name, pp] : want) {
        const Tier *t = c.find_tier(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->qos, std::vector<std::string>{name});
        EXPECT_EQ(t->priority, pp.first) << name;
        EXPECT_EQ(t->preemptible, pp.second) << name;
    }
    EXPECT_EQ(c.default_tier, "train");
    EXPECT_EQ(c.reclaim_by, ReclaimBy::All);
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Newest);
    EXPECT_EQ(c.decay_half_life, 86400);
    EXPECT_EQ(c.usage_window, 7 * 86400);
    EXPECT_DOUBLE_EQ(c.usage_weight, 1.0);
    EXPECT_EQ(c.find_pool("pool1")->weight, 2u);
    EXPECT_EQ(c.find_pool("pool3")->min_runtime, 30 * 60);
}

// pool1 trains on all 4 shared GPUs (2 borrowed); an interactive job of
// pool2, preemptible but entitled (ReclaimBy=all), reclaims the newest;
// then a build job of pool1 evicts pool1's newest train job (InPool),
// never pool2's interactive job (pool2 is under its quota).
TEST(ShippedExamples, RunAiReclaimByPreemptibleThenBuildEvictsTrain) {
    Engine e = engine_for("gpupool-runai.conf");
    Snapshot s = local_cluster();
    SnapJob t1 = running(1, "pool1", "train", 1, T0), t2 = running(2, "pool1", "train", 1, T0 + 1),
            t3 = running(3, "pool1", "train", 1, T0 + 2), t4 = running(4, "pool1", "train", 1, T0 + 3);
    for (const SnapJob &j : {t1, t2, t3, t4}) s.add_job(j);
    SnapJob p2 = pending(5, "pool2", "interactive", 1, T0 + 4);
    s.add_job(p2);
    e.evaluate(s, T0 + 5);
    Verdict v = e.preemptable(ref(t4), ref(p2), T0 + 5);
    EXPECT_TRUE(v.allowed);
    EXPECT_EQ(v.rule, Rule::Reclaim);
    for (uint32_t id : {1u, 2u, 3u}) EXPECT_LT(e.victim_rank(4), e.victim_rank(id)) << id;

    Snapshot s2 = local_cluster();
    SnapJob p2r = running(5, "pool2", "interactive", 1, T0 + 6, T0 + 4);
    for (const SnapJob &j : {t1, t2, t3, p2r}) s2.add_job(j);
    SnapJob t4p = pending(4, "pool1", "train", 1, T0 + 3);
    SnapJob b1 = pending(6, "pool1", "build", 1, T0 + 7);
    s2.add_job(t4p);
    s2.add_job(b1);
    e.evaluate(s2, T0 + 8);
    EXPECT_FALSE(e.preemptable(ref(p2r), ref(b1), T0 + 8).allowed);
    Verdict w = e.preemptable(ref(t3), ref(b1), T0 + 8);
    EXPECT_TRUE(w.allowed);
    EXPECT_EQ(w.rule, Rule::InPool);
    EXPECT_LT(e.victim_rank(3), e.victim_rank(2));
}

TEST(ShippedExamples, BackendAiPriorities) {
    Config c = load_example("gpupool-backendai.conf");
    ASSERT_TRUE(c.has_preemptible_priority);
    EXPECT_EQ(c.preemptible_priority, 5u);
    EXPECT_EQ(c.preemption_order, PreemptionOrder::Oldest);
    const std::map<std::string, std::pair<uint32_t, bool>> want = {
        {"urgent", {50, false}}, {"default", {10, false}}, {"batch", {5, true}}, {"scavenger", {1, true}}};
    ASSERT_EQ(c.tiers.size(), want.size());
    for (const auto &[name, pp] : want) {
        const Tier *t = c.find_tier(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->priority, pp.first) << name;
        EXPECT_EQ(t->preemptible, pp.second) << name;
        if (t->preemptible) {
            EXPECT_EQ(t->preempt_mode, PreemptMode::Cancel) << name;
        }
    }
    EXPECT_EQ(c.default_tier, "default");
    EXPECT_EQ(c.find_pool("pool1")->quota, 4u);
    EXPECT_EQ(c.find_pool("pool3")->quota, 2u);
    EXPECT_EQ(c.find_pool("pool2"), nullptr);
}

// PreemptionOrder=oldest: of two batch jobs the older goes first; but a
// lower priority goes before any age: a newer scavenger job before an
// older batch job.
TEST(ShippedExamples, BackendAiOldestOfTheLowestFirst) {
    Engine e = engine_for("gpupool-backendai.conf");
    Snapshot s = local_cluster();
    SnapJob b1 = running(1, "pool3", "low", 1, T0), b2 = running(2, "pool3", "low", 1, T0 + 1);
    s.add_job(b1);
    s.add_job(b2);
    SnapJob d1 = pending(3, "pool3", "normal", 1, T0 + 2);
    s.add_job(d1);
    e.evaluate(s, T0 + 3);
    EXPECT_LT(e.victim_rank(1), e.victim_rank(2));
    EXPECT_EQ(e.preemptable(ref(b1), ref(d1), T0 + 3).rule, Rule::InPool);

    Snapshot s2 = local_cluster();
    SnapJob i1 = running(4, "pool3", "scavenger", 1, T0 + 4);
    s2.add_job(b2);
    s2.add_job(i1);
    SnapJob d2 = pending(5, "pool3", "normal", 1, T0 + 5);
    s2.add_job(d2);
    e.evaluate(s2, T0 + 6);
    EXPECT_LT(e.victim_rank(4), e.victim_rank(2));
    EXPECT_EQ(e.preemptable(ref(i1), ref(d2), T0 + 6).rule, Rule::InPool);
}

// ---------------------------------------------------------------------
// doc/gpupool.conf.5 documents exactly config_keys().

namespace {
// The keys of each section of the man page: the tag line after each .TP of
// GLOBAL KEYS, TIER RECORDS, POOL RECORDS and ACCOUNT RECORDS is \fBKey\fR=...; a tag in
// another form is kept whole, so that it fails the comparison.  Also the
// record synopsis (".B Tier=...") of each record section.
struct ManKeys {
    std::map<std::string, std::vector<std::string>> keys;
    std::map<std::string, std::string> synopsis;
};

ManKeys man_keys(std::istream &in) {
    static const std::regex tag(R"(^\\fB([A-Za-z]+)\\fR=)");
    ManKeys out;
    std::string line, section;
    bool after_tp = false;
    while (std::getline(in, line)) {
        if (line.rfind(".SH", 0) == 0) {
            section = line.substr(3);
            section.erase(std::remove(section.begin(), section.end(), '"'), section.end());
            section.erase(0, section.find_first_not_of(' '));
            after_tp = false;
            continue;
        }
        bool keyed = section == "GLOBAL KEYS" || section == "TIER RECORDS" || section == "POOL RECORDS" ||
                     section == "ACCOUNT RECORDS";
        if (!keyed) continue;
        if (line == ".TP") {
            after_tp = true;
            continue;
        }
        if (line.rfind(".B ", 0) == 0 && !out.synopsis.count(section)) out.synopsis[section] = line.substr(3);
        if (after_tp) {
            std::smatch m;
            out.keys[section].push_back(std::regex_search(line, m, tag) ? m[1].str() : "unparsed: " + line);
            after_tp = false;
        }
    }
    return out;
}

// The key table of doc/admin-guide.md, section "## Every gpupool.conf
// key": rows "| `Key` | global|`Tier=`|`Pool=` | ...", keyed "global",
// "Tier", "Pool".  A row of another form (not the header or the
// separator) is kept whole under "unparsed", so that it fails the
// comparison.
std::map<std::string, std::vector<std::string>> guide_keys(std::istream &in) {
    static const std::regex row(R"(^\| `([A-Za-z]+)` \| (global|`Tier=`|`Pool=`|`Account=`) \|)");
    std::map<std::string, std::vector<std::string>> out;
    std::string line;
    bool in_section = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) {
            in_section = line == "## Every gpupool.conf key";
            continue;
        }
        if (!in_section || line.empty() || line[0] != '|') continue;
        if (line.rfind("| key |", 0) == 0 || line.rfind("| --- |", 0) == 0) continue;
        std::smatch m;
        if (!std::regex_search(line, m, row)) {
            out["unparsed"].push_back(line);
            continue;
        }
        std::string where = m[2].str();
        where.erase(std::remove_if(where.begin(), where.end(), [](char c) { return c == '`' || c == '='; }),
                    where.end());
        out[where].push_back(m[1].str());
    }
    return out;
}
}  // namespace

TEST(ManPage, DocumentsExactlyTheParsersKeys) {
    std::ifstream in(srcdir() + "/doc/gpupool.conf.5");
    ASSERT_TRUE(in) << srcdir() << "/doc/gpupool.conf.5 not found";
    ManKeys man = man_keys(in);
    const ConfigKeys &parser = config_keys();
    EXPECT_EQ(sorted(man.keys["GLOBAL KEYS"]), sorted(parser.global));
    EXPECT_EQ(sorted(man.keys["TIER RECORDS"]), sorted(parser.tier));
    EXPECT_EQ(sorted(man.keys["POOL RECORDS"]), sorted(parser.pool));
    EXPECT_EQ(sorted(man.keys["ACCOUNT RECORDS"]), sorted(parser.account));
    EXPECT_EQ(man.synopsis["TIER RECORDS"].rfind("Tier=", 0), 0u) << man.synopsis["TIER RECORDS"];
    EXPECT_EQ(man.synopsis["POOL RECORDS"].rfind("Pool=", 0), 0u) << man.synopsis["POOL RECORDS"];
    EXPECT_EQ(man.synopsis["ACCOUNT RECORDS"].rfind("Account=", 0), 0u) << man.synopsis["ACCOUNT RECORDS"];

    // The administrator's guide lists the same keys in its table.
    std::ifstream guide_in(srcdir() + "/doc/admin-guide.md");
    ASSERT_TRUE(guide_in) << srcdir() << "/doc/admin-guide.md not found";
    auto guide = guide_keys(guide_in);
    EXPECT_EQ(sorted(guide["global"]), sorted(parser.global));
    EXPECT_EQ(sorted(guide["Tier"]), sorted(parser.tier));
    EXPECT_EQ(sorted(guide["Pool"]), sorted(parser.pool));
    EXPECT_EQ(sorted(guide["Account"]), sorted(parser.account));
    EXPECT_EQ(guide.count("unparsed"), 0u) << guide["unparsed"].front();
}

// The guide's table extraction sees every row, and only that section's.
TEST(ManPage, GuideKeyExtractionSeesEveryRow) {
    std::istringstream in(
        "## Every gpupool.conf key\n\n| key | in | default | meaning |\n| --- | --- | --- | --- |\n"
        "| `QuotaTRES` | global | `gres/gpu` | x |\n| `Quota` | `Pool=` | required | y |\n"
        "| Weight | `Pool=` | 1 | no backquotes |\n| `QOS` | `Tier=` | name | z |\n"
        "## Moving\n| `Other` | global | - | another section |\n");
    auto g = guide_keys(in);
    EXPECT_EQ(g["global"], std::vector<std::string>{"QuotaTRES"});
    EXPECT_EQ(g["Pool"], std::vector<std::string>{"Quota"});
    EXPECT_EQ(g["Tier"], std::vector<std::string>{"QOS"});
    EXPECT_EQ(g["unparsed"], std::vector<std::string>{"| Weight | `Pool=` | 1 | no backquotes |"});
}

// The comparison sees a key missing from either side.
TEST(ManPage, KeyExtractionSeesEveryEntry) {
    std::istringstream in(
        ".SH \"GLOBAL KEYS\"\n.TP\n\\fBQuotaTRES\\fR=\\fBgres/gpu\\fR\ntext\n.TP\nBadTag=x\n"
        ".SH \"TIER RECORDS\"\n.B Tier=\\fINAME\\fR\n.TP\n\\fBQOS\\fR=\\fIqos\\fR\n"
        ".SH DURATIONS\n.TP\n.I MM\n");
    ManKeys man = man_keys(in);
    EXPECT_EQ(man.keys["GLOBAL KEYS"], (std::vector<std::string>{"QuotaTRES", "unparsed: BadTag=x"}));
    EXPECT_EQ(man.keys["TIER RECORDS"], std::vector<std::string>{"QOS"});
    EXPECT_EQ(man.synopsis["TIER RECORDS"], "Tier=\\fINAME\\fR");
    EXPECT_EQ(man.keys.count("DURATIONS"), 0u);
}

// Every listed key is one the parser takes (in any case), and none other.
TEST(ConfigKeys, EveryListedKeyParses) {
    const std::map<std::string, std::string> sample = {
        {"QuotaTRES", "gres/gpu:a100"}, {"PreemptionOrder", "oldest"}, {"ReclaimBy", "all"},
        {"ReclaimTo", "quota"}, {"DecayHalfLife", "1-0"}, {"UsageWindow", "2-0"}, {"UsageWeight", "0.5"},
        {"MinRuntime", "10:00"}, {"RecalcInterval", "5"}, {"StateSaveInterval", "30"},
        {"PreemptiblePriority", "1"}, {"DefaultTier", "t"}, {"QOS", "q1,q2"},
        {"Priority", "7"}, {"Preemptible", "yes"}, {"PreemptMode", "cancel"},
        {"GraceTime", "30"}, {"Quota", "3"}, {"Weight", "2"}, {"Rank", "1"}, {"Pool", "p"}, {"Limit", "4"},
        {"LendingLimit", "2"}, {"Placement", "pack"},
        {"Consolidation", "no"}, {"ConsolidationTries", "8"}, {"Swap", "least-work"}};
    auto render = [](const std::string &head, const std::map<std::string, std::string> &kv) {
        std::string line = head;
        for (const auto &[k, v] : kv) line += " " + k + "=" + v;
        return line + "\n";
    };
    const ConfigKeys &keys = config_keys();
    for (const std::string &k : keys.global) {
        ASSERT_TRUE(sample.count(k)) << "give new key " << k << " a sample value here";
        std::map<std::string, std::string> tier = {{"Priority", "1"}};
        if (k != "PreemptiblePriority") tier["Preemptible"] = "no";
        std::string lower = k;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        for (const std::string &key : {k, lower}) {
            std::string text = key + "=" + sample.at(k) + "\n" + render("Tier=t", tier);
            EXPECT_NO_THROW(parse_config(text, "keys.conf")) << text;
        }
    }
    for (const std::string &k : keys.tier) {
        ASSERT_TRUE(sample.count(k)) << "give new key " << k << " a sample value here";
        std::map<std::string, std::string> tier = {{"Priority", "1"}, {"Preemptible", "no"}};
        tier[k] = sample.at(k);
        EXPECT_NO_THROW(parse_config(render("Tier=t", tier), "keys.conf")) << k;
    }
    for (const std::string &k : keys.pool) {
        ASSERT_TRUE(sample.count(k)) << "give new key " << k << " a sample value here";
        std::map<std::string, std::string> pool = {{"Quota", "1"}};
        pool[k] = sample.at(k);
        EXPECT_NO_THROW(parse_config("Tier=t Priority=1 Preemptible=no\n" + render("Pool=p", pool), "keys.conf")) << k;
    }
    // Account records.
    for (const std::string &k : keys.account) {
        ASSERT_TRUE(sample.count(k)) << "give new key " << k << " a sample value here";
        std::map<std::string, std::string> account = {{"Pool", "p"}, {"Quota", "3"}};
        account[k] = sample.at(k);
        std::string text = "Tier=t Priority=1 Preemptible=no\nPool=p Quota=3\n" + render("Account=a", account);
        EXPECT_NO_THROW(parse_config(text, "keys.conf")) << k;
    }
    // A key of another record, or of none, is unknown.
    EXPECT_THROW(parse_config("Tier=t Priority=1 Preemptible=no Quota=1\n", "keys.conf"), ConfigError);
    EXPECT_THROW(parse_config("Tier=t Priority=1 Preemptible=no\nPool=p Quota=1 Priority=1\n", "keys.conf"), ConfigError);
    EXPECT_THROW(parse_config("Quota=1\nTier=t Priority=1 Preemptible=no\n", "keys.conf"), ConfigError);
}

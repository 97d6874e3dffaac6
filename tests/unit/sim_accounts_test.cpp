// gpupool sim with accounts: the generator's departments, sacct's
// Account column and TRES, the account tree from sacctmgr, and a small
// two-department workload replayed with levels and as one partition per
// team, with its per-account figures worked out by hand.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <tuple>

#include "config.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "snapshot.hpp"
#include "workload.hpp"

using namespace gpupool;
using namespace gpupool::sim;

namespace {

template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const InputError &e) {
        return e.what();
    }
    return "";
}

AccountTree tree_of(const std::string &text) {
    std::istringstream in(text);
    return parse_account_tree(in, "assoc.txt");
}

const char kTiers[] =
    "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
    "Tier=low    QOS=low    Priority=100 Preemptible=yes\n"
    "DefaultTier=normal\n";

// 4 GPUs, one node pool; physics (quota 2) over qcd and astro (2 each),
// biology (2) over genomics (2) and imaging (0).
Config levels_config() {
    return parse_config(std::string(kTiers) +
                            "Pool=gpu Quota=4\n"
                            "Account=physics Pool=gpu Quota=2\nAccount=biology Pool=gpu Quota=2\n"
                            "Account=qcd Pool=gpu Quota=2\nAccount=astro Pool=gpu Quota=2\n"
                            "Account=genomics Pool=gpu Quota=2\nAccount=imaging Pool=gpu Quota=0\n",
                        "levels.conf");
}

// The same teams as one partition per project (the OSMO model).
Config flat_config() {
    return parse_config(std::string(kTiers) + "Pool=qcd Quota=2\nPool=astro Quota=2\nPool=genomics Quota=2\n"
                                              "Pool=imaging Quota=0\n",
                        "flat.conf");
}

SimCluster four_gpus(const std::vector<std::string> &partitions) {
    SimCluster c;
    for (int i = 1; i <= 4; ++i) c.nodes.push_back(SimNode{"node" + std::to_string(i), 1});
    for (const std::string &p : partitions) c.partitions.push_back(SimPartition{p, {0, 1, 2, 3}});
    c.account_parent = {{"physics", "root"}, {"biology", "root"},  {"qcd", "physics"},
                        {"astro", "physics"}, {"genomics", "biology"}, {"imaging", "biology"}};
    return c;
}

// label, submit, duration, account, QOS; one GPU each.  `flat`: the
// partition is the account's, else "gpu".
Workload two_departments(bool flat) {
    struct Row {
        const char *label;
        int64_t submit, duration;
        const char *account, *qos;
    };
    const Row rows[] = {{"q1", 0, 100, "qcd", "normal"},      {"a1", 0, 100, "astro", "normal"},
                        {"q2", 1, 100, "qcd", "normal"},      {"g1", 2, 50, "genomics", "normal"},
                        {"i1", 3, 1000, "imaging", "low"}};
    Workload w;
    uint32_t id = 1;
    for (const Row &r : rows) {
        SimJob s;
        s.id = id++;
        s.label = r.label;
        s.submit = r.submit;
        s.duration = r.duration;
        s.gpus = 1;
        s.account = r.account;
        s.pools = {flat ? r.account : "gpu"};
        s.qos = r.qos;
        w.jobs.push_back(s);
    }
    return w;
}

std::string starts_of(const ReplayResult &r, const Workload &w) {
    std::string out;
    for (const StartRecord &s : r.starts) {
        if (!out.empty()) out += ' ';
        out += w.jobs[s.job].label + "@" + std::to_string(s.time);
        for (uint32_t v : s.victims) out += "-" + w.jobs[v].label;
    }
    return out;
}

// name quota jobs np_peak np_over_quota below_quota, one account a line.
std::string accounts_of(const ReplayResult &r) {
    std::ostringstream out;
    for (const AccountMetrics &a : r.metrics.accounts)
        out << std::string(2 * a.depth, ' ') << a.name << " " << (a.has_quota ? std::to_string(a.quota) : "-") << " "
            << a.jobs << " " << a.np_peak << " " << a.np_over_quota_seconds << " " << a.below_quota_seconds << "\n";
    return out.str();
}

}  // namespace

TEST(SimAccounts, AProjectsJobWaitsForItsDepartmentsQuotaWithLevelsAndNotInOnePartitionPerTeam) {
    const Workload levels_jobs = two_departments(false), flat_jobs = two_departments(true);
    const Config levels = levels_config(), flat = flat_config();
    ReplayOptions o;
    const ReplayResult with_levels =
        replay(four_gpus({"gpu"}), levels_jobs, levels, PolicyKind::Gpupool, o);
    // q2: qcd has room (1 of 2) but physics is full (2 of 2), though 2 GPUs
    // are free; imaging's LOW job takes one of them; q2 starts when q1 and
    // a1 end.
    EXPECT_EQ(starts_of(with_levels, levels_jobs), "q1@0 a1@0 g1@2 i1@3 q2@100");
    EXPECT_EQ(accounts_of(with_levels),
              "biology 2 2 1 0 0\n"
              "  genomics 2 1 1 0 0\n"
              "  imaging 0 1 0 0 0\n"
              "physics 2 3 2 0 0\n"
              "  astro 2 1 1 0 0\n"
              "  qcd 2 2 1 0 99\n");

    // One partition per project, held to the departments' quotas of the
    // levels configuration: q2 starts at once and physics holds 3 GPUs of
    // NP work from 1 to 100; imaging's LOW job waits for g1's GPU.
    o.account_quotas = &levels;
    const SimCluster teams = four_gpus({"qcd", "astro", "genomics", "imaging"});
    const ReplayResult one_per_team = replay(teams, flat_jobs, flat, PolicyKind::Gpupool, o);
    EXPECT_EQ(starts_of(one_per_team, flat_jobs), "q1@0 a1@0 q2@1 g1@2 i1@52");
    EXPECT_EQ(accounts_of(one_per_team),
              "biology 2 2 1 0 0\n"
              "  genomics 2 1 1 0 0\n"
              "  imaging 0 1 0 0 0\n"
              "physics 2 3 3 99 0\n"
              "  astro 2 1 1 0 0\n"
              "  qcd 2 2 2 0 0\n");
    // Both reports show the accounts, the text as a tree.
    std::ostringstream js, text;
    write_json(js, teams, flat_jobs, flat, RunInfo{}, {one_per_team});
    for (const char *key : {"\"accounts\"", "\"account\": \"physics\"", "\"parent\": \"physics\"", "\"depth\": 1",
                            "\"gpu_hours\"", "\"np_peak\": 3", "\"np_over_quota_seconds\": 99"})
        EXPECT_NE(js.str().find(key), std::string::npos) << key;
    write_text(text, teams, flat_jobs, flat, RunInfo{}, {one_per_team});
    EXPECT_NE(text.str().find("\n  qcd      gpupool     2    2"), std::string::npos) << text.str();

    // Without a configuration to hold them to, each project's own
    // partition is its quota and a department's is its projects'.
    o.account_quotas = nullptr;
    const ReplayResult own = replay(teams, flat_jobs, flat, PolicyKind::Gpupool, o);
    EXPECT_EQ(own.metrics.accounts[3].name, "physics");
    EXPECT_EQ(own.metrics.accounts[3].quota, 4u);
    EXPECT_EQ(own.metrics.accounts[3].np_over_quota_seconds, 0);
}

TEST(SimAccounts, ADepartmentsNpJobWaitingWithinItsQuotaCountsBelowQuotaAndStrictNeverStartsAZeroQuotaProject) {
    // One partition per project: physics' four NP jobs fill the GPUs (4 of
    // its department's 2 for 100 s); genomics' NP job, within biology's
    // quota, waits for them from 1 to 100.
    Workload w;
    const char *rows[][2] = {{"q1", "qcd"}, {"q2", "qcd"}, {"a1", "astro"}, {"a2", "astro"}, {"g1", "genomics"}};
    for (uint32_t i = 0; i < 5; ++i) {
        SimJob s;
        s.id = i + 1;
        s.label = rows[i][0];
        s.account = rows[i][1];
        s.pools = {s.account};
        s.submit = i == 4 ? 1 : 0;
        s.duration = 100;
        s.gpus = 1;
        s.qos = "normal";
        w.jobs.push_back(s);
    }
    const Config flat = flat_config(), levels = levels_config();
    ReplayOptions o;
    o.account_quotas = &levels;
    const SimCluster teams = four_gpus({"qcd", "astro", "genomics", "imaging"});
    const ReplayResult r = replay(teams, w, flat, PolicyKind::Gpupool, o);
    EXPECT_EQ(starts_of(r, w), "q1@0 q2@0 a1@0 a2@0 g1@100");
    EXPECT_EQ(accounts_of(r),
              "biology 2 1 1 0 99\n"
              "  genomics 2 1 1 0 99\n"
              "  imaging 0 0 0 0 0\n"
              "physics 2 4 4 100 0\n"
              "  astro 2 2 2 0 0\n"
              "  qcd 2 2 2 0 0\n");

    // Strict quotas (a partition QOS per project): imaging's quota is 0, so
    // its LOW job never starts.
    const Workload two = two_departments(true);
    const ReplayResult strict = replay(teams, two, flat, PolicyKind::Strict, o);
    EXPECT_EQ(starts_of(strict, two), "q1@0 a1@0 q2@1 g1@2");
    EXPECT_EQ(strict.jobs[4].state, JobEnd::NeverStarted);
}

TEST(SimAccounts, TheGeneratorDrawsAccountsFromDepartmentsAndTheFlatVariantHasTheSameJobs) {
    const std::string spec =
        "Seed=3 Jobs=2000 Pools=gpu Tiers=normal:0.6,low:0.4 Interarrival=10 "
        "Accounts=physics/qcd:4,physics/astro:2,biology/imaging:2 AccountTiers=imaging:low CpusPerGpu=8 "
        "MemPerGpu=64G Gpus=1,2";
    const Workload levels = generate_workload(parse_generator_spec(spec, "x"), 0);
    const Workload flat = generate_workload(parse_generator_spec(spec + " PoolPerAccount=yes", "x"), 0);
    EXPECT_EQ(levels.account_parent, (AccountTree{{"physics", "root"}, {"biology", "root"}, {"qcd", "physics"},
                                                  {"astro", "physics"}, {"imaging", "biology"}}));
    std::map<std::string, int> per_account;
    for (size_t i = 0; i < levels.jobs.size(); ++i) {
        const SimJob &a = levels.jobs[i], &b = flat.jobs[i];
        ASSERT_EQ(std::tie(a.submit, a.duration, a.gpus, a.qos, a.account, a.cpus, a.mem_mb),
                  std::tie(b.submit, b.duration, b.gpus, b.qos, b.account, b.cpus, b.mem_mb));
        ASSERT_EQ(a.pools, std::vector<std::string>{"gpu"});
        ASSERT_EQ(b.pools, std::vector<std::string>{a.account});
        ASSERT_EQ(a.cpus, 8 * a.gpus);
        ASSERT_EQ(a.mem_mb, 65536ull * a.gpus);
        if (a.account == "imaging") {
            ASSERT_EQ(a.qos, "low");
        }
        per_account[a.account]++;
    }
    // 4:2:2 of 2,000 jobs, within a few percent.
    EXPECT_NEAR(per_account["qcd"], 1000, 60);
    EXPECT_NEAR(per_account["astro"], 500, 50);
    EXPECT_NEAR(per_account["imaging"], 500, 50);
    // A spec without accounts draws as before: no account, no CPUs.
    const Workload plain = generate_workload(parse_generator_spec("Seed=3 Jobs=5 Pools=gpu Tiers=normal Interarrival=10", "x"), 0);
    EXPECT_EQ(plain.jobs[0].account, "");
    EXPECT_TRUE(plain.account_parent.empty());

    auto err = [](const std::string &text) { return error_of([&] { parse_generator_spec(text, "gen.spec"); }); };
    EXPECT_EQ(err("Pools=a Tiers=b Accounts=x/y,z/y"), "gen.spec:1: bad value 'x/y,z/y' for Accounts: expected each project once");
    EXPECT_EQ(err("Pools=a Tiers=b Accounts=x/y,y/z"),
              "gen.spec:1: bad value 'x/y,y/z' for Accounts: expected 'y' as a project and a department: one or the other");
    EXPECT_EQ(err("Pools=a Tiers=b Accounts=x/y AccountTiers=y:c"),
              "gen.spec:1: bad value 'y:c' for AccountTiers: expected QOS that Tiers= names with a weight > 0");
    EXPECT_EQ(err("Pools=a Tiers=b Accounts=x/y AccountTiers=z:b"),
              "gen.spec:1: bad value 'z:b' for AccountTiers: expected accounts that Accounts= names");
    EXPECT_EQ(err("Pools=a Tiers=b PoolPerAccount=yes"), "gen.spec: PoolPerAccount=yes needs Accounts=");
    EXPECT_EQ(err("Pools=a Tiers=b MemPerGpu=4X"), "gen.spec:1: bad value '4X' for MemPerGpu: expected MiB, or with a unit M, G, T");
}

TEST(SimAccounts, SacctsAccountColumnAndTheCpusAndMemoryOfReqTres) {
    std::istringstream in(
        "JobID|Account|Submit|Start|End|Partition|State|ReqTRES\n"
        "7|qcd|100|110|200|gpu|COMPLETED|billing=8,cpu=16,gres/gpu=2,mem=128G,node=1\n"
        "8||100|110|200|gpu|COMPLETED|cpu=4,gres/gpu=1,mem=4000M\n");
    const Workload w = parse_sacct(in, "dump.txt");
    ASSERT_EQ(w.jobs.size(), 2u);
    EXPECT_EQ(std::tie(w.jobs[0].account, w.jobs[0].cpus, w.jobs[0].mem_mb),
              std::make_tuple(std::string("qcd"), 16u, uint64_t{131072}));
    EXPECT_EQ(std::tie(w.jobs[1].account, w.jobs[1].cpus, w.jobs[1].mem_mb),
              std::make_tuple(std::string(""), 4u, uint64_t{4000}));
    std::istringstream bad("JobID|Submit|Start|End|Partition|State|ReqTRES\n"
                           "7|100|110|200|gpu|COMPLETED|cpu=x,gres/gpu=2\n");
    EXPECT_EQ(error_of([&] { parse_sacct(bad, "dump.txt"); }),
              "dump.txt:2: ReqTRES: 'cpu=x': expected cpu=COUNT or mem=SIZE");
}

TEST(SimAccounts, TheAccountTreeIsReadFromSacctmgrsAssociations) {
    // sacctmgr -P show assoc format=account,parentname,user: root's row
    // and users' rows have no parent.
    EXPECT_EQ(tree_of("Account|Par Name|User\n"
                      "root||\n"
                      "root||root\n"
                      "physics|root|\n"
                      "qcd|physics|\n"
                      "qcd||alice\n"
                      "biology|root|\n"),
              (AccountTree{{"physics", "root"}, {"qcd", "physics"}, {"biology", "root"}}));
    // Without a header: ACCOUNT|PARENT.
    EXPECT_EQ(tree_of("physics|root\nqcd|physics\n"), (AccountTree{{"physics", "root"}, {"qcd", "physics"}}));
    EXPECT_EQ(error_of([] { tree_of("qcd|physics\nqcd|biology\n"); }),
              "assoc.txt:2: account 'qcd' has two parents: 'physics' and 'biology'");
    EXPECT_EQ(error_of([] { tree_of("a|b\nb|a\n"); }), "assoc.txt:1: account 'a' is its own ancestor (a > b > a)");
    EXPECT_EQ(error_of([] { tree_of("qcd\n"); }),
              "assoc.txt:1: expected ACCOUNT|PARENT (sacctmgr -P show assoc format=account,parentname)");
}

TEST(SimAccounts, ALoopNamesTheLineOfItsFirstAccountInTheFileAndTheLoop) {
    // Found from x, which only leads into the loop: named from its first
    // account in the file, whichever account the walk came in by.
    EXPECT_EQ(error_of([] { tree_of("Account|Par Name\nx|c\nphysics|root\nb|c\nc|a\na|b\n"); }),
              "assoc.txt:4: account 'b' is its own ancestor (b > c > a > b)");
    EXPECT_EQ(error_of([] { tree_of("physics|root\nqcd|qcd\n"); }),
              "assoc.txt:2: account 'qcd' is its own ancestor (qcd > qcd)");
    // Each account is walked once: a chain of 20,000 and a loop at its top.
    std::string chain;
    for (int i = 1; i < 20000; ++i) chain += "a" + std::to_string(i) + "|a" + std::to_string(i + 1) + "\n";
    EXPECT_EQ(tree_of(chain + "a20000|root\n").size(), 20000u);
    EXPECT_EQ(error_of([&] { tree_of(chain + "a20000|a19999\n"); }),
              "assoc.txt:19999: account 'a19999' is its own ancestor (a19999 > a20000 > a19999)");
}

TEST(SimAccounts, AHeaderWithoutAccountOrParNameIsRefused) {
    // Plain `sacctmgr -P show assoc` has no Par Name column: its Account
    // column was read as both account and parent (a loop through 'Account').
    EXPECT_EQ(error_of([] {
                  tree_of("Cluster|Account|User|Partition|Share|Priority\n"
                          "c1|root|||1|\n"
                          "c1|physics|||1|\n");
              }),
              "assoc.txt:1: the header lacks the required column Par Name: run sacctmgr -P show assoc "
              "format=account,parentname");
    EXPECT_EQ(error_of([] { tree_of("Par Name|User\nroot|alice\n"); }),
              "assoc.txt:1: the header lacks the required column Account: run sacctmgr -P show assoc "
              "format=account,parentname");
    // sacctmgr -p: a trailing '|'; blank lines before the header.
    EXPECT_EQ(tree_of("\nParentName|Account|\nroot|physics|\nphysics|qcd|\n"),
              (AccountTree{{"physics", "root"}, {"qcd", "physics"}}));
}

// `gpupool check` over the demo cluster of scripts/cluster.sh as
// gpupool reads it: `scontrol show config` and slurm.conf captured from it
// (tests/unit/data/check/), its nodes, partitions, QOS and accounts.  The
// eight broken files are the ones the live test checks too.
#include <gtest/gtest.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "check.hpp"

using namespace gpupool;
using namespace gpupool::cli;

namespace {

std::string srcdir() {
    const char *d = std::getenv("srcdir");  // set by `make check`
    return d ? d : ".";
}

std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
}

const std::string kSlurmConf = "/var/tmp/gpupool-cluster/etc/slurm.conf";

// pool1, pool2 and plain over node[1-4], pool3 over node[5-6], 1 GPU each;
// QOS normal, low, high and the examples'; accounts research and
// scripts/demo-departments.sh's tree.
CheckCluster demo() {
    CheckCluster c;
    c.cluster_name = "gpupool";
    c.slurm_conf = kSlurmConf;
    c.slurm_conf_text = read(srcdir() + "/tests/unit/data/check/slurm.conf");
    c.settings = parse_show_config(read(srcdir() + "/tests/unit/data/check/show-config.txt"));
    for (int i = 1; i <= 6; ++i) c.snap.add_node("node" + std::to_string(i), 1);
    c.snap.add_partition("pool1", {0, 1, 2, 3});
    c.snap.add_partition("pool2", {0, 1, 2, 3});
    c.snap.add_partition("pool3", {4, 5});
    c.snap.add_partition("plain", {0, 1, 2, 3});
    for (const char *p : {"pool1", "pool2", "pool3", "plain"}) c.priority_tier[p] = 1;
    c.nodes_known = true;
    c.qos = {"normal", "low", "high", "scavenger", "inference", "build", "interactive", "train"};
    c.qos_known = true;
    c.snap.account_parent = {{"root", ""},         {"research", "root"}, {"physics", "root"},
                             {"biology", "root"},  {"qcd", "physics"},   {"astro", "physics"},
                             {"genomics", "biology"}, {"imaging", "biology"}, {"protein", "biology"}};
    c.accounts_known = true;
    return c;
}

// The report for `text` named `name`, and its exit status.
std::string report(const std::string &name, const std::string &text, const CheckCluster &c, int *status = nullptr) {
    std::ostringstream out;
    int rc = print_check(check_config(name, text, c), name, out);
    if (status) *status = rc;
    return out.str();
}

std::string report_file(const std::string &file, const CheckCluster &c, int *status) {
    return report(file, read(srcdir() + "/" + file), c, status);
}

const std::string kTiers =
    "Tier=normal QOS=normal Priority=200 Preemptible=no\nTier=low QOS=low Priority=100 Preemptible=yes\n"
    "DefaultTier=normal\n";

}  // namespace

TEST(Check, EveryExampleOfEtcPassesOnTheDemoCluster) {
    for (const char *example : {"etc/gpupool.conf.example", "etc/gpupool-osmo.conf", "etc/gpupool-runai.conf",
                                "etc/gpupool-backendai.conf", "etc/gpupool-departments.conf"}) {
        int status = -1;
        EXPECT_EQ(report_file(example, demo(), &status),
                  std::string("gpupool check: 0 errors, 0 warnings (") + example + ")\n");
        EXPECT_EQ(status, 0) << example;
    }
}

// Acceptance 3: each broken file, its line, what is wrong and the fix.
TEST(Check, EightBrokenFilesNameTheirLineAndFix) {
    const std::string d = "tests/unit/data/check/";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"unknown-partition.conf",
         ":8: error: Pool=pool4: slurmctld has no partition pool4 (it has pool1, pool2, pool3, plain); fix: add "
         "PartitionName=pool4 to slurm.conf, or name an existing partition\n"},
        {"unknown-qos.conf",
         ":5: error: Tier=low: QOS lowest does not exist in slurmdbd; fix: create it (sacctmgr add qos lowest) and "
         "grant it (sacctmgr modify user NAME set qos+=lowest), or map an existing QOS (build, high, inference, "
         "interactive, low, normal, scavenger, train)\n"},
        {"unknown-account.conf",
         ":9: error: Account=chemistry: Slurm has no account chemistry (the association tree of cluster gpupool); "
         "fix: create it (sacctmgr add account chemistry parent=DEPARTMENT), or correct the name\n"},
        {"duplicate-pool.conf",
         ":9: error: duplicate Pool=pool1 (first defined on line 7); fix: keep one Pool= record per partition: "
         "remove the second or merge its keys into the first\n"},
        {"child-quota-over-parent.conf",
         ":11: error: Account=qcd Pool=pool1 Quota=gres/gpu=2 is more than the quota of its parent account physics "
         "there (gres/gpu=1, line 10): a department's quota caps what its projects hold together; fix: lower qcd's "
         "Quota in pool1 to at most gres/gpu=1, or raise physics's\n"},
        {"preemptmode-suspend.conf",
         ":5: error: PreemptMode=suspend in Tier=low: Slurm keeps a suspended job's GPUs allocated, so suspending "
         "it frees nothing for the job that preempts; fix: write PreemptMode=requeue or PreemptMode=cancel (jobs "
         "that checkpoint: GraceTime= with SlurmctldParameters=preempt_send_user_signal, then requeue)\n"},
        {"name-too-long.conf",
         ":8: error: Pool name 'pool_" + std::string(59, 'x') +
             "'... (300 bytes) is longer than 255 bytes (slurmdbd keeps partition names of at most 255 bytes); fix: "
             "use a shorter name\n"},
        {"missing-slurm-setting.conf",
         ":5: error: QuotaTRES=gres/gpu:a100 counts a TRES that slurm.conf does not account (" + kSlurmConf +
             ":60: AccountingStorageTRES=cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu): jobs' TRES carry "
             "no count of it; fix: add gres/gpu:a100 to AccountingStorageTRES in slurm.conf and restart "
             "slurmctld\n" + d + "missing-slurm-setting.conf:9: warning: Pool=pool1 Quota=2: the nodes of "
             "partition pool1 have no GPUs that QuotaTRES=gres/gpu:a100 counts; fix: give its nodes GPUs (Gres= in "
             "slurm.conf), or set QuotaTRES to the GPUs they have\n"},
    };
    for (const auto &[file, lines] : cases) {
        int status = -1;
        const bool a100 = file == "missing-slurm-setting.conf";
        CheckCluster c = demo();
        // gpupool counts QuotaTRES=gres/gpu:a100 on the demo's untyped GPUs: none.
        if (a100)
            for (SnapNode &n : c.snap.nodes) n.gpus = 0;
        const std::string errors = a100 ? "1 error, 1 warning" : "1 error, 0 warnings";
        EXPECT_EQ(report_file(d + file, c, &status),
                  d + file + lines + "gpupool check: " + errors + " (" + d + file + ")\n");
        EXPECT_EQ(status, 1) << file;
    }
}

// The table of slurm.conf settings: each problem on slurm.conf's line.
TEST(Check, SlurmConfSettingsAreCheckedWithTheirLines) {
    CheckCluster c = demo();
    c.settings["PriorityType"] = "priority/multifactor";
    c.settings["PreemptMode"] = "GANG,SUSPEND";
    c.settings["JobSubmitPlugins"] = "lua,gpupool";
    c.settings["AccountingStorageEnforce"] = "associations";
    c.settings["PriorityWeightFairShare"] = "0";
    c.settings["AuthInfo"] = "socket=/run/munge.sock";
    c.settings["PreemptExemptTime"] = "00:05:00";
    c.settings["SchedulerParameters"] = "sched_interval=2,bf_interval=2";
    int status = -1;
    const std::string s = kSlurmConf;
    EXPECT_EQ(report("gp.conf", kTiers + "Pool=pool1 Quota=2\n", c, &status),
              s + ": warning: PreemptExemptTime=00:05:00 applies on top of gpupool's MinRuntime; fix: remove "
                  "PreemptExemptTime from slurm.conf and set MinRuntime= in gpupool.conf\n" +
                  s + ":11: warning: AuthInfo=socket=/run/munge.sock sets no cred_expire: a requeued batch job starts "
                  "again only 1201 s after it was preempted (cred_expire + 1); fix: add cred_expire=30 to AuthInfo in "
                  "slurm.conf\n" +
                  s + ":44: warning: SchedulerParameters=sched_interval=2,bf_interval=2 lacks preempt_strict_order: "
                  "in its retry passes select/cons_tres re-sorts the victims preempt/gpupool offers node group by node "
                  "group, so the victim plan's order (its cheapest node first) is lost; fix: add "
                  "preempt_strict_order to SchedulerParameters in slurm.conf and run scontrol reconfigure\n" +
                  s + ":45: error: PriorityType=priority/multifactor: gpupool orders and holds jobs only as "
                  "priority/gpupool; fix: set PriorityType=priority/gpupool in slurm.conf and restart slurmctld (a "
                  "reconfigure does not change it)\n" +
                  s + ":49: warning: PriorityWeightFairshare=0: sprio shows no FAIRSHARE column; fix: set "
                  "PriorityWeightFairshare=1 (any non-zero value; gpupool's priorities are ranks)\n" +
                  s + ":52: warning: JobSubmitPlugins=lua,gpupool: gpupool is not first in the list, so a hold on a "
                  "job gpupool holds is lost, and an array's throttle may start tasks over quota until the next pass; "
                  "fix: put gpupool first: JobSubmitPlugins=gpupool (then the others)\n" +
                  s + ":53: error: PreemptMode=GANG,SUSPEND: Slurm keeps a suspended job's GPUs allocated, so "
                  "suspending a victim frees nothing for the job that preempts; preempt/gpupool refuses to start; "
                  "fix: set PreemptMode=REQUEUE or CANCEL (jobs that checkpoint: GraceTime= in gpupool.conf with "
                  "SlurmctldParameters=preempt_send_user_signal)\n" +
                  s + ":59: error: AccountingStorageEnforce=associations lacks limits,qos: without qos users pick "
                  "any QOS and so any tier; without limits quota is given back only at the next pass; fix: set "
                  "AccountingStorageEnforce=associations,limits,qos (keeping what else it has) in slurm.conf and "
                  "restart slurmctld\n" +
                  "gpupool check: 3 errors, 5 warnings (gp.conf)\n");
    EXPECT_EQ(status, 1);
}

// Pools over the same nodes share their GPUs; pool partitions share one
// PriorityTier; a Pool=* record answers to each pool's quota.
TEST(Check, PoolsQosAndAccountsAgainstTheCluster) {
    CheckCluster c = demo();
    c.priority_tier["pool3"] = 2;
    const std::string text = "Tier=normal QOS=normal Priority=200 Preemptible=no\n"  // 1
                             "Tier=low QOS=low Priority=100 Preemptible=yes\n"       // 2
                             "DefaultTier=normal\n"                                  // 3
                             "Pool=pool1 Quota=3\n"                                  // 4
                             "Pool=pool2 Quota=2\n"                                  // 5
                             "Pool=pool3 Quota=3\n"                                  // 6
                             "Account=protein Pool=* Quota=gres/gpu=3\n";            // 7
    int status = -1;
    EXPECT_EQ(report("gp.conf", text, c, &status),
              "gp.conf:4: warning: pools pool1, pool2 share the 4 GPUs of their partitions' nodes, but their quotas "
              "add up to 5: quotas cannot all be honoured; fix: lower the quotas of pool1, pool2 to add up to at most "
              "4\n"
              "gp.conf:6: warning: partition pool3 has PriorityTier=2 and partition pool1 (line 4) PriorityTier=1: "
              "Slurm orders "
              "pending jobs by PriorityTier before priority, overruling gpupool; fix: give the pool partitions the "
              "same PriorityTier in slurm.conf\n"
              "gp.conf:6: warning: Pool=pool3 Quota=3 is more than the 2 GPUs of partition pool3: the quota cannot be "
              "honoured; fix: lower Quota to at most 2, or add GPUs to the partition\n"
              "gp.conf:7: error: Account=protein Pool=* Quota=gres/gpu=3 (in pool pool2) is more than Pool=pool2's "
              "Quota (gres/gpu=2, line 5); fix: lower protein's Quota in pool2 to at most gres/gpu=2, or raise the "
              "pool's\n"
              "gpupool check: 1 error, 3 warnings (gp.conf)\n");
    EXPECT_EQ(status, 1);
}

// A QOS or account with a capital matches no job (Slurm lower-cases
// their names): the file does not load, and check says what to write.
// A setting that changes nothing with the rest of the file is a warning
// at its line; the file passes.
TEST(Check, SettingsWithoutEffectAreWarnings) {
    int status = -1;
    EXPECT_EQ(report("g.conf", kTiers + "ReclaimTo=fairshare\nSwap=least-work\nPool=pool1 Quota=1\n", demo(), &status),
              "g.conf:5: warning: Swap=least-work has no effect with ReclaimTo=fairshare (line 4): a swap weighs "
              "pools that reclaim to their quota; fix: remove it, or change the setting it depends on "
              "(gpupool.conf(5), VALIDATION)\ngpupool check: 0 errors, 1 warning (g.conf)\n");
    EXPECT_EQ(status, 0);
}

TEST(Check, QosAndAccountNamesWithCapitalsAreParseErrors) {
    struct Case {
        const char *sentence;
        std::string text;
        std::string report;
    };
    const std::vector<Case> cases = {
        {"a QOS= name with a capital", "Tier=low QOS=Low Priority=100 Preemptible=yes\n",
         "gp.conf:1: error: bad name 'Low' for QOS in Tier=low: Slurm QOS names are lower case, so no job's QOS "
         "would match it; fix: write 'low'\n"
         "gpupool check: 1 error, 0 warnings (gp.conf)\n"},
        {"a tier with capitals and no QOS=, whose QOS is its name", "Tier=LOW Priority=100 Preemptible=yes\n",
         "gp.conf:1: error: Tier=LOW has no QOS=, so its QOS is its name, but Slurm QOS names are lower case, so "
         "no job's QOS would match it; fix: give QOS=low or rename the tier 'low'\n"
         "gpupool check: 1 error, 0 warnings (gp.conf)\n"},
        {"an Account= name with a capital, refused the same way",
         "Tier=low Priority=100 Preemptible=yes\nPool=pool1 Quota=1\nAccount=Physics Pool=pool1\n",
         "gp.conf:3: error: bad name 'Physics' for Account: Slurm account names are lower case; fix: write "
         "'physics'\n"
         "gpupool check: 1 error, 0 warnings (gp.conf)\n"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        int status = -1;
        EXPECT_EQ(report("gp.conf", c.text, demo(), &status), c.report);
        EXPECT_EQ(status, 1);
    }
}

// What could not be read is said once, as a warning; the file is still
// parsed, and a file slurmctld would not trust is an error.
TEST(Check, WhatCannotBeCheckedIsSaid) {
    CheckCluster down;
    down.controller_error = "cannot read slurmctld's configuration: Unable to contact slurm controller";
    EXPECT_EQ(report("gp.conf", kTiers + "Pool=p Quota=1\nPool=p Quota=2\n", down),
              "gp.conf: warning: the cluster was not checked: cannot read slurmctld's configuration: Unable to "
              "contact slurm controller; fix: run gpupool check where scontrol reaches slurmctld\n"
              "gp.conf:5: error: duplicate Pool=p (first defined on line 4); fix: keep one Pool= record per "
              "partition: remove the second or merge its keys into the first\n"
              "gpupool check: 1 error, 1 warning (gp.conf)\n");

    CheckCluster c = demo();
    c.qos_known = c.accounts_known = false;
    c.qos_error = c.accounts_error = "slurmdbd not reachable";
    c.trust_error = "gp.conf is writable by others (mode 0666)";
    EXPECT_EQ(report("gp.conf", kTiers + "Pool=pool1 Quota=2\nAccount=qcd Pool=pool1 Quota=gres/gpu=3\n", c),
              "gp.conf: error: slurmctld would not read it: gp.conf is writable by others (mode 0666); fix: make "
              "the file and every directory above it owned by root or SlurmUser and writable by no group or other "
              "user (chown root FILE; chmod go-w FILE)\n"
              "gp.conf: warning: QOS not checked: slurmdbd not reachable; fix: run gpupool check where slurmdbd "
              "answers (sacctmgr show qos)\n"
              "gp.conf: warning: accounts not checked against Slurm's tree: slurmdbd not reachable; fix: run gpupool "
              "check where slurmdbd answers (sacctmgr show assoc)\n"
              "gp.conf:5: error: Account=qcd Pool=pool1 Quota=gres/gpu=3 is more than Pool=pool1's Quota "
              "(gres/gpu=2, line 4); fix: lower qcd's Quota in pool1 to at most gres/gpu=2, or raise the pool's\n"
              "gpupool check: 2 errors, 2 warnings (gp.conf)\n");
}

// Without slurmctld, the trust check takes SlurmUser from slurm.conf.
TEST(Check, SlurmUserForTheTrustCheck) {
    const struct passwd *me = getpwuid(geteuid());
    ASSERT_NE(me, nullptr);
    const std::string my_name = me->pw_name;
    const uint32_t my_uid = me->pw_uid;
    struct Case {
        const char *sentence;
        std::map<std::string, std::string> settings;  // slurmctld's; empty: it did not answer
        std::string slurm_conf;
        uint32_t uid;
        bool guessed;  // root only because nothing here says who SlurmUser is
    };
    const std::vector<Case> cases = {
        {"slurmctld's SlurmUser wins when it answered", {{"SlurmUser", "slurm(64030)"}}, "SlurmUser=54321\n",
         64030, false},
        {"slurm.conf's SlurmUser, a uid, when it did not", {}, "ClusterName=c\nSlurmUser=54321\n", 54321, false},
        {"a name is looked up", {}, "SlurmUser=" + my_name + "\n", my_uid, false},
        {"any case, blanks around '=', a quoted value", {}, "slurmuser = \"54321\"\n", 54321, false},
        {"on a line with other keys", {}, "ClusterName=c SlurmUser=54321 SlurmctldPort=6817\n", 54321, false},
        {"the last one set wins", {}, "SlurmUser=1\nSlurmUser=54321\n", 54321, false},
        {"a comment sets nothing: root", {}, "#SlurmUser=54321\nClusterName=c # SlurmUser=1\n", 0, false},
        {"SlurmdUser is another key: root", {}, "SlurmdUser=54321\n", 0, false},
        {"a name no user has: root only", {}, "SlurmUser=no-such-user-gp\n", 0, true},
        {"no slurm.conf (or none that sets it): root only, Slurm's default", {}, "", 0, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        CheckCluster cluster;
        cluster.settings = c.settings;
        cluster.slurm_conf_text = c.slurm_conf;
        EXPECT_EQ(trust_slurm_uid(cluster), c.uid);
        EXPECT_EQ(trust_slurm_uid_guessed(cluster), c.guessed);
    }
}

// `gpupool check` judges the file's owner and mode whether slurmctld
// answers or not: a group-writable file is an error either way.
TEST(Check, TrustIsCheckedWithoutSlurmctld) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (the file must be owned by root)";
    char tmpl[] = "/tmp/gp_check_trust_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl, file = dir + "/gpupool.conf";
    ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
    std::ofstream(file) << kTiers;
    ASSERT_EQ(chmod(file.c_str(), 0664), 0);

    CheckCluster down;
    down.controller_error = "no slurm.conf here ($SLURM_CONF, /etc/slurm/slurm.conf)";
    down.trust_error = check_file_trust(file, down);
    EXPECT_EQ(down.trust_error, file + ": writable by group (mode 0664); gpupool.conf must be writable only by "
                                       "root or SlurmUser root");
    int status = -1;
    EXPECT_EQ(report(file, kTiers, down, &status),
              file + ": error: slurmctld would not read it: " + down.trust_error +
                  "; fix: make the file and every directory above it owned by root or SlurmUser and writable by no "
                  "group or other user (chown root FILE; chmod go-w FILE)\n" +
                  file + ": warning: the cluster was not checked: no slurm.conf here ($SLURM_CONF, "
                         "/etc/slurm/slurm.conf); fix: run gpupool check where scontrol reaches slurmctld\n"
                         "gpupool check: 1 error, 1 warning (" + file + ")\n");
    EXPECT_EQ(status, 1);
    // Where nothing here says who SlurmUser is (no slurm.conf: a
    // configless host), judged against root, as a warning.
    down.slurm_user_unknown = true;
    EXPECT_EQ(report(file, kTiers, down, &status),
              file + ": warning: slurmctld would not read it if its SlurmUser is root (SlurmUser is not known "
                     "here): " + down.trust_error +
                  "; fix: make the file and every directory above it owned by root or SlurmUser and writable by no "
                  "group or other user (chown root FILE; chmod go-w FILE)\n" +
                  file + ": warning: the cluster was not checked: no slurm.conf here ($SLURM_CONF, "
                         "/etc/slurm/slurm.conf); fix: run gpupool check where scontrol reaches slurmctld\n"
                         "gpupool check: 0 errors, 2 warnings (" + file + ")\n");
    EXPECT_EQ(status, 0);

    // Owned by SlurmUser: trusted when slurm.conf names it, not otherwise.
    ASSERT_EQ(chmod(file.c_str(), 0644), 0);
    ASSERT_EQ(chown(file.c_str(), 54321, 54321), 0);
    EXPECT_EQ(check_file_trust(file, down),
              file + ": owned by uid 54321; gpupool.conf must be owned by root or SlurmUser root");
    down.slurm_conf_text = "SlurmUser=54321\n";
    EXPECT_EQ(check_file_trust(file, down), "");
    const std::string cmd = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Check, TextHelpers) {
    const auto settings = parse_show_config("Configuration data as of 2026-11-28T05:09:50\n"
                                            "AccountingStorageEnforce = associations,limits,qos\n"
                                            "PriorityWeightFairShare = 1\n"
                                            "SlurmUser               = slurm(64030)\n"
                                            "Cgroup Support Configuration:\n"
                                            "AllowedRAMSpace         = 100.0%\n"
                                            "SlurmUser               = other(1)\n");
    EXPECT_EQ(settings.at("AccountingStorageEnforce"), "associations,limits,qos");
    EXPECT_EQ(settings.at("AllowedRAMSpace"), "100.0%");
    EXPECT_EQ(settings.count("Cgroup Support Configuration:"), 0u);
    EXPECT_EQ(slurm_user_id(settings), 64030u);  // the first SlurmUser: slurmctld's own section
    EXPECT_EQ(slurm_user_id({{"SlurmUser", "root(0)"}}), 0u);
    EXPECT_EQ(slurm_user_id({}), 0u);
    const std::string conf = "# PreemptMode=SUSPEND\nPreemptMode=REQUEUE\n\npreemptmode=CANCEL # again\n"
                             "QuotaTRES=gres/gpu UsageWeight=0\n";
    EXPECT_EQ(line_of_key(conf, "PreemptMode"), 4);
    EXPECT_EQ(line_of_key(conf, "UsageWeight"), 5);
    EXPECT_EQ(line_of_key(conf, "PreemptType"), 0);
}

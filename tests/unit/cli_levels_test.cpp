// Account queues in the gpupool command and the exporter: a pool's account
// queues (two departments over projects, CPUs counted) in status (table
// and JSON), why (the queue that holds a job, a running job's standing),
// whatif (an account's quota and weight changed) and the exporter's
// per-queue series.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "json_ptr.hpp"
#include "metrics.hpp"
#include "queue_figures.hpp"
#include "settings.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

// pool1: 8 GPUs and 128 CPUs on 2 nodes, Quota=8.  Departments physics and
// chemistry (4 GPUs, 32 CPUs each); physics' projects phys-a (3 GPUs, 24
// CPUs, weight 2) and phys-b (1 GPU, 16 CPUs); chemistry's chem-a (4 GPUs,
// 32 CPUs, at most 6 GPUs).
const std::string kTwoDepartments = kOsmoTiers +
                                    "QuotaTRES=gres/gpu,cpu\n"
                                    "Pool=pool1 Quota=8\n"
                                    "Account=physics   Pool=pool1 Quota=gres/gpu=4,cpu=32\n"
                                    "Account=chemistry Pool=pool1 Quota=gres/gpu=4,cpu=32\n"
                                    "Account=phys-a    Pool=pool1 Quota=gres/gpu=3,cpu=24 Weight=2\n"
                                    "Account=phys-b    Pool=pool1 Quota=gres/gpu=1,cpu=16\n"
                                    "Account=chem-a    Pool=pool1 Quota=gres/gpu=4,cpu=32 Limit=gres/gpu=6\n";

Config levels_config(const std::string &text) { return parse_config(text, "test.conf"); }

Engine engine_of(const std::string &text) {
    Engine e;
    e.set_config(levels_config(text));
    return e;
}

SnapJob of(SnapJob j, const std::string &account, uint32_t cpus) {
    j.account = account;
    j.cpus = cpus;
    return j;
}

void meta(ClusterView &v, uint32_t id, const std::string &user, const std::string &state) {
    JobMeta m;
    m.name = "job" + std::to_string(id);
    m.user = user;
    m.partition = "pool1";
    m.state = state;
    m.submit_time = T0;
    v.meta[id] = m;
}

// Physics holds 20 CPUs with phys-a's NORMAL job and phys-a borrows a GPU
// with a LOW one; chem-a runs one NORMAL job.  phys-b's NORMAL job asks 16
// CPUs: phys-b has them, physics does not (20 + 16 > 32).  chem-a's LOW job
// waits for GPUs.
ClusterView two_department_view() {
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0 + 100;
    v.history.available = true;
    v.history.path = "state.json";
    v.snap = cluster(2, 4);
    for (SnapNode &n : v.snap.nodes) n.cpus = 64;
    partition(v.snap, "pool1", 0, 1);
    v.snap.account_parent = {{"physics", "root"}, {"chemistry", "root"}, {"phys-a", "physics"},
                             {"phys-b", "physics"}, {"chem-a", "chemistry"}};
    v.snap.add_job(of(running(1, "pool1", "normal", 2, T0), "phys-a", 20));
    v.snap.add_job(of(running(2, "pool1", "low", 2, T0 + 10), "phys-a", 4));
    v.snap.add_job(of(running(3, "pool1", "normal", 1, T0 + 20), "chem-a", 8));
    v.snap.add_job(of(pending(4, "pool1", "normal", 1, T0 + 30), "phys-b", 16));
    v.snap.add_job(of(pending(5, "pool1", "low", 4, T0 + 40), "chem-a", 4));
    meta(v, 1, "alice", "RUNNING");
    meta(v, 2, "alice", "RUNNING");
    meta(v, 3, "carol", "RUNNING");
    meta(v, 4, "bob", "PENDING");
    meta(v, 5, "carol", "PENDING");
    return v;
}

std::string run(int (*cmd)(Engine &, const ClusterView &, const Options &, std::ostream &, std::ostream &),
                const Options &o, const std::string &conf = kTwoDepartments) {
    Engine e = engine_of(conf);
    ClusterView v = two_department_view();
    std::ostringstream out, err;
    EXPECT_EQ(cmd(e, v, o, out, err), 0) << err.str();
    return out.str();
}

Options json() {
    Options o;
    o.json = true;
    return o;
}

Options why(uint32_t job, bool as_json = false) {
    Options o;
    o.json = as_json;
    o.job_id = job;
    return o;
}

}  // namespace

// The member `key` of the object at `path` (keys and array indexes) in the
// JSON document `text`, compact, keys in order.
std::string member(const std::string &text, std::initializer_list<const char *> path) {
    json_error_t err;
    JsonPtr root(json_loads(text.c_str(), 0, &err));
    EXPECT_TRUE(root) << err.text;
    json_t *at = root.get();
    for (const char *k : path) at = k[0] >= '0' && k[0] <= '9' ? json_array_get(at, size_t(std::atoi(k))) : json_object_get(at, k);
    if (!at) return "<none>";
    char *dump = json_dumps(at, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    std::string out = dump;
    std::free(dump);
    return out;
}

const char kQueuesTable[] = R"(
Queues of pool1 (accounts):
QUEUE      TRES      QUOTA  LIMIT  WEIGHT  FAIRSHARE  USED  NP_USED  BORROWED  LENT  PENDING  STANDING
physics    gres/gpu      4      -       1          4     4        2         0     0        1  in-quota
physics    cpu          32      -       1         40    24       20         0     0       16  in-quota
  phys-a   gres/gpu      3      -       2          3     4        2         1     0        0  over-fairshare
  phys-a   cpu          24      -       2         24    24       20         0     0        0  in-quota
  phys-b   gres/gpu      1      -       1          1     0        0         0     1        1  in-quota
  phys-b   cpu          16      -       1         16     0        0         0     0       16  in-quota
chemistry  gres/gpu      4      -       1          4     1        1         0     0        4  in-quota
chemistry  cpu          32      -       1         12     8        8         0     0        4  in-quota
  chem-a   gres/gpu      4      6       1          4     1        1         0     0        4  in-quota
  chem-a   cpu          32      -       1         12     8        8         0     0        4  in-quota
)";

// phys-a holds 4 GPUs on a quota of 3: it borrows the GPU phys-b lends;
// physics' CPU fairshare is its 24 held and 16 asked for.
TEST(CliLevels, StatusShowsEachPoolsQueuesIndentedBelowItsRowPerCountedResource) {
    EXPECT_EQ(run(cmd_status, Options{}),
              "POOL   CAPACITY  QUOTA  NP_USED  P_USED  P_IN_QUOTA  FREE_QUOTA  FREE_GPUS  FAIRSHARE  USAGE_GPU_H  "
              "USAGE_SHARE  WEIGHT\n"
              "pool1         8      8        3       2           2           5          3          8          0.0  "
              "      0.000       1\n" +
                  std::string(kQueuesTable) +
                  "\n"
                  "POOL   USED  QUOTA  BORROWED  FROM  LENT  TO  RECLAIMABLE\n"
                  "pool1     5      8         0  -        0  -             0\n"
                  "\n"
                  "POOL   PENDING_JOBS  PENDING_GPUS  HELD  PENDING(high/normal/low)\n"
                  "pool1             2             5     1  0/1/1\n");
}

TEST(CliLevels, StatusJsonNestsEachDepartmentsProjectsUnderItInThePoolsQueues) {
    EXPECT_EQ(
        member(run(cmd_status, json()), {"pools", "0", "queues"}),
        R"([{"account":"physics","level":1,"weight":1,"rank":0,"resources":{)"
        R"("gpu":{"quota":4,"limit":null,"fairshare":4,"used":4,"np_used":2,"borrowed":0,"lent":0,"pending":1,"standing":"in_quota"},)"
        R"("cpu":{"quota":32,"limit":null,"fairshare":40,"used":24,"np_used":20,"borrowed":0,"lent":0,"pending":16,"standing":"in_quota"}},)"
        R"("queues":[{"account":"phys-a","level":2,"weight":2,"rank":0,"resources":{)"
        R"("gpu":{"quota":3,"limit":null,"fairshare":3,"used":4,"np_used":2,"borrowed":1,"lent":0,"pending":0,"standing":"over_fairshare"},)"
        R"("cpu":{"quota":24,"limit":null,"fairshare":24,"used":24,"np_used":20,"borrowed":0,"lent":0,"pending":0,"standing":"in_quota"}},"queues":[]},)"
        R"({"account":"phys-b","level":2,"weight":1,"rank":0,"resources":{)"
        R"("gpu":{"quota":1,"limit":null,"fairshare":1,"used":0,"np_used":0,"borrowed":0,"lent":1,"pending":1,"standing":"in_quota"},)"
        R"("cpu":{"quota":16,"limit":null,"fairshare":16,"used":0,"np_used":0,"borrowed":0,"lent":0,"pending":16,"standing":"in_quota"}},"queues":[]}]},)"
        R"({"account":"chemistry","level":1,"weight":1,"rank":0,"resources":{)"
        R"("gpu":{"quota":4,"limit":null,"fairshare":4,"used":1,"np_used":1,"borrowed":0,"lent":0,"pending":4,"standing":"in_quota"},)"
        R"("cpu":{"quota":32,"limit":null,"fairshare":12,"used":8,"np_used":8,"borrowed":0,"lent":0,"pending":4,"standing":"in_quota"}},)"
        R"("queues":[{"account":"chem-a","level":2,"weight":1,"rank":0,"resources":{)"
        R"("gpu":{"quota":4,"limit":6,"fairshare":4,"used":1,"np_used":1,"borrowed":0,"lent":0,"pending":4,"standing":"in_quota"},)"
        R"("cpu":{"quota":32,"limit":null,"fairshare":12,"used":8,"np_used":8,"borrowed":0,"lent":0,"pending":4,"standing":"in_quota"}},"queues":[]}]}])");
}

// With ranks set, why names each level's rank and status adds a RANK
// column; without, neither shows (the tests around this one).
TEST(CliLevels, WithRanksWhyNamesEachLevelsRankAndStatusShowsThem) {
    std::string conf = kTwoDepartments;
    conf.replace(conf.find("Pool=pool1 Quota=8\n"), 19, "Pool=pool1 Quota=8 Rank=2\n");
    conf.replace(conf.find("Account=physics   Pool=pool1 Quota=gres/gpu=4,cpu=32\n"), 53,
                 "Account=physics   Pool=pool1 Quota=gres/gpu=4,cpu=32 Rank=1\n");
    const std::string text = run(cmd_why, why(4), conf);
    EXPECT_NE(text.find("Ranks (within its tier, a higher rank at the first level that differs is served first): "
                        "pool1 2 physics 1 phys-b 0.\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(member(run(cmd_why, why(4, true), conf), {"job", "ranks"}),
              R"([{"queue":"pool1","rank":2},{"queue":"physics","rank":1},{"queue":"phys-b","rank":0}])");
    const std::string status = run(cmd_status, Options{}, conf);
    EXPECT_NE(status.find("USAGE_SHARE  WEIGHT  RANK\n"), std::string::npos) << status;
    EXPECT_NE(status.find("WEIGHT  RANK  FAIRSHARE"), std::string::npos) << status;
}

TEST(CliLevels, WhyNamesTheDepartmentWhoseCpuQuotaHoldsAProjectsJobAndEachQueueChecked) {
    EXPECT_EQ(run(cmd_why, why(4)),
              "Job 4 (job4) of bob is PENDING in pool1, tier normal, 1 GPU, waiting 1:40.\n"
              "Position 1 of 2 pending, 1 in pool1.\n"
              "Reason: quota full: pool1/physics cpu 20/32.\n"
              "Quota of pool1: 8 GPUs; non-preemptible jobs use 3, 0 reserved for admitted jobs ahead, this job "
              "needs 1: it fits.\n"
              "Quotas of its queues in pool1 (non-preemptible use, held and admitted ahead):\n"
              "QUEUE    LEVEL  TRES      USED  QUOTA  JOB  CHECK\n"
              "phys-b       2  gres/gpu     0      1    1  fits\n"
              "phys-b       2  cpu          0     16   16  fits\n"
              "physics      1  gres/gpu     2      4    1  fits\n"
              "physics      1  cpu         20     32   16  full: 4 missing\n"
              "Held by the quota of physics, level 1 above its queue phys-b: pool1/physics cpu 20/32.\n"
              "Jobs using the quota of pool1/physics:\n"
              "JOBID  USER   GPUS  STATE\n"
              "1      alice     2  running\n"
              "No job is ahead of it in its pools.\n");
}

TEST(CliLevels, WhyJsonGivesTheQueueThatHoldsAndEachQueueCheck) {
    const std::string out = run(cmd_why, why(4, true));
    EXPECT_EQ(member(out, {"job", "reason_text"}), R"("quota full: pool1/physics cpu 20/32")");
    EXPECT_EQ(member(out, {"job", "quota"}),
              R"([{"pool":"pool1","quota":8,"np_used":3,"reserved":0,"gpus":1,"needed":0,)"
              R"("held_by":{"account":"physics","level":1,"resource":"cpu","used":20,"quota":32},"queues":[)"
              R"({"account":"phys-b","level":2,"resource":"gpu","used":0,"quota":1,"job":1,"fits":true},)"
              R"({"account":"phys-b","level":2,"resource":"cpu","used":0,"quota":16,"job":16,"fits":true},)"
              R"({"account":"physics","level":1,"resource":"gpu","used":2,"quota":4,"job":1,"fits":true},)"
              R"({"account":"physics","level":1,"resource":"cpu","used":20,"quota":32,"job":16,"fits":false}]}])");
    // chem-a's job holds pool1's quota, not physics'.
    EXPECT_EQ(member(out, {"job", "quota_users"}), R"([{"job_id":1,"user":"alice","gpus":2,"state":"running"}])");
}

TEST(CliLevels, WhyShowsARunningJobsQueueAndItsDepartmentsStandingPerResource) {
    EXPECT_EQ(run(cmd_why, why(2)),
              "Job 2 (job2) of alice is RUNNING in pool1, tier low, 2 GPUs, started 2023-11-14T22:13:30.\n"
              "It runs inside the quota of pool1: no other pool may reclaim it; a higher tier on its own queue's "
              "line may preempt it, and a queue on another side may reclaim it only while its queues are over "
              "their bounds (below).\n"
              "Reclaim rank 1 (R6 victim order: 1 goes first).\n"
              "Its queue phys-a in pool1, and above it:\n"
              "QUEUE    LEVEL  TRES      USED  QUOTA  FAIRSHARE  STANDING\n"
              "phys-a       2  gres/gpu     4      3          3  over-fairshare\n"
              "phys-a       2  cpu         24     24         24  in-quota\n"
              "physics      1  gres/gpu     4      4          4  in-quota\n"
              "physics      1  cpu         24     32         40  in-quota\n");
    EXPECT_EQ(member(run(cmd_why, why(2, true)), {"job", "queues", "0"}),
              R"({"account":"phys-a","level":2,"resources":{)"
              R"("gpu":{"quota":3,"limit":null,"fairshare":3,"used":4,"np_used":2,"borrowed":1,"lent":0,"pending":0,"standing":"over_fairshare"},)"
              R"("cpu":{"quota":24,"limit":null,"fairshare":24,"used":24,"np_used":20,"borrowed":0,"lent":0,"pending":0,"standing":"in_quota"}}})");
}

// gpupool whatif --set physics@pool1.Quota=gres/gpu=4,cpu=40 --set phys-a.Weight=1
std::string whatif_out(bool as_json) {
    Options o;
    o.json = as_json;
    o.whatif_set = {"physics@pool1.Quota=gres/gpu=4,cpu=40", "phys-a.Weight=1"};
    std::string text = kTwoDepartments;
    for (const std::string &s : o.whatif_set) text = apply_setting(text, levels_config(text), s);
    Engine e = engine_of(kTwoDepartments);
    ClusterView v = two_department_view();
    std::ostringstream out, err;
    EXPECT_EQ(cmd_whatif(e, levels_config(text), v, o, out, err), 0) << err.str();
    return out.str();
}

TEST(CliLevels, WhatifRaisingADepartmentsCpuQuotaShowsEachQueueBeforeAndAfterAndTheJobThatWouldStart) {
    EXPECT_EQ(whatif_out(false),
              "What if physics@pool1.Quota=gres/gpu=4,cpu=40, phys-a.Weight=1 (figures now->with the change):\n"
              "POOL   CAPACITY  QUOTA  WEIGHT  MIN_RUNTIME  FAIRSHARE  BORROWABLE  BORROWED  LENT  RECLAIMABLE  HELD\n"
              "pool1         8      8       1         0:00          8           0         0     0            0  1->0\n"
              "\n"
              "Queues (accounts):\n"
              "POOL   QUEUE      TRES       QUOTA  LIMIT  WEIGHT  FAIRSHARE  USED  BORROWED  LENT  STANDING\n"
              "pool1  physics    gres/gpu       4      -       1          4     4         0     0  in-quota\n"
              "pool1  physics    cpu       32->40      -       1         40    24         0     0  in-quota\n"
              "pool1    phys-a   gres/gpu       3      -    2->1          3     4         1     0  over-fairshare\n"
              "pool1    phys-a   cpu           24      -    2->1         24    24         0     0  in-quota\n"
              "pool1    phys-b   gres/gpu       1      -       1          1     0         0     1  in-quota\n"
              "pool1    phys-b   cpu           16      -       1         16     0         0     0  in-quota\n"
              "pool1  chemistry  gres/gpu       4      -       1          4     1         0     0  in-quota\n"
              "pool1  chemistry  cpu           32      -       1         12     8         0     0  in-quota\n"
              "pool1    chem-a   gres/gpu       4      6       1          4     1         0     0  in-quota\n"
              "pool1    chem-a   cpu           32      -       1         12     8         0     0  in-quota\n"
              "\n"
              "Pending jobs that would start:\n"
              "JOBID  PARTITION  NAME  USER  TIER    GPUS  NOW\n"
              "4      pool1      job4  bob   normal     1  quota full: pool1/physics cpu 20/32\n"
              "\n"
              "Pending jobs that would no longer start: none.\n"
              "\n"
              "Running jobs that would become reclaimable: none.\n"
              "\n"
              "Running jobs that would no longer be reclaimable: none.\n"
              "\n"
              "Running jobs that would be preempted now: none.\n");
}

TEST(CliLevels, WhatifJsonGivesEachQueueOnBothSides) {
    const std::string out = whatif_out(true);
    EXPECT_EQ(member(out, {"queues", "0"}),
              R"({"pool":"pool1","account":"physics","level":1,)"
              R"("before":{"weight":1,"resources":{)"
              R"("gpu":{"quota":4,"limit":null,"fairshare":4,"used":4,"np_used":2,"borrowed":0,"lent":0,"pending":1,"standing":"in_quota"},)"
              R"("cpu":{"quota":32,"limit":null,"fairshare":40,"used":24,"np_used":20,"borrowed":0,"lent":0,"pending":16,"standing":"in_quota"}}},)"
              R"("after":{"weight":1,"resources":{)"
              R"("gpu":{"quota":4,"limit":null,"fairshare":4,"used":4,"np_used":2,"borrowed":0,"lent":0,"pending":1,"standing":"in_quota"},)"
              R"("cpu":{"quota":40,"limit":null,"fairshare":40,"used":24,"np_used":20,"borrowed":0,"lent":0,"pending":16,"standing":"in_quota"}}}})");
    EXPECT_EQ(member(out, {"queues", "1", "after", "weight"}), "1");
    EXPECT_EQ(member(out, {"queues", "1", "before", "weight"}), "2");
    EXPECT_EQ(member(out, {"would_start"}), "[4]");
}

TEST(CliLevels, WhatifSetChangesTheKeyOnTheAccountEntrysLine) {
    const std::string conf = kOsmoTiers + "Pool=a100 Quota=8\nPool=l40s Quota=4\n"
                             "Account=physics Pool=a100 Quota=gres/gpu=4 # dept\n"
                             "Account=physics Pool=l40s Quota=gres/gpu=2\n"
                             "Account=qcd Pool=* Quota=gres/gpu=1 Weight=3\n";
    const Config cfg = levels_config(conf);
    EXPECT_EQ(apply_setting(conf, cfg, "physics@l40s.Quota=gres/gpu=3"),
              kOsmoTiers + "Pool=a100 Quota=8\nPool=l40s Quota=4\n"
                        "Account=physics Pool=a100 Quota=gres/gpu=4 # dept\n"
                        "Account=physics Pool=l40s Quota=gres/gpu=3\n"
                        "Account=qcd Pool=* Quota=gres/gpu=1 Weight=3\n");
    // One entry: @POOL may be left out; a key the entry lacks is added.
    EXPECT_EQ(apply_setting(conf, cfg, "qcd.weight=1"), apply_setting(conf, cfg, "qcd@*.Weight=1"));
    EXPECT_NE(apply_setting(conf, cfg, "physics@a100.Limit=gres/gpu=6")
                  .find("Account=physics Pool=a100 Quota=gres/gpu=4 Limit=gres/gpu=6 # dept\n"),
              std::string::npos);
    auto error_of = [&](const std::string &setting) {
        try {
            apply_setting(conf, cfg, setting);
        } catch (const ConfigError &e) {
            return std::string(e.what());
        }
        return std::string("<no error>");
    };
    EXPECT_EQ(error_of("physics.Weight=2"),
              "--set 'physics.Weight=2': Account=physics has an entry for several pools: name one (physics@a100, "
              "physics@l40s)");
    EXPECT_EQ(error_of("qcd@a100.Weight=2"), "--set 'qcd@a100.Weight=2': no Account=qcd Pool=a100 in test.conf");
    EXPECT_EQ(error_of("qcd@*.MinRuntime=5"),
              "--set 'qcd@*.MinRuntime=5': unknown key 'MinRuntime' for Account=qcd (account keys: Pool, Quota, "
              "Weight, Rank, Limit, LendingLimit)");
}

const char kQueueSeries[] = R"(# HELP gpupool_queue_quota The account queue's quota (only where its quota gives the resource). By pool, account, level (1: just below the pool) and resource (gpu; cpu and mem, in MiB, where QuotaTRES counts them).
# TYPE gpupool_queue_quota gauge
gpupool_queue_quota{pool="pool1",account="physics",level="1",resource="gpu"} 4
gpupool_queue_quota{pool="pool1",account="physics",level="1",resource="cpu"} 32
gpupool_queue_quota{pool="pool1",account="phys-a",level="2",resource="gpu"} 3
gpupool_queue_quota{pool="pool1",account="phys-a",level="2",resource="cpu"} 24
gpupool_queue_quota{pool="pool1",account="phys-b",level="2",resource="gpu"} 1
gpupool_queue_quota{pool="pool1",account="phys-b",level="2",resource="cpu"} 16
gpupool_queue_quota{pool="pool1",account="chemistry",level="1",resource="gpu"} 4
gpupool_queue_quota{pool="pool1",account="chemistry",level="1",resource="cpu"} 32
gpupool_queue_quota{pool="pool1",account="chem-a",level="2",resource="gpu"} 4
gpupool_queue_quota{pool="pool1",account="chem-a",level="2",resource="cpu"} 32
# HELP gpupool_queue_fairshare The queue's fairshare: quota plus its share of what its siblings leave unused. By pool, account, level (1: just below the pool) and resource (gpu; cpu and mem, in MiB, where QuotaTRES counts them).
# TYPE gpupool_queue_fairshare gauge
gpupool_queue_fairshare{pool="pool1",account="physics",level="1",resource="gpu"} 4
gpupool_queue_fairshare{pool="pool1",account="physics",level="1",resource="cpu"} 40
gpupool_queue_fairshare{pool="pool1",account="phys-a",level="2",resource="gpu"} 3
gpupool_queue_fairshare{pool="pool1",account="phys-a",level="2",resource="cpu"} 24
gpupool_queue_fairshare{pool="pool1",account="phys-b",level="2",resource="gpu"} 1
gpupool_queue_fairshare{pool="pool1",account="phys-b",level="2",resource="cpu"} 16
gpupool_queue_fairshare{pool="pool1",account="chemistry",level="1",resource="gpu"} 4
gpupool_queue_fairshare{pool="pool1",account="chemistry",level="1",resource="cpu"} 12
gpupool_queue_fairshare{pool="pool1",account="chem-a",level="2",resource="gpu"} 4
gpupool_queue_fairshare{pool="pool1",account="chem-a",level="2",resource="cpu"} 12
# HELP gpupool_queue_used Held by the running jobs of the queue and the queues below it. By pool, account, level (1: just below the pool) and resource (gpu; cpu and mem, in MiB, where QuotaTRES counts them).
# TYPE gpupool_queue_used gauge
gpupool_queue_used{pool="pool1",account="physics",level="1",resource="gpu"} 4
gpupool_queue_used{pool="pool1",account="physics",level="1",resource="cpu"} 24
gpupool_queue_used{pool="pool1",account="phys-a",level="2",resource="gpu"} 4
gpupool_queue_used{pool="pool1",account="phys-a",level="2",resource="cpu"} 24
gpupool_queue_used{pool="pool1",account="phys-b",level="2",resource="gpu"} 0
gpupool_queue_used{pool="pool1",account="phys-b",level="2",resource="cpu"} 0
gpupool_queue_used{pool="pool1",account="chemistry",level="1",resource="gpu"} 1
gpupool_queue_used{pool="pool1",account="chemistry",level="1",resource="cpu"} 8
gpupool_queue_used{pool="pool1",account="chem-a",level="2",resource="gpu"} 1
gpupool_queue_used{pool="pool1",account="chem-a",level="2",resource="cpu"} 8
# HELP gpupool_queue_np_used Of that, held by non-preemptible jobs. By pool, account, level (1: just below the pool) and resource (gpu; cpu and mem, in MiB, where QuotaTRES counts them).
# TYPE gpupool_queue_np_used gauge
gpupool_queue_np_used{pool="pool1",account="physics",level="1",resource="gpu"} 2
gpupool_queue_np_used{pool="pool1",account="physics",level="1",resource="cpu"} 20
gpupool_queue_np_used{pool="pool1",account="phys-a",level="2",resource="gpu"} 2
gpupool_queue_np_used{pool="pool1",account="phys-a",level="2",resource="cpu"} 20
gpupool_queue_np_used{pool="pool1",account="phys-b",level="2",resource="gpu"} 0
gpupool_queue_np_used{pool="pool1",account="phys-b",level="2",resource="cpu"} 0
gpupool_queue_np_used{pool="pool1",account="chemistry",level="1",resource="gpu"} 1
gpupool_queue_np_used{pool="pool1",account="chemistry",level="1",resource="cpu"} 8
gpupool_queue_np_used{pool="pool1",account="chem-a",level="2",resource="gpu"} 1
gpupool_queue_np_used{pool="pool1",account="chem-a",level="2",resource="cpu"} 8
# HELP gpupool_queue_pending Asked for by the pending jobs of the queue and the queues below it. By pool, account, level (1: just below the pool) and resource (gpu; cpu and mem, in MiB, where QuotaTRES counts them).
# TYPE gpupool_queue_pending gauge
gpupool_queue_pending{pool="pool1",account="physics",level="1",resource="gpu"} 1
gpupool_queue_pending{pool="pool1",account="physics",level="1",resource="cpu"} 16
gpupool_queue_pending{pool="pool1",account="phys-a",level="2",resource="gpu"} 0
gpupool_queue_pending{pool="pool1",account="phys-a",level="2",resource="cpu"} 0
gpupool_queue_pending{pool="pool1",account="phys-b",level="2",resource="gpu"} 1
gpupool_queue_pending{pool="pool1",account="phys-b",level="2",resource="cpu"} 16
gpupool_queue_pending{pool="pool1",account="chemistry",level="1",resource="gpu"} 4
gpupool_queue_pending{pool="pool1",account="chemistry",level="1",resource="cpu"} 4
gpupool_queue_pending{pool="pool1",account="chem-a",level="2",resource="gpu"} 4
gpupool_queue_pending{pool="pool1",account="chem-a",level="2",resource="cpu"} 4
# HELP gpupool_queue_rank The account queue's rank among its siblings (higher: over-quota first, served first; 0 by default). By pool, account and level.
# TYPE gpupool_queue_rank gauge
gpupool_queue_rank{pool="pool1",account="physics",level="1"} 0
gpupool_queue_rank{pool="pool1",account="phys-a",level="2"} 0
gpupool_queue_rank{pool="pool1",account="phys-b",level="2"} 0
gpupool_queue_rank{pool="pool1",account="chemistry",level="1"} 0
gpupool_queue_rank{pool="pool1",account="chem-a",level="2"} 0
)";

TEST(CliLevels, TheExporterLabelsQueueSeriesByPoolAccountLevelAndResource) {
    Engine e = engine_of(kTwoDepartments);
    ClusterView v = two_department_view();
    WaitHistogram waits;
    const std::string m = cluster_metrics(e, v, waits);
    // After the pools' series, in this order.
    ASSERT_NE(m.find("# HELP gpupool_queue_quota"), std::string::npos);
    EXPECT_EQ(m.substr(m.find("# HELP gpupool_queue_quota")), kQueueSeries);
}

TEST(CliLevels, AFlatConfigurationShowsAndExportsNoQueue) {
    const std::string flat = kOsmoTiers + "QuotaTRES=gres/gpu,cpu\nPool=pool1 Quota=8\n";
    EXPECT_EQ(run(cmd_status, Options{}, flat).find("Queues"), std::string::npos);
    EXPECT_EQ(member(run(cmd_status, json(), flat), {"pools", "0", "queues"}), "<none>");
    EXPECT_EQ(member(run(cmd_why, why(4, true), flat), {"job", "quota", "0", "queues"}), "<none>");
    EXPECT_EQ(member(run(cmd_why, why(2, true), flat), {"job", "queues"}), "<none>");
    Engine e = engine_of(flat);
    ClusterView v = two_department_view();
    WaitHistogram waits;
    EXPECT_EQ(cluster_metrics(e, v, waits).find("gpupool_queue"), std::string::npos);
}

TEST(CliLevels, MemoryIsShownInSlurmsUnits) {
    EXPECT_EQ(amount_text(kMem, 768 * 1024), "768G");
    EXPECT_EQ(amount_text(kMem, 4ull << 20), "4T");
    EXPECT_EQ(amount_text(kMem, 1536), "1536M");
    EXPECT_EQ(amount_text(kMem, 0), "0");
    EXPECT_EQ(amount_text(kCpu, 2048), "2048");
}

// A queue's lent, as R3's between pools: the department's room beyond
// its projects' quotas first, then the projects' idle quota in order.
TEST(LentByQueues, SiblingsLendTheirIdleQuotaInOrderAfterTheParentsUnassignedQuota) {
    std::vector<QueueSpec> q(4);
    q[0].name = "pool";
    q[0].quota.set(kGpu, 10);
    for (size_t i = 1; i < 4; ++i) q[i].parent = 0;
    q[1].quota.set(kGpu, 3);  // holds 6: 3 over
    q[2].quota.set(kGpu, 2);  // holds 0: lends 1 of 2, after the pool's 2 unassigned
    q[3].quota.set(kGpu, 3);  // holds 1: its idle 2 not needed
    std::vector<Amounts> alloc{{7, 0, 0}, {6, 0, 0}, {0, 0, 0}, {1, 0, 0}};
    std::vector<Amounts> lent = lent_by_queues(q, alloc, Amounts{});
    EXPECT_EQ(lent[1][kGpu], 0u);
    EXPECT_EQ(lent[2][kGpu], 1u);
    EXPECT_EQ(lent[3][kGpu], 0u);
    // CPUs: the root gives none, so the pool's capacity (12) bounds it.
    q[1].quota.set(kCpu, 4);
    q[2].quota.set(kCpu, 4);
    alloc = {{12, 12, 0}, {6, 10, 0}, {0, 0, 0}, {1, 2, 0}};  // q3 has no CPU quota: its 2 are borrowed
    lent = lent_by_queues(q, alloc, Amounts{0, 12, 0});
    EXPECT_EQ(lent[2][kCpu], 4u);  // 6 + 2 over, 4 unassigned
    EXPECT_EQ(lent[3][kCpu], 0u);
}

// QuotaTRES counts memory, not CPUs: the queues show GPUs and memory, in
// Slurm's units.  phys-a gives no GPU quota ("-"); phys-b has no entry:
// its job draws on physics.
TEST(CliLevels, StatusShowsMemoryInSlurmsUnitsAndOnlyTheResourcesQuotaTresCounts) {
    const std::string conf = kOsmoTiers +
                             "QuotaTRES=gres/gpu,mem\n"
                             "Pool=pool1 Quota=8\n"
                             "Account=physics Pool=pool1 Quota=gres/gpu=4,mem=256G\n"
                             "Account=phys-a  Pool=pool1 Quota=mem=128G\n";
    Engine e = engine_of(conf);
    ClusterView v = two_department_view();
    for (SnapNode &n : v.snap.nodes) n.mem_mb = 512 * 1024;
    for (SnapJob &j : v.snap.jobs) j.mem_mb = j.id == 1 ? 200 * 1024 : 1024;
    std::ostringstream out, err;
    ASSERT_EQ(cmd_status(e, v, Options{}, out, err), 0) << err.str();
    const std::string text = out.str();
    EXPECT_EQ(text.substr(text.find("\nQueues"), text.find("\nPOOL   USED") - text.find("\nQueues")),
              "\nQueues of pool1 (accounts):\n"
              "QUEUE     TRES      QUOTA  LIMIT  WEIGHT  FAIRSHARE  USED  NP_USED  BORROWED  LENT  PENDING  STANDING\n"
              "physics   gres/gpu      4      -       1          4     4        2         0     0        1  in-quota\n"
              "physics   mem        256G      -       1       202G  201G     200G         0     0       1G  in-quota\n"
              "  phys-a  gres/gpu      -      -       1          3     4        2         -     -        0  -\n"
              "  phys-a  mem        128G      -       1       201G  201G     200G       73G     0        0  over-quota\n");
}

namespace {
void collect_keys(json_t *j, std::set<std::string> &keys) {
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) json_object_foreach(j, k, v) {
            keys.insert(k);
            if (std::string(k) != "pool_position") collect_keys(v, keys);  // its keys are pool names
        }
    if (json_is_array(j)) json_array_foreach(j, i, v) collect_keys(v, keys);
}

// gpupool(1) as plain text: no font changes, "\-" as "-".
std::string man_page() {
    const char *d = std::getenv("srcdir");
    std::ifstream in(std::string(d ? d : ".") + "/doc/gpupool.1");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string man = std::regex_replace(ss.str(), std::regex(R"(\\f[BIRP])"), "");
    return std::regex_replace(man, std::regex(R"(\\-)"), "-");
}

bool documented(const std::string &man, const std::string &word) {
    return std::regex_search(man, std::regex("(^|[^a-z_])" + word + "([^a-z_]|$)"));
}
}  // namespace

TEST(CliLevels, GpupoolOneDocumentsEveryQueueFieldAndSeries) {
    std::set<std::string> keys;
    for (const std::string &out : {run(cmd_status, json()), run(cmd_why, why(4, true)), run(cmd_why, why(2, true)),
                                   whatif_out(true)}) {
        json_error_t err;
        JsonPtr root(json_loads(out.c_str(), 0, &err));
        ASSERT_TRUE(root) << err.text;
        collect_keys(root.get(), keys);
    }
    for (const char *k : {"queues", "held_by", "np_used", "standing", "lent", "fits", "level", "account"})
        EXPECT_TRUE(keys.count(k)) << k;
    const std::string man = man_page();
    ASSERT_NE(man, "");
    for (const std::string &k : keys) EXPECT_TRUE(documented(man, k)) << "gpupool(1) does not document " << k;
    Engine e = engine_of(kTwoDepartments);
    ClusterView v = two_department_view();
    WaitHistogram waits;
    const std::string m = cluster_metrics(e, v, waits);
    std::regex type(R"(# TYPE (gpupool_queue_[a-z_]+) )");
    size_t series = 0;
    for (std::sregex_iterator it(m.begin(), m.end(), type), end; it != end; ++it, ++series)
        EXPECT_TRUE(documented(man, (*it)[1])) << "gpupool(1) does not document " << (*it)[1];
    EXPECT_EQ(series, 6u);
    for (const char *label : {"account", "level", "resource"}) EXPECT_TRUE(documented(man, label)) << label;
}

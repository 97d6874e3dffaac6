// The gpupool command without Slurm: its text forms of Slurm's strings,
// and status/queue/why over fixed cluster views, JSON fields and tables.
#include <gtest/gtest.h>
#include <jansson.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "metrics.hpp"
#include "settings.hpp"
#include "slurm_text.hpp"
#include "test_helpers.hpp"
#include "json_ptr.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

using Json = JsonPtr;

Json parse(const std::string &text) {
    json_error_t err;
    Json j(json_loads(text.c_str(), 0, &err));
    EXPECT_TRUE(j) << err.text << "\n" << text;
    return j;
}

int64_t int_at(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    EXPECT_TRUE(json_is_integer(v)) << key;
    return json_integer_value(v);
}

std::string str_at(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    EXPECT_TRUE(json_is_string(v)) << key;
    return json_is_string(v) ? json_string_value(v) : "";
}

json_t *find_by(json_t *arr, const char *key, const std::string &value) {
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        json_t *v = json_object_get(o, key);
        if (json_is_string(v) && value == json_string_value(v)) return o;
    }
    return nullptr;
}

void meta(ClusterView &v, uint32_t id, const std::string &name, const std::string &user, const std::string &part,
          const std::string &state, int64_t submit) {
    JobMeta m;
    m.name = name;
    m.user = user;
    m.partition = part;
    m.state = state;
    m.submit_time = submit;
    v.meta[id] = m;
}

// OSMO "Borrowing and Reclaiming" as slurmctld would show it.
ClusterView osmo_view() {
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0 + 7;
    v.history.available = true;
    v.history.path = "state.json";
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "low", 1, T0 + 1));
    v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    v.snap.add_job(running(3, "pool1", "low", 1, T0 + 5, T0 + 3));
    meta(v, 1, "wf1", "alice", "pool1", "RUNNING", T0);
    meta(v, 2, "wf2", "alice", "pool1", "RUNNING", T0 + 1);
    meta(v, 4, "wf4", "bob", "pool2", "RUNNING", T0 + 2);
    meta(v, 3, "wf3", "alice", "pool1", "RUNNING", T0 + 3);
    return v;
}
const std::string kTwoPools = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";
}  // namespace

TEST(SlurmText, TresCount) {
    EXPECT_EQ(tres_count("cpu=2,mem=1G,node=1,billing=2,gres/gpu=3", "gres/gpu"), 3u);
    EXPECT_EQ(tres_count("cpu=2,gres/gpu:a100=2,gres/gpu=2", "gres/gpu:a100"), 2u);
    EXPECT_FALSE(tres_count("cpu=2,gres/gpu:a100=2", "gres/gpu"));
    EXPECT_FALSE(tres_count("", "gres/gpu"));
    EXPECT_EQ(tres_count("mem=2G", "mem"), 2ull << 30);
}

// --cpus-per-gpu as 22.05's and later sbatch send it, and DefCpuPerGPU as
// cons_tres writes it into the job once it tested it.
TEST(SlurmText, PerGresValueReadsEveryFormSlurmWrites) {
    EXPECT_EQ(per_gres_value("gres:gpu:2", "gpu"), 2u);
    EXPECT_EQ(per_gres_value("gres/gpu:3", "gpu"), 3u);
    EXPECT_EQ(per_gres_value("gpu:4", "gpu"), 4u);
    EXPECT_EQ(per_gres_value("gres/gpu:a100:5", "gpu"), 5u);
    EXPECT_EQ(per_gres_value("gres/shard:6", "gpu"), 0u);
    EXPECT_EQ(per_gres_value("gpu", "gpu"), 0u);
    EXPECT_EQ(per_gres_value("", "gpu"), 0u);
}

// A node's gres_used as each release writes it: a GPU with shards or MPS
// in use counts once; a type printed "(null)" (23.11-25.11) is no count.
// A reservation's cores on one node, as slurmctld sends them (core_id).
TEST(SlurmText, ReservationCoresCountsListsAndRanges) {
    EXPECT_EQ(reservation_cores("0"), 1u);
    EXPECT_EQ(reservation_cores("0-1"), 2u);
    EXPECT_EQ(reservation_cores("0-1,3,6-9"), 7u);
    EXPECT_EQ(reservation_cores(""), 0u);
    EXPECT_EQ(reservation_cores("x,2"), 1u) << "what is no number counts none";
    EXPECT_EQ(reservation_cores("3-1"), 0u);
    EXPECT_EQ(reservation_cores("0-3,2-5"), 6u) << "a core listed twice counts once";
    std::vector<bool> cores;
    add_reservation_cores("0-1", cores);
    add_reservation_cores("1,3", cores);  // another reservation, on core 1 too
    EXPECT_EQ(cores, (std::vector<bool>{true, true, false, true}));
}

TEST(SlurmText, SharedGresGpusInEveryReleasesForm) {
    EXPECT_EQ(shared_gres_gpus("gpu:1(IDX:1),shard:3(2/2,0/2,1/2,0/2)"), 2u);
    EXPECT_EQ(shared_gres_gpus("gpu:(null):1(IDX:1),shard:(null):1(1/2,0/2,0/2,0/2)"), 1u);
    EXPECT_EQ(shared_gres_gpus("gpu:tesla:0(IDX:N/A),shard:tesla:3(0/2,1/2,2/2,0/2),mps:tesla:50(0/100,50/100,0/100,0/100)"), 2u);
    EXPECT_EQ(shared_gres_gpus("gpu:4(IDX:0-3),shard:0(-/2,-/2,-/2,-/2)"), 0u);
    EXPECT_EQ(shared_gres_gpus("gpu:4,shard:(null):1(IDX:0)"), 0u);
    EXPECT_EQ(shared_gres_gpus(""), 0u);
    // Each type's GPUs are a group of their own: position 0 of each is another GPU.
    EXPECT_EQ(shared_gres_gpus("shard:a100:1(1/2,0/2),shard:v100:1(1/2,0/2),mps:a100:10(10/100,0/100)"), 2u);
}

TEST(SlurmText, AJobsMemoryIsReadInMebibytesAsSlurmctldCountsIt) {
    EXPECT_EQ(tres_mem_mb("cpu=2,mem=4G,node=1,billing=2"), 4096u);
    EXPECT_EQ(tres_mem_mb("cpu=1,mem=1000M,node=1"), 1000u);
    EXPECT_EQ(tres_mem_mb("mem=2T"), 2u << 20);
    EXPECT_EQ(tres_mem_mb("mem=512"), 512u);
    EXPECT_FALSE(tres_mem_mb("cpu=2,node=1"));
    EXPECT_FALSE(tres_mem_mb("mem=1.5G"));
}

TEST(SlurmText, GresCount) {
    EXPECT_EQ(gres_count("gpu:4", "gpu", ""), 4u);
    EXPECT_EQ(gres_count("gpu:a100:2(S:0-1),gpu:v100:1", "gpu", ""), 3u);
    EXPECT_EQ(gres_count("gpu:a100:2(S:0-1),gpu:v100:1", "gpu", "v100"), 1u);
    EXPECT_EQ(gres_count("gres:gpu:2", "gpu", ""), 2u);
    EXPECT_EQ(gres_count("gres/gpu:2", "gpu", ""), 2u);
    EXPECT_EQ(gres_count("gpu", "gpu", ""), 1u);
    EXPECT_EQ(gres_count("mps:100,gpu:1", "gpu", ""), 1u);
    EXPECT_FALSE(gres_count("mps:100", "gpu", ""));
    EXPECT_FALSE(gres_count("(null)", "gpu", ""));
    // A node's gres_used on 23.11-25.11: an untyped GPU's type is "(null)".
    EXPECT_EQ(gres_count("gpu:(null):2(IDX:0-1),shard:(null):0(0/2,0/2,0/2,0/2)", "gpu", ""), 2u);
    EXPECT_EQ(gres_count("gpu:(null):0(IDX:N/A)", "gpu", ""), 0u);
    // Of no type only (a pending job's GPUs a typed QuotaTRES counts too).
    EXPECT_EQ(gres_count_untyped("gres/gpu:2", "gpu"), 2u);
    EXPECT_EQ(gres_count_untyped("gres:gpu:a:1,gres:gpu:2", "gpu"), 2u);
    EXPECT_EQ(gres_count_untyped("gpu:(null):2(IDX:0-1)", "gpu"), 2u);
    EXPECT_FALSE(gres_count_untyped("gres/gpu:a:1", "gpu"));
    EXPECT_FALSE(gres_count_untyped("gres/gpu:a100", "gpu"));
    EXPECT_EQ(gres_count_by_type("gres/gpu:a100:2,gres/gpu:1,gres/gpu:v100:1,gres/mps:100", "gpu"),
              (std::map<std::string, uint64_t>{{"", 1}, {"a100", 2}, {"v100", 1}}));
    std::string n, t;
    split_quota_tres("gres/gpu:a100", n, t);
    EXPECT_EQ(n, "gpu");
    EXPECT_EQ(t, "a100");
    split_quota_tres("gres/gpu", n, t);
    EXPECT_EQ(n, "gpu");
    EXPECT_EQ(t, "");
}

// Slurm's reasons for an association's, QOS's or partition's limit (22.05's texts).
TEST(SlurmText, LimitReasons) {
    for (const char *r : {"QOSMaxGRESPerUser", "AssocGrpGRES", "AssocMaxJobsLimit", "QOSGrpCpuLimit",
                          "AssociationJobLimit", "AssociationResourceLimit", "QOSJobLimit", "QOSTimeLimit",
                          "QOSUsageThreshold", "AssocGrpSubmitJobsLimit", "MaxGRESPerAccount", "MaxJobsPerAccount",
                          "PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig", "PartitionDown",
                          "PartitionInactive", "MaxMemPerLimit"})
        EXPECT_TRUE(limit_reason(r)) << r;
    for (const char *r : {"QOSNotAllowed", "InvalidQOS", "InvalidAccount", "Resources", "Priority", "Dependency",
                          "JobHeldUser", "None", "BeginTime", ""})
        EXPECT_FALSE(limit_reason(r)) << r;
}

// A dependency waits as the plugins judge it: an unfulfilled entry while
// its job is pending, or started and not ended for every kind but `after`;
// a failed one for good; with '?', until one entry is met.
TEST(SlurmText, DependencyWaits) {
    const std::map<std::pair<uint32_t, int64_t>, DependedState> states = {
        {{10, -1}, DependedState::Pending}, {{11, -1}, DependedState::Started}, {{12, -1}, DependedState::Ended},
        {{20, 3}, DependedState::Pending},  {{20, -2}, DependedState::Started},
    };
    auto state_of = [&](uint32_t id, int64_t task) {
        auto it = states.find({id, task});
        return it != states.end() ? it->second : DependedState::Ended;
    };
    struct Row {
        const char *sentence, *dependency;
        bool waits;
    };
    const std::vector<Row> rows = {
        {"afterok on a pending job", "afterok:10(unfulfilled)", true},
        {"afterok on a running job", "afterok:11(unfulfilled)", true},
        {"after on a running job: met", "after:11(unfulfilled)", false},
        {"after with minutes on a pending job", "after:10+5(unfulfilled)", true},
        {"after with minutes on a running job: until Slurm says", "after:11+5(unfulfilled)", true},
        {"afterany on an ended job", "afterany:12(unfulfilled)", false},
        {"on a job no longer known", "afterok:99(unfulfilled)", false},
        {"fulfilled already", "afterok:10(fulfilled)", false},
        {"failed: never met", "afterok:10(failed)", true},
        {"'?' with one failed and one still waiting", "afterok:12(failed)?afterok:10(unfulfilled)", true},
        {"one of two still waits", "afterok:12(unfulfilled),afterok:10(unfulfilled)", true},
        {"'?': one met is enough", "afterok:12(unfulfilled)?afterok:10(unfulfilled)", false},
        {"'?': all waiting", "afterok:11(unfulfilled)?afterok:10(unfulfilled)", true},
        {"an array task still pending", "afterok:20_3(unfulfilled)", true},
        {"a whole array with a task running", "afterok:20_*(unfulfilled)", true},
        {"singleton: waits until Slurm says", "singleton(unfulfilled)", true},
        {"singleton met", "singleton(fulfilled)", false},
        {"none", "", false},
    };
    for (const Row &r : rows) {
        SCOPED_TRACE(r.sentence);
        EXPECT_EQ(dependency_waits(r.dependency, state_of), r.waits);
    }
}

// A pending job's GPUs where Slurm does not account them, as slurmctld's
// total_gres: the largest of its requests, not their sum.
TEST(SlurmText, GresAskTotal) {
    struct Row {
        const char *sentence;
        GresAsk ask;
        uint64_t total;
    };
    auto ask = [](std::optional<uint64_t> job, std::optional<uint64_t> node, std::optional<uint64_t> socket,
                  std::optional<uint64_t> task, uint64_t nodes, uint64_t tasks, uint64_t sockets,
                  uint64_t tasks_per_socket) {
        GresAsk a;
        a.per_job = job, a.per_node = node, a.per_socket = socket, a.per_task = task;
        a.nodes = nodes, a.tasks = tasks, a.sockets_per_node = sockets, a.tasks_per_socket = tasks_per_socket;
        return a;
    };
    const std::nullopt_t no = std::nullopt;
    const Row rows[] = {
        {"--gpus=4 counts 4", ask(4, no, no, no, 1, 1, 0, 0), 4},
        {"--gres=gpu:2 -N 3 counts 6", ask(no, 2, no, no, 3, 3, 0, 0), 6},
        {"--gpus=4 --gpus-per-node=2 -N 2 counts 4, not 8", ask(4, 2, no, no, 2, 2, 0, 0), 4},
        {"--gpus-per-task=1 -n 6 counts 6", ask(no, no, no, 1, 1, 6, 0, 0), 6},
        {"--gpus-per-socket=2 --sockets-per-node=2 -N 2 counts 8", ask(no, no, 2, no, 2, 2, 2, 0), 8},
        {"--gpus-per-socket=1 -n 8 --ntasks-per-socket=2 counts 4", ask(no, no, 1, no, 0, 8, 0, 2), 4},
        {"--gpus-per-socket=1 alone counts 1", ask(no, no, 1, no, 0, 0, 0, 0), 1},
        {"no GPU request counts 0", ask(no, no, no, no, 2, 4, 2, 0), 0},
    };
    for (const Row &r : rows) EXPECT_EQ(gres_ask_total(r.ask), r.total) << r.sentence;
}

TEST(SlurmText, Duration) {
    EXPECT_EQ(slurm_duration(0), "0:00");
    EXPECT_EQ(slurm_duration(65), "1:05");
    EXPECT_EQ(slurm_duration(3 * 3600 + 2 * 60 + 1), "3:02:01");
    EXPECT_EQ(slurm_duration(2 * 86400 + 3600), "2-01:00:00");
    EXPECT_EQ(slurm_duration(-5), "0:00");
}

// Acceptance: pool1 used 3, quota 2, borrowed 1 from pool2; pool2 lent 1
// to pool1; in JSON and in the table.
TEST(CliStatus, OsmoBorrowingJson) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = osmo_view();
    std::ostringstream out, err;
    Options o;
    o.json = true;
    ASSERT_EQ(cmd_status(e, v, o, out, err), 0) << err.str();
    Json root = parse(out.str());
    EXPECT_EQ(str_at(root.get(), "command"), "status");
    EXPECT_EQ(int_at(root.get(), "version"), kJsonVersion);
    json_t *pools = json_object_get(root.get(), "pools");
    json_t *p1 = find_by(pools, "name", "pool1");
    json_t *p2 = find_by(pools, "name", "pool2");
    ASSERT_TRUE(p1 && p2);
    EXPECT_EQ(int_at(p1, "used"), 3);
    EXPECT_EQ(int_at(p1, "quota"), 2);
    EXPECT_EQ(int_at(p1, "borrowed"), 1);
    json_t *from = json_object_get(p1, "borrowed_from");
    ASSERT_EQ(json_array_size(from), 1u);
    EXPECT_EQ(str_at(json_array_get(from, 0), "pool"), "pool2");
    EXPECT_EQ(int_at(json_array_get(from, 0), "gpus"), 1);
    EXPECT_EQ(int_at(p2, "lent"), 1);
    json_t *to = json_object_get(p2, "lent_to");
    ASSERT_EQ(json_array_size(to), 1u);
    EXPECT_EQ(str_at(json_array_get(to, 0), "pool"), "pool1");
    EXPECT_EQ(int_at(json_array_get(to, 0), "gpus"), 1);
    EXPECT_EQ(int_at(p2, "reclaimable"), 1);
    EXPECT_EQ(int_at(p1, "np_used"), 1);
    EXPECT_EQ(int_at(p1, "p_used"), 2);
    EXPECT_EQ(int_at(p1, "p_in_quota"), 1);
    EXPECT_EQ(int_at(p1, "capacity"), 4);
    EXPECT_TRUE(json_is_true(json_object_get(p1, "shared")));
    EXPECT_TRUE(json_is_integer(json_object_get(p1, "fairshare")));
    json_t *sets = json_object_get(root.get(), "node_sets");
    ASSERT_EQ(json_array_size(sets), 1u);
    EXPECT_EQ(int_at(json_array_get(sets, 0), "capacity"), 4);
    EXPECT_EQ(json_array_size(json_object_get(json_array_get(sets, 0), "pools")), 2u);
}

TEST(CliStatus, OsmoBorrowingTable) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = osmo_view();
    std::ostringstream out, err;
    ASSERT_EQ(cmd_status(e, v, Options{}, out, err), 0) << err.str();
    const std::string t = out.str();
    // The borrowing table: POOL USED QUOTA BORROWED FROM LENT TO RECLAIMABLE.
    EXPECT_NE(t.find("\nPOOL   USED  QUOTA  BORROWED  FROM     LENT  TO       RECLAIMABLE\n"
                     "pool1     3      2         1  pool2:1     0  -                  0\n"
                     "pool2     1      2         0  -           1  pool1:1            1\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("\npool1        4*      2        1       2           1           1          0          3"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("* shared"), std::string::npos);
}

// Placement=: the pool's strategy and where its free GPUs are.  pool1
// packs over two 8-GPU nodes with 3 and 2 GPUs free (5 in all, at most 3 on
// one node: fragmented for a 4-GPU job); pool2 (LLN=YES) spreads over a
// whole free node.  Without any Placement=, no such table.
TEST(CliStatus, PlacementShowsTheStrategyAndWhereFreeGpusAre) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=8 Placement=pack\nPool=pool2 Quota=8\n");
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0;
    v.snap = cluster(3, 8);
    partition(v.snap, "pool1", 0, 1);
    partition(v.snap, "pool2", 2, 2);
    v.snap.partitions.back().lln = true;
    v.snap.nodes[0].free_gpus = 3;
    v.snap.nodes[1].free_gpus = 2;
    v.snap.nodes[2].free_gpus = 8;
    std::ostringstream out, err, js;
    ASSERT_EQ(cmd_status(e, v, Options{}, out, err), 0) << err.str();
    EXPECT_NE(out.str().find("\nPOOL   PLACEMENT  FREE_GPUS  LARGEST_FREE_ON_A_NODE  WHOLE_FREE_NODES\n"
                             "pool1  pack               5                       3                 0\n"
                             "pool2  spread             8                       8                 1\n"),
              std::string::npos)
        << out.str();
    Options o;
    o.json = true;
    ASSERT_EQ(cmd_status(e, v, o, js, err), 0) << err.str();
    JsonPtr root(json_loads(js.str().c_str(), 0, nullptr));
    json_t *p1 = json_object_get(json_array_get(json_object_get(root.get(), "pools"), 0), "placement");
    EXPECT_EQ(str_at(p1, "strategy"), "pack");
    EXPECT_EQ(int_at(p1, "free_gpus_on_nodes"), 5);
    EXPECT_EQ(int_at(p1, "largest_free_on_a_node"), 3);
    EXPECT_EQ(int_at(p1, "whole_free_nodes"), 0);
    Engine plain = engine_with(kTwoPools);
    std::ostringstream none;
    ASSERT_EQ(cmd_status(plain, osmo_view(), Options{}, none, err), 0);
    EXPECT_EQ(none.str().find("PLACEMENT"), std::string::npos);
}

// Without the usage history, what depends on it is unknown (null), the
// rest is still there.
TEST(CliStatus, UnknownUsageWithoutHistory) {
    Engine e = engine_with(
        "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nUsageWeight=1\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    ClusterView v = osmo_view();
    v.history.available = false;
    v.history.error = "state.json: Permission denied";
    std::ostringstream out, err;
    Options o;
    o.json = true;
    ASSERT_EQ(cmd_status(e, v, o, out, err), 0);
    Json root = parse(out.str());
    json_t *p1 = find_by(json_object_get(root.get(), "pools"), "name", "pool1");
    EXPECT_TRUE(json_is_null(json_object_get(p1, "fairshare")));
    EXPECT_TRUE(json_is_null(json_object_get(p1, "decayed_usage")));
    EXPECT_EQ(int_at(p1, "borrowed"), 1);
    json_t *h = json_object_get(root.get(), "usage_history");
    EXPECT_TRUE(json_is_false(json_object_get(h, "available")));
    EXPECT_EQ(str_at(h, "error"), "state.json: Permission denied");

    std::ostringstream text;
    ASSERT_EQ(cmd_status(e, v, Options{}, text, err), 0);
    EXPECT_NE(text.str().find("  ?  "), std::string::npos) << text.str();
}

// priority/gpupool's passes (gpupool_stats.json): the last one, the count,
// mean and longest, in a line after the tables and in JSON; where the
// file cannot be read, no line and null figures.
TEST(CliStatus, PluginPasses) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = osmo_view();
    v.passes.path = "/state/gpupool_stats.json";
    v.passes.available = true;
    PassTime t;
    t.total = 2000;
    v.passes.stats.note(t, T0 - 3600);
    t.total = 41000;
    v.passes.stats.note(t, T0 - 10);
    t.total = 3150;
    v.passes.stats.note(t, T0 + 5);
    v.passes.stats.written = T0 + 6;
    std::ostringstream out, err;
    ASSERT_EQ(cmd_status(e, v, Options{}, out, err), 0) << err.str();
    const std::string t_out = out.str();
    const std::string line = "\npriority/gpupool: last pass 3.1 ms, ended " + slurm_time(T0 + 5) + "; 3 passes since " +
                             slurm_time(T0 - 3600) + ", mean 15.4 ms, longest 41.0 ms\n";
    EXPECT_EQ(t_out.substr(t_out.size() - std::min(t_out.size(), line.size())), line) << t_out;

    Options o;
    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_status(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *pp = json_object_get(root.get(), "plugin_passes");
    EXPECT_TRUE(json_is_true(json_object_get(pp, "available")));
    EXPECT_EQ(str_at(pp, "path"), "/state/gpupool_stats.json");
    EXPECT_TRUE(json_is_null(json_object_get(pp, "error")));
    EXPECT_EQ(int_at(pp, "passes"), 3);
    EXPECT_EQ(int_at(pp, "since"), T0 - 3600);
    EXPECT_EQ(int_at(pp, "last_end"), T0 + 5);
    EXPECT_EQ(int_at(pp, "written_at"), T0 + 6);
    EXPECT_DOUBLE_EQ(json_real_value(json_object_get(pp, "last_seconds")), 0.00315);
    EXPECT_DOUBLE_EQ(json_real_value(json_object_get(pp, "max_seconds")), 0.041);
    EXPECT_DOUBLE_EQ(json_real_value(json_object_get(pp, "mean_seconds")), 0.01538333333333333);

    v.passes = PluginPasses{};
    v.passes.path = "/state/gpupool_stats.json";
    v.passes.error = "/state/gpupool_stats.json: Permission denied";
    std::ostringstream out2, js2;
    ASSERT_EQ(cmd_status(e, v, Options{}, out2, err), 0);
    EXPECT_EQ(out2.str().find("priority/gpupool"), std::string::npos) << out2.str();
    ASSERT_EQ(cmd_status(e, v, o, js2, err), 0);
    Json root2 = parse(js2.str());
    pp = json_object_get(root2.get(), "plugin_passes");
    EXPECT_TRUE(json_is_false(json_object_get(pp, "available")));
    EXPECT_EQ(str_at(pp, "error"), "/state/gpupool_stats.json: Permission denied");
    for (const char *k : {"passes", "since", "last_end", "written_at", "last_seconds", "max_seconds", "mean_seconds"})
        EXPECT_TRUE(json_is_null(json_object_get(pp, k))) << k;
    EXPECT_EQ(err.str(), "");
}

TEST(CliStatus, UnknownPoolIsAnError) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = osmo_view();
    std::ostringstream out, err;
    Options o;
    o.pool = "nosuch";
    EXPECT_EQ(cmd_status(e, v, o, out, err), 1);
    EXPECT_EQ(err.str(), "gpupool: no pool nosuch in test.conf\n");
}

// Positions, priorities and reasons of the OSMO queue example.
TEST(CliQueue, OrderPositionsAndPriorities) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    ClusterView v;
    v.conf_path = "test.conf";
    v.now = T0 + 100;
    v.history.available = true;
    v.snap = cluster(2);
    partition(v.snap, "pool3", 0, 1);
    v.snap.add_job(running(1, "pool3", "normal", 1, T0));
    v.snap.add_job(running(2, "pool3", "normal", 1, T0 + 1));
    v.snap.add_job(pending(3, "pool3", "low", 1, T0 + 10));
    v.snap.add_job(pending(4, "pool3", "high", 1, T0 + 11));
    v.snap.add_job(pending(5, "pool3", "normal", 1, T0 + 12));
    v.snap.add_job(pending(6, "pool3", "high", 1, T0 + 13));
    for (uint32_t id = 3; id <= 6; ++id) meta(v, id, "j" + std::to_string(id), "carol", "pool3", "PENDING", T0 + 7 + id);
    std::ostringstream out, err;
    Options o;
    o.json = true;
    ASSERT_EQ(cmd_queue(e, v, o, out, err), 0) << err.str();
    Json root = parse(out.str());
    json_t *jobs = json_object_get(root.get(), "jobs");
    ASSERT_EQ(json_array_size(jobs), 4u);
    const int64_t order[] = {4, 6, 5, 3};
    for (size_t i = 0; i < 4; ++i) {
        json_t *j = json_array_get(jobs, i);
        EXPECT_EQ(int_at(j, "job_id"), order[i]);
        EXPECT_EQ(int_at(j, "position"), int64_t(i + 1));
        EXPECT_EQ(int_at(json_object_get(j, "pool_position"), "pool3"), int64_t(i + 1));
        // Priorities as the plugin sets them: 0 when held, else its rank.
        const PendingResult *r = e.pending_result(static_cast<uint32_t>(order[i]));
        EXPECT_EQ(int_at(j, "priority"), r->priority);
    }
    EXPECT_EQ(str_at(json_array_get(jobs, 0), "reason"), "quota_full");
    EXPECT_EQ(str_at(json_array_get(jobs, 0), "reason_text"), "quota full: pool3 2/2");
    EXPECT_EQ(str_at(json_array_get(jobs, 0), "admission"), "held");
    EXPECT_EQ(str_at(json_array_get(jobs, 3), "reason"), "waiting_for_gpus");
    EXPECT_EQ(str_at(json_array_get(jobs, 3), "admission"), "free");
    EXPECT_EQ(int_at(json_array_get(jobs, 3), "wait"), 100 - 10);

    // -u and -p filter; an unknown user shows nothing.
    std::ostringstream text;
    Options t;
    t.user = "carol";
    ASSERT_EQ(cmd_queue(e, v, t, text, err), 0);
    EXPECT_NE(text.str().find("POS  POOL_POS  JOBID"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("quota full: pool3 2/2"), std::string::npos);
    std::ostringstream none;
    t.user = "dave";
    ASSERT_EQ(cmd_queue(e, v, t, none, err), 0);
    const std::string header_only = none.str();
    EXPECT_EQ(std::count(header_only.begin(), header_only.end(), '\n'), 1) << header_only;
}

// slurmctld's priorities in another order than this pass: said on stderr
// and in order_agrees.
TEST(CliQueue, SaysWhenSlurmctldOrdersOtherwise) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    ClusterView v;
    v.now = T0 + 100;
    v.history.available = true;
    v.snap = cluster(2);
    partition(v.snap, "pool3", 0, 1);
    v.snap.add_job(pending(3, "pool3", "low", 1, T0 + 10));
    v.snap.add_job(pending(4, "pool3", "low", 1, T0 + 11));
    meta(v, 3, "a", "u", "pool3", "PENDING", T0 + 10);
    meta(v, 4, "b", "u", "pool3", "PENDING", T0 + 11);
    v.meta[3].slurm_priority = 10;
    v.meta[4].slurm_priority = 20;  // slurmctld puts 4 first
    std::ostringstream out, err;
    Options o;
    o.json = true;
    ASSERT_EQ(cmd_queue(e, v, o, out, err), 0);
    Json root = parse(out.str());
    EXPECT_TRUE(json_is_false(json_object_get(root.get(), "order_agrees")));
    EXPECT_NE(err.str().find("ranks job(s) 4 differently"), std::string::npos) << err.str();

    v.meta[3].slurm_priority = 30;
    std::ostringstream out2, err2;
    ASSERT_EQ(cmd_queue(e, v, o, out2, err2), 0);
    EXPECT_TRUE(json_is_true(json_object_get(parse(out2.str()).get(), "order_agrees")));
    EXPECT_EQ(err2.str(), "");
}

// Acceptance: why on a quota-held job names the pool, the quota and the
// jobs using it.
TEST(CliWhy, QuotaHeldJob) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    ClusterView v;
    v.now = T0 + 30;
    v.history.available = true;
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    v.snap.add_job(running(11, "pool1", "normal", 1, T0));
    v.snap.add_job(running(12, "pool1", "normal", 1, T0 + 1));
    v.snap.add_job(pending(13, "pool1", "normal", 1, T0 + 2));
    meta(v, 11, "n1", "alice", "pool1", "RUNNING", T0);
    meta(v, 12, "n2", "bob", "pool1", "RUNNING", T0 + 1);
    meta(v, 13, "n3", "carol", "pool1", "PENDING", T0 + 2);
    Options o;
    o.job_id = 13;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    const std::string t = text.str();
    EXPECT_NE(t.find("Job 13 (n3) of carol is PENDING in pool1, tier normal, 1 GPU, waiting 0:28."), std::string::npos)
        << t;
    EXPECT_NE(t.find("Reason: quota full: pool1 2/2."), std::string::npos) << t;
    EXPECT_NE(t.find("Quota of pool1: 2 GPUs; non-preemptible jobs use 2, 0 reserved for admitted jobs ahead, this "
                     "job needs 1: 1 GPU of quota missing."),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("Jobs using the quota of pool1:\nJOBID  USER   GPUS  STATE\n11     alice     1  running\n12  "
                     "   bob       1  running\n"),
              std::string::npos)
        << t;

    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_why(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *job = json_object_get(root.get(), "job");
    EXPECT_EQ(str_at(job, "reason"), "quota_full");
    EXPECT_EQ(str_at(job, "reason_pool"), "pool1");
    json_t *q = json_array_get(json_object_get(job, "quota"), 0);
    EXPECT_EQ(str_at(q, "pool"), "pool1");
    EXPECT_EQ(int_at(q, "quota"), 2);
    EXPECT_EQ(int_at(q, "np_used"), 2);
    EXPECT_EQ(int_at(q, "needed"), 1);
    json_t *users = json_object_get(job, "quota_users");
    ASSERT_EQ(json_array_size(users), 2u);
    EXPECT_EQ(int_at(json_array_get(users, 0), "job_id"), 11);
    EXPECT_EQ(str_at(json_array_get(users, 0), "user"), "alice");
    EXPECT_EQ(str_at(json_array_get(users, 1), "state"), "running");
}

// why on a component of a heterogeneous job held for another component's
// refusal: says which, not a quota line of its own that fits.
TEST(CliWhy, HeterogeneousComponentHeldWithAnother) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=4\nPool=pool2 Quota=1\n");
    ClusterView v;
    v.now = T0 + 30;
    v.history.available = true;
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    v.snap.add_job(running(11, "pool2", "normal", 1, T0));
    SnapJob lead = pending(13, "pool1", "normal", 1, T0 + 2), part = pending(14, "pool2", "normal", 1, T0 + 2);
    lead.het_job_id = part.het_job_id = 13;
    v.snap.add_job(lead);
    v.snap.add_job(part);
    meta(v, 11, "n1", "alice", "pool2", "RUNNING", T0);
    meta(v, 13, "h", "carol", "pool1", "PENDING", T0 + 2);
    meta(v, 14, "h", "carol", "pool2", "PENDING", T0 + 2);
    Options o;
    o.job_id = 13;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    EXPECT_NE(text.str().find("Reason: quota full in pool2: held with job 14, the component of its heterogeneous job "
                              "that did not fit."),
              std::string::npos)
        << text.str();
    o.job_id = 14;
    std::ostringstream text14;
    ASSERT_EQ(cmd_why(e, v, o, text14, err), 0) << err.str();
    EXPECT_NE(text14.str().find("Reason: quota full: pool2 1/1."), std::string::npos) << text14.str();
}

// why on a running borrower: lender, rank, MinRuntime.
TEST(CliWhy, RunningBorrower) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2 MinRuntime=10:00\nPool=pool2 Quota=2\n");
    ClusterView v = osmo_view();
    Options o;
    o.job_id = 3;
    o.json = true;
    std::ostringstream out, err;
    ASSERT_EQ(cmd_why(e, v, o, out, err), 0) << err.str();
    Json root = parse(out.str());
    json_t *job = json_object_get(root.get(), "job");
    EXPECT_EQ(str_at(job, "pool"), "pool1");
    EXPECT_EQ(int_at(job, "borrowed"), 1);
    EXPECT_EQ(str_at(json_array_get(json_object_get(job, "lenders"), 0), "pool"), "pool2");
    EXPECT_EQ(int_at(job, "reclaim_rank"), 1);
    EXPECT_EQ(int_at(job, "protected_until"), T0 + 5 + 600);
    EXPECT_EQ(str_at(job, "state"), "RUNNING");

    o.json = false;
    std::ostringstream text;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0);
    EXPECT_NE(text.str().find("It borrows 1 GPU from pool2:1"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("Reclaim rank 1"), std::string::npos) << text.str();
}

// A NORMAL job within its quota on full nodes whose preemption cannot
// free enough: why says what it may take and why not the rest.
TEST(CliWhy, PreemptionCannotFreeEnough) {
    Engine e = engine_with(kOsmoTiers + "Pool=q0 Quota=4\nPool=q1 Quota=2\n");
    ClusterView v;
    v.now = T0 + 30;
    v.history.available = true;
    v.snap = cluster(1, 4);
    partition(v.snap, "q0", 0, 0);
    partition(v.snap, "q1", 0, 0);
    v.snap.add_job(running(1, "q0", "low", 1, T0));
    v.snap.add_job(running(2, "q1", "low", 2, T0 + 1));
    v.snap.add_job(pending(5, "q0", "normal", 4, T0 + 2));
    meta(v, 1, "l1", "alice", "q0", "RUNNING", T0);
    meta(v, 2, "l2", "bob", "q1", "RUNNING", T0 + 1);
    meta(v, 5, "n5", "alice", "q0", "PENDING", T0 + 2);
    Options o;
    o.job_id = 5;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    const std::string t = text.str();
    EXPECT_NE(t.find("Reason: waiting for GPUs."), std::string::npos) << t;
    EXPECT_NE(t.find("Preemption cannot free enough on the nodes of q0: the free GPUs and those of the jobs it may "
                     "take come to 2 of the 4 it needs.\n"
                     "Jobs it may take:\n"
                     "JOBID  USER   POOL  GPUS  RULE    DECIDED_BY\n"
                     "1      alice  q0       1  InPool  tier\n"
                     "Preemptible jobs there it may not take (one per reason):\n"
                     "JOBID  POOL  GPUS  WHY\n"
                     "2      q1       2  victim pool q1 is not over its quota for this job (2/2)\n"),
              std::string::npos)
        << t;
    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_why(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *job = json_object_get(root.get(), "job");
    EXPECT_EQ(str_at(job, "reason"), "waiting_for_gpus");
    EXPECT_EQ(int_at(job, "can_free"), 2);
    EXPECT_EQ(int_at(json_array_get(json_object_get(job, "may_take"), 0), "job_id"), 1);
    EXPECT_EQ(str_at(json_array_get(json_object_get(job, "not_takeable"), 0), "why"),
              "victim pool q1 is not over its quota for this job (2/2)");
}

// A NORMAL job within its quota that fits on no node, wb's LOW jobs within
// wb's quota one per node: why names the move that makes it fit.
TEST(CliWhy, ConsolidationSaysWhatMoves) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=4\nPool=wb Quota=4\n");
    ClusterView v;
    v.now = T0 + 30;
    v.history.available = true;
    v.snap = cluster(2, 4);
    partition(v.snap, "wa", 0, 1);
    partition(v.snap, "wb", 0, 1);
    SnapJob a = running(1, "wb", "low", 2, T0), b = running(2, "wb", "low", 2, T0 + 1);
    a.nodes = {NodeShare{0, 2}};
    b.nodes = {NodeShare{1, 2}};
    v.snap.add_job(a);
    v.snap.add_job(b);
    v.snap.add_job(pending(5, "wa", "normal", 4, T0 + 2));
    v.snap.node_usage = true;
    v.snap.nodes[0].free_gpus = v.snap.nodes[1].free_gpus = 2;
    meta(v, 1, "l1", "alice", "wb", "RUNNING", T0);
    meta(v, 2, "l2", "bob", "wb", "RUNNING", T0 + 1);
    meta(v, 5, "n5", "carol", "wa", "PENDING", T0 + 2);
    Options o;
    o.job_id = 5;
    std::ostringstream text, err;
    ASSERT_EQ(cmd_why(e, v, o, text, err), 0) << err.str();
    EXPECT_NE(text.str().find("Consolidation: it fits on node n1 once job 2 moves to node n0 (requeued, each starts "
                              "again at once on free GPUs there).\n"),
              std::string::npos)
        << text.str();
    o.json = true;
    std::ostringstream js;
    ASSERT_EQ(cmd_why(e, v, o, js, err), 0);
    Json root = parse(js.str());
    json_t *c = json_object_get(json_object_get(root.get(), "job"), "consolidation");
    EXPECT_EQ(str_at(c, "node"), "n1");
    EXPECT_EQ(int_at(json_array_get(json_object_get(c, "moves"), 0), "job_id"), 2);
    EXPECT_EQ(str_at(json_array_get(json_object_get(c, "moves"), 0), "to"), "n0");
}

// Two pools over 2 nodes of 4 GPUs, wa's quota 4, wb's `wb_quota`;
// `jobs` running (with their nodes), wa's NORMAL job 5 of `gpus` pending.
ClusterView plan_view(const std::vector<SnapJob> &jobs, uint32_t gpus) {
    ClusterView v;
    v.now = T0 + 30;
    v.history.available = true;
    v.snap = cluster(2, 4);
    partition(v.snap, "wa", 0, 1);
    partition(v.snap, "wb", 0, 1);
    v.snap.node_usage = true;
    v.snap.nodes[0].free_gpus = v.snap.nodes[1].free_gpus = 4;
    for (const SnapJob &j : jobs) {
        v.snap.add_job(j);
        for (const NodeShare &s : j.nodes) v.snap.nodes[size_t(s.node)].free_gpus -= s.gpus;
        meta(v, j.id, "j" + std::to_string(j.id), "bob", j.partitions.front(), "RUNNING", j.start_time);
    }
    v.snap.add_job(pending(5, "wa", "normal", gpus, T0 + 20));
    meta(v, 5, "n5", "carol", "wa", "PENDING", T0 + 20);
    return v;
}

SnapJob on_node(SnapJob j, int32_t node) {
    j.nodes = {NodeShare{node, j.gpus}};
    return j;
}

std::string why_of(Engine &e, const ClusterView &v, bool json = false) {
    Options o;
    o.job_id = 5;
    o.json = json;
    std::ostringstream out, err;
    EXPECT_EQ(cmd_why(e, v, o, out, err), 0) << err.str();
    return out.str();
}

// wb holds 4 GPUs past its quota of 2: the rules would take its newest
// LOW job, on n0 beside its non-preemptible one, which frees no node; the
// plan takes the older one on n1, where 2 GPUs are free.
TEST(CliWhy, VictimPlanNamesTheJobsOfOneNode) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=4\nPool=wb Quota=2\nPreemptionOrder=newest\n");
    const ClusterView v = plan_view({on_node(running(1, "wb", "normal", 2, T0), 0),
                                     on_node(running(2, "wb", "low", 2, T0 + 1), 1),
                                     on_node(running(3, "wb", "low", 2, T0 + 5), 0)},
                                    4);
    const std::string t = why_of(e, v);
    EXPECT_NE(t.find("Victim plan (the jobs preempt/gpupool would let Slurm preempt, node by node): on node n1 job 2.\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("Jobs the rules alone would preempt (counting GPUs, in victim order; the victim plan above decides "
                     "which go):\n"
                     "JOBID  USER  POOL  GPUS  RULE     DECIDED_BY         PROTECTED_UNTIL\n"
                     "3      bob   wb       2  Reclaim  wb: gpu 6/2 quota  -\n"),
              std::string::npos)
        << t;
    Json root = parse(why_of(e, v, true));
    json_t *plan = json_object_get(json_object_get(root.get(), "job"), "victim_plan");
    EXPECT_EQ(str_at(plan, "outcome"), "victims");
    EXPECT_EQ(json_array_size(json_object_get(plan, "victims")), 1u);
    json_t *first = json_array_get(json_object_get(plan, "victims"), 0);
    EXPECT_EQ(int_at(first, "job_id"), 2);
    EXPECT_EQ(str_at(first, "node"), "n1");
    EXPECT_TRUE(json_is_false(json_object_get(first, "fallback")));
}

// Free GPUs fit on n1: nothing is preempted though the rules would allow it.
TEST(CliWhy, VictimPlanNoneWhereFreeGpusFit) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=4\nPool=wb Quota=0\n");
    const ClusterView v = plan_view({on_node(running(1, "wb", "low", 4, T0), 0)}, 2);
    const std::string t = why_of(e, v);
    EXPECT_NE(t.find("Victim plan: none needed: free GPUs (and CPUs and memory, where Slurm allocates them) fit it on "
                     "node n1; "
                     "nothing is preempted for it, and Slurm starts it there in its turn.\n"),
              std::string::npos)
        << t;
    Json root = parse(why_of(e, v, true));
    json_t *plan = json_object_get(json_object_get(root.get(), "job"), "victim_plan");
    EXPECT_EQ(str_at(plan, "outcome"), "fits_free");
    EXPECT_EQ(json_array_size(json_object_get(plan, "victims")), 0u);
}

// wb's non-preemptible jobs hold a GPU on each node: 6 GPUs are free, but
// not 4 on one node, and nothing may be preempted: why says so per node.
TEST(CliWhy, VictimPlanSaysNoNodeCanBeFreed) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=4\nPool=wb Quota=4\n");
    const ClusterView v =
        plan_view({on_node(running(1, "wb", "normal", 1, T0), 0), on_node(running(2, "wb", "normal", 1, T0 + 1), 1)}, 4);
    const std::string t = why_of(e, v);
    EXPECT_NE(t.find("Victim plan: no node can be freed for it now: no node of its partitions that takes jobs has 4 "
                     "GPUs free or held by jobs it may take, with the CPUs and memory it asks for. Free GPUs: 6 over "
                     "its nodes, 3 at most on one.\n"
                     "NODE  GPUS  FREE  PREEMPTIBLE  NON_PREEMPTIBLE  FREE_CPUS  FREE_MEM  STATE\n"
                     "n0       4     3            0                1          -         -  up\n"
                     "n1       4     3            0                1          -         -  up\n"
                     "Of the preemptible jobs it may take only those the rules allow.\n"),
              std::string::npos)
        << t;
    Json root = parse(why_of(e, v, true));
    EXPECT_EQ(str_at(json_object_get(json_object_get(root.get(), "job"), "victim_plan"), "outcome"), "no_node");
}

// Without node usage (or a job the plan does not serve) why shows none.
TEST(CliWhy, VictimPlanNotShownWithoutNodes) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=4\nPool=wb Quota=0\n");
    ClusterView v = plan_view({on_node(running(1, "wb", "low", 4, T0), 0)}, 4);
    v.snap.node_usage = false;
    EXPECT_EQ(why_of(e, v).find("Victim plan"), std::string::npos);
    Json root = parse(why_of(e, v, true));
    EXPECT_TRUE(json_is_null(json_object_get(json_object_get(root.get(), "job"), "victim_plan")));
    v.snap.node_usage = true;
    v.snap.jobs.back().nodes_given = true;  // -w, features, ...: the rules alone
    EXPECT_NE(why_of(e, v).find("Victim plan: none: where it may run depends on what gpupool does not work out"),
              std::string::npos)
        << why_of(e, v);
}

TEST(CliWhy, UnknownJob) {
    Engine e = engine_with(kTwoPools);
    ClusterView v = osmo_view();
    Options o;
    o.job_id = 99;
    std::ostringstream out, err;
    EXPECT_EQ(cmd_why(e, v, o, out, err), 1);
    EXPECT_EQ(err.str(), "gpupool: job 99 is not in slurmctld's queue (ended, or never existed)\n");
}

// gpupool(1) documents every field the JSON documents carry.
namespace {
std::string srcdir() {
    const char *d = std::getenv("srcdir");  // set by `make check`
    return d ? d : ".";
}

void collect_keys(json_t *j, std::set<std::string> &keys) {
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            keys.insert(k);
            if (std::string(k) != "pool_position") collect_keys(v, keys);  // its keys are pool names
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) collect_keys(v, keys);
    }
}
}  // namespace

TEST(CliJson, EveryFieldIsDocumented) {
    std::set<std::string> keys;
    auto run = [&](int (*cmd)(Engine &, const ClusterView &, const Options &, std::ostream &, std::ostream &),
                   const std::string &conf, ClusterView v, uint32_t job) {
        Engine e = engine_with(conf);
        Options o;
        o.json = true;
        o.job_id = job;
        std::ostringstream out, err;
        ASSERT_EQ(cmd(e, v, o, out, err), 0) << err.str();
        Json root = parse(out.str());
        collect_keys(root.get(), keys);
    };
    ClusterView v = osmo_view();
    v.snap.add_job(pending(5, "pool2", "normal", 1, T0 + 6));   // waits for a reclaim
    v.snap.add_job(pending(6, "pool1", "normal", 2, T0 + 6));   // held for quota
    meta(v, 5, "wf5", "bob", "pool2", "PENDING", T0 + 6);
    meta(v, 6, "wf6", "bob", "pool1", "PENDING", T0 + 6);
    v.meta[5].array_job_id = 5;
    v.meta[5].array_task = "1-3";
    run(cmd_status, kTwoPools, v, 0);
    run(cmd_queue, kTwoPools, v, 0);
    run(cmd_why, kTwoPools, v, 5);
    run(cmd_why, kTwoPools, v, 6);
    run(cmd_why, kTwoPools, v, 3);
    // whatif: a quota lowered (a pending and two running jobs change), and
    // a quota raised that makes job 5 reclaim job 3.
    auto whatif = [&](const std::string &conf, const std::string &set) {
        Engine e = engine_with(conf);
        Options o;
        o.json = true;
        o.whatif_config = "new.conf";
        o.whatif_set = {set};
        std::ostringstream out, err;
        Config modified = parse_config(apply_setting(conf, parse_config(conf, "t"), set), "t");
        ASSERT_EQ(cmd_whatif(e, modified, v, o, out, err), 0) << err.str();
        Json root = parse(out.str());
        collect_keys(root.get(), keys);
    };
    whatif(kTwoPools, "pool1.Quota=1");
    whatif(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=1\n", "pool2.Quota=2");
    for (const char *k : {"would_be_preempted", "preemptor", "lenders", "reason_text", "borrowable", "warnings_before"})
        EXPECT_TRUE(keys.count(k)) << k;

    std::ifstream in(srcdir() + "/doc/gpupool.1");
    ASSERT_TRUE(in) << srcdir() << "/doc/gpupool.1 not found";
    std::stringstream ss;
    ss << in.rdbuf();
    // Plain text: no font changes, "\-" as "-".
    std::string man = std::regex_replace(ss.str(), std::regex(R"(\\f[BIRP])"), "");
    man = std::regex_replace(man, std::regex(R"(\\-)"), "-");
    ASSERT_GT(keys.size(), 50u);
    for (const std::string &k : keys)
        EXPECT_TRUE(std::regex_search(man, std::regex("(^|[^a-z_])" + k + "([^a-z_]|$)")))
            << "gpupool(1) does not document the JSON field " << k;
}

// One definition of pending GPUs.  A job array of 10 tasks of 2
// GPUs, 3 of them running: its record stands for 7 pending tasks, 14 GPUs,
// in `gpupool status`, in `gpupool queue` and in the exporter alike.
TEST(PendingGpus, StatusQueueAndExporterAgreeOnAJobArray) {
    Engine e = engine_with(kTwoPools);
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = T0 + 60;
    v.history.available = false;
    v.snap = cluster(4, 4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    for (uint32_t task = 0; task < 3; ++task) {
        SnapJob t = running(21 + task, "pool1", "low", 2, T0 + 10, T0);
        t.array_job_id = 20;
        v.snap.add_job(t);
        meta(v, 21 + task, "arr", "alice", "pool1", "RUNNING", T0);
    }
    SnapJob rec = pending(20, "pool1", "low", 2, T0);
    rec.array_tasks = 7;
    rec.array_job_id = 20;
    v.snap.add_job(rec);
    meta(v, 20, "arr", "alice", "pool1", "PENDING", T0);

    Options o;
    o.json = true;
    std::ostringstream status, queue, err;
    ASSERT_EQ(cmd_status(e, v, o, status, err), 0) << err.str();
    Json st = parse(status.str());
    json_t *p1 = find_by(json_object_get(st.get(), "pools"), "name", "pool1");
    ASSERT_TRUE(p1);
    EXPECT_EQ(int_at(p1, "pending_gpus"), 14);

    ASSERT_EQ(cmd_queue(e, v, o, queue, err), 0) << err.str();
    Json q = parse(queue.str());
    json_t *jobs = json_object_get(q.get(), "jobs");
    ASSERT_EQ(json_array_size(jobs), 1u) << queue.str();
    json_t *job = json_array_get(jobs, 0);
    EXPECT_EQ(int_at(job, "job_id"), 20);
    EXPECT_EQ(int_at(job, "gpus"), 2);
    EXPECT_EQ(int_at(job, "tasks"), 7);
    EXPECT_EQ(int_at(job, "pending_gpus"), 14);

    WaitHistogram waits;
    std::string text = cluster_metrics(e, v, waits);
    std::regex line(R"(gpupool_pending_gpus\{pool="pool1",[^}]*\} (\d+))");
    uint64_t exported = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
        exported += std::stoull((*it)[1]);
    EXPECT_EQ(exported, 14u) << text;
}

// Where the nodes are known, `queue` says "starting" only where one node
// fits a one-node job: free GPUs over several nodes do not start it.
namespace {
json_t *queue_job(Engine &e, const ClusterView &v, Json &root, uint32_t id) {
    Options o;
    o.json = true;
    std::ostringstream out, err;
    EXPECT_EQ(cmd_queue(e, v, o, out, err), 0) << err.str();
    root = parse(out.str());
    json_t *jobs = json_object_get(root.get(), "jobs");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) if (json_integer_value(json_object_get(j, "job_id")) == id) return j;
    ADD_FAILURE() << "job " << id << " not in\n" << out.str();
    return nullptr;
}
std::string queue_reason(Engine &e, const ClusterView &v, uint32_t id) {
    Json root;
    json_t *j = queue_job(e, v, root, id);
    return j ? str_at(j, "reason") : std::string("(not in queue)");
}
}  // namespace

TEST(CliQueue, FreeGpusOnSeveralNodesDoNotStartAOneNodeJob) {
    // wa's NORMAL 2-GPU job on n0, wb's on n1: 4 GPUs free, 2 on each.
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=6\nPool=wb Quota=2\n");
    ClusterView v = plan_view({on_node(running(1, "wa", "normal", 2, T0), 0), on_node(running(2, "wb", "normal", 2, T0), 1)}, 4);
    Json root;
    json_t *j = queue_job(e, v, root, 5);
    ASSERT_TRUE(j);
    EXPECT_EQ(str_at(j, "admission"), "admitted");
    EXPECT_EQ(str_at(j, "reason"), "no_one_node");
    EXPECT_EQ(str_at(j, "reason_text"), "waiting for one node: 4 GPUs free over wa's nodes, 2 at most on one");
    EXPECT_EQ(int_at(j, "free_on_nodes"), 4);
    EXPECT_EQ(int_at(j, "most_free_on_a_node"), 2);

    // Without node usage the pool's count decides, as before.
    v.snap.node_usage = false;
    j = queue_job(e, v, root, 5);
    ASSERT_TRUE(j);
    EXPECT_EQ(str_at(j, "reason"), "starting");
    EXPECT_FALSE(json_object_get(j, "free_on_nodes"));
}

// Jobs ahead take nodes as Slurm would give them: first fit in node order
// by default, the most free GPUs first with Placement=spread.  n0 has 2
// GPUs free, n1 4; wa's 2-GPU job 3 goes first, then its 4-GPU job 5.
TEST(CliQueue, JobsAheadTakeNodesInThePoolsPlacementOrder) {
    auto reason_of_5 = [](const std::string &placement) {
        Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=8" + placement + "\nPool=wb Quota=2\n");
        ClusterView v = plan_view({on_node(running(1, "wb", "normal", 2, T0), 0)}, 4);
        v.snap.add_job(pending(3, "wa", "high", 2, T0 + 21));
        return queue_reason(e, v, 5);
    };
    EXPECT_EQ(reason_of_5(""), "starting");                   // job 3 on n0
    EXPECT_EQ(reason_of_5(" Placement=pack"), "starting");    // the fewest free: n0
    // The most free: n1, which job 5 fitted before job 3 took it.
    EXPECT_EQ(reason_of_5(" Placement=spread"), "behind_higher_tier");
}

// A job on two nodes takes its GPUs off the nodes too, a share on each:
// the one-node job behind it does not count them free.  wa's 4-GPU job 3
// on 2 nodes (2 on each of n0 and n1), then its 4-GPU job 5: 4 GPUs are
// free by count, 2 on each node, so job 3 took what job 5 needed (before:
// "starting").
TEST(CliQueue, AJobOnSeveralNodesTakesItsGpusOffTheNodes) {
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=8\nPool=wb Quota=0\n");
    ClusterView v = plan_view({}, 4);
    SnapJob two = pending(3, "wa", "normal", 4, T0 + 19);
    two.node_count = 2;
    v.snap.add_job(two);
    EXPECT_EQ(queue_reason(e, v, 3), "starting");
    EXPECT_EQ(queue_reason(e, v, 5), "waiting_for_gpus");
}

TEST(CliQueue, JobsAheadTakeTheNodeThatFitsThem) {
    // 4 GPUs free on n1 only (wb's job holds n0); two 2-GPU jobs ahead of
    // wa's 4-GPU job 5 take them: it waits behind them.  Without them it
    // starts.
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=8\nPool=wb Quota=0\n");
    ClusterView v = plan_view({on_node(running(1, "wb", "normal", 4, T0), 0)}, 4);
    v.snap.add_job(pending(3, "wa", "high", 2, T0 + 21));
    v.snap.add_job(pending(4, "wa", "high", 2, T0 + 22));
    EXPECT_EQ(queue_reason(e, v, 3), "starting");
    EXPECT_EQ(queue_reason(e, v, 4), "starting");
    EXPECT_EQ(queue_reason(e, v, 5), "behind_higher_tier");
    v.snap.jobs.erase(v.snap.jobs.end() - 2, v.snap.jobs.end());
    EXPECT_EQ(queue_reason(e, v, 5), "starting");
}

// A reservation not started yet keeps its node from a job that would run
// past its start, as Slurm's job_test_resv: wb's job holds n0, n1 has its 4
// GPUs free and is reserved whole from 10 minutes on.  wa's 4-GPU job 5 of
// 5 minutes starts there; of 60 it does not (before, both "starting"); of
// 60 with 2 of n1's 8 CPUs reserved instead, and asking 7, it waits for
// one node short of CPUs.
TEST(CliQueue, AReservationNotStartedYetKeepsItsNodeFromALongerJob) {
    auto queue_for = [](int64_t run_limit, ReservedAhead ahead, uint32_t cpus, std::string *text = nullptr) {
        Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=8\nPool=wb Quota=0\n");
        ClusterView v = plan_view({on_node(running(1, "wb", "normal", 4, T0), 0)}, 4);
        v.snap.nodes[0].room_cpus = v.snap.nodes[1].room_cpus = 8;
        v.snap.reserved_ahead = {ahead};
        v.snap.jobs.back().run_limit = run_limit;
        v.snap.jobs.back().cpus = cpus;
        Json root;
        json_t *j = queue_job(e, v, root, 5);
        if (j && text) *text = str_at(j, "reason_text");
        return j ? str_at(j, "reason") : std::string("(not in queue)");
    };
    const int64_t at = T0 + 30 + 600;
    EXPECT_EQ(queue_for(300, ReservedAhead{1, at, true, 0, 0}, 1), "starting");
    // n1 is not its: it must take back what wb borrowed on n0.
    EXPECT_EQ(queue_for(3600, ReservedAhead{1, at, true, 0, 0}, 1), "waiting_for_reclaim");
    EXPECT_EQ(queue_for(0, ReservedAhead{1, at, true, 0, 0}, 1), "starting");  // no limit known
    std::string text;
    EXPECT_EQ(queue_for(3600, ReservedAhead{1, at, false, 2, 0}, 7, &text), "no_one_node");
    EXPECT_EQ(text, "waiting for one node: 4 GPUs free over wa's nodes, 4 at most on one, none with the CPUs and "
                    "memory it asks");
    EXPECT_EQ(queue_for(300, ReservedAhead{1, at, false, 2, 0}, 7), "starting");
}

TEST(CliQueue, ANodeShortOfCpusDoesNotFitTheJob) {
    // n1's 4 free GPUs but none of its 8 CPUs (a CPU-only job holds them):
    // wa's 2-GPU job asking 2 CPUs fits n0 (2 GPUs, 6 CPUs free).  Asking
    // 7, it fits neither.
    Engine e = engine_with(kOsmoTiers + "Pool=wa Quota=8\nPool=wb Quota=0\n");
    SnapJob a = running(1, "wa", "normal", 2, T0);
    a.nodes = {NodeShare{0, 2, 2, 0}};
    SnapJob c = running(2, "wb", "normal", 0, T0);
    c.nodes = {NodeShare{1, 0, 8, 0}};
    ClusterView v = plan_view({a, c}, 2);
    v.snap.nodes[0].room_cpus = v.snap.nodes[1].room_cpus = 8;
    v.snap.jobs.back().cpus = 2;
    Json root;
    EXPECT_EQ(queue_reason(e, v, 5), "starting");
    v.snap.jobs.back().cpus = 7;
    json_t *j = queue_job(e, v, root, 5);
    ASSERT_TRUE(j);
    EXPECT_EQ(str_at(j, "reason"), "no_one_node");
    EXPECT_EQ(str_at(j, "reason_text"),
              "waiting for one node: 6 GPUs free over wa's nodes, 4 at most on one, none with the CPUs and memory "
              "it asks");
}

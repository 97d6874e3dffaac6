// gpupool sim's inputs: hostlists, slurm.conf, the cluster shorthand, sacct
// dumps, the Alibaba trace and the seeded generator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

#include "config.hpp"
#include "workload.hpp"

using namespace gpupool::sim;

namespace {

std::string srcdir() {
    const char *d = std::getenv("srcdir");
    return d ? d : ".";
}

// The message of the InputError `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const InputError &e) {
        return e.what();
    }
    return "";
}

std::vector<uint32_t> node_list(std::initializer_list<uint32_t> l) { return l; }

std::string temp_dir(const std::string &name) {
    std::string tmpl = std::string(::testing::TempDir()) + "gpupool_sim_" + name + "_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) return "";
    return buf.data();
}

void write_file(const std::string &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

Workload sacct(const std::string &text) {
    std::istringstream in(text);
    return parse_sacct(in, "dump.txt");
}

// Sets TZ for one test, puts the old one back.
class ScopedTz {
public:
    explicit ScopedTz(const char *tz) {
        const char *old = std::getenv("TZ");
        had_ = old != nullptr;
        if (had_) old_ = old;
        setenv("TZ", tz, 1);
        tzset();
    }
    ~ScopedTz() {
        if (had_) setenv("TZ", old_.c_str(), 1);
        else unsetenv("TZ");
        tzset();
    }

private:
    bool had_ = false;
    std::string old_;
};

}  // namespace

// --- hostlists --------------------------------------------------------------

TEST(SimHostlist, ExpandsRangesListsPaddingAndProducts) {
    using V = std::vector<std::string>;
    EXPECT_EQ(expand_hostlist("n[1-4,7]"), (V{"n1", "n2", "n3", "n4", "n7"}));
    EXPECT_EQ(expand_hostlist("gpu[08-11]"), (V{"gpu08", "gpu09", "gpu10", "gpu11"}));
    EXPECT_EQ(expand_hostlist("node[9-10]"), (V{"node9", "node10"}));
    EXPECT_EQ(expand_hostlist("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
    EXPECT_EQ(expand_hostlist("a, b[1-2],c-ib"), (V{"a", "b1", "b2", "c-ib"}));
    EXPECT_EQ(expand_hostlist("localhost"), (V{"localhost"}));
}

TEST(SimHostlist, BadExpressionsSayWhatIsWrong) {
    auto err = [](const std::string &e) {
        try {
            expand_hostlist(e);
        } catch (const std::invalid_argument &x) {
            return std::string(x.what());
        }
        return std::string();
    };
    EXPECT_EQ(err("n[1-"), "'[' without ']' in 'n[1-'");
    EXPECT_EQ(err("n1]"), "']' without '[' in 'n1]'");
    EXPECT_EQ(err("n[4-1]"), "range '4-1' in 'n[4-1]' runs backwards");
    EXPECT_EQ(err("n[]"), "empty brackets in 'n[]'");
    EXPECT_EQ(err("n[a-b]"), "bad range 'a-b' in 'n[a-b]': expected N or N-M (digits)");
    EXPECT_EQ(err("a,,b"), "empty name in 'a,,b'");
    EXPECT_EQ(err("n[1-999999999]"), "'n[1-999999999]' names more than 16M nodes");
    EXPECT_EQ(err("n[0-4095][0-4096]"), "'n[0-4095][0-4096]' names more than 16M nodes");  // 4096 x 4097
}

// --- slurm.conf -----------------------------------------------------------

// The node and partition lines scripts/cluster.sh writes.
const char kLiveSlurmConf[] =
    "ClusterName=gpupool\n"
    "GresTypes=gpu\n"
    "NodeName=node[1-6] NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001-17006 CPUs=2 Gres=gpu:1 State=UNKNOWN\n"
    "PartitionName=pool1 Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP\n"
    "PartitionName=pool2 Nodes=node[1-4] MaxTime=INFINITE State=UP\n"
    "PartitionName=pool3 Nodes=node[5-6] MaxTime=INFINITE State=UP\n"
    "PartitionName=plain Nodes=node[1-4] MaxTime=INFINITE State=UP\n";

TEST(SimSlurmConf, TheLiveTestClusters) {
    std::vector<std::string> notes;
    SimCluster c = parse_slurm_conf(kLiveSlurmConf, "slurm.conf", &notes);
    ASSERT_EQ(c.nodes.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(c.nodes[i].name, "node" + std::to_string(i + 1));
        EXPECT_EQ(c.nodes[i].gpus, 1u);
    }
    ASSERT_EQ(c.partitions.size(), 4u);
    EXPECT_EQ(c.partitions[0].name, "pool1");
    EXPECT_EQ(c.partitions[0].nodes, node_list({0, 1, 2, 3}));
    EXPECT_EQ(c.partitions[1].name, "pool2");
    EXPECT_EQ(c.partitions[1].nodes, node_list({0, 1, 2, 3}));
    EXPECT_EQ(c.partitions[2].name, "pool3");
    EXPECT_EQ(c.partitions[2].nodes, node_list({4, 5}));
    EXPECT_EQ(c.partitions[3].name, "plain");
    EXPECT_TRUE(notes.empty());
    EXPECT_EQ(total_gpus(c), 6u);
}

TEST(SimSlurmConf, GresFormsDefaultsWeightsNodeSetsAndContinuations) {
    const std::string conf =
        "# a comment\n"
        "NodeName=DEFAULT Gres=gpu:8 CPUs=64\n"
        "nodename=heavy[1-2] Weight=10   # tried last\n"
        "NodeName=typed Gres=gpu:a100:4,gpu:v100:2,mps:400 Features=big,ib\n"
        "NodeName=sock Gres=gpu:2(S:0,1) \\\n"
        "   Weight=5\n"
        "NodeName=plaingpu Gres=gpu Features=ib\n"
        "NodeName=cpu1 Gres=mps:100\n"
        "NodeName=light Weight=1\n"
        "NodeSet=ibnodes Feature=ib\n"
        "NodeSet=heavies Nodes=heavy[1-2]\n"
        "PartitionName=DEFAULT Nodes=light\n"
        "PartitionName=all Nodes=ALL Default=YES\n"
        "PartitionName=dflt\n"
        "PartitionName=ib Nodes=ibnodes,light\n"
        "PartitionName=mixed Nodes=heavies,sock,heavy1\n"
        "PartitionName=cpu Nodes=cpu1\n"
        "PartitionName=\"quoted\" Nodes=\"typed\" Comment=\"a \\#b c\"\n";
    std::vector<std::string> notes;
    SimCluster c = parse_slurm_conf(conf, "slurm.conf", &notes);
    // Weight 1 (typed, plaingpu, light in conf order: DEFAULT Weight is 1),
    // then sock (5), then heavy1, heavy2 (10); cpu1 has no GPUs.
    std::vector<std::pair<std::string, uint32_t>> nodes;
    for (const SimNode &n : c.nodes) nodes.push_back({n.name, n.gpus});
    EXPECT_EQ(nodes, (std::vector<std::pair<std::string, uint32_t>>{
                         {"typed", 6}, {"plaingpu", 1}, {"light", 8}, {"sock", 2}, {"heavy1", 8}, {"heavy2", 8}}));
    std::map<std::string, std::vector<uint32_t>> parts;
    for (const SimPartition &p : c.partitions) parts[p.name] = p.nodes;
    EXPECT_EQ(parts.size(), 6u);
    EXPECT_EQ(parts["all"], node_list({0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(parts["dflt"], node_list({2}));
    EXPECT_EQ(parts["ib"], node_list({0, 1, 2}));
    EXPECT_EQ(parts["mixed"], node_list({3, 4, 5}));
    EXPECT_EQ(parts["cpu"], node_list({}));
    EXPECT_EQ(parts["quoted"], node_list({0}));
    EXPECT_EQ(notes, (std::vector<std::string>{"1 node without GPUs (no Gres=gpu): left out (e.g. cpu1)",
                                               "1 partition without GPU nodes (e.g. cpu)"}));
}

TEST(SimSlurmConf, IncludeIsReadRelativeToTheIncludingFile) {
    const std::string dir = temp_dir("include");
    ASSERT_FALSE(dir.empty());
    mkdir((dir + "/conf.d").c_str(), 0755);
    write_file(dir + "/slurm.conf", "ClusterName=x\nInclude conf.d/nodes.conf\nPartitionName=p Nodes=g[1-2]\n");
    write_file(dir + "/conf.d/nodes.conf", "NodeName=g[1-2] Gres=gpu:tesla:4\n");
    SimCluster c = read_slurm_conf(dir + "/slurm.conf");
    ASSERT_EQ(c.nodes.size(), 2u);
    EXPECT_EQ(c.nodes[1].name, "g2");
    EXPECT_EQ(c.nodes[1].gpus, 4u);
    EXPECT_EQ(c.partitions[0].nodes, node_list({0, 1}));

    write_file(dir + "/bad.conf", "NodeName=a Gres=gpu:1\n\nInclude missing.conf\n");
    EXPECT_EQ(error_of([&] { read_slurm_conf(dir + "/bad.conf"); }),
              dir + "/bad.conf:3: Include 'missing.conf': cannot read '" + dir + "/missing.conf'");
    // An error in an included file names that file.
    write_file(dir + "/conf.d/broken.conf", "# nodes\nNodeName=z Gres=gpu:x\n");
    write_file(dir + "/top.conf", "Include conf.d/broken.conf\n");
    EXPECT_EQ(error_of([&] { read_slurm_conf(dir + "/top.conf"); }),
              dir + "/conf.d/broken.conf:2: Gres 'gpu:x': expected gpu:COUNT or gpu:TYPE:COUNT (COUNT up to 1000000)");
    write_file(dir + "/loop.conf", "Include loop.conf\n");
    EXPECT_EQ(error_of([&] { read_slurm_conf(dir + "/loop.conf"); }),
              dir + "/loop.conf:1: Include nested more than 8 deep");
    EXPECT_EQ(error_of([&] { read_slurm_conf(dir + "/none.conf"); }), dir + "/none.conf: cannot read the file");
}

TEST(SimSlurmConf, BadLinesNameFileAndLine) {
    auto err = [](const std::string &text) { return error_of([&] { parse_slurm_conf(text, "s.conf"); }); };
    EXPECT_EQ(err("NodeName=a Gres=gpu:1\nPartitionName=p Nodes=a,b\n"),
              "s.conf:2: partition 'p': node 'b' has no NodeName line");
    EXPECT_EQ(err("NodeName=n[1-2] Gres=gpu:1\n# x\nNodeName=n2 Gres=gpu:2\n"),
              "s.conf:3: node 'n2' is defined twice (first at s.conf:1)");
    EXPECT_EQ(err("NodeName=n[1-2 Gres=gpu:1\n"), "s.conf:1: NodeName: '[' without ']' in 'n[1-2'");
    EXPECT_EQ(err("NodeName=n1 Gres=gpu:a100:-1\n"),
              "s.conf:1: Gres 'gpu:a100:-1': expected gpu:COUNT or gpu:TYPE:COUNT (COUNT up to 1000000)");
    EXPECT_EQ(err("NodeName=n1 Weight=heavy\n"), "s.conf:1: Weight 'heavy': expected a number");
    EXPECT_EQ(err("NodeName=n1 Gres=gpu:1\nPartitionName=p Nodes=n1\nPartitionName=p Nodes=n1\n"),
              "s.conf:3: partition 'p' is defined twice (first at s.conf:2)");
    EXPECT_EQ(err("PartitionName=p Nodes=n[1-x]\n"),
              "s.conf:1: partition 'p': Nodes: bad range '1-x' in 'n[1-x]': expected N or N-M (digits)");
    EXPECT_EQ(err("PartitionName=p/q Nodes=ALL\n"),
              "s.conf:1: partition 'p/q': names may contain only letters, digits, '_', '-' and '.'");
    EXPECT_EQ(err("NodeName=a Gres=gpu:1\nNodeName=b Features=\"x\n"), "s.conf:2: '\"' without its closing '\"'");
    EXPECT_EQ(err("Include\n"), "s.conf:1: expected 'Include FILE'");
    // A continued line is reported at its first line.
    EXPECT_EQ(err("\nNodeName=a \\\n Gres=gpu:q\n"),
              "s.conf:2: Gres 'gpu:q': expected gpu:COUNT or gpu:TYPE:COUNT (COUNT up to 1000000)");
}

// --- the cluster shorthand ----------------------------------------------

TEST(SimShorthand, NodesAndPools) {
    SimCluster c = make_cluster("2x8+1x4", "pool1,pool2");
    ASSERT_EQ(c.nodes.size(), 3u);
    EXPECT_EQ(c.nodes[0].name, "node1");
    EXPECT_EQ(c.nodes[2].name, "node3");
    EXPECT_EQ(c.nodes[2].gpus, 4u);
    EXPECT_EQ(total_gpus(c), 20u);
    ASSERT_EQ(c.partitions.size(), 2u);
    EXPECT_EQ(c.partitions[1].name, "pool2");
    EXPECT_EQ(c.partitions[1].nodes, node_list({0, 1, 2}));

    c = make_cluster("4x2", "a:node[1-2],b:node[2-4],c:node4");
    EXPECT_EQ(c.partitions[0].nodes, node_list({0, 1}));
    EXPECT_EQ(c.partitions[1].nodes, node_list({1, 2, 3}));
    EXPECT_EQ(c.partitions[2].nodes, node_list({3}));

    EXPECT_EQ(total_gpus(make_cluster("1250x8", "pool1,pool2,pool3,pool4")), 10000u);
}

TEST(SimShorthand, BadSpecsNameTheOption) {
    EXPECT_EQ(error_of([] { make_cluster("8", "a"); }), "--nodes: '8': expected COUNTxGPUS, e.g. 1250x8");
    EXPECT_EQ(error_of([] { make_cluster("0x8", "a"); }), "--nodes: '0x8': expected COUNTxGPUS, e.g. 1250x8");
    EXPECT_EQ(error_of([] { make_cluster("2x8+2x0", "a"); }), "--nodes: '2x0': expected COUNTxGPUS, e.g. 1250x8");
    EXPECT_EQ(error_of([] { make_cluster("2x8", "a b"); }),
              "--pools: 'a b': names may contain only letters, digits, '_', '-' and '.'");
    EXPECT_EQ(error_of([] { make_cluster("2x8", "a,a"); }), "--pools: 'a' is named twice");
    EXPECT_EQ(error_of([] { make_cluster("2x8", "a:node[2-3]"); }),
              "--pools: a: no node 'node3' (nodes are node1..node2)");
    EXPECT_EQ(error_of([] { make_cluster("2x8", "a:node[2-"); }), "--pools: a: '[' without ']' in 'node[2-'");
}

// --- sacct -----------------------------------------------------------------

// Modelled on what the live test cluster's sacct printed (sacct -a -D -P
// -o ...; times here as seconds since the epoch, the second run of 49551134
// made 6 s long): a preempted and requeued job (49551134, its second
// record started again), one cancelled while pending (49551136), one
// requeued and cancelled before its second start (49551146: a Start but no
// AllocTRES), steps.
const char kLiveDump[] =
    "JobID|JobIDRaw|JobName|User|Partition|QOS|Submit|Start|End|Elapsed|State|ReqTRES|AllocTRES\n"
    "49551134|49551134|wf1|root|pool3|low|1700000015|1700000016|1700000018|00:00:02|PREEMPTED|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|billing=1,cpu=1,gres/gpu=1,node=1\n"
    "49551134.batch|49551134.batch|batch||||1700000016|1700000016|1700000018|00:00:02|CANCELLED||"
    "cpu=1,gres/gpu=1,mem=0,node=1\n"
    "49551135|49551135|wf2|root|pool3|normal|1700000016|1700000017|1700000024|00:00:07|COMPLETED|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|billing=1,cpu=1,gres/gpu=1,node=1\n"
    "49551136|49551136|wf3|root|pool3|low|1700000017|None|1700000024|00:00:00|CANCELLED by 0|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|\n"
    "49551134|49551134|wf1|root|pool3|low|1700000018|1700000024|1700000030|00:00:06|COMPLETED|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|billing=1,cpu=1,gres/gpu=1,node=1\n"
    "49551134.batch|49551134.batch|batch||||1700000024|1700000024|1700000030|00:00:06|COMPLETED||"
    "cpu=1,gres/gpu=1,mem=0,node=1\n"
    "49551146|49551146|wf3|root|pool1|low|1700000039|1700000039|1700000040|00:00:01|PREEMPTED|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|billing=1,cpu=1,gres/gpu=1,node=1\n"
    "49551146|49551146|wf3|root|pool1|low|1700000040|1700000041|1700000041|00:00:00|CANCELLED by 0|"
    "billing=1,cpu=1,gres/gpu=1,mem=1M,node=1|\n";

TEST(SimSacct, RequeuedJobsKeepTheFirstSubmitAndStartAndRunTheLastRun) {
    Workload w = sacct(kLiveDump);
    ASSERT_EQ(w.jobs.size(), 3u);
    const SimJob &a = w.jobs[0];
    EXPECT_EQ(a.id, 49551134u);
    EXPECT_EQ(a.label, "49551134");
    EXPECT_EQ(a.submit, 1700000015);
    EXPECT_EQ(a.recorded_start, 1700000016);
    EXPECT_EQ(a.recorded_restarts, std::vector<int64_t>{1700000024});  // the second run's start
    EXPECT_EQ(a.duration, 6);
    EXPECT_EQ(a.gpus, 1u);
    EXPECT_EQ(a.pools, std::vector<std::string>{"pool3"});
    EXPECT_EQ(a.qos, "low");
    EXPECT_EQ(a.user, "root");
    const SimJob &b = w.jobs[1];
    EXPECT_EQ(b.id, 49551135u);
    EXPECT_EQ(b.submit, 1700000016);
    EXPECT_EQ(b.recorded_start, 1700000017);
    EXPECT_EQ(b.duration, 7);
    EXPECT_EQ(b.qos, "normal");
    // Preempted after 1 s, requeued, cancelled before it started again: the
    // last run is the first one.
    const SimJob &c = w.jobs[2];
    EXPECT_EQ(c.id, 49551146u);
    EXPECT_EQ(c.submit, 1700000039);
    EXPECT_EQ(c.recorded_start, 1700000039);
    EXPECT_TRUE(c.recorded_restarts.empty());  // no second run
    EXPECT_EQ(c.duration, 1);
    EXPECT_EQ(c.pools, std::vector<std::string>{"pool1"});
    EXPECT_EQ(w.notes, (std::vector<std::string>{
                           "2 jobs with several records (requeued): submit and recorded start from the first, run "
                           "time from the last run (e.g. 49551134, 49551146)",
                           "1 job CANCELLED before starting: skipped (e.g. 49551136)",
                       }));
}

TEST(SimSacct, ArraysHetJobsPendingRunningAndLocalTimes) {
    ScopedTz utc("UTC0");
    // Columns in another order, no JobIDRaw, no Elapsed, --parsable's
    // trailing '|', CRLF line ends, sacct's local time format.
    const std::string dump =
        "State|End|Start|Submit|QOS|Partition|ReqTRES|JobID|\r\n"
        "COMPLETED|2026-11-22T10:00:10|2026-11-22T10:00:05|2026-11-22T10:00:00|high|pool1,pool2|gres/gpu=2|700|\r\n"
        "COMPLETED|2026-11-22T10:01:00|2026-11-22T10:00:30|2026-11-22T10:00:01|low|pool1|gres/gpu=1|500_1|\r\n"
        "COMPLETED|2026-11-22T10:00:31|2026-11-22T10:00:30|2026-11-22T10:00:01|low|pool1|gres/gpu=1|500_2|\r\n"
        "PENDING|Unknown|Unknown|2026-11-22T10:00:01|low|pool1|gres/gpu=1|500_[3-9%2]|\r\n"
        "RUNNING|Unknown|2026-11-22T10:02:00|2026-11-22T10:00:02|normal|pool2|gres/gpu:a100=2,gres/gpu:v100=1|800+0|\r\n"
        "RUNNING|Unknown|2026-11-22T10:02:00|2026-11-22T10:00:02|normal|pool3|gres/gpu=4|800+1|\r\n"
        "COMPLETED|2026-11-22T10:03:00|2026-11-22T10:03:00|2026-11-22T10:00:03|normal|pool1|gres/gpu=1|801|\r\n"
        "COMPLETED|2026-11-22T10:04:00|2026-11-22T10:03:00|2026-11-22T10:00:03|normal|cpu|cpu=4|802|\r\n"
        "COMPLETED|2026-11-22T10:00:10|2026-11-22T10:00:05|2026-11-22T10:00:05|||cpu=1|700.batch|\r\n";
    Workload w = sacct(dump);
    // The still-running het job: no Elapsed column, so no run time: skipped.
    std::vector<std::string> labels;
    for (const SimJob &j : w.jobs) labels.push_back(j.label);
    EXPECT_EQ(labels, (std::vector<std::string>{"700", "500_1", "500_2", "801"}));
    const int64_t t0 = 1795341600;  // 2026-11-22T10:00:00Z
    EXPECT_EQ(w.jobs[0].submit, t0);
    EXPECT_EQ(w.jobs[0].recorded_start, t0 + 5);
    EXPECT_EQ(w.jobs[0].duration, 5);
    EXPECT_EQ(w.jobs[0].gpus, 2u);
    EXPECT_EQ(w.jobs[0].pools, (std::vector<std::string>{"pool1", "pool2"}));
    EXPECT_EQ(w.jobs[0].id, 700u);
    // Array tasks have no numeric id without JobIDRaw: numbered above 802.
    EXPECT_EQ(w.jobs[1].id, 803u);
    EXPECT_EQ(w.jobs[1].duration, 30);
    EXPECT_EQ(w.jobs[2].id, 804u);
    EXPECT_EQ(w.jobs[3].id, 801u);
    EXPECT_EQ(w.jobs[3].duration, 1);  // ran 0 s
    EXPECT_EQ(w.jobs[3].user, "");
    // Notes in the order their kinds first appear in the dump.
    EXPECT_EQ(w.notes, (std::vector<std::string>{
                           "2 jobs without a numeric job id (array tasks, het job components; add the JobIDRaw "
                           "column): numbered from 803 (e.g. 500_1, 500_2)",
                           "1 job still pending at the dump: skipped (e.g. 500_[3-9%2])",
                           "2 jobs running at the dump without an Elapsed column: skipped (add Elapsed) (e.g. 800+0, "
                           "800+1)",
                           "1 job that ran 0 s: replayed as 1 s (e.g. 801)",
                           "1 job without GPUs (no gres/gpu in ReqTRES or AllocTRES): skipped (e.g. 802)",
                       }));

    // With Elapsed, the running het job's components replay for their
    // elapsed time so far; typed GPU entries add up.
    const std::string running =
        "JobID|Submit|Start|End|Elapsed|Partition|QOS|State|AllocTRES\n"
        "800+0|2026-11-22T10:00:02|2026-11-22T10:02:00|Unknown|01:00:00|pool2|normal|RUNNING|"
        "gres/gpu:a100=2,gres/gpu:v100=1\n"
        "800+1|2026-11-22T10:00:02|2026-11-22T10:02:00|Unknown|1-01:00:00|pool3|normal|RUNNING|cpu=1,gres/gpu=4\n";
    w = sacct(running);
    ASSERT_EQ(w.jobs.size(), 2u);
    EXPECT_EQ(w.jobs[0].id, 800u);  // the het job's leader is job 800
    EXPECT_EQ(w.jobs[0].gpus, 3u);
    EXPECT_EQ(w.jobs[0].duration, 3600);
    EXPECT_EQ(w.jobs[1].id, 801u);
    EXPECT_EQ(w.jobs[1].gpus, 4u);
    EXPECT_EQ(w.jobs[1].duration, 90000);
    EXPECT_EQ(w.notes, (std::vector<std::string>{
                           "2 jobs still running at the dump: replayed with the Elapsed so far (e.g. 800+0, 800+1)",
                           "2 heterogeneous job components: replayed as jobs of their own (e.g. 800+0, 800+1)",
                           "1 job without a numeric job id (array tasks, het job components; add the JobIDRaw "
                           "column): numbered from 801 (e.g. 800+1)",
                       }));
}

TEST(SimSacct, LocalTimeFollowsTheZoneOfThisProcess) {
    const std::string dump =
        "JobID|Submit|Start|End|Partition|QOS|State|ReqTRES\n"
        "1|2026-01-15T12:00:00|2026-01-15T12:00:00|2026-01-15T13:00:00|p|normal|COMPLETED|gres/gpu=1\n"
        "2|2026-07-01T12:00:00|2026-07-01T12:00:00|2026-07-01T13:00:00|p|normal|COMPLETED|gres/gpu=1\n"
        // Across the end of summer time (2026-10-25 03:00 CEST -> 02:00 CET):
        // 01:30 CEST to 03:30 CET is 3 hours.
        "3|2026-10-25T01:30:00|2026-10-25T01:30:00|2026-10-25T03:30:00|p|normal|COMPLETED|gres/gpu=1\n";
    {
        ScopedTz cet("CET-1CEST,M3.5.0,M10.5.0/3");
        Workload w = sacct(dump);
        ASSERT_EQ(w.jobs.size(), 3u);
        EXPECT_EQ(w.jobs[0].submit, 1768474800);  // 11:00 UTC
        EXPECT_EQ(w.jobs[1].submit, 1782900000);  // 10:00 UTC
        EXPECT_EQ(w.jobs[2].duration, 3 * 3600);
    }
    {
        ScopedTz utc("UTC0");
        Workload w = sacct(dump);
        EXPECT_EQ(w.jobs[0].submit, 1768478400);
        EXPECT_EQ(w.jobs[1].submit, 1782907200);
        EXPECT_EQ(w.jobs[2].duration, 2 * 3600);
    }
}

TEST(SimSacct, BadDumpsNameFileLineAndField) {
    const std::string head = "JobID|Submit|Start|End|Partition|QOS|State|ReqTRES\n";
    const std::string good = "1|100|100|200|p|normal|COMPLETED|gres/gpu=1\n";
    auto err = [](const std::string &text) { return error_of([&] { sacct(text); }); };
    EXPECT_EQ(err(""), "dump.txt: empty: no header line and no jobs");
    EXPECT_EQ(err(good),
              "dump.txt:1: no header line naming JobID: run sacct --parsable2 without --noheader/-n, with "
              "-o JobID,Submit,Start,End,Elapsed,Partition,QOS,User,State,ReqTRES,AllocTRES");
    EXPECT_EQ(err("JobID|Submit|End|QOS\n"),
              "dump.txt:1: the header lacks required columns: Start Partition State ReqTRES|AllocTRES");
    EXPECT_EQ(err("JobID|Submit|Start|End|Partition|State|ReqTRES|Submit\n"),
              "dump.txt:1: column Submit appears twice in the header");
    EXPECT_EQ(err(head + good + "2|100|100|200|p|normal|COMPLETED\n"),
              "dump.txt:3: 7 fields where the header has 8 (a '|' in a job name? leave JobName out)");
    EXPECT_EQ(err(head + "\n" + good + "2|yesterday|100|200|p|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:4: Submit 'yesterday' is not a time: expected YYYY-MM-DDTHH:MM:SS "
              "(SLURM_TIME_FORMAT=standard) or seconds since the epoch (SLURM_TIME_FORMAT=%s)");
    EXPECT_EQ(err(head + "2|100|2026-02-30T00:00:00|200|p|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: Start '2026-02-30T00:00:00' is not a time: expected YYYY-MM-DDTHH:MM:SS "
              "(SLURM_TIME_FORMAT=standard) or seconds since the epoch (SLURM_TIME_FORMAT=%s)");
    EXPECT_EQ(err(head + "2|Unknown|100|200|p|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: Submit 'Unknown': a job without a submit time");
    EXPECT_EQ(err(head + "job7|100|100|200|p|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: JobID 'job7' is not a Slurm job id");
    EXPECT_EQ(err(head + "7|100|100|200|p|normal|COMPLETED|gres/gpu=two\n"),
              "dump.txt:2: ReqTRES: 'gres/gpu=two': expected gres/gpu=COUNT");
    EXPECT_EQ(err(head + "7|100|100|200||normal|COMPLETED|gres/gpu=1\n"), "dump.txt:2: job '7' has no Partition");
    EXPECT_EQ(err(head + "7|100|100|200|p q|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: Partition 'p q': names may contain only letters, digits, '_', '-' and '.'");
    EXPECT_EQ(err("JobID|Submit|Start|End|Elapsed|Partition|State|ReqTRES\n"
                  "7|100|100|200|2 hours|p|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: Elapsed '2 hours' is not a duration ([D-]HH:MM:SS)");
    // Bounded, so that the replay's int64 sums (start + duration) cannot wrap.
    EXPECT_EQ(err("JobID|Submit|Start|End|Elapsed|Partition|State|ReqTRES\n"
                  "7|1700000000|1700000000|Unknown|106751991167300-00:00:00|p|RUNNING|gres/gpu=1\n"),
              "dump.txt:2: Elapsed '106751991167300-00:00:00' is too long (at most 2^40 s)");
    EXPECT_EQ(err(head + "7|100|100|2000000000000|p|normal|COMPLETED|gres/gpu=1\n"),
              "dump.txt:2: End '2000000000000' is too far ahead (at most 2^40 s after the epoch)");
    EXPECT_EQ(error_of([] { read_sacct("/nonexistent/dump.txt"); }), "/nonexistent/dump.txt: cannot read the file");

    // Without QOS: every job gets the DefaultTier; the notes say so.
    Workload w = sacct("JobIDRaw|Submit|Start|End|Partition|State|AllocTRES\n"
                       "9|100|100|200|p|COMPLETED|gres/gpu=1\n");
    ASSERT_EQ(w.jobs.size(), 1u);
    EXPECT_EQ(w.jobs[0].id, 9u);
    EXPECT_EQ(w.jobs[0].qos, "");
    EXPECT_EQ(w.notes, std::vector<std::string>{"no QOS column: every job gets gpupool.conf's DefaultTier"});
}

TEST(SimSacct, BlankLinesBeforeTheHeaderAreSkipped) {
    const std::string head = "JobID|Submit|Start|End|Partition|QOS|State|ReqTRES\n";
    const std::string good = "1|100|100|200|p|normal|COMPLETED|gres/gpu=1\n";
    // Was "dump.txt:2: no header line before the first record".
    Workload w = sacct("\n \r\n" + head + good);
    ASSERT_EQ(w.jobs.size(), 1u);
    EXPECT_EQ(w.jobs[0].id, 1u);
    auto err = [](const std::string &text) { return error_of([&] { sacct(text); }); };
    // No header where one was expected: its line is named.
    EXPECT_EQ(err("\n" + good),
              "dump.txt:2: no header line naming JobID: run sacct --parsable2 without --noheader/-n, with "
              "-o JobID,Submit,Start,End,Elapsed,Partition,QOS,User,State,ReqTRES,AllocTRES");
    EXPECT_EQ(err("\n\nJobID|Submit|End|QOS\n"),
              "dump.txt:3: the header lacks required columns: Start Partition State ReqTRES|AllocTRES");
    EXPECT_EQ(err("\n" + head + "2|100|100|200|p|normal|COMPLETED\n"),
              "dump.txt:3: 7 fields where the header has 8 (a '|' in a job name? leave JobName out)");
    EXPECT_EQ(err("\n\n"), "dump.txt: empty: no header line and no jobs");
}

TEST(SimSacct, JobsAreSortedBySubmitThenId) {
    Workload w = sacct("JobID|Submit|Start|End|Partition|State|ReqTRES\n"
                       "30|200|200|300|p|COMPLETED|gres/gpu=1\n"
                       "20|100|100|300|p|COMPLETED|gres/gpu=1\n"
                       "10|200|200|300|p|COMPLETED|gres/gpu=1\n");
    ASSERT_EQ(w.jobs.size(), 3u);
    EXPECT_EQ(w.jobs[0].id, 20u);
    EXPECT_EQ(w.jobs[1].id, 10u);
    EXPECT_EQ(w.jobs[2].id, 30u);
}

TEST(SimSacct, RestartsAreInStartOrderWhateverTheOrderOfTheRecords) {
    Workload w = sacct("JobID|Submit|Start|End|Partition|State|AllocTRES\n"
                       "7|130|140|150|p|COMPLETED|gres/gpu=1\n"
                       "7|100|100|110|p|PREEMPTED|gres/gpu=1\n"
                       "7|110|120|125|p|PREEMPTED|gres/gpu=1\n"
                       "7|125|135|135|p|CANCELLED|\n");  // cancelled pending: no run
    ASSERT_EQ(w.jobs.size(), 1u);
    EXPECT_EQ(w.jobs[0].submit, 100);
    EXPECT_EQ(w.jobs[0].recorded_start, 100);
    EXPECT_EQ(w.jobs[0].recorded_restarts, (std::vector<int64_t>{120, 140}));
}

TEST(SimSacct, ARunWithResourcesAndAnEndButNoStartIsARunWhoseStartIsUnknown) {
    Workload w = sacct("JobID|Submit|Start|End|Elapsed|Partition|State|AllocTRES\n"
                       "7|100|None|110|00:00:00|p|PREEMPTED|gres/gpu=1\n"
                       "7|111|130|140|00:00:10|p|COMPLETED|gres/gpu=1\n"
                       "8|100|None|105|00:00:00|p|CANCELLED|\n");  // cancelled pending: no run
    ASSERT_EQ(w.jobs.size(), 1u);
    EXPECT_EQ(w.jobs[0].submit, 100);
    EXPECT_EQ(w.jobs[0].recorded_start, -1);
    EXPECT_EQ(w.jobs[0].recorded_restarts, std::vector<int64_t>{130});
    EXPECT_TRUE(w.jobs[0].has_recorded_run());
    EXPECT_EQ(w.jobs[0].duration, 10);
}

// A dump taken from the live test cluster (tests/unit/data/README.md) reads
// without error: a site's own dump must replay.
TEST(SimSacct, TheLiveClustersDumpReads) {
    const std::string path = srcdir() + "/tests/unit/data/sacct-live.txt";
    std::ifstream probe(path);
    if (!probe) GTEST_SKIP() << path << " not found";
    ScopedTz utc("UTC0");
    Workload w = read_sacct(path);
    ASSERT_EQ(w.jobs.size(), 225u);
    EXPECT_EQ(w.notes, (std::vector<std::string>{
                           "36 jobs that ran 0 s: replayed as 1 s (e.g. 49551128, 49551129, 49551131)",
                           "30 jobs with several records (requeued): submit and recorded start from the first, run "
                           "time from the last run (e.g. 49551134, 49551139, 49551146)",
                           "93 jobs CANCELLED before starting: skipped (e.g. 49551136, 49551137, 49551141)",
                       }));
    // Counted apart (awk over the records with an AllocTRES and a Start).
    std::map<std::string, int> pools, qos;
    std::map<uint32_t, int> gpus;
    for (const SimJob &j : w.jobs) {
        EXPECT_GT(j.duration, 0);
        EXPECT_GE(j.recorded_start, j.submit);
        EXPECT_EQ(j.user, "root");
        ASSERT_EQ(j.pools.size(), 1u);
        ++pools[j.pools[0]];
        ++qos[j.qos];
        ++gpus[j.gpus];
    }
    EXPECT_EQ(pools, (std::map<std::string, int>{{"plain", 2}, {"pool1", 106}, {"pool2", 44}, {"pool3", 73}}));
    EXPECT_EQ(qos, (std::map<std::string, int>{{"high", 14}, {"low", 79}, {"normal", 132}}));
    EXPECT_EQ(gpus, (std::map<uint32_t, int>{{1, 209}, {2, 16}}));
    // An array task keeps its label, its id is JobIDRaw's; the first record
    // of requeued job 49551134 (wf1: preempted at 11:28:18) gives submit and
    // start, its last run (11:28:24-11:28:24) the run time.
    auto find = [&](const std::string &label) {
        for (const SimJob &j : w.jobs)
            if (j.label == label) return j;
        return SimJob{};
    };
    SimJob a = find("49551174_1");
    EXPECT_EQ(a.id, 49551175u);
    EXPECT_EQ(a.submit, 1795346954);  // 2026-11-22T11:29:14Z
    EXPECT_EQ(a.duration, 14);
    SimJob wf1 = find("49551134");
    EXPECT_EQ(wf1.submit, 1795346895);          // 11:28:15
    EXPECT_EQ(wf1.recorded_start, 1795346896);  // 11:28:16
    EXPECT_EQ(wf1.duration, 1);                 // 0 s
    EXPECT_EQ(wf1.qos, "low");
    EXPECT_EQ(wf1.pools, std::vector<std::string>{"pool3"});
}

// --- the Alibaba trace -----------------------------------------------------

TEST(SimAlibaba, MapsClassesGpusTimesAndPools) {
    const std::string dir = temp_dir("alibaba");
    ASSERT_FALSE(dir.empty());
    write_file(dir + "/openb_node_list_gpu_node.csv",
               "sn,cpu_milli,memory_mib,gpu,model\n"
               "nA,64000,262144,2,P100\n"
               "nB,96000,786432,8,G2\n"
               "nC,96000,786432,0,CPU\n");
    write_file(dir + "/openb_pod_list_default.csv",
               "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
               "scheduled_time\n"
               "t-ls,1000,1024,2,1000,,LS,Succeeded,100,700,150\n"
               "t-be,1000,1024,1,1000,,BE,Failed,50,60,55\n"
               "t-frac,1000,1024,1,460,,LS,Running,200,900,200\n"
               "t-burst,1000,1024,8,1000,,Burstable,Succeeded,100,400,300\n"
               "t-guar,1000,1024,1,1000,,Guaranteed,Succeeded,100,101,101\n"
               "t-pend,1000,1024,4,1000,,BE,Pending,300,1000,\n"
               "t-gpu0,1000,1024,0,0,,LS,Running,10,20,10\n");
    AlibabaOptions opt;
    Scenario s = read_alibaba(dir, opt);
    ASSERT_EQ(s.cluster.nodes.size(), 2u);
    EXPECT_EQ(s.cluster.nodes[1].name, "nB");
    EXPECT_EQ(total_gpus(s.cluster), 10u);
    ASSERT_EQ(s.cluster.partitions.size(), 4u);
    EXPECT_EQ(s.cluster.partitions[3].name, "pool4");
    EXPECT_EQ(s.cluster.partitions[3].nodes, node_list({0, 1}));

    struct Want {
        std::string label;
        uint32_t id;
        int64_t submit, duration;
        uint32_t gpus;
        std::string pool, qos;
        int64_t start;
    };
    // Pools from splitmix64(fnv1a64(name) ^ seed) % 4, computed apart.
    std::vector<Want> want = {
        {"t-be", 2, 50, 5, 1, "pool2", "be", 55},           {"t-ls", 1, 100, 550, 2, "pool4", "ls", 150},
        {"t-burst", 4, 100, 100, 8, "pool3", "burstable", 300}, {"t-guar", 5, 100, 1, 1, "pool4", "guaranteed", 101},
        {"t-frac", 3, 200, 700, 1, "pool4", "ls", 200},     {"t-pend", 6, 300, 700, 4, "pool4", "be", -1},
    };
    ASSERT_EQ(s.workload.jobs.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const SimJob &j = s.workload.jobs[i];
        SCOPED_TRACE(want[i].label);
        EXPECT_EQ(j.label, want[i].label);
        EXPECT_EQ(j.id, want[i].id);
        EXPECT_EQ(j.submit, want[i].submit);
        EXPECT_EQ(j.duration, want[i].duration);
        EXPECT_EQ(j.gpus, want[i].gpus);
        EXPECT_EQ(j.pools, std::vector<std::string>{want[i].pool});
        EXPECT_EQ(j.qos, want[i].qos);
        EXPECT_EQ(j.recorded_start, want[i].start);
    }
    EXPECT_EQ(s.workload.notes,
              (std::vector<std::string>{
                  "1 task asking for a fraction of one GPU (gpu_milli < 1000): replayed with 1 whole GPU (e.g. t-frac)",
                  "1 task still Running at the trace's end: run time cut there (e.g. t-frac)",
                  "1 task that ran 0 s: replayed as 1 s (e.g. t-guar)",
                  "1 task never scheduled (no scheduled_time): run time = deletion_time - creation_time (e.g. t-pend)",
                  "1 task without GPUs (num_gpu 0): skipped (e.g. t-gpu0)",
              }));
    // Another seed, another split.
    opt.seed = 7;
    Workload w7 = read_alibaba_pods(dir + "/openb_pod_list_default.csv", opt);
    EXPECT_EQ(w7.jobs[0].pools, std::vector<std::string>{"pool4"});  // t-be
    EXPECT_EQ(w7.jobs[1].pools, std::vector<std::string>{"pool2"});  // t-ls

    const std::string conf = alibaba_gpupool_conf(s.cluster, AlibabaOptions{3, 0});
    EXPECT_NE(conf.find("Pool=pool1 Quota=4\nPool=pool2 Quota=3\nPool=pool3 Quota=3\n"), std::string::npos) << conf;
    gpupool::Config cfg = gpupool::parse_config(conf, "alibaba.conf");
    ASSERT_EQ(cfg.tiers.size(), 3u);
    EXPECT_EQ(cfg.tiers[0].qos, (std::vector<std::string>{"ls", "guaranteed"}));
    EXPECT_FALSE(cfg.tiers[0].preemptible);
    EXPECT_EQ(cfg.tiers[1].qos, std::vector<std::string>{"burstable"});
    EXPECT_EQ(cfg.tiers[2].qos, std::vector<std::string>{"be"});
    EXPECT_TRUE(cfg.tiers[2].preemptible);
}

TEST(SimAlibaba, BadLinesNameFileAndLine) {
    const std::string dir = temp_dir("alibaba_bad");
    ASSERT_FALSE(dir.empty());
    const std::string head =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    const std::string ok = "a,1,1,1,1000,,LS,Running,10,20,10\n";
    auto err = [&](const std::string &text) {
        write_file(dir + "/pods.csv", text);
        return error_of([&] { read_alibaba_pods(dir + "/pods.csv", AlibabaOptions{}); });
    };
    const std::string f = dir + "/pods.csv";
    EXPECT_EQ(err(head + ok + "b,1,1,1,1000,,Spot,Running,10,20,10\n"),
              f + ":3: qos 'Spot': expected LS, Guaranteed, Burstable or BE");
    EXPECT_EQ(err(head + "b,1,1,1,1000,,BE,Running,30,20,\n"), f + ":2: deletion_time 20 is before creation_time 30");
    EXPECT_EQ(err(head + "b,1,1,1,1000,,BE,Running,10,20,25\n"),
              f + ":2: scheduled_time 25 is outside [creation_time, deletion_time] = [10, 20]");
    EXPECT_EQ(err(head + "b,1,1,x,1000,,BE,Running,10,20,15\n"), f + ":2: num_gpu 'x': expected a whole number up to 1000000");
    EXPECT_EQ(err(head + "b,1,1,1,1000,,BE,Running,10\n"), f + ":2: 9 fields where the header has 11");
    EXPECT_EQ(err(head + "\"b\",1,1,1,1000,,BE,Running,10,20,15\n"), f + ":2: quoted CSV fields are not supported");
    EXPECT_EQ(err("name,num_gpu\n"), f + ":1: no column 'gpu_milli' in the header");
    EXPECT_EQ(err(""), f + ": empty: no header line");
    EXPECT_EQ(error_of([&] { read_alibaba(dir + "/none", AlibabaOptions{}); }),
              dir + "/none/openb_node_list_gpu_node.csv: cannot read the file");
    write_file(dir + "/nodes.csv", "sn,gpu\nx,2\nx,4\n");
    EXPECT_EQ(error_of([&] { read_alibaba_nodes(dir + "/nodes.csv", AlibabaOptions{}); }),
              dir + "/nodes.csv:3: node 'x' listed twice");
}

// The real trace, where it lies (../shared/traces): counts from its README
// and an independent count of the file.
TEST(SimAlibaba, TheRealTrace) {
    const std::string dir = srcdir() + "/../shared/traces/alibaba-gpu-v2023";
    std::ifstream probe(dir + "/openb_pod_list_default.csv");
    if (!probe) GTEST_SKIP() << dir << " not found";
    Scenario s = read_alibaba(dir, AlibabaOptions{});
    EXPECT_EQ(s.cluster.nodes.size(), 1213u);
    EXPECT_EQ(total_gpus(s.cluster), 6212u);
    // 8,152 tasks less 1,088 without GPUs.
    ASSERT_EQ(s.workload.jobs.size(), 7064u);
    std::map<std::string, int> pools, qos;
    uint64_t gpus = 0;
    for (const SimJob &j : s.workload.jobs) {
        ++pools[j.pools[0]];
        ++qos[j.qos];
        gpus += j.gpus;
    }
    EXPECT_EQ(pools, (std::map<std::string, int>{{"pool1", 1803}, {"pool2", 1758}, {"pool3", 1735}, {"pool4", 1768}}));
    EXPECT_EQ(qos, (std::map<std::string, int>{{"ls", 4011}, {"be", 2948}, {"burstable", 99}, {"guaranteed", 6}}));
    EXPECT_EQ(gpus, 7433u);
    EXPECT_EQ(s.workload.jobs.front().label, "openb-pod-0000");
    EXPECT_EQ(s.workload.jobs.back().label, "openb-pod-8151");
    EXPECT_EQ(s.workload.jobs.back().submit, 12901761);
    EXPECT_EQ(s.workload.notes,
              (std::vector<std::string>{
                  "4149 tasks still Running at the trace's end: run time cut there (e.g. openb-pod-0000, "
                  "openb-pod-0001, openb-pod-0002)",
                  "3078 tasks asking for a fraction of one GPU (gpu_milli < 1000): replayed with 1 whole GPU (e.g. "
                  "openb-pod-0001, openb-pod-0003, openb-pod-0011)",
                  "1088 tasks without GPUs (num_gpu 0): skipped (e.g. openb-pod-0005, openb-pod-0016, openb-pod-0048)",
                  "861 tasks never scheduled (no scheduled_time): run time = deletion_time - creation_time (e.g. "
                  "openb-pod-0061, openb-pod-0084, openb-pod-0090)",
                  "1 task that ran 0 s: replayed as 1 s (e.g. openb-pod-7285)",
              }));
    // etc/sim/alibaba.conf is what alibaba_gpupool_conf writes for it.
    std::ifstream shipped(srcdir() + "/etc/sim/alibaba.conf");
    ASSERT_TRUE(shipped) << "etc/sim/alibaba.conf";
    std::stringstream text;
    text << shipped.rdbuf();
    EXPECT_EQ(text.str(), alibaba_gpupool_conf(s.cluster, AlibabaOptions{}));
}

// --- the generator ---------------------------------------------------------

TEST(SimGenerator, ParsesTheSpec) {
    GeneratorSpec s = parse_generator_spec(
        "# contended\n"
        "Seed=7 Jobs=2000 Pools=pool1,pool2:3\n"
        "tiers=high:0.2,normal:0.5,low:0.3 GPUS=1:0.6,2:0.2,4:0.1,8:0.1\n"
        "Duration=lognormal:1h:1.5 DurationMin=60 DurationMax=2d Load=1.25 Users=20 Start=1000\n",
        "gen.spec");
    EXPECT_EQ(s.seed, 7u);
    EXPECT_EQ(s.jobs, 2000u);
    EXPECT_EQ(s.pools, (std::vector<std::pair<std::string, double>>{{"pool1", 1}, {"pool2", 3}}));
    EXPECT_EQ(s.tiers, (std::vector<std::pair<std::string, double>>{{"high", 0.2}, {"normal", 0.5}, {"low", 0.3}}));
    EXPECT_EQ(s.gpus, (std::vector<std::pair<uint32_t, double>>{{1, 0.6}, {2, 0.2}, {4, 0.1}, {8, 0.1}}));
    EXPECT_EQ(s.duration, GeneratorSpec::Duration::Lognormal);
    EXPECT_EQ(s.duration_a, 3600);
    EXPECT_EQ(s.duration_b, 1.5);
    EXPECT_EQ(s.duration_min, 60);
    EXPECT_EQ(s.duration_max, 172800);
    EXPECT_EQ(s.load, 1.25);
    EXPECT_EQ(s.users, 20u);
    EXPECT_EQ(s.start, 1000);
    EXPECT_DOUBLE_EQ(mean_gpus(s), 0.6 + 0.4 + 0.4 + 0.8);
    EXPECT_DOUBLE_EQ(mean_duration(s), 3600 * std::exp(1.125));

    s = parse_generator_spec("Pools=a Tiers=b Duration=uniform:10m:20m Interarrival=30", "x");
    EXPECT_EQ(s.duration, GeneratorSpec::Duration::Uniform);
    EXPECT_EQ(s.duration_a, 600);
    EXPECT_EQ(s.duration_b, 1200);
    EXPECT_EQ(s.interarrival, 30);
    EXPECT_EQ(s.gpus, (std::vector<std::pair<uint32_t, double>>{{1, 1}}));
    EXPECT_EQ(parse_generator_spec("Pools=a Tiers=b Duration=exp:90s", "x").duration, GeneratorSpec::Duration::Exponential);
    EXPECT_EQ(parse_generator_spec("Pools=a Tiers=b Duration=fixed:2h", "x").duration_a, 7200);
}

TEST(SimGenerator, BadSpecsNameSourceAndLine) {
    auto err = [](const std::string &text) { return error_of([&] { parse_generator_spec(text, "gen.spec"); }); };
    EXPECT_EQ(err("Pools=a\nTiers=b\nColour=red\n"),
              "gen.spec:3: unknown key 'Colour' (Seed, Jobs, Pools, Tiers, Gpus, Duration, DurationMin, "
              "DurationMax, Load, Interarrival, Users, Start, Accounts, AccountTiers, PoolPerAccount, CpusPerGpu, "
              "MemPerGpu)");
    EXPECT_EQ(err("Tiers=b"), "gen.spec: Pools= is required, e.g. Pools=pool1,pool2");
    EXPECT_EQ(err("Pools=a"), "gen.spec: Tiers= is required, e.g. Tiers=high:0.2,normal:0.5,low:0.3");
    EXPECT_EQ(err("Pools=a Tiers=b Pools=c"), "gen.spec:1: key 'Pools' given twice");
    EXPECT_EQ(err("Pools=a:x Tiers=b"), "gen.spec:1: bad value 'a:x' for Pools: expected NAME[:WEIGHT],... with weights >= 0");
    EXPECT_EQ(err("Pools=a:0 Tiers=b"), "gen.spec:1: bad value 'a:0' for Pools: expected weights adding up to more than 0");
    EXPECT_EQ(err("Pools=a/b Tiers=b"),
              "gen.spec:1: bad value 'a/b' for Pools: expected pool names: names may contain only letters, digits, "
              "'_', '-' and '.'");
    EXPECT_EQ(err("Pools=a Tiers=b\nGpus=0:1"), "gen.spec:2: bad value '0:1' for Gpus: expected COUNT[:WEIGHT],... with COUNT >= 1");
    EXPECT_EQ(err("Pools=a Tiers=b Duration=weibull:3"),
              "gen.spec:1: bad value 'weibull:3' for Duration: expected fixed:T, exp:MEAN, lognormal:MEDIAN:SIGMA or "
              "uniform:MIN:MAX");
    EXPECT_EQ(err("Pools=a Tiers=b Duration=exp:-3"),
              "gen.spec:1: bad value 'exp:-3' for Duration: expected fixed:T, exp:MEAN, lognormal:MEDIAN:SIGMA or "
              "uniform:MIN:MAX with durations > 0");
    EXPECT_EQ(err("Pools=a Tiers=b Duration=uniform:2h:1h"),
              "gen.spec:1: bad value 'uniform:2h:1h' for Duration: expected fixed:T, exp:MEAN, lognormal:MEDIAN:SIGMA "
              "or uniform:MIN:MAX (MIN <= MAX)");
    EXPECT_EQ(err("Pools=a Tiers=b Jobs=many"), "gen.spec:1: bad value 'many' for Jobs: expected a whole number up to 50000000");
    EXPECT_EQ(err("Pools=a Tiers=b Load=0"), "gen.spec:1: bad value '0' for Load: expected a number > 0");
    EXPECT_EQ(err("Pools=a Tiers=b DurationMin=2h DurationMax=1h"), "gen.spec: DurationMax is below DurationMin");
    EXPECT_EQ(err("Pools=a Tiers=b oops"), "gen.spec:1: expected Key=Value, got 'oops'");
    GeneratorSpec s = parse_generator_spec("Pools=a Tiers=b", "x");
    EXPECT_EQ(error_of([&] { generate_workload(s, 0); }),
              "generator: Load needs a cluster with GPUs (or give Interarrival)");
    // Numbers that would leave the replay's int64 seconds or a job's uint32 CPUs.
    s = parse_generator_spec("Seed=1 Pools=a Tiers=b Jobs=2 Interarrival=100000000000000000000", "x");
    EXPECT_EQ(error_of([&] { generate_workload(s, 8); }),
              "generator: job 1 would be submitted over 2^40 s after Start: Interarrival is too long or Load too low");
    s = parse_generator_spec("Seed=1 Pools=a Tiers=b Jobs=2 Gpus=50000 CpusPerGpu=100000 Interarrival=10", "x");
    EXPECT_EQ(error_of([&] { generate_workload(s, 8); }),
              "generator: 50000 GPUs x CpusPerGpu=100000 is over 4294967295 CPUs for one job");
}

TEST(SimGenerator, SameSeedSameJobsAndAKnownStart) {
    GeneratorSpec s = parse_generator_spec(
        "Seed=42 Jobs=1000 Pools=pool1,pool2,pool3,pool4 Tiers=high:0.2,normal:0.5,low:0.3 "
        "Gpus=1:0.6,2:0.2,4:0.1,8:0.1 Duration=lognormal:30m:1.0 Load=1.5 Users=5",
        "x");
    Workload a = generate_workload(s, 64), b = generate_workload(s, 64);
    ASSERT_EQ(a.jobs.size(), 1000u);
    for (size_t i = 0; i < a.jobs.size(); ++i) {
        const SimJob &x = a.jobs[i], &y = b.jobs[i];
        ASSERT_EQ(x.id, i + 1);
        ASSERT_EQ(x.label, "g" + std::to_string(i + 1));
        ASSERT_EQ(std::tie(x.submit, x.duration, x.gpus, x.pools, x.qos, x.user),
                  std::tie(y.submit, y.duration, y.gpus, y.pools, y.qos, y.user));
        ASSERT_EQ(x.recorded_start, -1);
        if (i > 0) {
            ASSERT_GE(x.submit, a.jobs[i - 1].submit);
        }
    }
    // The first jobs of seed 42, as made on Debian 12 (x86-64, glibc 2.36):
    // a change here changes every published scenario.
    std::ostringstream first;
    for (size_t i = 0; i < 4; ++i) {
        const SimJob &j = a.jobs[i];
        first << j.submit << " " << j.pools[0] << " " << j.qos << " " << j.gpus << " " << j.duration << " " << j.user
              << "\n";
    }
    EXPECT_EQ(first.str(),
              "95 pool3 low 1 10832 u3\n"
              "127 pool2 normal 1 1112 u4\n"
              "246 pool4 low 1 2392 u4\n"
              "257 pool2 high 1 1163 u3\n");
    EXPECT_EQ(a.notes, b.notes);

    s.seed = 43;
    Workload c = generate_workload(s, 64);
    size_t same = 0;
    for (size_t i = 0; i < c.jobs.size(); ++i) same += c.jobs[i].duration == a.jobs[i].duration;
    EXPECT_LT(same, 50u);
}

TEST(SimGenerator, DistributionsMatchTheSpecOnALargeSample) {
    const uint64_t n = 200000;
    GeneratorSpec s = parse_generator_spec(
        "Seed=1 Jobs=200000 Pools=pool1,pool2:3 Tiers=high:0.2,normal:0.5,low:0.3 "
        "Gpus=1:0.6,2:0.2,4:0.1,8:0.1 Duration=lognormal:1h:1.0 Load=2 Users=10",
        "x");
    const uint64_t cluster_gpus = 10000;
    Workload w = generate_workload(s, cluster_gpus);
    ASSERT_EQ(w.jobs.size(), n);
    std::map<std::string, double> tiers, pools, users;
    std::map<uint32_t, double> gpus;
    double sum_log = 0, sum_log2 = 0;
    for (const SimJob &j : w.jobs) {
        tiers[j.qos] += 1.0 / n;
        pools[j.pools[0]] += 1.0 / n;
        users[j.user] += 1.0 / n;
        gpus[j.gpus] += 1.0 / n;
        const double l = std::log(static_cast<double>(j.duration));
        sum_log += l;
        sum_log2 += l * l;
    }
    // Fractions: within 0.005 (over 4 standard errors at n = 200,000).
    EXPECT_NEAR(tiers["high"], 0.2, 0.005);
    EXPECT_NEAR(tiers["normal"], 0.5, 0.005);
    EXPECT_NEAR(tiers["low"], 0.3, 0.005);
    EXPECT_NEAR(pools["pool1"], 0.25, 0.005);
    EXPECT_NEAR(pools["pool2"], 0.75, 0.005);
    EXPECT_NEAR(gpus[1], 0.6, 0.005);
    EXPECT_NEAR(gpus[2], 0.2, 0.005);
    EXPECT_NEAR(gpus[4], 0.1, 0.005);
    EXPECT_NEAR(gpus[8], 0.1, 0.005);
    EXPECT_EQ(users.size(), 10u);
    EXPECT_NEAR(users["u1"], 0.1, 0.005);
    EXPECT_NEAR(users["u10"], 0.1, 0.005);
    // log(duration) ~ N(log 3600, 1): mean within 0.01, sd within 0.01.
    const double mean = sum_log / n, sd = std::sqrt(sum_log2 / n - mean * mean);
    EXPECT_NEAR(mean, std::log(3600.0), 0.01);
    EXPECT_NEAR(sd, 1.0, 0.01);
    // Arrivals: load 2 on 10,000 GPUs with 2.2 GPUs and 3600 e^0.5 s a job
    // is a job every 0.6529 s; the sample's mean within 1%.
    const double expected = 2.2 * 3600 * std::exp(0.5) / (2.0 * cluster_gpus);
    const double got = static_cast<double>(w.jobs.back().submit - w.jobs.front().submit) / (n - 1);
    EXPECT_NEAR(got / expected, 1.0, 0.01);
    EXPECT_EQ(w.notes.size(), 1u);
}

TEST(SimGenerator, ClampsDurationsAndOtherForms) {
    GeneratorSpec s = parse_generator_spec(
        "Jobs=5000 Pools=a Tiers=b Duration=exp:10m DurationMin=5m DurationMax=20m Interarrival=10", "x");
    Workload w = generate_workload(s, 0);
    int64_t lo = INT64_MAX, hi = 0;
    for (const SimJob &j : w.jobs) {
        lo = std::min(lo, j.duration);
        hi = std::max(hi, j.duration);
        EXPECT_EQ(j.user, "");
    }
    EXPECT_EQ(lo, 300);
    EXPECT_EQ(hi, 1200);
    s = parse_generator_spec("Jobs=1000 Pools=a Tiers=b Duration=uniform:100:200 Interarrival=1 Start=500", "x");
    w = generate_workload(s, 0);
    for (const SimJob &j : w.jobs) {
        EXPECT_GE(j.duration, 100);
        EXPECT_LE(j.duration, 200);
        EXPECT_GE(j.submit, 500);
    }
    s = parse_generator_spec("Jobs=10 Pools=a Tiers=b Duration=fixed:77 Interarrival=1", "x");
    for (const SimJob &j : generate_workload(s, 0).jobs) {
        EXPECT_EQ(j.duration, 77);
    }
}

// --- shipped scenario files -------------------------------------------------

TEST(SimScenarios, ShippedConfigsAndSpecsLoad) {
    for (const char *name : {"contended.conf", "million.conf", "alibaba.conf",
                             "alibaba-32.conf", "alibaba-64.conf"}) {
        SCOPED_TRACE(name);
        EXPECT_NO_THROW(gpupool::load_config_file(srcdir() + "/etc/sim/" + name));
    }
    for (const char *name : {"contended.gen", "million.gen", "osmo-small.gen"}) {
        SCOPED_TRACE(name);
        std::ifstream in(srcdir() + "/etc/sim/" + name);
        ASSERT_TRUE(in);
        std::stringstream text;
        text << in.rdbuf();
        EXPECT_NO_THROW(parse_generator_spec(text.str(), name));
    }
    // The contended scenario of doc/evaluation.md: 4 pools of quota 16
    // sharing 64 GPUs, 30% LOW.
    gpupool::Config cfg = gpupool::load_config_file(srcdir() + "/etc/sim/contended.conf");
    ASSERT_EQ(cfg.pools.size(), 4u);
    for (const auto &p : cfg.pools) EXPECT_EQ(p.quota, 16u);
    std::ifstream in(srcdir() + "/etc/sim/contended.gen");
    std::stringstream text;
    text << in.rdbuf();
    GeneratorSpec g = parse_generator_spec(text.str(), "contended.gen");
    double low = 0, all = 0;
    for (const auto &t : g.tiers) {
        all += t.second;
        if (t.first == "low") low += t.second;
    }
    EXPECT_DOUBLE_EQ(low / all, 0.3);
    // contended.slurm.conf is --nodes 8x8 --pools pool1,pool2,pool3,pool4.
    SimCluster file = read_slurm_conf(srcdir() + "/etc/sim/contended.slurm.conf");
    SimCluster shorthand = make_cluster("8x8", "pool1,pool2,pool3,pool4");
    ASSERT_EQ(file.nodes.size(), shorthand.nodes.size());
    for (size_t i = 0; i < file.nodes.size(); ++i) {
        EXPECT_EQ(file.nodes[i].name, shorthand.nodes[i].name);
        EXPECT_EQ(file.nodes[i].gpus, shorthand.nodes[i].gpus);
    }
    ASSERT_EQ(file.partitions.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(file.partitions[i].name, shorthand.partitions[i].name);
        EXPECT_EQ(file.partitions[i].nodes, shorthand.partitions[i].nodes);
    }
    EXPECT_EQ(total_gpus(file), 64u);
}

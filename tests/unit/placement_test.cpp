// Placement= (placement.hpp): which strategy each node gets from the pools
// over it, and the Weights that carry pack out on Slurm (base * 256 + free
// GPUs), keyed by sentences.
#include <gtest/gtest.h>

#include "engine.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

struct World {
    std::string pools;                  // Pool= lines
    std::vector<std::string> parts;     // "name first last [lln]"
    std::vector<uint32_t> free;         // free GPUs per 8-GPU node
    bool one_node_by_weight = false;    // Slurm 26.05: one-node jobs by Weight alone
};

// The engine after one pass over `w` (nodes of 8 GPUs).
struct Placed {
    Engine e;
    Snapshot snap;
    explicit Placed(const World &w) : e(engine_with(kOsmoTiers + w.pools)), snap(cluster(int(w.free.size()), 8)) {
        for (const std::string &p : w.parts) {
            char name[32] = {0}, lln[8] = {0};
            int first = 0, last = 0;
            EXPECT_GE(std::sscanf(p.c_str(), "%31s %d %d %7s", name, &first, &last, lln), 3);
            partition(snap, name, first, last);
            snap.partitions.back().lln = std::string(lln) == "lln";
        }
        snap.one_node_by_weight = w.one_node_by_weight;
        set_free(w.free);
    }
    void set_free(const std::vector<uint32_t> &free) {
        snap.node_usage = true;
        for (size_t n = 0; n < free.size(); ++n) snap.nodes[n].free_gpus = free[n];
        e.evaluate(snap, 1000);
    }
    std::vector<uint32_t> weights(const std::vector<uint32_t> &current) {
        std::vector<uint32_t> want(current.size());
        e.node_weights(current.data(), want.data(), current.size());
        return want;
    }
    std::string warnings() const {
        std::string all;
        for (const std::string &w : e.warnings()) all += w + "\n";
        return all;
    }
};

struct Row {
    const char *sentence;
    World world;
    std::vector<uint32_t> current;  // Weights now
    std::vector<uint32_t> want;
    const char *warning;             // part of a warning, or "" for none
};

// Each row's Weights after one pass, and its warning (or none).
void check(const std::vector<Row> &rows) {
    for (const Row &r : rows) {
        SCOPED_TRACE(r.sentence);
        Placed p(r.world);
        EXPECT_EQ(p.weights(r.current), r.want);
        if (*r.warning)
            EXPECT_NE(p.warnings().find(r.warning), std::string::npos) << p.warnings();
        else
            EXPECT_EQ(p.warnings().find("Placement"), std::string::npos) << p.warnings();
    }
}

}  // namespace

TEST(Placement, WeightsPerStrategy) {
    // Nodes of 8 GPUs and no running job: a packing node's key is
    // 8 * 9 + its free GPUs (no GPU held by NP jobs).
    auto pk = [](uint32_t free) { return 8 * 9 + free; };
    const uint32_t S = NodeWeights::kScale;
    const std::vector<Row> rows = {
        {"Placement=pack: each node's Weight is (its base's rank + 1) times 4096 plus its key (free GPUs last)",
         {"Pool=a Quota=8 Placement=pack\n", {"a 0 2"}, {7, 3, 8}},
         {1, 1, 1},
         {S + pk(7), S + pk(3), S + pk(8)},
         ""},
        {"without Placement= (slurm), gpupool leaves every Weight: Slurm's first fit",
         {"Pool=a Quota=8\n", {"a 0 2"}, {7, 3, 8}},
         {1, 1, 1},
         {1, 1, 1},
         ""},
        {"the admin's Weights stay the first key: a node of Weight 2 comes after every node of Weight 1",
         {"Pool=a Quota=8 Placement=pack\n", {"a 0 2"}, {0, 8, 1}},
         {1, 2, 1},
         {S + pk(0), 2 * S + pk(8), S + pk(1)},
         ""},
        {"a partition with LLN=YES spreads by default: where nothing packs, gpupool leaves every Weight",
         {"Pool=a Quota=8\n", {"a 0 1 lln"}, {7, 3}},
         {1, 1},
         {1, 1},
         ""},
        {"a spread pool beside a packing one keeps level Weights (base times 4096) so that LLN judges its nodes",
         {"Pool=a Quota=8 Placement=pack\nPool=b Quota=8 Placement=spread\n", {"a 0 1", "b 2 3 lln"}, {7, 3, 7, 3}},
         {1, 1, 1, 1},
         {S + pk(7), S + pk(3), S, S},
         ""},
        {"Placement=spread on a partition without LLN=YES is warned with what to set",
         {"Pool=a Quota=8 Placement=spread\n", {"a 0 1"}, {7, 3}},
         {1, 1},
         {1, 1},
         "add LLN=YES to PartitionName=a"},
        {"Placement=pack on a partition with LLN=YES packs and is warned",
         {"Pool=a Quota=8 Placement=pack\n", {"a 0 1 lln"}, {7, 3}},
         {1, 1},
         {S + pk(7), S + pk(3)},
         "remove LLN=YES from PartitionName=a"},
        {"pools sharing nodes with opposite strategies leave the shared nodes level, and are warned",
         {"Pool=a Quota=8 Placement=pack\nPool=b Quota=8 Placement=spread\n", {"a 0 2", "b 1 2 lln"}, {7, 3, 5}},
         {1, 1, 1},
         {S + pk(7), S, S},
         "pools a (Placement=pack) and b (Placement=spread) share 2 node(s) from n1"},
        {"nodes in no pool keep the admin's order under pack's scale",
         {"Pool=a Quota=8 Placement=pack\n", {"a 0 0", "other 1 1"}, {7, 3}},
         {1, 3},
         {S + pk(7), 2 * S},
         ""},
        {"ranks, not bases: a node of Weight 20000000 stays after one of Weight 1 and under 2^24 (Slurm shifts "
         "Weights 8 bits in 32)",
         {"Pool=a Quota=8 Placement=pack\n", {"a 0 1"}, {7, 3}},
         {1, 20000000},
         {S + pk(7), 2 * S + pk(3)},
         ""},
    };
    check(rows);
}

// Slurm 26.05 places a job capped at one node by Weight alone, never
// reaching LLN (cons_tres _get_one_res): spread needs Weights there.
TEST(Placement, WhereSlurmPlacesOneNodeJobsByWeightAloneSpreadSetsWeights) {
    auto pk = [](uint32_t free) { return 8 * 9 + free; };
    const uint32_t S = NodeWeights::kScale;
    const std::vector<Row> rows = {
        {"Placement=spread: each node's Weight is (its base's rank + 1) times 4096 plus 8 less its free GPUs: "
         "the node with the most free GPUs first",
         {"Pool=a Quota=8 Placement=spread\n", {"a 0 2 lln"}, {7, 3, 8}, true},
         {1, 1, 1},
         {S + 1, S + 5, S + 0},
         ""},
        {"a pool without Placement= over an LLN partition keeps level Weights (LLN alone, as Slurm does)",
         {"Pool=a Quota=8\n", {"a 0 1 lln"}, {7, 3}, true},
         {1, 1},
         {1, 1},
         ""},
        {"a spreading pool and a packing one on their own nodes each get their own key",
         {"Pool=a Quota=8 Placement=pack\nPool=b Quota=8 Placement=spread\n", {"a 0 1", "b 2 3 lln"}, {7, 3, 7, 3},
          true},
         {1, 1, 1, 1},
         {S + pk(7), S + pk(3), S + 1, S + 5},
         ""},
        {"pools sharing nodes with opposite strategies still leave the shared nodes level, and are warned",
         {"Pool=a Quota=8 Placement=pack\nPool=b Quota=8 Placement=spread\n", {"a 0 2", "b 1 2 lln"}, {7, 3, 5},
          true},
         {1, 1, 1},
         {S + pk(7), S, S},
         "pools a (Placement=pack) and b (Placement=spread) share 2 node(s) from n1"},
        {"the admin's Weights stay the first key under spread too",
         {"Pool=a Quota=8 Placement=spread\n", {"a 0 1 lln"}, {8, 2}, true},
         {2, 1},
         {2 * S + 0, S + 6},
         ""},
    };
    check(rows);
}

TEST(Placement, AWeightTheAdminChangesBecomesTheBaseAndOneGpupoolSetIsNot) {
    Placed p({"Pool=a Quota=8 Placement=pack\n", {"a 0 1"}, {7, 3}});
    const uint32_t S = NodeWeights::kScale, k7 = 72 + 7, k6 = 72 + 6, k3 = 72 + 3;
    EXPECT_EQ(p.weights({1, 1}), (std::vector<uint32_t>{S + k7, S + k3}));
    // As set: the next pass keeps the base and follows the free GPUs.
    p.set_free({6, 3});
    EXPECT_EQ(p.weights({S + k7, S + k3}), (std::vector<uint32_t>{S + k6, S + k3}));
    // scontrol update NodeName=node2 Weight=5: node2's base is now 5.
    EXPECT_EQ(p.weights({S + k6, 5}), (std::vector<uint32_t>{S + k6, 2 * S + k3}));
}

TEST(Placement, WhenNoPoolPacksAnyMoreEveryNodeGetsItsBaseBack) {
    Placed p({"Pool=a Quota=8 Placement=pack\n", {"a 0 1"}, {7, 3}});
    const uint32_t S = NodeWeights::kScale;
    EXPECT_EQ(p.weights({1, 4}), (std::vector<uint32_t>{S + 79, 2 * S + 75}));
    p.e.set_config(parse_config(kOsmoTiers + "Pool=a Quota=8 Placement=spread\n", "test.conf"));
    p.snap.partitions[0].lln = true;
    p.set_free({7, 3});
    EXPECT_EQ(p.weights({S + 79, 2 * S + 75}), (std::vector<uint32_t>{1, 4}));
}

TEST(Placement, NoWeightsWithoutNodeUsage) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=8\n");
    Snapshot s = cluster(2, 8);
    partition(s, "a", 0, 1);
    e.evaluate(s, 1000);
    std::vector<uint32_t> cur{1, 1}, want(2);
    EXPECT_EQ(e.node_weights(cur.data(), want.data(), 2), 0u);
    EXPECT_EQ(want, cur);
}

TEST(Placement, ConfigReadsAndWritesPlacement) {
    const std::string text = kOsmoTiers + "Pool=a Quota=8 Placement=Spread\nPool=b Quota=8 Placement=pack\nPool=c Quota=1\nPool=d Quota=1 Placement=slurm\n";
    Config c = parse_config(text, "test.conf");
    EXPECT_EQ(c.pools[0].placement, Placement::Spread);
    EXPECT_EQ(c.pools[1].placement, Placement::Pack);
    EXPECT_EQ(c.pools[2].placement, Placement::Default);
    EXPECT_EQ(c.pools[3].placement, Placement::Default);
    const Config again = parse_config(write_config(c), "written.conf");
    EXPECT_EQ(again.pools[0].placement, Placement::Spread);
    EXPECT_EQ(again.pools[1].placement, Placement::Pack);
    EXPECT_EQ(again.pools[2].placement, Placement::Default);
    try {
        parse_config(kOsmoTiers + "Pool=a Quota=8 Placement=scatter\n", "test.conf");
        FAIL() << "accepted Placement=scatter";
    } catch (const ConfigError &e) {
        EXPECT_NE(std::string(e.what()).find("bad value 'scatter' for Placement: expected slurm, pack or spread"),
                  std::string::npos)
            << e.what();
    }
    try {
        parse_config(kOsmoTiers + "Pool=a Quota=8 Placement=pack CpuPlacement=spread\n", "test.conf");
        FAIL() << "accepted CpuPlacement=";
    } catch (const ConfigError &e) {
        EXPECT_NE(std::string(e.what()).find("test.conf:6: CpuPlacement= is not supported in Pool=a: Slurm orders a "
                                             "partition's nodes by one Weight"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Placement, NodesOfOneGpuAreLeftAlone) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=2 Placement=pack\n");
    Snapshot s = cluster(2, 1);
    partition(s, "a", 0, 1);
    s.node_usage = true;
    s.nodes[0].free_gpus = 1;
    e.evaluate(s, 1000);
    std::vector<uint32_t> cur{1, 1}, want(2);
    EXPECT_EQ(e.node_weights(cur.data(), want.data(), 2), 0u);
    EXPECT_EQ(want, cur);
}

// Pack gathers non-preemptible jobs: of two nodes with 4 GPUs free, the one
// whose other GPUs run a NORMAL job comes first; the node of a LOW job
// stays clearable for a job within its quota.
TEST(Placement, PackPutsTheNodesOfNonPreemptibleJobsFirst) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=16 Placement=pack\n");
    Snapshot s = cluster(2, 8);
    partition(s, "a", 0, 1);
    SnapJob low = running(1, "a", "low", 4, 500), normal = running(2, "a", "normal", 4, 500);
    low.nodes = {NodeShare{0, 4}};
    normal.nodes = {NodeShare{1, 4}};
    s.add_job(low);
    s.add_job(normal);
    s.node_usage = true;
    s.nodes[0].free_gpus = 4;
    s.nodes[1].free_gpus = 4;
    e.evaluate(s, 1000);
    std::vector<uint32_t> cur{1, 1}, want(2);
    EXPECT_EQ(e.node_weights(cur.data(), want.data(), 2), 2u);
    const uint32_t S = NodeWeights::kScale;
    EXPECT_EQ(want, (std::vector<uint32_t>{S + 8 * 9 + 4, S + 4 * 9 + 4}));
}

// The job id index of priority/gpupool's array caps (id_index.h): the same answers as a map over random adds, moves and removals,
// growing from empty to thousands of ids.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "../../src/plugins/priority/gpupool/id_index.h"

TEST(IdIndex, AnswersAsAMap) {
    std::mt19937 rng(5);
    for (int round = 0; round < 20; ++round) {
        gpp_id_index_t ix{};
        std::map<uint32_t, size_t> ref;
        const uint32_t span = round % 2 ? 64 : 100000;  // dense ids collide in runs
        for (int op = 0; op < 20000; ++op) {
            uint32_t id = static_cast<uint32_t>(rng() % span) * (round % 3 == 0 ? 1024 : 1);
            switch (rng() % 3) {
            case 0:
            case 1: {
                size_t pos = rng() % 1000000;
                ASSERT_TRUE(gpp_id_put(&ix, id, pos));
                ref[id] = pos;
                break;
            }
            default:
                gpp_id_del(&ix, id);
                ref.erase(id);
            }
            long want = ref.count(id) ? static_cast<long>(ref[id]) : -1;
            ASSERT_EQ(gpp_id_find(&ix, id), want) << "round " << round << " op " << op;
        }
        ASSERT_EQ(ix.count, ref.size());
        for (auto &[id, pos] : ref) ASSERT_EQ(gpp_id_find(&ix, id), static_cast<long>(pos));
        for (uint32_t id = 0; id < 2000; ++id) {
            if (!ref.count(id)) {
                ASSERT_EQ(gpp_id_find(&ix, id), -1);
            }
        }
        gpp_id_free(&ix);
        EXPECT_EQ(gpp_id_find(&ix, 1), -1);
    }
}

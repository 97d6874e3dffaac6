// Fairshare over one set of shared nodes (R8): quota plus a share of the
// unused GPUs, divided among pools that still ask for more in proportion to
// their (history-adjusted) weight, water-filling, in whole GPUs.
#pragma once

#include <cstdint>
#include <vector>

namespace gpupool {

// Divide `amount` whole units in proportion to `weight`, never giving a
// pool more than its `cap`; what a capped pool does not take is divided
// again among the rest.  Slices are floored, left-over units go one at a
// time to the largest fractional remainder, ties to the lower index.
std::vector<uint32_t> water_fill(uint32_t amount, const std::vector<double> &weight,
                                 const std::vector<uint32_t> &cap);

struct FairshareInput {
    uint32_t quota = 0;
    uint32_t weight = 1;
    uint32_t demand = 0;       // GPUs used plus GPUs asked for by pending jobs
    double usage_share = 0;    // decayed usage / decayed capacity, 0..1
    double usage_weight = -1;  // its own K (a pool's UsageWeight=); < 0: the division's
    uint32_t rank = 0;         // higher ranks divide the unused GPUs first
};

struct FairshareResult {
    std::vector<uint32_t> over_quota;  // per pool
    std::vector<uint32_t> fairshare;   // quota + over_quota
    uint32_t divisible = 0;            // unused GPUs that were divided
    bool overcommitted = false;        // quotas add up to more than capacity
};

// `usage_weight` is K: a pool's share is proportional to
// max(0, W + K * (W - U)) with W its weight over the asking pools' weights
// and U its usage share; a pool with its own K (FairshareInput) uses that.
// Ranks (Run:ai): the pools of the highest rank divide the unused GPUs
// first, up to what they ask; each lower rank divides what is left, W then
// taken among the asking pools of its own rank.
FairshareResult compute_fairshare(uint32_t capacity, const std::vector<FairshareInput> &pools,
                                  double usage_weight);

}  // namespace gpupool

#include "fairshare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace gpupool {

std::vector<uint32_t> water_fill(uint32_t amount, const std::vector<double> &weight,
                                 const std::vector<uint32_t> &cap) {
    const size_t n = weight.size();
    std::vector<uint32_t> given(n, 0);
    std::vector<size_t> active;
    for (size_t i = 0; i < n; ++i)
        if (weight[i] > 0 && cap[i] > 0) active.push_back(i);

    uint64_t remaining = amount;
    while (remaining > 0 && !active.empty()) {
        double total = 0;
        for (size_t i : active) total += weight[i];
        // Any pool whose proportional slice reaches its cap takes its cap
        // and leaves; the rest is divided again.
        std::vector<size_t> still;
        uint64_t taken = 0;
        for (size_t i : active) {
            double slice = static_cast<double>(remaining) * weight[i] / total;
            uint32_t want = cap[i] - given[i];
            if (slice >= static_cast<double>(want)) {
                given[i] += want;
                taken += want;
            } else {
                still.push_back(i);
            }
        }
        if (taken > 0) {
            remaining -= std::min<uint64_t>(taken, remaining);
            active.swap(still);
            continue;
        }
        // Nobody capped: floor every slice, then hand out the left-overs.
        std::vector<double> frac(n, 0);
        uint64_t handed = 0;
        for (size_t i : active) {
            double slice = static_cast<double>(remaining) * weight[i] / total;
            double fl = std::floor(slice);
            given[i] += static_cast<uint32_t>(fl);
            handed += static_cast<uint64_t>(fl);
            frac[i] = slice - fl;
        }
        uint64_t left = remaining - handed;
        std::vector<size_t> by_frac = active;
        std::stable_sort(by_frac.begin(), by_frac.end(),
                         [&](size_t a, size_t b) { return frac[a] > frac[b]; });
        for (size_t k = 0; k < by_frac.size() && left > 0; ++k) {
            size_t i = by_frac[k];
            if (given[i] < cap[i]) {
                ++given[i];
                --left;
            }
        }
        break;
    }
    return given;
}

FairshareResult compute_fairshare(uint32_t capacity, const std::vector<FairshareInput> &pools,
                                  double usage_weight) {
    FairshareResult r;
    const size_t n = pools.size();
    r.over_quota.assign(n, 0);
    r.fairshare.resize(n);
    uint64_t quota_sum = 0, deserved = 0;
    for (const auto &p : pools) {
        quota_sum += p.quota;
        deserved += std::min(p.quota, p.demand);
    }
    r.overcommitted = quota_sum > capacity;
    if (!r.overcommitted && deserved < capacity) {
        r.divisible = static_cast<uint32_t>(capacity - deserved);
        std::vector<uint32_t> ranks;
        for (const auto &p : pools) ranks.push_back(p.rank);
        std::sort(ranks.begin(), ranks.end(), std::greater<uint32_t>());
        ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
        uint32_t left = r.divisible;
        for (uint32_t rank : ranks) {
            std::vector<uint32_t> ask(n, 0);
            double weight_sum = 0;
            for (size_t i = 0; i < n; ++i) {
                const auto &p = pools[i];
                if (p.rank != rank) continue;
                ask[i] = p.demand > p.quota && p.weight > 0 ? p.demand - p.quota : 0;
                if (ask[i] > 0) weight_sum += p.weight;
            }
            std::vector<double> eff(n, 0);
            for (size_t i = 0; i < n; ++i) {
                if (ask[i] == 0) continue;
                double w = pools[i].weight / weight_sum;
                const double k = pools[i].usage_weight >= 0 ? pools[i].usage_weight : usage_weight;
                eff[i] = std::max(0.0, w + k * (w - pools[i].usage_share));
            }
            const std::vector<uint32_t> given = water_fill(left, eff, ask);
            for (size_t i = 0; i < n; ++i) {
                r.over_quota[i] += given[i];
                left -= given[i];
            }
        }
    }
    for (size_t i = 0; i < n; ++i) r.fairshare[i] = pools[i].quota + r.over_quota[i];
    return r;
}

}  // namespace gpupool

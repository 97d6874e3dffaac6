#include "usage.hpp"

#include <algorithm>
#include <cmath>

namespace gpupool {

double DecayParams::factor(double age) const {
    if (half_life <= 0 || age <= 0) return 1.0;
    return std::exp2(-age / static_cast<double>(half_life));
}

int64_t DecayParams::bucket_width() const {
    int64_t span = window > 0 ? window : (half_life > 0 ? half_life : 86400);
    return std::max<int64_t>(1, span / 64);
}

void UsageSeries::add(double amount, int64_t t0, int64_t t1, const DecayParams &p) {
    if (amount <= 0 || t1 <= t0) return;
    const int64_t width = p.bucket_width();
    int64_t t = t0;
    while (t < t1) {
        // Bucket boundaries are aligned to multiples of the width so that
        // passes at any rhythm fill the same buckets.
        int64_t b_start = t - ((t % width) + width) % width;
        int64_t b_end = b_start + width;
        int64_t seg_end = std::min(t1, b_end);
        if (buckets_.empty() || buckets_.back().end <= t) {
            if (!buckets_.empty() && buckets_.back().end > b_start)
                b_start = buckets_.back().end;  // width changed: no overlap
            buckets_.push_back(Bucket{b_start, b_end, 0});
        }
        buckets_.back().value += amount * static_cast<double>(seg_end - t);
        t = seg_end;
    }
}

double UsageSeries::decayed(int64_t now, const DecayParams &p) const {
    double sum = 0;
    if (tail_ > 0) sum += tail_ * p.factor(static_cast<double>(now - tail_time_));
    for (const Bucket &b : buckets_) {
        if (p.window > 0 && b.end <= now - p.window) continue;
        double mid = 0.5 * static_cast<double>(b.start + b.end);
        sum += b.value * p.factor(static_cast<double>(now) - mid);
    }
    return sum;
}

void UsageSeries::prune(int64_t now, const DecayParams &p) {
    if (p.window > 0) {
        tail_ = 0;
        while (!buckets_.empty() && buckets_.front().end <= now - p.window)
            buckets_.pop_front();
        return;
    }
    const int64_t keep_from = now - 64 * p.bucket_width();
    while (!buckets_.empty() && buckets_.front().end <= keep_from) {
        const Bucket &b = buckets_.front();
        double mid = 0.5 * static_cast<double>(b.start + b.end);
        // Move the tail's reference time forward, then add this bucket.
        double tail_now = tail_ * p.factor(static_cast<double>(keep_from - tail_time_));
        tail_ = tail_now + b.value * p.factor(static_cast<double>(keep_from) - mid);
        tail_time_ = keep_from;
        buckets_.pop_front();
    }
}

}  // namespace gpupool

#include "usage.hpp"

#include <algorithm>
#include <cmath>

namespace gpupool {

namespace {

// Start of the width-aligned bucket that holds t.
int64_t align_down(int64_t t, int64_t width) {
    int64_t r = t % width;
    if (r < 0) r += width;
    return sat_sub(t, r);
}

double midpoint(const UsageSeries::Bucket &b) {
    return 0.5 * static_cast<double>(b.start) + 0.5 * static_cast<double>(b.end);
}

}  // namespace

double DecayParams::factor(double age) const {
    if (half_life <= 0 || age <= 0) return 1.0;
    return std::exp2(-age / static_cast<double>(half_life));
}

double DecayParams::integral(int64_t t0, int64_t t1, int64_t at) const {
    const double span = static_cast<double>(t1) - static_cast<double>(t0);
    if (span <= 0) return 0;
    if (half_life <= 0) return span;
    // Integral of 2^-((at - t) / h) over [t0, t1):
    // h / ln 2 * 2^-((at - t1) / h) * (1 - 2^-((t1 - t0) / h)).
    const double h = static_cast<double>(half_life);
    const double age = static_cast<double>(at) - static_cast<double>(t1);
    return h / M_LN2 * factor(age) * -std::expm1(-span * M_LN2 / h);
}

int64_t DecayParams::bucket_width() const {
    int64_t span = window > 0 ? window : (half_life > 0 ? half_life : 86400);
    return std::max<int64_t>(1, span / 64);
}

void UsageSeries::fold_into_tail(double amount, int64_t t0, int64_t t1, const DecayParams &p) {
    const int64_t at = std::max(t1, tail_time_);
    tail_ = tail_ * p.factor(static_cast<double>(at) - static_cast<double>(tail_time_)) + amount * p.integral(t0, t1, at);
    tail_time_ = at;
}

void UsageSeries::add(double amount, int64_t t0, int64_t t1, const DecayParams &p) {
    if (!(amount > 0) || t1 <= t0) return;
    const int64_t width = p.bucket_width();
    // prune(t1) keeps only buckets that end after t1 - span: the aligned
    // bucket holding that time and the ones after it.  Older parts of
    // [t0, t1) get no bucket: with a window they are dropped, without one
    // they go straight into the tail.  (64 * width <= span: no overflow.)
    const int64_t span = p.window > 0 ? p.window : 64 * width;
    int64_t first = align_down(sat_sub(t1, span), width);
    // A last bucket that reaches past `first` is kept: fill on from t0.
    if (!buckets_.empty() && buckets_.back().end > first) first = t0;
    if (first > t0) {
        if (p.window <= 0) fold_into_tail(amount, t0, first, p);
        t0 = first;
    }
    int64_t t = t0;
    while (t < t1) {
        if (!buckets_.empty() && buckets_.back().end > t) {
            // The last bucket reaches past t: fill it in one step (usage
            // added out of order lands there too).
            int64_t seg_end = std::min(t1, buckets_.back().end);
            buckets_.back().value += amount * (static_cast<double>(seg_end) - static_cast<double>(t));
            t = seg_end;
            continue;
        }
        // Bucket boundaries are aligned to multiples of the width so that
        // passes at any rhythm fill the same buckets.
        int64_t b_start = align_down(t, width);
        // Never past kMaxTime, where the state file stops taking times.
        int64_t b_end = std::min(sat_add(b_start, width), std::max(kMaxTime, t1));
        if (!buckets_.empty() && buckets_.back().end > b_start)
            b_start = buckets_.back().end;  // width changed: no overlap
        buckets_.push_back(Bucket{b_start, b_end, 0});
    }
}

double UsageSeries::decayed(int64_t now, const DecayParams &p) const {
    double sum = 0;
    if (tail_ > 0) sum += tail_ * p.factor(static_cast<double>(now) - static_cast<double>(tail_time_));
    const int64_t cut = sat_sub(now, p.window);
    for (const Bucket &b : buckets_) {
        if (p.window > 0 && b.end <= cut) continue;
        sum += b.value * p.factor(static_cast<double>(now) - midpoint(b));
    }
    return sum;
}

void UsageSeries::prune(int64_t now, const DecayParams &p) {
    if (p.window > 0) {
        tail_ = 0;
        const int64_t cut = sat_sub(now, p.window);
        while (!buckets_.empty() && buckets_.front().end <= cut) buckets_.pop_front();
        return;
    }
    const int64_t keep_from = sat_sub(now, 64 * p.bucket_width());
    const double keep = static_cast<double>(keep_from);
    while (!buckets_.empty() && buckets_.front().end <= keep_from) {
        const Bucket &b = buckets_.front();
        // Move the tail's reference time forward, then add this bucket.
        double tail_now = tail_ * p.factor(keep - static_cast<double>(tail_time_));
        tail_ = tail_now + b.value * p.factor(keep - midpoint(b));
        tail_time_ = keep_from;
        buckets_.pop_front();
    }
}

bool UsageSeries::drop_future(int64_t now, int64_t accounted_until) {
    bool changed = false;
    while (!buckets_.empty() && buckets_.back().start >= now) {
        buckets_.pop_back();
        changed = true;
    }
    if (!buckets_.empty()) {
        // The bucket across now holds usage up to where it was accounted;
        // keep the part before now, taking it as spread evenly.
        Bucket &b = buckets_.back();
        const int64_t until = std::min(b.end, accounted_until);
        if (until > now) {
            b.value *= (static_cast<double>(now) - static_cast<double>(b.start)) /
                       (static_cast<double>(until) - static_cast<double>(b.start));
            changed = true;
        }
    }
    if (tail_time_ > now) {
        tail_time_ = now;
        changed = true;
    }
    return changed;
}

}  // namespace gpupool

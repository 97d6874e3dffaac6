// Time-decayed GPU usage (R8): a GPU-second that is dt old counts
// 0.5^(dt / half_life), over the last `window` seconds (0 = unlimited).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>

namespace gpupool {

// Times the engine keeps (usage history, submit times, last accounting)
// lie in [0, kMaxTime]: 2^40 s is about 34,800 years, far beyond any real
// clock, yet sums and differences of two such times never overflow.
constexpr int64_t kMaxTime = int64_t(1) << 40;
inline int64_t clamp_time(int64_t t) { return std::clamp<int64_t>(t, 0, kMaxTime); }

// a - b and a + b, saturated to int64 instead of overflowing.
inline int64_t sat_sub(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r)) return r;
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
inline int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

struct DecayParams {
    int64_t half_life = 0;  // seconds; 0 = no decay
    int64_t window = 0;     // seconds; 0 = unlimited

    // Decay factor of something `age` seconds old.
    double factor(double age) const;
    // Decayed GPU-seconds, seen at `at`, of one GPU held over [t0, t1)
    // (t0 <= t1 <= at): the exact integral of factor().
    double integral(int64_t t0, int64_t t1, int64_t at) const;
    // Width of the history buckets: 1/64 of the window (or half-life).
    int64_t bucket_width() const;
};

// One quantity (a pool's GPUs in use, or the GPUs its nodes hold) integrated
// over time.  Recent history is kept in buckets so a window can drop it
// exactly at bucket granularity; with an unlimited window, buckets older
// than 64 widths fold into one decayed `tail` value.  Whatever the span of
// an add(), only the buckets a prune() at its end would keep are made, so
// a long downtime costs no more than a short one.
class UsageSeries {
public:
    struct Bucket {
        int64_t start = 0, end = 0;  // [start, end)
        double value = 0;            // GPU-seconds, undecayed
    };

    // `amount` GPUs held over [t0, t1).
    void add(double amount, int64_t t0, int64_t t1, const DecayParams &p);
    // R8's accounting step, the one for pools and queues alike: `used` GPUs
    // held from `from` (0: nothing accounted yet) to `now`, then prune.
    void advance(double used, int64_t from, int64_t now, const DecayParams &p) {
        if (from > 0 && now > from) add(used, from, now, p);
        prune(now, p);
    }
    // Decayed GPU-seconds as seen at `now`.
    double decayed(int64_t now, const DecayParams &p) const;
    // Drop what fell out of the window; fold old buckets into the tail.
    void prune(int64_t now, const DecayParams &p);
    // The clock went back to `now` (history was accounted up to
    // `accounted_until` > now, or buckets lie after now): drop buckets that
    // start at or after now, scale the one across now down to its past
    // part, and bring a tail time after now back to now.  Returns true if
    // anything was in the future.
    bool drop_future(int64_t now, int64_t accounted_until);

    const std::deque<Bucket> &buckets() const { return buckets_; }
    double tail() const { return tail_; }
    int64_t tail_time() const { return tail_time_; }
    void restore(std::deque<Bucket> b, double tail, int64_t tail_time) {
        buckets_ = std::move(b);
        tail_ = tail;
        tail_time_ = tail_time;
    }

private:
    // Add `amount` GPUs over [t0, t1) straight into the decayed tail.
    void fold_into_tail(double amount, int64_t t0, int64_t t1, const DecayParams &p);

    std::deque<Bucket> buckets_;  // oldest first, non-overlapping
    double tail_ = 0;             // decayed value at tail_time_
    int64_t tail_time_ = 0;
};

}  // namespace gpupool

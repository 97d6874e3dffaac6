// Time-decayed GPU usage (R8): a GPU-second that is dt old counts
// 0.5^(dt / half_life), over the last `window` seconds (0 = unlimited).
#pragma once

#include <cstdint>
#include <deque>

namespace gpupool {

struct DecayParams {
    int64_t half_life = 0;  // seconds; 0 = no decay
    int64_t window = 0;     // seconds; 0 = unlimited

    // Decay factor of something `age` seconds old.
    double factor(double age) const;
    // Width of the history buckets: 1/64 of the window (or half-life).
    int64_t bucket_width() const;
};

// One quantity (a pool's GPUs in use, or the GPUs its nodes hold) integrated
// over time.  Recent history is kept in buckets so a window can drop it
// exactly at bucket granularity; with an unlimited window, buckets older
// than 64 widths fold into one decayed `tail` value.
class UsageSeries {
public:
    struct Bucket {
        int64_t start = 0, end = 0;  // [start, end)
        double value = 0;            // GPU-seconds, undecayed
    };

    // `amount` GPUs held over [t0, t1).
    void add(double amount, int64_t t0, int64_t t1, const DecayParams &p);
    // Decayed GPU-seconds as seen at `now`.
    double decayed(int64_t now, const DecayParams &p) const;
    // Drop what fell out of the window; fold old buckets into the tail.
    void prune(int64_t now, const DecayParams &p);

    const std::deque<Bucket> &buckets() const { return buckets_; }
    double tail() const { return tail_; }
    int64_t tail_time() const { return tail_time_; }
    void restore(std::deque<Bucket> b, double tail, int64_t tail_time) {
        buckets_ = std::move(b);
        tail_ = tail;
        tail_time_ = tail_time;
    }

private:
    std::deque<Bucket> buckets_;  // oldest first, non-overlapping
    double tail_ = 0;             // decayed value at tail_time_
    int64_t tail_time_ = 0;
};

}  // namespace gpupool

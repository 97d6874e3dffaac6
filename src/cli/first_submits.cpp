#include "first_submits.hpp"

#include <algorithm>

namespace gpupool::cli {

FirstSubmits::Query FirstSubmits::plan(const ClusterView &view) {
    Query q;
    q.until = view.now;
    q.since = view.now;
    std::unordered_map<uint32_t, int64_t> first, asked;
    requeued_.clear();
    const int64_t window = last_ < 0 ? 0 : std::max<int64_t>(0, last_ - kClockSlack);
    for (const SnapJob &j : view.snap.jobs) {
        auto known = first_.find(j.id);
        if (j.restart_cnt == 0) {
            first[j.id] = known == first_.end() ? j.submit_time : std::min(known->second, j.submit_time);
            continue;
        }
        requeued_.push_back(j.id);
        if (known != first_.end()) {
            first[j.id] = known->second;
            continue;
        }
        auto a = asked_.find(j.id);
        const int64_t since = a == asked_.end() ? window : a->second;
        asked[j.id] = since;
        q.jobs.push_back(j.id);
        q.since = std::min(q.since, since);
    }
    first_ = std::move(first);
    asked_ = std::move(asked);
    last_ = view.now;
    if (q.jobs.empty()) q.since = 0;
    std::sort(q.jobs.begin(), q.jobs.end());
    return q;
}

void FirstSubmits::merge(const Query &q, const std::unordered_map<uint32_t, int64_t> &found) {
    for (uint32_t id : q.jobs) {
        auto f = found.find(id);
        if (f == found.end() || f->second <= 0) continue;
        first_[id] = f->second;
        asked_.erase(id);
    }
}

std::unordered_map<uint32_t, int64_t> FirstSubmits::requeued() const {
    std::unordered_map<uint32_t, int64_t> out;
    for (uint32_t id : requeued_) {
        auto f = first_.find(id);
        if (f != first_.end()) out.emplace(id, f->second);
    }
    return out;
}

}  // namespace gpupool::cli

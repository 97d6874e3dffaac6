// A small Slurm for the reclaim tests: passes over one snapshot
// whose jobs all run in one pool over the whole cluster.  Each pass
// evaluates, then walks the pending jobs in R1 order: one that quota holds
// waits; one that fits the free GPUs, CPUs and memory starts; else the
// victims preemptable() allows, taken in victim rank order until enough is
// free, are requeued and it starts.  As the preempt plugin does, the engine
// refreshes its running jobs after each start.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine.hpp"
#include "resources.hpp"
#include "snapshot.hpp"
#include "test_helpers.hpp"

namespace gpupool::test {

inline Amounts held_by(const SnapJob &j) { return Amounts{j.gpus, j.cpus, j.mem_mb}; }

class ReclaimLoop {
public:
    struct Pass {
        uint32_t started = 0;
        std::vector<uint32_t> evicted;  // in the order taken
        uint32_t reclaimed = 0;         // of those, taken by R5 (Rule::Reclaim)
    };

    ReclaimLoop(Engine &e, Snapshot &s) : e_(e), s_(s) {
        for (const SnapNode &n : s.nodes) {
            capacity_[kGpu] += n.gpus;
            capacity_[kCpu] += n.cpus;
            capacity_[kMem] += n.mem_mb;
        }
    }

    SnapJob &job(uint32_t id) {
        index();
        return s_.jobs[at_.at(id)];
    }

    Pass pass(int64_t now) {
        index();
        Pass out;
        e_.evaluate(s_, now);
        ranked_valid_ = false;
        for (uint32_t id : unheld_order(e_)) {
            SnapJob &j = job(id);
            if (j.state != JobState::Pending) continue;
            Amounts have = free();
            std::vector<uint32_t> take;
            if (!fits(held_by(j), have)) {
                take = victims(j, have, now, out.reclaimed);
                if (!fits(held_by(j), have)) continue;
            }
            for (uint32_t v : take) {
                SnapJob &vj = job(v);
                vj.state = JobState::Pending;
                vj.start_time = 0;
                vj.restart_cnt++;
                out.evicted.push_back(v);
            }
            j.state = JobState::Running;
            j.start_time = now;
            out.started++;
            e_.refresh_running(s_, now);
            ranked_valid_ = false;
        }
        return out;
    }

private:
    void index() {
        if (at_.size() == s_.jobs.size()) return;
        at_.clear();
        for (size_t i = 0; i < s_.jobs.size(); ++i) at_[s_.jobs[i].id] = i;
    }

    Amounts free() const {
        Amounts f = capacity_;
        for (const SnapJob &j : s_.jobs)
            if (j.state == JobState::Running)
                for (size_t r = 0; r < kResources; ++r) f[r] -= std::min(f[r], held_by(j)[r]);
        return f;
    }

    static bool fits(const Amounts &need, const Amounts &have) {
        for (size_t r = 0; r < kResources; ++r)
            if (need[r] > have[r]) return false;
        return true;
    }

    // Running jobs preemptable() lets `j` take, in rank order, until `have`
    // (grown by what they hold) fits it.
    std::vector<uint32_t> victims(const SnapJob &j, Amounts &have, int64_t now, uint32_t &reclaimed) {
        const std::vector<const SnapJob *> &running = ranked();
        std::string parts, vparts;
        const JobRef preemptor = job_ref(j, parts);
        std::vector<uint32_t> take;
        uint32_t by_reclaim = 0;
        for (const SnapJob *v : running) {
            if (fits(held_by(j), have)) break;
            const Verdict verdict = e_.preemptable(job_ref(*v, vparts), preemptor, now);
            if (!verdict.allowed) continue;
            take.push_back(v->id);
            by_reclaim += verdict.rule == Rule::Reclaim;
            for (size_t r = 0; r < kResources; ++r) have[r] += held_by(*v)[r];
        }
        if (fits(held_by(j), have)) reclaimed += by_reclaim;
        return take;
    }

    // Running jobs in victim rank order, sorted again after each start.
    const std::vector<const SnapJob *> &ranked() {
        if (ranked_valid_) return ranked_;
        ranked_.clear();
        for (const SnapJob &v : s_.jobs)
            if (v.state == JobState::Running) ranked_.push_back(&v);
        std::sort(ranked_.begin(), ranked_.end(), [&](const SnapJob *a, const SnapJob *b) {
            return e_.victim_rank(a->id) < e_.victim_rank(b->id);
        });
        ranked_valid_ = true;
        return ranked_;
    }

    Engine &e_;
    Snapshot &s_;
    std::vector<const SnapJob *> ranked_;
    bool ranked_valid_ = false;
    Amounts capacity_{};
    std::unordered_map<uint32_t, size_t> at_;
};

// One row of a table test: may `preemptor` take `victim`, by which rule,
// and why (the engine's text).
struct VerdictRow {
    const char *sentence;
    uint32_t victim, preemptor;
    bool allowed;
    Rule rule;
    const char *why;
};

inline void expect_rows(Engine &e, ReclaimLoop &loop, const std::vector<VerdictRow> &rows, int64_t now) {
    for (const VerdictRow &row : rows) {
        std::string vp, pp;
        const Verdict v = e.preemptable(job_ref(loop.job(row.victim), vp), job_ref(loop.job(row.preemptor), pp), now);
        EXPECT_EQ(v.allowed, row.allowed) << row.sentence << ": " << v.why;
        EXPECT_EQ(v.rule, row.rule) << row.sentence;
        EXPECT_EQ(v.why, std::string(row.why)) << row.sentence;
    }
}

// Passes until one starts and evicts nothing (at most 20): the jobs
// evicted on the way, in order.
inline std::vector<uint32_t> settle(ReclaimLoop &loop, int64_t &now) {
    std::vector<uint32_t> evicted;
    for (int k = 0; k < 20; ++k) {
        ReclaimLoop::Pass p = loop.pass(now++);
        evicted.insert(evicted.end(), p.evicted.begin(), p.evicted.end());
        if (p.started == 0 && p.evicted.empty()) return evicted;
    }
    ADD_FAILURE() << "no still pass in 20";
    return evicted;
}

}  // namespace gpupool::test

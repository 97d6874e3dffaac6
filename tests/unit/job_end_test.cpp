// A job end redoes admission over only the jobs it can change: job_ended() must decide exactly as the walk over the whole queue
// (job_ended_full(), the code before), and report exactly the jobs whose
// result changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "gpupool.h"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

// What the plugins write for a pending job, and what the core decides
// with: the counts in a held job's reason are left out (they stay as the
// last walk that reached the job set them).
struct Seen {
    bool known = false;
    Admission admission = Admission::Free;
    uint32_t admitted_tasks = 0;
    bool held_priority = false;  // priority 0
    std::set<int> refused;
    Hold hold = Hold::None;
    std::string start_parts;
    uint32_t array_running = 0;
    bool operator==(const Seen &o) const {
        return std::tie(known, admission, admitted_tasks, held_priority, refused, hold, start_parts, array_running) ==
               std::tie(o.known, o.admission, o.admitted_tasks, o.held_priority, o.refused, o.hold, o.start_parts,
                        o.array_running);
    }
};

std::ostream &operator<<(std::ostream &o, const Seen &s) {
    o << "{known " << s.known << " adm " << static_cast<int>(s.admission) << " tasks " << s.admitted_tasks << " prio0 "
      << s.held_priority << " hold " << static_cast<int>(s.hold) << " start '" << s.start_parts << "' running "
      << s.array_running << " refused";
    for (int p : s.refused) o << " " << p;
    return o << "}";
}

Seen seen(const Engine &e, uint32_t id, const std::string &parts) {
    Seen s;
    const PendingResult *r = e.pending_result(id);
    s.array_running = e.array_running(id);
    if (!r) return s;
    s.known = true;
    s.admission = r->admission;
    s.admitted_tasks = r->admitted_tasks;
    s.held_priority = r->priority == 0;
    for (const Refusal &x : r->refused) s.refused.insert(x.pool);
    s.hold = r->hold;
    s.start_parts = e.start_partitions(id, parts);
    return s;
}

// One random case: pools over node ranges (some sharing nodes), a
// partition that is no pool, running jobs (some tasks of arrays that wait
// too), and a queue of NP, array and preemptible jobs, some listing
// several partitions.  Two engines see the same pass, then the same ops;
// one ends jobs with job_ended(), the other with job_ended_full().
class Case {
public:
    // het: some of the queue are heterogeneous jobs of 2 or 3 components.
    explicit Case(uint32_t seed, bool het = false) : rng_(seed) {
        pools_ = 1 + static_cast<int>(rng_() % 4);
        std::string conf = kOsmoTiers;
        for (int p = 0; p < pools_; ++p)
            conf += "Pool=pool" + std::to_string(p) + " Quota=" + std::to_string(rng_() % 7) + "\n";
        snap_ = cluster(12, 2);
        for (int p = 0; p < pools_; ++p) {
            int first = static_cast<int>(rng_() % 8);
            partition(snap_, "pool" + std::to_string(p), first,
                      std::min(11, first + 1 + static_cast<int>(rng_() % 4)));
        }
        partition(snap_, "other", 0, 11);
        inc_ = engine_with(conf);
        full_ = engine_with(conf);
        const int arrays = static_cast<int>(rng_() % 3);
        for (int k = 0; k < arrays; ++k) arrays_.push_back(next_id_++);
        const int running = static_cast<int>(rng_() % 16);
        for (int k = 0; k < running; ++k) {
            SnapJob j = test::running(next_id_++, pool_name(), qos(), 1 + rng_() % 3, 1000 + rng_() % 50);
            if (!arrays_.empty() && rng_() % 3 == 0) j.array_job_id = arrays_[rng_() % arrays_.size()];
            running_.push_back(j.id);
            snap_.add_job(j);
        }
        for (uint32_t a : arrays_) add_pending(a, true);
        const int pending = static_cast<int>(rng_() % 30);
        for (int k = 0; k < pending; ++k) {
            if (het && rng_() % 4 == 0) {
                const uint32_t leader = next_id_, parts = 2 + rng_() % 2;
                for (uint32_t c = 0; c < parts; ++c) add_pending(next_id_++, false, leader);
            } else {
                add_pending(next_id_++, false);
            }
        }
        inc_.evaluate(snap_, now_);
        full_.evaluate(snap_, now_);
    }

    // A job placed between passes (priority_p_set), or one placed again
    // with another size (at most once per job: the code before compared a
    // second placement with the stale pass result).
    void place() {
        SnapJob j;
        if (!queued_.empty() && rng_() % 3 == 0) {
            uint32_t id = queued_[rng_() % queued_.size()];
            if (replaced_.count(id)) return;
            replaced_.insert(id);
            j = job_of(id);
            j.gpus = rng_() % 4;
        } else {
            j = make_pending(next_id_++, false);
            queued_.push_back(j.id);
            parts_[j.id] = join(j.partitions);
        }
        trace_ += " place(" + std::to_string(j.id) + " gpus " + std::to_string(j.gpus) + ")";
        PendingResult a = inc_.provisional(j, now_);
        PendingResult b = full_.provisional(j, now_);
        ASSERT_EQ(a.admission, b.admission) << "placing " << j.id;
        ASSERT_EQ(a.admitted_tasks, b.admitted_tasks) << "placing " << j.id;
    }

    // Jobs seen started by the preempt plugin (refresh_running): pending
    // ones started, running ones gone.
    void refresh() {
        std::set<uint32_t> starting;  // a heterogeneous job's components start together
        for (const SnapJob &j : snap_.jobs)
            if (j.state == JobState::Pending && !ended_.count(j.id) && rng_() % 8 == 0) {
                starting.insert(j.id);
                if (j.het_job_id)
                    for (const SnapJob &k : snap_.jobs)
                        if (k.het_job_id == j.het_job_id && k.state == JobState::Pending && !ended_.count(k.id))
                            starting.insert(k.id);
            }
        for (SnapJob &j : snap_.jobs)
            if (starting.count(j.id)) {
                // Started: no longer pending, its result no longer compared.
                j.state = JobState::Running;
                j.partitions = {j.partitions.front()};
                j.start_time = now_;
                ended_.insert(j.id);
                queued_.erase(std::remove(queued_.begin(), queued_.end(), j.id), queued_.end());
                running_.push_back(j.id);
            }
        Snapshot s = snap_;
        s.jobs.clear();
        for (const SnapJob &j : snap_.jobs)
            if (!(j.state == JobState::Pending && ended_.count(j.id)) &&
                !(j.state == JobState::Running && gone_.count(j.id)))
                s.add_job(j);
        trace_ += " refresh(";
        for (const SnapJob &j : s.jobs)
            if (j.state == JobState::Running) trace_ += std::to_string(j.id) + " ";
        trace_ += ")";
        inc_.refresh_running(s, now_);
        full_.refresh_running(s, now_);
    }

    // One job end, compared; returns false on a difference (reported).
    void end() {
        uint32_t id;
        switch (rng_() % 4) {
        case 0: id = queued_.empty() ? 99999 : queued_[rng_() % queued_.size()]; break;  // cancelled
        case 1: id = 99999; break;                                                           // unknown
        default: id = running_.empty() ? 99999 : running_[rng_() % running_.size()];
        }
        // Slurm cancels a pending heterogeneous job whole (a component
        // alone: ESLURM_NOT_WHOLE_HET_JOB), one component after another;
        // compared after the last.
        std::vector<uint32_t> ids{id};
        if (const uint32_t het = het_of_.count(id) ? het_of_[id] : 0;
            het && std::find(queued_.begin(), queued_.end(), id) != queued_.end())
            for (uint32_t k : queued_)
                if (k != id && het_of_.count(k) && het_of_[k] == het) ids.push_back(k);
        std::map<uint32_t, Seen> was;
        for (auto &[jid, parts] : parts_) was[jid] = seen(inc_, jid, parts);
        bool a = false;
        for (uint32_t k : ids) {
            ended_.insert(k);
            gone_.insert(k);
            queued_.erase(std::remove(queued_.begin(), queued_.end(), k), queued_.end());
            ++now_;
            trace_ += " end(" + std::to_string(k) + ")";
            a = inc_.job_ended(k, now_);
            full_.job_ended_full(k, now_);
        }
        std::set<uint32_t> expected;
        for (auto &[jid, parts] : parts_) {
            if (ended_.count(jid)) continue;  // what it was no longer matters
            Seen si = seen(inc_, jid, parts), sf = seen(full_, jid, parts);
            EXPECT_EQ(si, sf) << "job " << jid << " (het " << (het_of_.count(jid) ? het_of_[jid] : 0) << ") after the end of " << id << "; ops:" << trace_;
            if (jid != id && si.known && !(si == was[jid])) expected.insert(jid);
        }
        std::set<uint32_t> got(inc_.job_end_changes().begin(), inc_.job_end_changes().end());
        changes_ += got.size();
        ends_ += 1;
        EXPECT_EQ(got.size(), inc_.job_end_changes().size()) << "a job reported twice";
        // Jobs ended before may still have results; they are not compared.
        for (uint32_t g : ended_) got.erase(g);
        if (ids.size() == 1) EXPECT_EQ(got, expected) << "end of " << id;
        if (ids.size() == 1 && got != expected)
            for (uint32_t g : got) ADD_FAILURE() << g << " was " << was[g] << " now " << seen(inc_, g, parts_[g]);
        EXPECT_EQ(a, !inc_.job_end_changes().empty());
        for (size_t p = 0; p < inc_.last().pools.size(); ++p) {
            const PoolState &x = inc_.last().pools[p], &y = full_.last().pools[p];
            EXPECT_EQ(x.np_used(), y.np_used()) << "pool " << p;
            EXPECT_EQ(x.np_reserved(), y.np_reserved()) << "pool " << p;
            EXPECT_EQ(x.held_jobs, y.held_jobs) << "pool " << p;
        }
    }

    void run(int ops) {
        for (int k = 0; k < ops && !::testing::Test::HasFailure(); ++k) {
            switch (rng_() % 5) {
            case 0: place(); break;
            case 1: refresh(); break;
            default: end();
            }
        }
    }

private:
    std::string pool_name() { return "pool" + std::to_string(rng_() % static_cast<uint32_t>(pools_)); }
    std::string qos() {
        const char *q[] = {"high", "normal", "normal", "low", ""};
        return q[rng_() % 5];
    }
    static std::string join(const PartitionList &v) {
        std::string s;
        for (const std::string &x : v) s += (s.empty() ? "" : ",") + x;
        return s;
    }
    SnapJob make_pending(uint32_t id, bool array, uint32_t het_job_id = 0) {
        std::string parts = pool_name();
        if (rng_() % 4 == 0) parts += "," + pool_name();
        if (rng_() % 8 == 0) parts += ",other";
        SnapJob j = test::pending(id, parts, qos(), rng_() % 6 == 0 ? 0 : 1 + rng_() % 3, 900 + rng_() % 60);
        if (het_job_id) {
            j.het_job_id = het_job_id;  // no arrays of them (Slurm has none)
            j.submit_time = 900 + het_job_id % 60;
        } else if (array || rng_() % 8 == 0) {
            j.array_tasks = 2 + rng_() % 5;
        }
        return j;
    }
    void add_pending(uint32_t id, bool array, uint32_t het_job_id = 0) {
        SnapJob j = make_pending(id, array, het_job_id);
        if (het_job_id) het_of_[id] = het_job_id;
        queued_.push_back(id);
        parts_[id] = join(j.partitions);
        snap_.add_job(j);
    }
    SnapJob job_of(uint32_t id) {
        for (const SnapJob &j : snap_.jobs)
            if (j.id == id) return j;
        SnapJob j = test::pending(id, parts_[id], qos(), 1, 950);
        return j;
    }

    std::mt19937 rng_;
    int pools_ = 0;
    Snapshot snap_;
    Engine inc_, full_;
    std::vector<uint32_t> arrays_, running_, queued_;
    std::map<uint32_t, std::string> parts_;
    std::map<uint32_t, uint32_t> het_of_;  // component -> its heterogeneous job
    std::set<uint32_t> replaced_, ended_, gone_;
    uint32_t next_id_ = 1;
    int64_t now_ = 2000;
    std::string trace_;

public:
    size_t changes_ = 0, ends_ = 0;
};

}  // namespace

TEST(JobEnd, IncrementalDecidesAsTheFullWalk) {
    size_t changes = 0, ends = 0;
    for (uint32_t seed = 1; seed <= 2000 && !HasFailure(); ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Case c(seed);
        c.run(25);
        changes += c.changes_;
        ends += c.ends_;
    }
    // Not vacuous: many job ends changed something.
    EXPECT_GT(ends, 20000u);
    EXPECT_GT(changes, 5000u);
    std::printf("job ends %zu, results changed %zu\n", ends, changes);
}

// The same with heterogeneous jobs in the queue: a job end admits a held
// one's components together (readmit_het), as the full walk does.
TEST(JobEnd, IncrementalDecidesAsTheFullWalkWithHeterogeneousJobs) {
    size_t changes = 0, ends = 0;
    for (uint32_t seed = 1; seed <= 1000 && !HasFailure(); ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        Case c(seed, true);
        c.run(25);
        changes += c.changes_;
        ends += c.ends_;
    }
    EXPECT_GT(changes, 2000u);
    std::printf("job ends %zu, results changed %zu\n", ends, changes);
}

// 20,000 jobs wait in a pool whose quota is full; one GPU comes back: the
// job end changes one result, the first held job's, and says so, through
// the C ABI the plugin uses; a preemptible job's end changes none.
TEST(JobEnd, TouchesOnlyTheJobsItChanges) {
    gp_engine_t *e = gp_engine_create();
    char err[256];
    ASSERT_EQ(gp_engine_load_config_text(e, (kOsmoTiers + "Pool=pool0 Quota=10\n").c_str(), "t.conf", err, sizeof err),
              GP_OK);
    gp_snapshot_t *s = gp_snapshot_create();
    std::vector<int32_t> nodes;
    for (int n = 0; n < 16; ++n) nodes.push_back(gp_snapshot_add_node(s, ("n" + std::to_string(n)).c_str(), 2));
    gp_snapshot_add_partition(s, "pool0", nodes.data(), nodes.size());
    auto add = [&](uint32_t id, int state, const char *qos, int64_t submit) {
        gp_job_t j{};
        j.job_id = id;
        j.state = state;
        j.partitions = "pool0";
        j.qos = qos;
        j.gpus = 1;
        j.submit_time = submit;
        j.start_time = state == GP_JOB_RUNNING ? 1000 : 0;
        gp_snapshot_add_job(s, &j);
    };
    for (uint32_t id = 1; id <= 10; ++id) add(id, GP_JOB_RUNNING, "normal", 900);
    add(11, GP_JOB_RUNNING, "low", 900);
    const uint32_t n = 20000;
    for (uint32_t k = 0; k < n; ++k) add(100 + k, GP_JOB_PENDING, k % 4 == 3 ? "low" : "normal", 950 + k);
    ASSERT_EQ(gp_engine_evaluate(e, s, 2000), GP_OK);
    ASSERT_EQ(gp_engine_pending_count(e), n);

    EXPECT_EQ(gp_engine_job_ended(e, 11, 2001), 0);  // preemptible: no quota back
    EXPECT_EQ(gp_engine_changed_count(e), 0u);

    EXPECT_EQ(gp_engine_job_ended(e, 1, 2002), 1);
    ASSERT_EQ(gp_engine_changed_count(e), 1u);
    gp_pending_result_t r;
    ASSERT_EQ(gp_engine_changed_at(e, 0, &r), GP_OK);
    EXPECT_EQ(r.job_id, 100u);  // the first in the order
    EXPECT_EQ(r.admission, GP_ADMIT_QUOTA);
    EXPECT_GT(r.priority, 0u);
    EXPECT_EQ(gp_engine_changed_at(e, 1, &r), GP_ERR_ARG);
    ASSERT_EQ(gp_engine_pending_result(e, 101, &r), GP_OK);
    EXPECT_EQ(r.admission, GP_HELD_QUOTA);

    // Two GPUs back: the next two.
    gp_engine_job_ended(e, 2, 2003);
    EXPECT_EQ(gp_engine_job_ended(e, 3, 2003), 1);
    ASSERT_EQ(gp_engine_changed_at(e, 0, &r), GP_OK);
    EXPECT_EQ(r.job_id, 102u);
    gp_snapshot_destroy(s);
    gp_engine_destroy(e);
}

// The worked examples of the source documents, one test each, with exact
// expected outcomes.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;
}

// OSMO "Priority Queueing Order": WF1 and WF2 NORMAL hold the only 2 GPUs;
// LOW, HIGH, NORMAL, HIGH arrive in that order.
TEST(OsmoExamples, QueueOrder) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "normal", 1, T0 + 1));
    s.add_job(pending(3, "pool1", "low", 1, T0 + 10));
    s.add_job(pending(4, "pool1", "high", 1, T0 + 11));
    s.add_job(pending(5, "pool1", "normal", 1, T0 + 12));
    s.add_job(pending(6, "pool1", "high", 1, T0 + 13));
    e.evaluate(s, T0 + 20);

    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{4, 6, 5, 3}));
    // Nominal priorities fall strictly along the order.
    const auto &p = e.last().pending;
    for (size_t i = 1; i < p.size(); ++i) EXPECT_GT(p[i - 1].nominal, p[i].nominal);
    // Quota 2 is taken by WF1 and WF2: the NP jobs wait, LOW does not.
    EXPECT_EQ(p[0].admission, Admission::Held);
    EXPECT_EQ(p[0].priority, 0u);
    EXPECT_EQ(e.reason_of(p[0]), "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(p[3].admission, Admission::Free);
    EXPECT_GT(p[3].priority, 0u);
}

// OSMO "Preemption": WF1 LOW and WF2 NORMAL run on 2 GPUs (quota 2), WF3
// and WF4 LOW wait; WF5 NORMAL arrives.
TEST(OsmoExamples, Preemption) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    SnapJob wf1 = running(1, "pool1", "low", 1, T0, T0);
    SnapJob wf2 = running(2, "pool1", "normal", 1, T0 + 1, T0 + 1);
    s.add_job(wf1);
    s.add_job(wf2);
    s.add_job(pending(3, "pool1", "low", 1, T0 + 2));
    s.add_job(pending(4, "pool1", "low", 1, T0 + 3));
    SnapJob wf5 = pending(5, "pool1", "normal", 1, T0 + 4);
    s.add_job(wf5);
    e.evaluate(s, T0 + 5);

    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{5, 3, 4}));
    EXPECT_EQ(e.last().pending[0].admission, Admission::Quota);

    // WF1 is WF5's only candidate.
    Verdict v1 = e.preemptable(ref(wf1), ref(wf5), T0 + 5);
    EXPECT_TRUE(v1.allowed);
    EXPECT_EQ(v1.rule, Rule::InPool);
    EXPECT_FALSE(e.preemptable(ref(wf2), ref(wf5), T0 + 5).allowed);

    // WF1 is requeued: Slurm gives it a new submit time; WF5 runs.
    Snapshot after = cluster(2);
    partition(after, "pool1", 0, 1);
    after.add_job(running(2, "pool1", "normal", 1, T0 + 1, T0 + 1));
    after.add_job(running(5, "pool1", "normal", 1, T0 + 6, T0 + 4));
    SnapJob requeued = pending(1, "pool1", "low", 1, T0 + 6);  // reset by requeue
    requeued.restart_cnt = 1;
    after.add_job(requeued);
    after.add_job(pending(3, "pool1", "low", 1, T0 + 2));
    after.add_job(pending(4, "pool1", "low", 1, T0 + 3));
    e.evaluate(after, T0 + 7);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{1, 3, 4}));
    EXPECT_EQ(e.last().pending[0].orig_submit, T0);
}

// OSMO "Borrowing and Reclaiming": pool1 and pool2 share 4 GPUs, quota 2
// each.  pool1 runs WF1 NORMAL and WF2 LOW, pool2 runs WF4 NORMAL; WF3 LOW
// of pool1 borrows; WF5 NORMAL of pool2 arrives.
TEST(OsmoExamples, BorrowingAndReclaim) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    SnapJob wf1 = running(1, "pool1", "normal", 1, T0);
    SnapJob wf2 = running(2, "pool1", "low", 1, T0 + 1);
    SnapJob wf4 = running(4, "pool2", "normal", 1, T0 + 2);
    s.add_job(wf1);
    s.add_job(wf2);
    s.add_job(wf4);
    SnapJob wf3p = pending(3, "pool1", "low", 1, T0 + 3);
    s.add_job(wf3p);
    e.evaluate(s, T0 + 4);
    // WF3 is LOW: never held by quota, so it may borrow pool2's idle GPU.
    EXPECT_EQ(e.last().pending[0].admission, Admission::Free);

    // WF3 runs (borrowing); WF5 NORMAL to pool2 arrives.
    Snapshot s2 = cluster(4);
    partition(s2, "pool1", 0, 3);
    partition(s2, "pool2", 0, 3);
    SnapJob wf3 = running(3, "pool1", "low", 1, T0 + 5, T0 + 3);
    for (const SnapJob &j : {wf1, wf2, wf4, wf3}) s2.add_job(j);
    SnapJob wf5 = pending(5, "pool2", "normal", 1, T0 + 6);
    s2.add_job(wf5);
    e.evaluate(s2, T0 + 7);

    EXPECT_EQ(pool(e, "pool1").used(), 3u);
    EXPECT_EQ(pool(e, "pool1").borrowed(), 1u);
    EXPECT_EQ(pool(e, "pool2").lent, 1u);
    EXPECT_EQ(e.last().pending[0].admission, Admission::Quota);

    Verdict on_wf3 = e.preemptable(ref(wf3), ref(wf5), T0 + 7);
    EXPECT_TRUE(on_wf3.allowed);
    EXPECT_EQ(on_wf3.rule, Rule::Reclaim);
    EXPECT_FALSE(e.preemptable(ref(wf2), ref(wf5), T0 + 7).allowed);
    EXPECT_FALSE(e.preemptable(ref(wf1), ref(wf5), T0 + 7).allowed);
    // WF3 goes first among victims.
    EXPECT_LT(e.victim_rank(3), e.victim_rank(2));

    // Nothing of pool2 is reclaimable by pool1, even by a HIGH job.
    SnapJob high1 = pending(6, "pool1", "high", 1, T0 + 7);
    EXPECT_FALSE(e.preemptable(ref(wf4), ref(high1), T0 + 7).allowed);
}

// R2: a NORMAL job past its pool quota is held while GPUs are free; LOW
// jobs are not held; the held job is admitted as soon as quota frees.
TEST(QuotaAdmission, HeldWhileGpusFreeThenAdmitted) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "normal", 1, T0 + 1));
    s.add_job(pending(3, "pool1", "normal", 1, T0 + 2));
    s.add_job(pending(4, "pool1", "low", 1, T0 + 3));
    e.evaluate(s, T0 + 4);

    const PendingResult *n3 = e.pending_result(3);
    ASSERT_NE(n3, nullptr);
    EXPECT_EQ(n3->admission, Admission::Held);
    EXPECT_EQ(n3->priority, 0u);
    EXPECT_EQ(e.reason_of(*n3), "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Free);
    EXPECT_GT(e.pending_result(4)->priority, 0u);
    EXPECT_EQ(pool(e, "pool1").held_jobs, 1u);

    // Job 1 ends: admission is redone at once, without a new pass.
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(3)->priority, e.pending_result(3)->nominal);
    EXPECT_GT(e.pending_result(3)->priority, e.pending_result(4)->priority);
    EXPECT_FALSE(e.job_ended(4242, T0 + 5));
}

// scontrol suspend: Slurm keeps a suspended job's GPUs, so it counts
// against its pool's quota as a running one (an NP job of pool1 at its
// quota holds the next), and it is never a victim (Slurm preempts running
// jobs only): pool2's NORMAL job cannot reclaim a suspended borrower, and
// pool1's excess lies on its running borrower, though older.
TEST(QuotaAdmission, ASuspendedJobHoldsItsGpusAndIsNeverAVictim) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    SnapJob np = running(1, "pool1", "normal", 2, T0);
    np.state = JobState::Suspended;
    SnapJob borrower = running(2, "pool1", "low", 2, T0 + 1);
    borrower.state = JobState::Suspended;
    SnapJob older = running(5, "pool1", "low", 1, T0);
    s.add_job(np);
    s.add_job(borrower);
    s.add_job(older);
    s.add_job(pending(3, "pool1", "normal", 2, T0 + 2));
    SnapJob owner = pending(4, "pool2", "normal", 2, T0 + 3);
    s.add_job(owner);
    e.evaluate(s, T0 + 4);

    EXPECT_EQ(pool(e, "pool1").np_used(), 2u);
    EXPECT_EQ(pool(e, "pool1").borrowed(), 3u);
    EXPECT_EQ(e.reason_of(*e.pending_result(3)), "GpuPoolQuota:pool1 2/2");
    const Verdict v = e.preemptable(ref(borrower), ref(owner), T0 + 4);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(std::string(v.why.c_str()), "victim is suspended");
    const Verdict on_older = e.preemptable(ref(older), ref(owner), T0 + 4);
    EXPECT_TRUE(on_older.allowed) << on_older.why.c_str();
    EXPECT_EQ(on_older.rule, Rule::Reclaim);
    // Its end gives its GPUs back at once, as a running job's.
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(pool(e, "pool1").np_used(), 0u);
}

// A burst of submits between passes cannot admit more than the quota.
TEST(QuotaAdmission, ProvisionalSubmitsReserveQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    e.evaluate(s, T0 + 1);
    PendingResult a = e.provisional(pending(10, "pool1", "normal", 1, T0 + 2), T0 + 2);
    PendingResult b = e.provisional(pending(11, "pool1", "normal", 1, T0 + 3), T0 + 3);
    EXPECT_EQ(a.admission, Admission::Quota);
    EXPECT_EQ(b.admission, Admission::Held);
    EXPECT_EQ(e.reason_of(b), "GpuPoolQuota:pool1 2/2");
    PendingResult low = e.provisional(pending(12, "pool1", "low", 1, T0 + 4), T0 + 4);
    EXPECT_EQ(low.admission, Admission::Free);
    EXPECT_LT(low.priority, a.priority);
}

// R1 order of `ids` (jobs of the pass and placed since): a job end no
// longer merges the placements into the pass's list (it costs what it
// changes), so order them by their results.
static std::vector<uint32_t> queue_order(const Engine &e, std::vector<uint32_t> ids) {
    auto key = [&](uint32_t id) {
        const PendingResult *r = e.pending_result(id);
        uint32_t prio = e.config().tiers[static_cast<size_t>(r->tier)].priority;
        return std::make_tuple(~prio, r->group_standing, r->orig_submit, r->job_id);
    };
    std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    return ids;
}

// A job held at submit, between passes, is admitted when quota frees, in
// its place in the order (HIGH before LOW), without waiting for a pass.
TEST(QuotaAdmission, ProvisionalHeldJobAdmittedAtJobEnd) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool3", 0, 1);
    s.add_job(running(1, "pool3", "normal", 1, T0));
    s.add_job(running(2, "pool3", "normal", 1, T0));
    e.evaluate(s, T0 + 1);
    PendingResult low = e.provisional(pending(3, "pool3", "low", 1, T0 + 2), T0 + 2);
    PendingResult high = e.provisional(pending(4, "pool3", "high", 1, T0 + 3), T0 + 3);
    PendingResult high2 = e.provisional(pending(5, "pool3", "high", 1, T0 + 4), T0 + 4);
    EXPECT_EQ(high.admission, Admission::Held);
    EXPECT_EQ(low.admission, Admission::Free);
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(5)->admission, Admission::Held);
    EXPECT_GT(e.pending_result(4)->priority, e.pending_result(3)->priority);
    EXPECT_EQ(queue_order(e, {3, 4, 5}), (std::vector<uint32_t>{4, 5, 3}));
    (void)high2;
}

// The live queue-order case: a pass sees LOW pending; HIGH, NORMAL, HIGH
// arrive before the next one.  Their provisional priorities keep tier
// order, and each freed GPU goes to the next job in R1 order.
TEST(QuotaAdmission, ProvisionalJobsKeepTierOrderUntilThePass) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool3", 0, 1);
    s.add_job(running(1, "pool3", "normal", 1, T0));
    s.add_job(running(2, "pool3", "normal", 1, T0));
    s.add_job(pending(3, "pool3", "low", 1, T0 + 1));
    e.evaluate(s, T0 + 1);
    uint32_t low = e.pending_result(3)->priority;
    PendingResult h1 = e.provisional(pending(4, "pool3", "high", 1, T0 + 2), T0 + 2);
    PendingResult nrm = e.provisional(pending(5, "pool3", "normal", 1, T0 + 3), T0 + 3);
    PendingResult h2 = e.provisional(pending(6, "pool3", "high", 1, T0 + 4), T0 + 4);
    EXPECT_EQ(h1.nominal, h2.nominal);
    EXPECT_GT(h2.nominal, nrm.nominal);
    EXPECT_GT(nrm.nominal, low);
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(queue_order(e, {3, 4, 5, 6}), (std::vector<uint32_t>{4, 6, 5, 3}));
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(6)->admission, Admission::Held);
    EXPECT_TRUE(e.job_ended(2, T0 + 6));
    EXPECT_EQ(e.pending_result(6)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(5)->admission, Admission::Held);
    for (uint32_t id : {4u, 6u, 5u}) EXPECT_GT(e.pending_result(id)->nominal, e.pending_result(3)->nominal);
    EXPECT_GT(e.pending_result(6)->nominal, e.pending_result(5)->nominal);
}

// Between passes, an admission is never taken back: the job may already
// run.  A higher tier that arrives later waits for quota that is really
// free, or for the next pass.
TEST(QuotaAdmission, JobEndNeverRevokesAnAdmission) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    s.add_job(running(1, "p", "normal", 1, T0));
    s.add_job(running(2, "p", "low", 1, T0));
    s.add_job(pending(3, "p", "normal", 1, T0 + 1));
    e.evaluate(s, T0 + 2);
    ASSERT_EQ(e.pending_result(3)->admission, Admission::Quota);  // and starts
    PendingResult high = e.provisional(pending(4, "p", "high", 1, T0 + 3), T0 + 3);
    EXPECT_EQ(high.admission, Admission::Held);
    // A LOW job ends: no NP quota frees, so job 3 keeps it and 4 waits.
    e.job_ended(2, T0 + 4);
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Held);
    // An NP job ends: now the high job fits beside job 3.
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_EQ(pool(e, "p").np_reserved(), 2u);
}

// A job too big for its quota says so instead of a misleading count.
TEST(QuotaAdmission, JobLargerThanQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(pending(1, "pool1", "normal", 3, T0));
    e.evaluate(s, T0 + 1);
    EXPECT_EQ(e.reason_of(*e.pending_result(1)), "GpuPoolQuotaTooSmall:pool1 needs 3 quota 2");
}

// A job listing two pools never pushes either over quota: it is admitted
// where its quota fits and reserves only there (tests/unit/multipool_test.cpp
// has the rest of R2 over several pools).
TEST(QuotaAdmission, MultiPoolJobNeverExceedsEitherQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=1\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    s.add_job(running(1, "pool2", "normal", 1, T0));
    s.add_job(pending(2, "pool1,pool2", "normal", 1, T0 + 1));
    s.add_job(pending(3, "pool1", "normal", 1, T0 + 2));
    s.add_job(pending(4, "pool1", "normal", 1, T0 + 3));
    e.evaluate(s, T0 + 4);
    // pool2 is at quota: job 2 may start in pool1 only, and takes one of
    // its two GPUs of quota there.
    EXPECT_EQ(e.pending_result(2)->admission, Admission::Quota);
    EXPECT_EQ(e.start_partitions(2, "pool1,pool2"), "pool1");
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Held);
    EXPECT_EQ(e.reason_of(*e.pending_result(4)), "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 0u);

    // With room in both, it reserves in both: pool1's next NP job waits.
    Snapshot s2 = cluster(4);
    partition(s2, "pool1", 0, 3);
    partition(s2, "pool2", 0, 3);
    s2.add_job(pending(2, "pool1,pool2", "normal", 1, T0 + 1));
    s2.add_job(pending(3, "pool1", "normal", 1, T0 + 2));
    s2.add_job(pending(4, "pool1", "normal", 1, T0 + 3));
    e.evaluate(s2, T0 + 5);
    EXPECT_EQ(e.pending_result(2)->admission, Admission::Quota);
    EXPECT_EQ(e.start_partitions(2, "pool1,pool2"), "pool1,pool2");
    EXPECT_EQ(e.pending_result(3)->admission, Admission::Quota);
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Held);
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 1u);
}

// Jobs of partitions gpupool.conf does not name are ordered, never held.
TEST(QuotaAdmission, UnmanagedPartitionLeftAlone) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=0\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    partition(s, "plain", 0, 1);
    s.add_job(pending(1, "plain", "normal", 2, T0));
    s.add_job(pending(2, "pool1", "normal", 1, T0));
    e.evaluate(s, T0 + 1);
    EXPECT_EQ(e.pending_result(1)->admission, Admission::Free);
    EXPECT_EQ(e.pending_result(2)->admission, Admission::Held);
}

// R5: reclaim never takes a pool under its quota, with several lenders,
// several borrowers and multi-GPU jobs that straddle the quota line.
TEST(Reclaim, NeverTakesAPoolUnderItsQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=a Quota=4\nPool=b Quota=2\nPool=c Quota=4\nPool=d Quota=2\n");
    Snapshot s = cluster(14);
    for (const char *p : {"a", "b", "c", "d"}) partition(s, p, 0, 13);
    // a: 2+3 LOW = 5 > 4: only the newest (2 GPUs, straddling) goes.
    SnapJob a1 = running(1, "a", "low", 3, T0);
    SnapJob a2 = running(2, "a", "low", 2, T0 + 10);
    // b: 1 NORMAL + 1+1+1 LOW = 4 > 2: the two newest LOW go, not the third.
    SnapJob b1 = running(3, "b", "normal", 1, T0);
    SnapJob b2 = running(4, "b", "low", 1, T0 + 1);
    SnapJob b3 = running(5, "b", "low", 1, T0 + 2);
    SnapJob b4 = running(6, "b", "low", 1, T0 + 3);
    // c: exactly at quota with LOW only: nothing goes.
    SnapJob c1 = running(7, "c", "low", 4, T0);
    for (const SnapJob &j : {a1, a2, b1, b2, b3, b4, c1}) s.add_job(j);
    SnapJob d_np = pending(20, "d", "normal", 2, T0 + 20);
    s.add_job(d_np);
    e.evaluate(s, T0 + 30);

    auto reclaims = [&](const SnapJob &v) {
        Verdict r = e.preemptable(ref(v), ref(d_np), T0 + 30);
        return r.allowed && r.rule == Rule::Reclaim;
    };
    EXPECT_TRUE(reclaims(a2));
    EXPECT_FALSE(reclaims(a1));
    EXPECT_TRUE(reclaims(b4));
    EXPECT_TRUE(reclaims(b3));
    EXPECT_FALSE(reclaims(b2));
    EXPECT_FALSE(reclaims(b1));
    EXPECT_FALSE(reclaims(c1));

    // A pool not entitled (its own use + the job > quota) reclaims nothing.
    SnapJob d_big = pending(21, "d", "normal", 3, T0 + 21);
    EXPECT_FALSE(e.preemptable(ref(a2), ref(d_big), T0 + 30).allowed);
    // A LOW job reclaims nothing with the default ReclaimBy=nonpreemptible.
    SnapJob d_low = pending(22, "d", "low", 1, T0 + 22);
    EXPECT_FALSE(e.preemptable(ref(a2), ref(d_low), T0 + 30).allowed);
}

// ReclaimBy=all: a LOW job of an entitled pool reclaims too (Run:ai).
TEST(Reclaim, ReclaimByAll) {
    Engine e = engine_with(kOsmoTiers + "ReclaimBy=all\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    SnapJob b = running(1, "pool1", "low", 3, T0);
    s.add_job(b);
    SnapJob low2 = pending(2, "pool2", "low", 1, T0 + 1);
    s.add_job(low2);
    e.evaluate(s, T0 + 2);
    Verdict v = e.preemptable(ref(b), ref(low2), T0 + 2);
    EXPECT_TRUE(v.allowed);
    EXPECT_EQ(v.rule, Rule::Reclaim);
}

// MinRuntime: a LOW job younger than it is no candidate, per pool or global.
TEST(Reclaim, MinRuntimeProtectsYoungJobs) {
    Engine e = engine_with(kOsmoTiers + "MinRuntime=5\nPool=pool1 Quota=1 MinRuntime=10:00\nPool=pool2 Quota=1\n");
    Snapshot s = cluster(2);
    partition(s, "pool1", 0, 1);
    partition(s, "pool2", 0, 1);
    SnapJob young = running(1, "pool1", "low", 1, T0 + 100);
    SnapJob borrower = running(2, "pool1", "low", 1, T0 + 101);
    s.add_job(young);
    s.add_job(borrower);
    SnapJob np = pending(3, "pool2", "normal", 1, T0 + 102);
    SnapJob np1 = pending(4, "pool1", "normal", 1, T0 + 102);
    s.add_job(np);
    s.add_job(np1);
    e.evaluate(s, T0 + 200);
    EXPECT_FALSE(e.preemptable(ref(borrower), ref(np), T0 + 200).allowed);  // 99 s < 10 min
    EXPECT_TRUE(e.preemptable(ref(borrower), ref(np), T0 + 101 + 600).allowed);
    // Global MinRuntime=5 minutes applies to pools without their own.
    Engine g = engine_with(kOsmoTiers + "MinRuntime=5\nPool=p Quota=1\n");
    Snapshot gs = cluster(2);
    partition(gs, "p", 0, 1);
    SnapJob glow = running(1, "p", "low", 1, T0);
    gs.add_job(glow);
    SnapJob ghigh = pending(2, "p", "high", 1, T0 + 1);
    gs.add_job(ghigh);
    g.evaluate(gs, T0 + 2);
    EXPECT_FALSE(g.preemptable(ref(glow), ref(ghigh), T0 + 299).allowed);
    EXPECT_TRUE(g.preemptable(ref(glow), ref(ghigh), T0 + 300).allowed);
}

// Backend.AI: victims by lowest priority first, then start time per
// PreemptionOrder; PreemptiblePriority=N makes tiers <= N preemptible.
TEST(BackendAiVictims, PriorityThenStartTimeOldestVersusNewest) {
    const std::string tiers =
        "PreemptiblePriority=5\n"
        "Tier=p10 Priority=10\nTier=p5 Priority=5\nTier=p3 Priority=3\nDefaultTier=p10\nUsageWeight=0\n";
    auto build = [&](const std::string &order) {
        Engine e = engine_with(tiers + "PreemptionOrder=" + order + "\nPool=rg Quota=4\n");
        Snapshot s = cluster(4);
        partition(s, "rg", 0, 3);
        s.add_job(running(1, "rg", "p5", 1, T0));       // older, priority 5
        s.add_job(running(2, "rg", "p5", 1, T0 + 50));  // newer, priority 5
        s.add_job(running(3, "rg", "p3", 1, T0 + 20));  // lowest priority
        s.add_job(running(4, "rg", "p10", 1, T0 + 5));  // not preemptible
        s.add_job(pending(9, "rg", "p10", 1, T0 + 60));
        e.evaluate(s, T0 + 100);
        return e;
    };
    Engine oldest = build("oldest");
    Engine newest = build("newest");
    EXPECT_TRUE(oldest.config().tiers[1].preemptible);   // p5 <= 5
    EXPECT_FALSE(oldest.config().tiers[0].preemptible);  // p10 > 5
    // Lowest priority first in both.
    EXPECT_EQ(oldest.victim_rank(3), 1u);
    EXPECT_EQ(newest.victim_rank(3), 1u);
    // Then start time: the two orders pick different second victims.
    EXPECT_EQ(oldest.victim_rank(1), 2u);
    EXPECT_EQ(oldest.victim_rank(2), 3u);
    EXPECT_EQ(newest.victim_rank(2), 2u);
    EXPECT_EQ(newest.victim_rank(1), 3u);
    // The non-preemptible job is never allowed.
    SnapJob preemptor = pending(9, "rg", "p10", 1, T0 + 60);
    EXPECT_FALSE(oldest.preemptable(ref(running(4, "rg", "p10", 1, T0 + 5)), ref(preemptor), T0 + 100).allowed);
    EXPECT_TRUE(oldest.preemptable(ref(running(1, "rg", "p5", 1, T0)), ref(preemptor), T0 + 100).allowed);
}

// R6.4: two borrowers started in the same second (a scheduling cycle that
// began at .999 gives its starts that second) are told apart by job id in
// the start order's direction: newest reclaims the later job, oldest the
// earlier (seen live on 26.05: newest took the earlier one).
TEST(BackendAiVictims, JobsStartedInTheSameSecondFollowTheStartOrderById) {
    auto excess_of = [](const std::string &order) {
        Engine e = engine_with(kOsmoTiers + "PreemptionOrder=" + order + "\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n");
        Snapshot s = cluster(4);
        partition(s, "pool1", 0, 3);
        partition(s, "pool2", 0, 3);
        s.add_job(running(1, "pool1", "normal", 1, T0));
        s.add_job(running(2, "pool1", "low", 1, T0 + 4));  // WF2
        s.add_job(running(4, "pool2", "normal", 1, T0 + 4));
        s.add_job(running(3, "pool1", "low", 1, T0 + 4));  // WF3, same second
        SnapJob wf5 = pending(5, "pool2", "normal", 1, T0 + 13);
        s.add_job(wf5);
        e.evaluate(s, T0 + 14);
        std::vector<uint32_t> allowed;
        for (uint32_t id : {2u, 3u})
            if (e.preemptable(ref(running(id, "pool1", "low", 1, T0 + 4)), ref(wf5), T0 + 14).allowed)
                allowed.push_back(id);
        return allowed;
    };
    EXPECT_EQ(excess_of("newest"), (std::vector<uint32_t>{3}));
    EXPECT_EQ(excess_of("oldest"), (std::vector<uint32_t>{2}));
}

// R5 walk with PreemptionOrder: the order decides which borrower is the
// excess, so OSMO's example reclaims WF2 instead of WF3 with "oldest".
TEST(BackendAiVictims, OrderChoosesTheReclaimedJob) {
    Engine e = engine_with(kOsmoTiers + "PreemptionOrder=oldest\nPool=pool1 Quota=2\nPool=pool2 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    partition(s, "pool2", 0, 3);
    SnapJob wf2 = running(2, "pool1", "low", 1, T0 + 1);
    SnapJob wf3 = running(3, "pool1", "low", 1, T0 + 5);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(wf2);
    s.add_job(wf3);
    s.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    SnapJob wf5 = pending(5, "pool2", "normal", 1, T0 + 6);
    s.add_job(wf5);
    e.evaluate(s, T0 + 7);
    EXPECT_TRUE(e.preemptable(ref(wf2), ref(wf5), T0 + 7).allowed);
    EXPECT_FALSE(e.preemptable(ref(wf3), ref(wf5), T0 + 7).allowed);
}

// R4: only lower tiers, only preemptible ones; an NP job held by quota
// preempts nothing.
TEST(InPool, LowerPreemptibleTiersOnly) {
    Engine e = engine_with(
        "Tier=high Priority=300 Preemptible=no\nTier=normal Priority=200 Preemptible=no\n"
        "Tier=mid Priority=150 Preemptible=yes\nTier=low Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\nPool=p Quota=1\n");
    Snapshot s = cluster(4);
    partition(s, "p", 0, 3);
    SnapJob low = running(1, "p", "low", 1, T0);
    SnapJob mid = running(2, "p", "mid", 1, T0);
    SnapJob normal = running(3, "p", "normal", 1, T0);
    for (const SnapJob &j : {low, mid, normal}) s.add_job(j);
    SnapJob mid_p = pending(4, "p", "mid", 1, T0 + 1);
    SnapJob high_p = pending(5, "p", "high", 1, T0 + 1);
    s.add_job(mid_p);
    s.add_job(high_p);
    e.evaluate(s, T0 + 2);
    EXPECT_TRUE(e.preemptable(ref(low), ref(mid_p), T0 + 2).allowed);
    EXPECT_FALSE(e.preemptable(ref(mid), ref(mid_p), T0 + 2).allowed);  // same tier
    EXPECT_FALSE(e.preemptable(ref(normal), ref(mid_p), T0 + 2).allowed);
    // HIGH is held (normal holds the quota of 1), so it preempts nothing.
    EXPECT_EQ(e.pending_result(5)->admission, Admission::Held);
    EXPECT_FALSE(e.preemptable(ref(low), ref(high_p), T0 + 2).allowed);
}

// R1.2: same tier, different pools: the more starved pool goes first.
TEST(Order, FairshareStandingBetweenPools) {
    Engine e = engine_with(kOsmoTiers + "Pool=busy Quota=2\nPool=idle Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "busy", 0, 3);
    partition(s, "idle", 0, 3);
    s.add_job(running(1, "busy", "low", 2, T0));
    s.add_job(pending(2, "busy", "low", 1, T0 + 1));   // older, busy pool
    s.add_job(pending(3, "idle", "low", 1, T0 + 2));   // newer, idle pool
    s.add_job(pending(4, "busy", "high", 1, T0 + 3));  // tier beats pool
    e.evaluate(s, T0 + 4);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{4, 3, 2}));
    const PendingResult *r3 = e.pending_result(3);
    EXPECT_EQ(r3->factor_tier + r3->factor_fairshare + r3->factor_age, r3->priority);
    EXPECT_GT(r3->factor_fairshare, 0u);
}

// Provisional placement between passes: after every job of its tier and
// pool, strictly between its neighbours, at its original place if requeued.
TEST(Order, ProvisionalPlacement) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=8\n");
    Snapshot s = cluster(8);
    partition(s, "p", 0, 7);
    s.add_job(pending(1, "p", "high", 1, T0));
    s.add_job(pending(2, "p", "normal", 1, T0 + 1));
    s.add_job(pending(3, "p", "normal", 1, T0 + 2));
    s.add_job(pending(4, "p", "low", 1, T0 + 3));
    e.note_job(9, T0 - 100, 0, T0 - 100);  // seen before: a requeued job
    e.evaluate(s, T0 + 5);
    auto prio = [&](uint32_t id) { return e.pending_result(id)->priority; };
    PendingResult fresh = e.provisional(pending(10, "p", "normal", 1, T0 + 6), T0 + 6);
    EXPECT_LT(fresh.priority, prio(3));
    EXPECT_GT(fresh.priority, prio(4));
    SnapJob nine = pending(9, "p", "normal", 1, T0 + 6);
    nine.restart_cnt = 1;
    PendingResult requeued = e.provisional(nine, T0 + 6);
    EXPECT_EQ(requeued.orig_submit, T0 - 100);
    EXPECT_LT(requeued.priority, prio(1));
    EXPECT_GT(requeued.priority, prio(2));
    EXPECT_EQ(fresh.factor_tier + fresh.factor_fairshare + fresh.factor_age, fresh.priority);
}

// After slurmctld -c job ids start again: a new job with a remembered id
// (never requeued) has its own submit time, not the old job's.
TEST(Order, JobIdUsedAgainAfterCleanStart) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=8\n");
    EXPECT_EQ(e.note_job(5, T0, 0, T0), T0);
    EXPECT_EQ(e.note_job(5, T0 + 50, 1, T0 + 50), T0);     // requeued: keeps T0
    EXPECT_EQ(e.note_job(5, T0 + 900, 0, T0 + 900), T0 + 900);  // a new job 5
}

// Before any pass nothing is known: every GPU job of a pool waits for it,
// a preemptible one too (it could start ahead of jobs the pass puts first).
TEST(Order, NoPassYetHoldsEveryGpuJobOfAPool) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=2\n");
    EXPECT_EQ(e.provisional(pending(1, "p", "normal", 1, T0), T0).admission, Admission::Held);
    EXPECT_EQ(e.provisional(pending(2, "p", "low", 1, T0), T0).admission, Admission::Held);
    EXPECT_EQ(e.provisional(pending(4, "p", "low", 0, T0), T0).admission, Admission::Free);
    EXPECT_EQ(e.provisional(pending(3, "other", "normal", 1, T0), T0).admission, Admission::Free);
}

// A user's or admin's hold is remembered but not ordered or admitted.
TEST(Order, UserHeldJobsNotOrdered) {
    Engine e = engine_with(kOsmoTiers + "Pool=p Quota=1\n");
    Snapshot s = cluster(2);
    partition(s, "p", 0, 1);
    SnapJob held = pending(1, "p", "normal", 1, T0);
    held.user_held = true;
    s.add_job(held);
    s.add_job(pending(2, "p", "normal", 1, T0 + 1));
    e.evaluate(s, T0 + 2);
    EXPECT_EQ(order_of(e), (std::vector<uint32_t>{2}));
    EXPECT_EQ(e.pending_result(2)->admission, Admission::Quota);
}

// ---------------------------------------------------------------------
// Job arrays (R2): a pending array record stands for several tasks that
// Slurm may start one after another from it in one scheduling pass.

namespace {
SnapJob array_job(uint32_t id, const std::string &parts, const std::string &qos, uint32_t gpus, uint32_t tasks,
                  int64_t submit) {
    SnapJob j = pending(id, parts, qos, gpus, submit);
    j.array_tasks = tasks;
    return j;
}
SnapJob array_task(uint32_t id, uint32_t array_id, const std::string &part, const std::string &qos, uint32_t gpus,
                   int64_t start) {
    SnapJob j = running(id, part, qos, gpus, start);
    j.array_job_id = array_id;
    return j;
}
}  // namespace

TEST(Arrays, AdmitsOnlyTheTasksThatFitTheQuota) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(array_job(10, "pool1", "normal", 1, 4, T0));
    s.add_job(pending(11, "pool1", "normal", 1, T0 + 1));
    s.add_job(array_job(12, "pool1", "low", 1, 3, T0 + 2));
    e.evaluate(s, T0 + 10);

    const PendingResult *a = e.pending_result(10);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->admission, Admission::Quota);
    EXPECT_EQ(a->admitted_tasks, 2u);
    EXPECT_GT(a->priority, 0u);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);
    const PendingResult *next = e.pending_result(11);
    EXPECT_EQ(next->admission, Admission::Held);
    EXPECT_EQ(next->admitted_tasks, 0u);
    EXPECT_EQ(e.reason_of(*next), "GpuPoolQuota:pool1 2/2");
    // P-tier arrays are never held nor capped.
    const PendingResult *low = e.pending_result(12);
    EXPECT_EQ(low->admission, Admission::Free);
    EXPECT_EQ(low->admitted_tasks, 3u);
}

TEST(Arrays, OrdinaryJobsAdmitOneTask) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(pending(1, "pool1", "normal", 1, T0));
    s.add_job(array_job(2, "pool1", "normal", 1, 1, T0 + 1));  // last task
    s.add_job(pending(3, "pool1", "low", 2, T0 + 2));
    e.evaluate(s, T0 + 10);
    EXPECT_EQ(e.pending_result(1)->admitted_tasks, 1u);
    EXPECT_EQ(e.pending_result(2)->admitted_tasks, 1u);
    EXPECT_EQ(e.pending_result(3)->admitted_tasks, 1u);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);
}

TEST(Arrays, MultiGpuTasksAndSeveralPools) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=5\nPool=pool2 Quota=4\n");
    Snapshot s = cluster(8);
    partition(s, "pool1", 0, 7);
    partition(s, "pool2", 0, 7);
    s.add_job(running(1, "pool2", "normal", 1, T0));
    // 2 GPUs per task: pool1 fits 2 (5/2), pool2 fits 1 ((4-1)/2).
    s.add_job(array_job(10, "pool1,pool2", "normal", 2, 6, T0 + 1));
    e.evaluate(s, T0 + 10);
    const PendingResult *a = e.pending_result(10);
    EXPECT_EQ(a->admission, Admission::Quota);
    EXPECT_EQ(a->admitted_tasks, 1u);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);
    EXPECT_EQ(pool(e, "pool2").np_reserved(), 2u);
    for (const PoolState &ps : e.last().pools) EXPECT_LE(ps.np_used() + ps.np_reserved(), ps.quota);
}

TEST(Arrays, HeldWhenNoTaskFits) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(running(2, "pool1", "high", 1, T0));
    s.add_job(array_job(10, "pool1", "normal", 1, 4, T0 + 1));
    s.add_job(array_job(11, "pool1", "normal", 3, 2, T0 + 2));
    e.evaluate(s, T0 + 10);
    const PendingResult *a = e.pending_result(10);
    EXPECT_EQ(a->admission, Admission::Held);
    EXPECT_EQ(a->admitted_tasks, 0u);
    EXPECT_EQ(a->priority, 0u);
    EXPECT_EQ(e.reason_of(*a), "GpuPoolQuota:pool1 2/2");
    EXPECT_EQ(e.reason_of(*e.pending_result(11)), "GpuPoolQuotaTooSmall:pool1 needs 3 quota 2");
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 0u);
    EXPECT_EQ(pool(e, "pool1").held_jobs, 2u);
}

TEST(Arrays, JobEndGivesTheArrayOneMoreTask) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    s.add_job(array_job(10, "pool1", "normal", 1, 4, T0 + 1));
    s.add_job(pending(11, "pool1", "normal", 1, T0 + 2));
    e.evaluate(s, T0 + 10);
    EXPECT_EQ(e.pending_result(10)->admitted_tasks, 1u);
    EXPECT_EQ(e.pending_result(11)->admission, Admission::Held);

    EXPECT_TRUE(e.job_ended(1, T0 + 20));
    EXPECT_EQ(e.pending_result(10)->admitted_tasks, 2u);
    EXPECT_EQ(e.pending_result(11)->admission, Admission::Held);
    EXPECT_EQ(pool(e, "pool1").np_used() + pool(e, "pool1").np_reserved(), 2u);
}

TEST(Arrays, RunningTasksAreCountedPerArray) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=2\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(array_task(21, 10, "pool1", "normal", 1, T0 + 5));
    s.add_job(array_task(22, 10, "pool1", "normal", 1, T0 + 5));
    s.add_job(array_job(10, "pool1", "normal", 1, 2, T0));
    e.evaluate(s, T0 + 10);
    EXPECT_EQ(e.array_running(10), 2u);
    EXPECT_EQ(e.pending_result(10)->admission, Admission::Held);

    // One task ends: the array may run 1 + 1 tasks at once again.
    EXPECT_TRUE(e.job_ended(21, T0 + 20));
    EXPECT_EQ(e.array_running(10), 1u);
    EXPECT_EQ(e.pending_result(10)->admitted_tasks, 1u);
    EXPECT_EQ(e.pending_result(10)->admission, Admission::Quota);

    // A refresh of the running jobs recounts them.
    Snapshot r = cluster(4);
    partition(r, "pool1", 0, 3);
    r.add_job(array_task(22, 10, "pool1", "normal", 1, T0 + 5));
    r.add_job(array_task(23, 10, "pool1", "normal", 1, T0 + 21));
    e.refresh_running(r, T0 + 22);
    EXPECT_EQ(e.array_running(10), 2u);
    EXPECT_EQ(e.array_running(99), 0u);
}

TEST(Arrays, ProvisionalArrayReservesItsTasks) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool1 Quota=3\n");
    Snapshot s = cluster(4);
    partition(s, "pool1", 0, 3);
    s.add_job(running(1, "pool1", "normal", 1, T0));
    e.evaluate(s, T0 + 10);

    SnapJob a = array_job(10, "pool1", "normal", 1, 4, T0 + 11);
    PendingResult r = e.provisional(a, T0 + 11);
    EXPECT_EQ(r.admission, Admission::Quota);
    EXPECT_EQ(r.admitted_tasks, 2u);
    EXPECT_EQ(pool(e, "pool1").np_reserved(), 2u);
    PendingResult b = e.provisional(pending(11, "pool1", "normal", 1, T0 + 12), T0 + 12);
    EXPECT_EQ(b.admission, Admission::Held);
    PendingResult low = e.provisional(array_job(12, "pool1", "low", 1, 5, T0 + 13), T0 + 13);
    EXPECT_EQ(low.admission, Admission::Free);
    EXPECT_EQ(low.admitted_tasks, 5u);

    // The running job ends: the array takes the freed GPU first (R1).
    EXPECT_TRUE(e.job_ended(1, T0 + 20));
    EXPECT_EQ(e.pending_result(10)->admitted_tasks, 3u);
    EXPECT_EQ(e.pending_result(11)->admission, Admission::Held);
}

// As above, but the last pass saw the two NORMAL jobs still pending
// (admitted; they started since): the end of one still admits HIGH at
// once, ahead of LOW (test_queue_order on a fresh cluster).
TEST(QuotaAdmission, HeldJobAdmittedWhenAJobAdmittedPendingAtThePassEnds) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot s = cluster(2);
    partition(s, "pool3", 0, 1);
    s.add_job(pending(1, "pool3", "normal", 1, T0));
    s.add_job(pending(2, "pool3", "normal", 1, T0));
    e.evaluate(s, T0 + 1);
    PendingResult low = e.provisional(pending(3, "pool3", "low", 1, T0 + 2), T0 + 2);
    PendingResult high = e.provisional(pending(4, "pool3", "high", 1, T0 + 3), T0 + 3);
    EXPECT_EQ(high.admission, Admission::Held);
    EXPECT_EQ(low.admission, Admission::Free);
    EXPECT_TRUE(e.job_ended(1, T0 + 5));
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_GT(e.pending_result(4)->priority, e.pending_result(3)->priority);
}

// test_queue_order on a fresh cluster: two NORMAL jobs are admitted between
// passes and start; the preempt plugin's refresh counts them as running.
// They must not also keep their pending reservations (seen live: "4/2"),
// or the end of one leaves HIGH held while LOW takes the GPU.
TEST(QuotaAdmission, JobsThatStartedBetweenPassesAreNotCountedTwice) {
    Engine e = engine_with(kOsmoTiers + "Pool=pool3 Quota=2\n");
    Snapshot empty = cluster(2);
    partition(empty, "pool3", 0, 1);
    e.evaluate(empty, T0);
    EXPECT_EQ(e.provisional(pending(1, "pool3", "normal", 1, T0 + 1), T0 + 1).admission, Admission::Quota);
    EXPECT_EQ(e.provisional(pending(2, "pool3", "normal", 1, T0 + 1), T0 + 1).admission, Admission::Quota);
    Snapshot started = cluster(2);
    partition(started, "pool3", 0, 1);
    started.add_job(running(1, "pool3", "normal", 1, T0 + 2));
    started.add_job(running(2, "pool3", "normal", 1, T0 + 2));
    e.refresh_running(started, T0 + 2);
    PendingResult low = e.provisional(pending(3, "pool3", "low", 1, T0 + 3), T0 + 3);
    PendingResult high = e.provisional(pending(4, "pool3", "high", 1, T0 + 3), T0 + 3);
    EXPECT_EQ(low.admission, Admission::Free);
    EXPECT_EQ(high.admission, Admission::Held);
    EXPECT_EQ(e.reason_of(high), "GpuPoolQuota:pool3 2/2");
    EXPECT_TRUE(e.job_ended(1, T0 + 4));
    EXPECT_EQ(e.pending_result(4)->admission, Admission::Quota);
    EXPECT_GT(e.pending_result(4)->priority, e.pending_result(3)->priority);
}

// The preemption cycle the simulator's random replays found (ReclaimBy=all):
// one node of 2 GPUs shared by pools a and b, quota 1 each; a mid job of
// 2 GPUs and a low job of 1 GPU, both listing a,b.  The mid job is over
// quota in whichever pool it runs, so the low job, entitled in the other
// pool, reclaims it (R5); before the fix the mid job then evicted the low
// job inside that pool (R4), the low job reclaimed it back from the other,
// and so on for ever.  R4 now: with ReclaimBy=all a preemptible job that
// would be in its pool's borrowed excess right after starting evicts only
// jobs in that excess, never one within the pool's quota.
TEST(ReclaimCycle, BorrowingPreemptibleJobEvictsNoJobWithinQuota) {
    const std::string tiers =
        "Tier=high QOS=high Priority=300 Preemptible=no\n"
        "Tier=mid QOS=mid Priority=150 Preemptible=yes\n"
        "Tier=low QOS=low Priority=100 Preemptible=yes\n"
        "DefaultTier=high\nUsageWeight=0\n";
    struct Run {
        uint32_t id;
        const char *pool, *qos;
        uint32_t gpus;
        int64_t start;
    };
    struct Case {
        const char *sentence;
        const char *conf;       // after the tiers
        std::vector<Run> running;
        const char *qos;        // preemptor, pending
        uint32_t gpus;
        const char *tries;      // the partition Slurm tries it in
        uint32_t victim;
        bool allowed;
        Rule rule;
    };
    const char *const all = "ReclaimBy=all\nPool=a Quota=1\nPool=b Quota=1\n";
    const std::vector<Case> cases = {
        {"the low job within a's quota is safe from a mid job of 2 GPUs that would borrow in a at once", all,
         {{1, "a", "low", 1, T0}}, "mid", 2, "a", 1, false, Rule::None},
        {"the mid job running over a's quota is reclaimed by the low job, entitled in b", all,
         {{2, "a", "mid", 2, T0}}, "low", 1, "b", 2, true, Rule::Reclaim},
        {"the low job, now within b's quota, is safe from the mid job in b: the cycle is broken", all,
         {{1, "b", "low", 1, T0}}, "mid", 2, "b", 1, false, Rule::None},
        {"a mid job that fits a's quota still evicts the low job in a", all,
         {{1, "a", "low", 1, T0}}, "mid", 1, "a", 1, true, Rule::InPool},
        {"a borrowing mid job evicts the low job in a's borrowed excess (the newest)", all,
         {{1, "a", "low", 1, T0}, {3, "a", "low", 1, T0 + 1}}, "mid", 2, "a", 3, true, Rule::InPool},
        {"but not the low job within a's quota (the oldest)", all,
         {{1, "a", "low", 1, T0}, {3, "a", "low", 1, T0 + 1}}, "mid", 2, "a", 1, false, Rule::None},
        {"a running mid job walked after the preemptor (newest first) puts it over a's quota of 2",
         "ReclaimBy=all\nPool=a Quota=2\nPool=b Quota=1\n",
         {{1, "a", "low", 1, T0}, {4, "a", "mid", 1, T0 + 1}}, "mid", 2, "a", 1, false, Rule::None},
        {"walked before it (oldest first), the preemptor is within a's quota and evicts",
         "ReclaimBy=all\nPreemptionOrder=oldest\nPool=a Quota=2\nPool=b Quota=1\n",
         {{1, "a", "low", 1, T0}, {4, "a", "mid", 1, T0 + 1}}, "mid", 2, "a", 1, true, Rule::InPool},
        {"with ReclaimBy=nonpreemptible the low job never reclaims, so the mid job evicts it (OSMO)",
         "Pool=a Quota=1\nPool=b Quota=1\n", {{1, "a", "low", 1, T0}}, "mid", 2, "a", 1, true, Rule::InPool},
        {"a non-preemptible job admitted by a's quota evicts the low job", all,
         {{1, "a", "low", 1, T0}}, "high", 1, "a", 1, true, Rule::InPool},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        Engine e = engine_with(tiers + c.conf);
        Snapshot s = cluster(1, 4);
        partition(s, "a", 0, 0);
        partition(s, "b", 0, 0);
        SnapJob victim;
        for (const Run &r : c.running) {
            SnapJob j = running(r.id, r.pool, r.qos, r.gpus, r.start);
            if (r.id == c.victim) victim = j;
            s.add_job(j);
        }
        SnapJob pre = pending(10, "a,b", c.qos, c.gpus, T0 + 5);
        s.add_job(pre);
        e.evaluate(s, T0 + 10);
        JobRef p = ref(pre);
        p.partitions = c.tries;
        const Verdict v = e.preemptable(ref(victim), p, T0 + 10);
        EXPECT_EQ(v.allowed, c.allowed) << v.why;
        EXPECT_EQ(v.rule, c.rule) << v.why;
    }
}

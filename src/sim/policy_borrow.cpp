// Baseline "borrow": borrowing without quota protection.  What a site
// gets from Slurm's multifactor priority with PreemptType=preempt/qos and
// no quotas:
// - order: tier priority (QOS priority weighted above age), then the time
//   the job became eligible: multifactor's age counts from the begin time,
//   which Slurm sets anew when it requeues a job, so a preempted job goes
//   behind the jobs of its tier that were eligible before it; then job id;
// - a job may preempt running jobs of a preemptible tier of lower priority
//   (the QOS's Preempt= list) on the nodes of the partition it is tried
//   in, whatever their pool; the MinRuntime gpupool.conf gives the
//   victim's pool plays PreemptExemptTime;
// - candidates in preempt/qos's order (PREEMPT_DATA_PRIO): lower QOS
//   priority first, then fewer nodes, then the older job (job list order);
// - a victim is requeued or cancelled as its tier's PreemptMode says.
#include <algorithm>
#include <tuple>

#include "min_runtime.hpp"
#include "policy.hpp"

namespace gpupool::sim {

namespace {

class BorrowPolicy final : public SlurmOrderPolicy {
public:
    using SlurmOrderPolicy::SlurmOrderPolicy;

    bool preempts() const override { return true; }
    // Candidates are chosen by QOS alone: only a preemptible start adds one.
    bool start_opens_preemption(uint32_t j) const override {
        return w_.tiers[static_cast<size_t>(w_.jobs[j].tier)].preemptible;
    }

    void candidates(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &out) override {
        out.clear();
        const uint32_t prio = w_.tiers[static_cast<size_t>(w_.jobs[j].tier)].priority;
        for (uint32_t v : w_.running_preemptible) {
            const SimJobState &vs = w_.jobs[v];
            const TierInfo &vt = w_.tiers[static_cast<size_t>(vs.tier)];
            if (!vt.removable || vt.priority >= prio || !w_.overlaps(v, p)) continue;
            int64_t exempt = w_.min_runtime_of_part[static_cast<size_t>(vs.part)];
            if (min_runtime_end(exempt, vs.start, t) != 0) continue;
            out.push_back(v);
        }
        auto key = [&](uint32_t v) {
            const SimJobState &vs = w_.jobs[v];
            return std::make_tuple(w_.tiers[static_cast<size_t>(vs.tier)].priority, w_.node_count(v), vs.id);
        };
        std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    }
};

}  // namespace

std::unique_ptr<Policy> make_borrow_policy(World &world) { return std::make_unique<BorrowPolicy>(world); }

}  // namespace gpupool::sim

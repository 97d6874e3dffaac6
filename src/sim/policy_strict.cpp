// Baseline "strict": quotas without borrowing.  What a site gets from
// Slurm with one partition QOS per pool carrying GrpTRES=gres/gpu=<the
// pool's quota>, multifactor priority and no preemption:
// - order: tier priority (QOS priority weighted above age), then the time
//   the job became eligible (age), then job id;
// - a job starts in a pool only while the GPUs of every running job of
//   that partition, of any tier, plus its own stay within the pool's
//   quota: the partition QOS's GrpTRES counts all of them.  Slurm leaves
//   such a job pending (QOSGrpGRES) and goes on with the next one, so it
//   blocks nobody behind it;
// - partitions gpupool.conf does not name have no limit;
// - no preemption, so no requeue.
#include "policy.hpp"

namespace gpupool::sim {

namespace {

class StrictPolicy final : public SlurmOrderPolicy {
public:
    using SlurmOrderPolicy::SlurmOrderPolicy;

    bool within_limits(uint32_t j, int32_t p) const override {
        int32_t pool = w_.pool_of_part[static_cast<size_t>(p)];
        if (pool < 0) return true;
        uint64_t quota = w_.config->pools[static_cast<size_t>(pool)].quota;
        return uint64_t(w_.part_used[static_cast<size_t>(p)]) + w_.jobs[j].gpus <= quota;
    }
};

}  // namespace

std::unique_ptr<Policy> make_strict_policy(World &world) { return std::make_unique<StrictPolicy>(world); }

}  // namespace gpupool::sim

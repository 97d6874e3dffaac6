// Baseline "fifo": first in, first out, without preemption.  What a site
// gets from Slurm with priority/basic (priority by order of submission),
// no quotas and no preemption:
// - order: submit time, then job id; tiers and pools play no part;
// - a job that cannot start leaves the GPUs it cannot use to the jobs
//   behind it (see replay.cpp: jobs without time limits make backfill
//   reserve nothing).
#include "policy.hpp"

namespace gpupool::sim {

namespace {

class FifoPolicy final : public Policy {
public:
    using Policy::Policy;

    OrderKey order_key(uint32_t j) const override {
        const SimJobState &s = w_.jobs[j];
        OrderKey k;
        k.minor = s.submit;
        k.id = s.id;
        return k;
    }
    int64_t class_key(uint32_t j) const override { return w_.jobs[j].submit; }
};

}  // namespace

std::unique_ptr<Policy> make_fifo_policy(World &world) { return std::make_unique<FifoPolicy>(world); }

}  // namespace gpupool::sim

// A pool's account queues as the commands and the exporter show
// them: depth first (a department, then its projects), each with its
// figures per resource, read from the pass's PoolQueues.  Formatting and
// sums only: every rule's figure is the core's (levels.hpp, queue_tree.hpp).
#pragma once

#include <jansson.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "pass.hpp"
#include "queue_tree.hpp"

namespace gpupool::cli {

// One resource of one queue.  Quota, borrowed, lent and standing mean
// something only where the queue's quota gives the resource (has_quota).
struct QueueAmounts {
    bool has_quota = false, has_limit = false;
    uint64_t quota = 0, limit = 0;
    uint64_t fairshare = 0;
    uint64_t used = 0;       // held by running jobs (allocated), its subtree's
    uint64_t np_used = 0;    // of which non-preemptible jobs hold
    uint64_t borrowed = 0;   // used over quota
    uint64_t lent = 0;       // idle quota its siblings use (lent_by_queues)
    uint64_t pending = 0;    // asked for by its subtree's pending jobs
    QueueStanding standing = QueueStanding::InQuota;
};

struct QueueRow {
    int32_t queue = 0;       // in the pool's QueueTree
    int level = 1;           // 1: just below the pool
    const QueueSpec *spec = nullptr;
    std::array<QueueAmounts, kResources> res;
    std::vector<size_t> children;  // rows (indexes in the list) of its child queues
};

// The pool's queues below the pool itself, depth first in tree order;
// empty for a pool without Account= entries.
std::vector<QueueRow> queue_rows(const PoolState &ps);

// One resource of a queue in JSON: quota, limit, fairshare, used, np_used,
// borrowed, lent, pending, standing; null where the queue's quota (limit)
// does not give the resource.
json_t *queue_amounts_json(const QueueAmounts &a);
// A queue's level: 1 just below the pool (0: the pool).
int queue_level(const QueueTree &tree, int32_t q);

// The resources shown: GPUs, then CPUs and memory where QuotaTRES counts them.
std::vector<Resource> shown_resources(const Config &cfg);
// The TRES name a table shows: QuotaTRES's GPU name, cpu, mem.
std::string tres_name(const Config &cfg, Resource r);
// An amount as Slurm's TRES strings show it: memory with the largest suffix
// that divides it (768G), others as numbers.
std::string amount_text(Resource r, uint64_t v);
// "in-quota", "over-quota", "over-fairshare".
const char *standing_text(QueueStanding s);
// "in_quota", "over_quota", "over_fairshare" (JSON, the exporter).
const char *standing_code(QueueStanding s);

}  // namespace gpupool::cli

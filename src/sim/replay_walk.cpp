// The replay's scheduling walk: pending classes, starting and stopping
// jobs, the walk in the policy's order.  The rules are at the top of
// replay.cpp.
#include "replay_state.hpp"

namespace gpupool::sim::replay_detail {

// --- pending classes ---------------------------------------------------------

void Replay::enter_pending(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    s.state = SimState::Pending;
    s.cls = class_of(j);
    s.ckey = policy_->class_key(j);
    if (s.ckey < 0) first_keyed_.insert(j);
    classes_[s.cls].members.insert(Member{s.ckey, s.id, j});
    if (s.np)
        for (int32_t p : w_.part_lists[s.parts]) {
            const int32_t pool = demand_pool(p, j);
            if (pool < 0) continue;
            pool_np_wait_[static_cast<size_t>(pool)][s.gpus]++;
            pool_np_order_[static_cast<size_t>(pool)].insert(quota_order(j));
        }
}

Replay::QuotaOrder Replay::quota_order(uint32_t j) const {
    const SimJobState &s = w_.jobs[j];
    return QuotaOrder{UINT32_MAX - w_.tiers[static_cast<size_t>(s.tier)].priority, s.submit, s.id, j};
}

void Replay::leave_pending(uint32_t j) {
    SimJobState &s = w_.jobs[j];
    if (s.np)
        for (int32_t p : w_.part_lists[s.parts]) {
            const int32_t pool = demand_pool(p, j);
            if (pool < 0) continue;
            auto &m = pool_np_wait_[static_cast<size_t>(pool)];
            auto it = m.find(s.gpus);
            if (it != m.end() && --it->second == 0) m.erase(it);
            pool_np_order_[static_cast<size_t>(pool)].erase(quota_order(j));
        }
}

// Jobs whose class key changed move within their class: those the policy
// names, and those keyed first in their class (a job that preempted) that
// may be no longer.
void Replay::rekey() {
    std::vector<uint32_t> &jobs = rekey_scratch_;
    jobs.clear();
    policy_->take_rekeyed(jobs);
    if (jobs.empty() && first_keyed_.empty()) return;
    jobs.insert(jobs.end(), first_keyed_.begin(), first_keyed_.end());
    for (uint32_t j : jobs) {
        SimJobState &s = w_.jobs[j];
        if (s.state != SimState::Pending || s.cls == UINT32_MAX) {
            first_keyed_.erase(j);
            continue;
        }
        const int64_t key = policy_->class_key(j);
        if (key < 0)
            first_keyed_.insert(j);
        else
            first_keyed_.erase(j);
        if (key == s.ckey) continue;
        std::set<Member> &members = classes_[s.cls].members;
        members.erase(Member{s.ckey, s.id, j});
        s.ckey = key;
        members.insert(Member{key, s.id, j});
    }
}

// --- starting and stopping ------------------------------------------------------

void Replay::start(uint32_t j, int32_t p, int64_t t) {
    walk_gen_++;  // the search memo is void
    SimJobState &s = w_.jobs[j];
    JobOutcome &o = result_.jobs[j];
    if (s.np && within_quota_at_[j] >= 0) {
        within_quota_waits_.push_back(t - within_quota_at_[j]);
        within_quota_gpus_.push_back(s.gpus);
        within_quota_at_[j] = -1;
    } else if (s.np && w_.pool_of_part[static_cast<size_t>(p)] >= 0 &&
               fits_quota_in_order(static_cast<size_t>(w_.pool_of_part[static_cast<size_t>(p)]), j)) {
        within_quota_waits_.push_back(0);  // started in the instant it fitted its quota
        within_quota_gpus_.push_back(s.gpus);
    }
    leave_pending(j);
    waiting_jobs_--;  // it started, so it could
    for (int32_t q : w_.part_lists[s.parts]) {
        const int32_t pool = demand_pool(q, j);
        if (pool >= 0) pool_pending_gpus_[static_cast<size_t>(pool)] -= s.gpus;
    }
    allocate(j, p);
    note_np_gpus(j, 1);
    s.state = SimState::Running;
    s.part = p;
    s.start = t;
    s.end = t + s.duration;
    o.wait += t - s.pending_since;
    if (o.first_start < 0)
        o.first_start = t;
    else if (workload_.jobs[j].has_recorded_run())
        restarts_.emplace_back(j, t);  // for the start order check
    o.last_start = t;
    o.partition = p;
    w_.part_used[static_cast<size_t>(p)] += s.gpus;
    used_total_ += s.gpus;
    const int32_t pool = w_.pool_of_part[static_cast<size_t>(p)];
    if (pool >= 0 && s.np) pool_np_used_[static_cast<size_t>(pool)] += s.gpus;
    s.run_pos = static_cast<uint32_t>(w_.running.size());
    w_.running.push_back(j);
    if (w_.tiers[static_cast<size_t>(s.tier)].preemptible) {
        s.p_pos = static_cast<uint32_t>(w_.running_preemptible.size());
        w_.running_preemptible.push_back(j);
        note_preemptible_gpus(j, p, 1);
        const int64_t mr = w_.min_runtime_of_part[static_cast<size_t>(p)];
        if (mr > 0 && policy_->preempts()) add_timer(t + mr);
    }
    ends_.push(EndEvent{s.end, j, s.restarts});
    policy_->on_start(j, t);
}

// The job stops running: completed, or preempted (requeued or cancelled).
void Replay::stop(uint32_t j, int64_t t, bool preempted) {
    walk_gen_++;
    SimJobState &s = w_.jobs[j];
    JobOutcome &o = result_.jobs[j];
    if (s.p_pos != UINT32_MAX) note_preemptible_gpus(j, s.part, -1);
    note_np_gpus(j, -1);
    if (preempted && w_.options.kill_delay > 0)
        hold_until(j, t + preempt_lag_ + kill_delay_of(j));
    else
        release(j);
    w_.part_used[static_cast<size_t>(s.part)] -= s.gpus;
    used_total_ -= s.gpus;
    const int32_t pool = w_.pool_of_part[static_cast<size_t>(s.part)];
    if (pool >= 0 && s.np) pool_np_used_[static_cast<size_t>(pool)] -= s.gpus;
    auto swap_remove = [&](std::vector<uint32_t> &v, uint32_t SimJobState::*pos) {
        uint32_t at = s.*pos;
        uint32_t last = v.back();
        v[at] = last;
        w_.jobs[last].*pos = at;
        v.pop_back();
        s.*pos = UINT32_MAX;
    };
    swap_remove(w_.running, &SimJobState::run_pos);
    if (s.p_pos != UINT32_MAX) swap_remove(w_.running_preemptible, &SimJobState::p_pos);

    const bool limit = preempted && s.restarts >= w_.options.max_requeues;
    const bool requeue = preempted && w_.tiers[static_cast<size_t>(s.tier)].requeue && !limit;
    if (preempted) {
        o.preemptions++;
        const int64_t lost = int64_t(s.gpus) * (t - s.start);
        o.lost_gpu_seconds += lost;
        if (pool >= 0) recorder_->preempted(static_cast<size_t>(pool), lost);
    }
    if (requeue) {
        s.restarts++;
        s.state = SimState::Waiting;
        s.eligible = t + preempt_lag_ + w_.options.cred_expire + 1;
        s.pending_since = t;
        s.start = s.end = -1;
        waiting_jobs_++;
        for (int32_t q : w_.part_lists[s.parts]) {
            const int32_t pl = demand_pool(q, j);
            if (pl >= 0) pool_pending_gpus_[static_cast<size_t>(pl)] += s.gpus;
        }
        eligible_.push(Timed{s.eligible, j});
        policy_->on_requeue(j, t);
        return;
    }
    s.state = SimState::Done;
    o.end = t;
    o.state = !preempted ? JobEnd::Completed : limit ? JobEnd::RequeueLimit : JobEnd::Cancelled;
    if (limit && !requeue_limited_++)
        first_limited_ = workload_.jobs[j].label.empty() ? std::to_string(s.id) : workload_.jobs[j].label;
    done_++;
    policy_->on_end(j, t);
}

// Seconds from j's preemption to the end of its kill: the next of
// kill_delays, else kill_delay, or drawn evenly up to kill_delay_max by
// kill_seed, the job and its run (splitmix64), so a replay stays
// deterministic.
int64_t Replay::kill_delay_of(uint32_t j) {
    if (kills_ < w_.options.kill_delays.size()) return w_.options.kill_delays[kills_++];
    const int64_t lo = w_.options.kill_delay, hi = w_.options.kill_delay_max;
    if (hi <= lo) return lo;
    const SimJobState &s = w_.jobs[j];
    uint64_t x = w_.options.kill_seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(s.id) << 20) ^ s.restarts;
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return lo + static_cast<int64_t>(x % static_cast<uint64_t>(hi - lo + 1));
}

// --- the walk ----------------------------------------------------------------------

// May j preempt now?  Only in a backfill cycle when they are modelled, and
// within its cap; not while its last preemption's guard runs (kill_delay).
bool Replay::may_preempt(uint32_t j, int64_t t, bool *guarded) {
    if (!policy_->preempts()) return false;
    if (w_.options.backfill_interval > 0 &&
        (!backfill_walk_ ||
         (w_.options.backfill_preemptions > 0 && cycle_preemptors_ >= w_.options.backfill_preemptions))) {
        backfill_owed_ = true;
        return false;
    }
    const int64_t since = w_.jobs[j].preempted_at;
    if (w_.options.kill_delay > 0 && since != INT64_MIN && t - since < w_.options.preempt_guard) {
        add_timer(since + w_.options.preempt_guard);
        backfill_owed_ = w_.options.backfill_interval > 0;
        *guarded = true;
        return false;
    }
    return true;
}

Tried Replay::try_start(uint32_t j, int64_t t) {
    std::vector<int32_t> &parts = parts_scratch_;
    policy_->start_partitions(j, parts);
    const uint32_t g = w_.jobs[j].gpus;
    // The main scheduler between backfill cycles stops trying a partition
    // at its first job that does not fit, and no later job of any
    // partition gets that partition's nodes in the walk (Slurm's failed
    // partitions: block_nodes_of).
    const bool main_walk = w_.options.backfill_interval > 0 && !backfill_walk_;
    // Reservations of preemptors it goes before (and its own) are lifted
    // while it is tried: backfill plans jobs in order, and the main
    // scheduler stops at a preemptor only for the jobs behind it.  Its own
    // is kept while its guard runs.
    const int64_t since = w_.jobs[j].preempted_at;
    struct Lifted {
        Replay &r;
        uint32_t j;
        std::vector<std::pair<int32_t, uint32_t>> others;  // restored after
        bool own = false;
        std::vector<int32_t> nodes;  // its own, restored or new
        ~Lifted() {
            for (const auto &[node, h] : others)
                if (r.w_.jobs[h].state == SimState::Pending) r.reserve(h, {node});
            if (own && r.w_.jobs[j].state == SimState::Pending) r.reserve(j, nodes);
        }
    } lifted{*this, j, {}, false, {}};
    if (!reservations_.empty()) {
        const OrderKey mine = policy_->order_key(j);
        for (const auto &[node, h] : reservations_)
            if (h != j && order_before(mine, policy_->order_key(h))) lifted.others.emplace_back(node, h);
        for (const auto &[node, h] : lifted.others) {
            (void)node;
            unreserve(h);
        }
        if (since != INT64_MIN) {
            unreserve(j);
            // (In a backfill cycle only if it preempted in this instant:
            // else the cycle plans it anew, walk_if_due.)
            if (t - since < w_.options.preempt_guard && (!backfill_walk_ || since == t)) {
                lifted.own = true;
                lifted.nodes = reserved_nodes_[j];
            }
        }
    }
    bool guarded = false;
    auto record = [&](int32_t p, std::vector<uint32_t> victims) {
        if (w_.options.start_log)
            result_.starts.push_back(StartRecord{t, j, p, std::move(victims), w_.jobs[j].node});
    };
    for (int32_t p : parts) {
        if (!policy_->within_limits(j, p)) continue;
        if (main_walk && part_blocked_[static_cast<size_t>(p)]) continue;
        if (fits_free(p, g)) {
            std::vector<uint32_t> victims;  // its earlier preemption's, if it waited for a kill
            if (auto it = killing_victims_.find(j); it != killing_victims_.end()) {
                victims = std::move(it->second);
                killing_victims_.erase(it);
            }
            w_.jobs[j].preempted_at = INT64_MIN;
            lifted.own = false;
            reserved_nodes_.erase(j);
            start(j, p, t);
            record(p, std::move(victims));
            return Tried::Started;
        }
        if (main_walk && fits_idle(p, g)) {
            part_blocked_[static_cast<size_t>(p)] = 1;
            block_nodes_of(p);
        }
        if (!may_preempt(j, t, &guarded)) continue;
        // A search that failed for a job of this tier in this partition
        // fails for any that asks more (or, where the policy says not,
        // as much), until something starts or stops (jobs on one node and
        // jobs spanning nodes apart: three GPUs on one node can be harder
        // to find than five on two).
        const bool spans = g > part_max_node_[static_cast<size_t>(p)];
        const size_t memo =
            (static_cast<size_t>(p) * w_.tiers.size() + static_cast<size_t>(w_.jobs[j].tier)) * 2 + (spans ? 1 : 0);
        const bool larger = policy_->larger_fails_too();
        const uint64_t exact = (uint64_t(memo) << 32) | g;
        // A job that preempted before searches with its own carried-out
        // plan (gpupool: the nodes it freed, the partition it preempted
        // in): what it finds says nothing of the others, nor theirs of it.
        const bool own_search = w_.jobs[j].preempted_at != INT64_MIN;
        if (!w_.options.reference_walk && !own_search) {
            if (larger && search_gen_[memo] == walk_gen_ && search_failed_[memo] <= g) continue;
            if (!larger) {
                auto it = search_failed_exact_.find(exact);
                if (it != search_failed_exact_.end() && it->second == walk_gen_) continue;
            }
        }
        std::vector<uint32_t> &victims = victims_scratch_;
        if (!preempt_for(j, p, t, victims)) {
            if (own_search) continue;
            if (!larger) {
                search_failed_exact_[exact] = walk_gen_;
                continue;
            }
            if (search_gen_[memo] != walk_gen_ || g < search_failed_[memo]) search_failed_[memo] = g;
            search_gen_[memo] = walk_gen_;
            continue;
        }
        std::vector<int32_t> freed;
        for (uint32_t v : victims) {
            const SimJobState &vs = w_.jobs[v];
            if (vs.node >= 0)
                freed.push_back(vs.node);
            else if (vs.multi != UINT32_MAX)
                for (const auto &[node, held] : w_.multi_alloc[vs.multi]) {
                    (void)held;
                    freed.push_back(node);
                }
        }
        // Later in a live backfill cycle, the later its preemption.
        preempt_lag_ = backfill_walk_ ? (int64_t(cycle_preemptors_) * w_.options.backfill_spacing_milli + 500) / 1000 : 0;
        for (uint32_t v : victims) stop(v, t, true);
        preempt_lag_ = 0;
        cycle_preemptors_++;
        if (w_.options.kill_delay > 0) {
            reserved_nodes_[j] = freed;
            lifted.own = true;
            lifted.nodes = freed;
            // It starts once its victims' kill ends, if their GPUs are
            // still free then.
            w_.jobs[j].preempted_at = t;
            killing_victims_[j] = victims;
            policy_->on_preempted(j, victims, t);
            return Tried::Killing;
        }
        if (!fits_free(p, g)) throw std::logic_error("sim: preemption freed too little");  // cannot happen
        start(j, p, t);
        record(p, victims);
        return Tried::Preempted;
    }
    if (backfill_walk_ && !completing_.empty()) plan_at_kill_end(j, parts, g);
    return guarded || w_.jobs[j].preempted_at != INT64_MIN ? Tried::FailedAlone : Tried::Failed;
}

// A backfill cycle plans a job that cannot start now where a kill is
// freeing GPUs (cons_tres counts a completing job's GPUs free in its
// will-run test), at the kill's end, and no later job of the cycle gets
// that node (backfill reserves whole nodes).  So requeued victims behind
// it do not take GPUs a kill frees for a preemptor, whichever preemptor's
// kill it is.  One-node jobs; the first such node in the partition's order.
void Replay::plan_at_kill_end(uint32_t j, const std::vector<int32_t> &parts, uint32_t g) {
    for (int32_t p : parts) {
        const size_t pi = static_cast<size_t>(p);
        if (g > part_max_node_[pi] || !policy_->within_limits(j, p)) continue;
        size_t best = SIZE_MAX;
        uint64_t best_order = 0;
        for (uint32_t node : cluster_.partitions[pi].nodes) {
            const uint32_t killing = w_.completing_gpus[node];
            if (killing == 0 || free_[node] + killing < g) continue;
            if ((!node_blocked_.empty() && node_blocked_[node]) ||
                (!reserved_by_.empty() && reserved_by_[node] != kNoJob))
                continue;  // planned for a job before it
            const uint64_t order = node_order(pi, node, free_[node] + killing);
            if (best == SIZE_MAX || order < best_order) {
                best = node;
                best_order = order;
            }
        }
        if (best == SIZE_MAX) continue;
        block_node(static_cast<int32_t>(best));
        return;
    }
}

// Every pending job in order, each tried once: what the class walk below
// must match.
bool Replay::reference_walk(int64_t t) {
    std::vector<std::pair<OrderKey, uint32_t>> order;
    for (const PendingClass &pc : classes_)
        for (const Member &m : pc.members) order.emplace_back(policy_->order_key(m.job), m.job);
    std::sort(order.begin(), order.end(),
              [](const auto &a, const auto &b) { return order_before(a.first, b.first); });
    bool again = false;
    for (const auto &[key, j] : order) {
        if (policy_->held(j)) continue;
        const uint32_t cls = w_.jobs[j].cls;
        const Tried r = try_start(j, t);
        if (r == Tried::Failed || r == Tried::Killing || r == Tried::FailedAlone) continue;
        PendingClass &pc = classes_[cls];
        pc.members.erase(Member{w_.jobs[j].ckey, w_.jobs[j].id, j});
        w_.jobs[j].cls = UINT32_MAX;
        again |= r == Tried::Preempted;
    }
    if (policy_->take_admission_change()) again = true;
    return again;
}

bool Replay::walk(int64_t t) {
    result_.stats.walks++;
    walk_gen_++;
    std::fill(part_blocked_.begin(), part_blocked_.end(), 0);
    struct Unblock {
        Replay &r;
        ~Unblock() { r.unblock_nodes(); }
    } unblock{*this};
    if (w_.options.reference_walk) return reference_walk(t);
    heap_.clear();
    failed_.clear();
    auto push = [&](uint32_t c) {
        PendingClass &pc = classes_[c];
        if (pc.cursor == pc.members.end() || policy_->held(pc.cursor->job)) return;
        heap_.push_back(HeapEntry{policy_->order_key(pc.cursor->job), c});
        std::push_heap(heap_.begin(), heap_.end(), HeapLess());
    };
    for (uint32_t c = 0; c < classes_.size(); ++c) {
        PendingClass &pc = classes_[c];
        if (pc.members.empty()) continue;
        pc.cursor = pc.members.begin();
        push(c);
    }
    bool again = false;
    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), HeapLess());
        const HeapEntry top = heap_.back();
        heap_.pop_back();
        PendingClass &pc = classes_[top.cls];
        const uint32_t j = pc.cursor->job;
        const Tried r = try_start(j, t);
        if (r == Tried::Failed) {
            failed_.push_back(top.cls);
            continue;
        }
        if (r == Tried::Killing || r == Tried::FailedAlone) {
            // It stays pending; the class's next job may preempt.
            ++pc.cursor;
            push(top.cls);
            continue;
        }
        pc.cursor = pc.members.erase(pc.cursor);
        w_.jobs[j].cls = UINT32_MAX;
        again |= r == Tried::Preempted;
        // Freed GPUs may let classes tried before start now, and so may a
        // start that opens preemptions (Policy::start_opens_preemption):
        // their jobs behind the walk's position are tried.
        if (r == Tried::Preempted || policy_->start_opens_preemption(j)) {
            for (uint32_t c : failed_) {
                PendingClass &fc = classes_[c];
                auto it = fc.members.begin();
                while (it != fc.members.end() && order_before(policy_->order_key(it->job), top.key)) ++it;
                fc.cursor = it;
                push(c);
            }
            failed_.clear();
        }
        push(top.cls);
    }
    if (policy_->take_admission_change()) again = true;
    return again;
}

}  // namespace gpupool::sim::replay_detail

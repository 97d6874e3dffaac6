// The gpupool policy in the replay: the unchanged core (gpupool::Engine),
// driven the way priority/gpupool and preempt/gpupool drive it inside
// slurmctld (src/plugins/*/gpupool, doc/design.md "When the engine runs"):
//
// - submit (priority_p_set): note_job + provisional placement and
//   admission against the quota left;
// - end, cancel or requeue of a running job (priority_p_job_end):
//   job_ended, which gives its GPUs back and redoes admission at once; a
//   requeued job is placed again (priority_p_set) with Slurm's reset
//   submit time and restart count, so the core keeps its first one;
// - full pass (the agent): at the first instant, then after any change
//   once `pass_interval` seconds have gone since the last pass (the
//   plugin: at least 1 s apart), and every RecalcInterval while jobs
//   wait (with none waiting a pass decides nothing, and the passes after
//   each start or end account the usage history as the live ones do);
//   the snapshot is kept between passes, not rebuilt;
// - preemption (slurm_find_preemptable_jobs + PREEMPT_DATA_PRIO): when the
//   running jobs changed since the core last looked, refresh_running (the
//   preempt plugin does so whenever nodes changed); candidates are the
//   running jobs on the partition's nodes that preemptable() allows, in
//   the order of the preemptor's victim plan (plan_rank(): planned victims
//   node group by node group; with node usage only they are allowed);
// - the walk's order is the core's order, which the priorities it writes
//   to Slurm follow (Slurm sorts its queue by them); held jobs (priority
//   0) are skipped; a job may start only in start_partitions() (the
//   plugin narrows Slurm's list).
#include <algorithm>
#include <unordered_map>

#include "policy.hpp"
#include "snapshot.hpp"
#include "usage.hpp"

namespace gpupool::sim {

namespace {

class GpupoolPolicy final : public Policy {
public:
    explicit GpupoolPolicy(World &world) : Policy(world) {
        engine_.set_config(*w_.config);
        const SimCluster &c = *w_.cluster;
        for (const SimNode &n : c.nodes) snap_.nodes.push_back(n);  // GPUs, and CPUs and memory where known
        snap_.account_parent = c.account_parent;
        for (size_t p = 0; p < c.partitions.size(); ++p) {
            std::vector<int32_t> idx(c.partitions[p].nodes.begin(), c.partitions[p].nodes.end());
            snap_.add_partition(c.partitions[p].name, idx);
            part_index_.emplace(c.partitions[p].name, static_cast<int32_t>(p));
            uint32_t widest = 0;
            for (uint32_t n : c.partitions[p].nodes) widest = std::max(widest, c.nodes[n].gpus);
            part_widest_.push_back(widest);
        }
        snap_pos_.assign(w_.jobs.size(), kNone);
        periodic_ = std::max<int64_t>(std::max<int64_t>(w_.config->recalc_interval, 1), w_.options.pass_interval);
    }

    void on_submit(uint32_t j, int64_t t) override {
        const SimJob &s = w_.spec(j);
        SnapJob sj;
        sj.id = s.id;
        sj.state = JobState::Pending;
        sj.partitions = s.pools;
        sj.qos = s.qos;
        sj.gpus = s.gpus;
        sj.submit_time = t;
        sj.account = s.account;
        sj.cpus = s.cpus;
        sj.mem_mb = s.mem_mb;
        add(j, std::move(sj));
        engine_.note_job(s.id, t, 0, t);
        place(j, t);
        dirty_ = true;
    }

    void on_requeue(uint32_t j, int64_t t) override {
        const SimJob &s = w_.spec(j);
        admission_changed_ |= engine_.job_ended(s.id, t);
        SnapJob &sj = snap_.jobs[snap_pos_[j]];
        sj.state = JobState::Pending;
        sj.partitions = s.pools;
        sj.submit_time = t;  // Slurm resets it; the core keeps the first
        sj.start_time = 0;
        sj.restart_cnt = w_.jobs[j].restarts;
        pending_++;
        engine_.note_job(s.id, t, sj.restart_cnt, t);
        place(j, t);
        dirty_ = running_changed_ = true;
    }

    void on_end(uint32_t j, int64_t t) override {
        admission_changed_ |= engine_.job_ended(w_.spec(j).id, t);
        remove(j);
        dirty_ = running_changed_ = true;
    }

    void on_start(uint32_t j, int64_t t) override {
        SnapJob &sj = snap_.jobs[snap_pos_[j]];
        sj.state = JobState::Running;
        sj.partitions.assign(1, w_.part_name(w_.jobs[j].part));
        sj.start_time = t;
        pending_--;
        dirty_ = running_changed_ = true;
    }

    // Nodes that were completing have free GPUs now.
    void on_kill_ended(int64_t) override { running_changed_ = true; }

    void before_walk(int64_t t) override {
        if (!pass_due(t)) return;
        note_nodes();
        engine_.evaluate(snap_, t);
        last_pass_ = t;
        dirty_ = running_changed_ = false;
        counters.passes++;
    }

    int64_t next_wakeup(int64_t t) const override {
        if (last_pass_ == kNever) return INT64_MAX;
        int64_t next = INT64_MAX;
        if (dirty_) next = last_pass_ + w_.options.pass_interval;
        if (pending_ > 0) next = std::min(next, last_pass_ + periodic_);
        return next > t ? next : t + 1;
    }

    // The order the core gave the job (R1's key, pending_order_key), which
    // the priorities it writes follow.  Taken from the result rather than
    // the priority number: a job end folds the jobs placed since the pass
    // into the order and numbers them all again, in the same order, in the
    // middle of a walk.  OrderKey's major sorts higher first: inverted.
    OrderKey order_key(uint32_t j) const override {
        const PendingResult *r = engine_.pending_result(w_.spec(j).id);
        OrderKey k;
        k.id = w_.spec(j).id;
        if (!r) return k;
        const PendingOrderKey pk = pending_order_key(*r, engine_.order_priority(*r));
        k.major = ~pk.major;
        k.minor = pk.submit;
        return k;
    }

    // Same pools and tier: R1 orders a job that preempted first (by the
    // node it freed), then by original submit time, then id.
    int64_t class_key(uint32_t j) const override {
        const PendingResult *r = engine_.pending_result(w_.spec(j).id);
        if (r && r->preempted) return INT64_MIN + r->freed_node;
        return w_.jobs[j].submit;
    }

    // preempt/gpupool tells the core (gp_engine_note_preemption): its plan
    // is carried out and holds its node, and the next pass puts it first
    // in its tier.
    void on_preempted(uint32_t j, const std::vector<uint32_t> &victims, int64_t) override {
        for (uint32_t v : victims) engine_.note_preempted(w_.spec(j).id, w_.spec(v).id);
        preemptors_.push_back(j);
        dirty_ = true;
    }
    // Their place changes at a pass, or when a job end renumbers the queue.
    void take_rekeyed(std::vector<uint32_t> &out) override {
        size_t keep = 0;
        for (uint32_t j : preemptors_) {
            if (w_.jobs[j].state != SimState::Pending) continue;
            out.push_back(j);
            preemptors_[keep++] = j;
        }
        preemptors_.resize(keep);
    }

    bool held(uint32_t j) const override {
        const PendingResult *r = engine_.pending_result(w_.spec(j).id);
        return !r || r->admission == Admission::Held;
    }

    void start_partitions(uint32_t j, std::vector<int32_t> &out) override {
        out.clear();
        const SimJob &s = w_.spec(j);
        listed_.clear();
        for (const std::string &p : s.pools) {
            if (!listed_.empty()) listed_ += ',';
            listed_ += p;
        }
        const std::string allowed = engine_.start_partitions(s.id, listed_);
        for_each_listed(allowed, [&](std::string_view name) {
            auto it = part_index_.find(std::string(name));
            if (it != part_index_.end() && std::find(out.begin(), out.end(), it->second) == out.end())
                out.push_back(it->second);
        });
    }

    bool preempts() const override { return true; }
    bool larger_fails_too() const override { return false; }
    // A preemptible job that starts is a new candidate; any start in a
    // pool with account queues may take a queue over its quota, and one
    // that takes a flat pool over its quota makes its borrowers
    // reclaimable.
    bool start_opens_preemption(uint32_t j) const override {
        const SimJobState &s = w_.jobs[j];
        if (w_.tiers[static_cast<size_t>(s.tier)].preemptible) return true;
        const int32_t pool = w_.pool_of_part[static_cast<size_t>(s.part)];
        if (pool < 0) return false;
        const PoolState &ps = engine_.last().pools[static_cast<size_t>(pool)];
        return ps.queues.tree || w_.part_used[static_cast<size_t>(s.part)] > ps.quota;
    }

    // The preempt plugin refreshes before every search after a change, and
    // so does the replay, with any pass_interval: the victim plan is made
    // on one view of where GPUs are, and a search that failed on an old
    // view would hold back every job of its class for the rest of the walk.
    void candidates(uint32_t j, int32_t p, int64_t t, std::vector<uint32_t> &out) override {
        out.clear();
        if (running_changed_) refresh_view(t);
        const SimJob &s = w_.spec(j);
        JobRef pre;
        pre.id = s.id;
        pre.partitions = w_.part_name(p);
        pre.qos = s.qos;
        pre.gpus = s.gpus;
        // A job wider than the partition's widest node asks for whole nodes.
        const uint32_t widest = part_widest_[static_cast<size_t>(p)];
        pre.nodes = widest > 0 && s.gpus > widest ? (s.gpus + widest - 1) / widest : 1;
        with_account(pre, s);
        for (uint32_t v : w_.running_preemptible) {
            const SimJobState &vs = w_.jobs[v];
            if (!w_.tiers[static_cast<size_t>(vs.tier)].removable || !w_.overlaps(v, p)) continue;
            JobRef victim;
            victim.id = vs.id;
            victim.partitions = w_.part_name(vs.part);
            victim.qos = w_.spec(v).qos;
            victim.gpus = vs.gpus;
            victim.start = vs.start;
            with_account(victim, w_.spec(v));
            if (engine_.preemptable(victim, pre, t).allowed) out.push_back(v);
        }
        ranked_.clear();
        for (uint32_t v : out) ranked_.emplace_back(engine_.plan_rank(s.id, w_.jobs[v].id), v);
        std::sort(ranked_.begin(), ranked_.end());
        for (size_t i = 0; i < ranked_.size(); ++i) out[i] = ranked_[i].second;
    }

    bool view_stale() const override { return running_changed_; }
    void refresh_view(int64_t t) override {
        note_nodes();
        engine_.refresh_running(snap_, t);
        running_changed_ = false;
        counters.refreshes++;
    }

    bool take_admission_change() override {
        bool c = admission_changed_;
        admission_changed_ = false;
        return c;
    }

private:
    static constexpr uint32_t kNone = UINT32_MAX;
    static constexpr int64_t kNever = INT64_MIN;

    bool pass_due(int64_t t) const {
        if (last_pass_ == kNever) return true;
        if (dirty_ && t - last_pass_ >= w_.options.pass_interval) return true;
        return pending_ > 0 && t - last_pass_ >= periodic_;
    }

    // The account, CPUs and memory the plugins pass with a job, so account
    // queues decide here as on a cluster.
    static void with_account(JobRef &ref, const SimJob &s) {
        ref.account = s.account;
        ref.cpus = s.cpus;
        ref.mem_mb = s.mem_mb;
    }

    // Where GPUs are, as the plugins read it from Slurm's GRES records:
    // each node's free GPUs and each running job's GPUs per node; a node
    // where a victim's kill has not ended (kill_delay) is completing, its
    // GPUs still taken.
    void note_nodes() {
        snap_.node_usage = true;
        for (size_t i = 0; i < snap_.nodes.size(); ++i) {
            SnapNode &n = snap_.nodes[i];
            const uint32_t held = w_.completing_gpus[i];
            n.free_gpus = n.gpus - std::min(n.gpus, held);
            n.completing = held > 0;
        }
        auto hold = [&](SnapJob &sj, int32_t node, uint32_t g) {
            sj.nodes.push_back(NodeShare{node, g});
            SnapNode &n = snap_.nodes[static_cast<size_t>(node)];
            n.free_gpus -= std::min(n.free_gpus, g);
        };
        for (size_t pos = 0; pos < snap_.jobs.size(); ++pos) {
            SnapJob &sj = snap_.jobs[pos];
            sj.nodes.clear();
            if (sj.state != JobState::Running) continue;
            const SimJobState &s = w_.jobs[snap_job_[pos]];
            if (s.node >= 0)
                hold(sj, s.node, s.gpus);
            else if (s.multi != UINT32_MAX)
                for (const auto &[node, g] : w_.multi_alloc[s.multi]) hold(sj, node, g);
        }
    }

    // priority_p_set: placed in the last pass's order, admitted or held
    // against the quota left.
    void place(uint32_t j, int64_t t) { engine_.provisional(snap_.jobs[snap_pos_[j]], t); }

    void add(uint32_t j, SnapJob sj) {
        snap_pos_[j] = static_cast<uint32_t>(snap_.jobs.size());
        snap_job_.push_back(j);
        snap_.jobs.push_back(std::move(sj));
        pending_++;
    }

    void remove(uint32_t j) {
        uint32_t pos = snap_pos_[j];
        uint32_t last = static_cast<uint32_t>(snap_.jobs.size() - 1);
        if (pos != last) {
            snap_.jobs[pos] = std::move(snap_.jobs[last]);
            snap_job_[pos] = snap_job_[last];
            snap_pos_[snap_job_[pos]] = pos;
        }
        snap_.jobs.pop_back();
        snap_job_.pop_back();
        snap_pos_[j] = kNone;
    }

    Engine engine_;
    Snapshot snap_;
    std::vector<uint32_t> snap_pos_;  // job -> index in snap_.jobs
    std::vector<uint32_t> snap_job_;  // index in snap_.jobs -> job
    std::unordered_map<std::string, int32_t> part_index_;
    std::vector<uint32_t> part_widest_;  // per partition: GPUs of its widest node
    uint64_t pending_ = 0;          // pending jobs (eligible or not)
    int64_t periodic_ = 10;
    int64_t last_pass_ = kNever;
    bool dirty_ = false;            // a change the next pass has not seen
    bool running_changed_ = false;  // running jobs changed since the core looked
    bool admission_changed_ = false;
    std::vector<uint32_t> preemptors_;   // jobs that preempted, maybe still pending
    std::string listed_;
    std::vector<std::pair<uint32_t, uint32_t>> ranked_;
};

}  // namespace

std::unique_ptr<Policy> make_gpupool_policy(World &world) { return std::make_unique<GpupoolPolicy>(world); }

}  // namespace gpupool::sim

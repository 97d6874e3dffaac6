// The differential test of the engine's decisions: random worlds (flat
// pools, account trees, pools over the same, overlapping and separate
// nodes, Limit and LendingLimit, CPUs and memory counted or not, both
// ReclaimTo and ReclaimBy modes, MinRuntime, job arrays, jobs listing
// several pools, usage history) each give a text of every decision the
// engine makes on them: the pending order, priorities, admission, holds and
// their reasons, start partitions, victim ranks and walks, each pool's
// fairshare and lending, the verdict and its reason for every pending job
// against every running one, a provisional placement and a job end.  The
// texts are hashed per block of worlds and held to the digests the engine
// gave before a rewrite (data/decisions/digests.txt, with the commit that
// made them): a rewrite that means to change nothing must change no digest.
// Worlds with ReclaimTo=fairshare and two pools or more are drawn but not
// compared: there reclaim between pools changed on purpose (to fairshare,
// as between queues).  150,000 worlds run, about 100,000 compared.
//   GPUPOOL_DECISION_WORLDS=N   worlds to run (default 150000; the ASan leg runs fewer)
//   GPUPOOL_DECISION_DUMP=W     print world W's text (diff it against an old build's)
//   GPUPOOL_DECISION_WRITE=FILE write the digests instead of checking them
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine.hpp"
#include "test_helpers.hpp"

using namespace gpupool;
using namespace gpupool::test;

namespace {

constexpr uint32_t kWorldsPerBlock = 1000;

struct World {
    std::string conf;
    // ReclaimTo=fairshare with two pools or more: reclaim between pools
    // went to fairshare on purpose: run, not compared.
    bool pools_to_fairshare = false;
    bool count_all = false;
    Snapshot snap;
    std::vector<SnapJob> later;  // arrives between the two passes
};

class Draw {
public:
    explicit Draw(uint32_t seed) : rng_(seed) {}
    int operator()(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool one_in(int n) { return (*this)(1, n) == 1; }

private:
    std::mt19937 rng_;
};

std::string tres(Draw &d, int gpus, bool count_all) {
    std::string t = "gres/gpu=" + std::to_string(gpus);
    const int gpus_max = std::max(gpus, 1);
    if (count_all && !d.one_in(3)) t += ",cpu=" + std::to_string(d(0, 16 * gpus_max));
    if (count_all && d.one_in(2)) t += ",mem=" + std::to_string(d(0, 64 * gpus_max));
    return t;
}

void add_accounts(Draw &d, World &w, int pools, int gpus, std::vector<std::string> &names) {
    const int accounts = d(1, 12);
    std::vector<int> depth;
    for (int a = 0; a < accounts; ++a) {
        int parent = d(-1, a - 1);
        while (parent >= 0 && depth[size_t(parent)] >= 3) parent = d(-1, parent - 1);
        depth.push_back(parent < 0 ? 1 : depth[size_t(parent)] + 1);
        names.push_back("a" + std::to_string(a));
        w.snap.account_parent[names.back()] = parent < 0 ? "root" : names[size_t(parent)];
        if (a > 0 && d.one_in(5)) continue;  // no entry: draws on its parent's
        const std::string pool = d.one_in(2) ? "*" : "p" + std::to_string(d(1, pools));
        const int quota = d(0, gpus / 2);
        w.conf += "Account=" + names.back() + " Pool=" + pool + " Quota=" + tres(d, quota, w.count_all) +
                  " Weight=" + std::to_string(d(1, 4));
        if (d.one_in(5)) w.conf += " Limit=gres/gpu=" + std::to_string(std::max(1, quota + d(0, gpus)));
        if (d.one_in(6)) w.conf += " LendingLimit=gres/gpu=" + std::to_string(d(0, quota));
        w.conf += "\n";
    }
}

SnapJob random_job(Draw &d, uint32_t id, int pools, uint32_t node_gpus, const std::vector<std::string> &accounts,
                   bool running) {
    static const char *qos[] = {"high", "normal", "low", "low", "", "low"};
    const std::string part = "p" + std::to_string(d(1, pools));
    SnapJob j;
    if (running) {
        j = gpupool::test::running(id, part, qos[d(0, 5)], uint32_t(d(1, int(node_gpus))), d(5000, 9990), d(1000, 4000));
    } else {
        std::string parts = part;
        if (pools > 1 && d.one_in(4)) parts += ",p" + std::to_string(d(1, pools));
        if (d.one_in(8)) parts += ",other";
        j = pending(id, parts, qos[d(0, 4)], uint32_t(d(1, int(node_gpus))), d(1000, 9000));
        if (d.one_in(6)) j.array_tasks = uint32_t(d(2, 5));
        if (d.one_in(8)) j.restart_cnt = 1;
    }
    if (!accounts.empty()) j.account = accounts[size_t(d(0, int(accounts.size()) - 1))];
    j.cpus = uint32_t(d(1, 16));
    j.mem_mb = uint64_t(d(8, 64));
    return j;
}

World random_world(uint32_t seed) {
    Draw d(seed);
    World w;
    const int nodes = d(2, 6);
    const uint32_t node_gpus = uint32_t(d(2, 8));
    w.snap = cluster(nodes, node_gpus);
    for (SnapNode &n : w.snap.nodes) {
        n.cpus = 32;
        n.mem_mb = 256;
    }
    w.conf = "Tier=high QOS=high Priority=300 Preemptible=no\n"
             "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
             "Tier=low QOS=low Priority=100 Preemptible=yes\n"
             "DefaultTier=" + std::string(d.one_in(2) ? "normal" : "low") + "\n"
             "UsageWeight=" + std::to_string(d(0, 2)) + "\n";
    w.count_all = d.one_in(3);
    if (w.count_all) w.conf += "QuotaTRES=gres/gpu,cpu,mem\n";
    const bool to_fairshare = d.one_in(2);
    if (to_fairshare) w.conf += "ReclaimTo=fairshare\n";
    if (d.one_in(3)) w.conf += "ReclaimBy=all\n";
    if (d.one_in(3)) w.conf += "MinRuntime=" + std::to_string(d(1, 60)) + "\n";
    // Pools over the same nodes, overlapping or apart.
    const int pools = d(1, 3);
    w.pools_to_fairshare = to_fairshare && pools > 1;
    const int gpus = nodes * int(node_gpus);
    for (int p = 1; p <= pools; ++p) {
        int first = d(0, nodes - 1), last = d(first, nodes - 1);
        if (d.one_in(2)) first = 0, last = nodes - 1;
        partition(w.snap, "p" + std::to_string(p), first, last);
        const int cap = (last - first + 1) * int(node_gpus);
        w.conf += "Pool=p" + std::to_string(p) + " Quota=" +
                  (w.count_all && d.one_in(3) ? tres(d, d(0, cap), true) : std::to_string(d(0, cap))) +
                  " Weight=" + std::to_string(d(1, 3));
        if (d.one_in(4)) w.conf += " MinRuntime=" + std::to_string(d(0, 120));
        w.conf += "\n";
    }
    partition(w.snap, "other", 0, nodes - 1);
    std::vector<std::string> accounts;
    if (!d.one_in(3)) add_accounts(d, w, pools, gpus, accounts);
    const uint32_t jobs = uint32_t(d(4, 30));
    for (uint32_t id = 1; id <= jobs; ++id) w.snap.add_job(random_job(d, id, pools, node_gpus, accounts, d.one_in(2)));
    for (uint32_t id = jobs + 1, n = jobs + uint32_t(d(0, 4)); id <= n; ++id)
        w.later.push_back(random_job(d, id, pools, node_gpus, accounts, false));
    return w;
}

const char *admission_name(Admission a) {
    return a == Admission::Free ? "free" : a == Admission::Quota ? "quota" : "held";
}

// Every decision of the last pass, in a fixed order.
void write_pass(Engine &e, const Snapshot &s, int64_t now, std::ostream &out) {
    const Evaluation &ev = e.last();
    for (const PoolState &p : ev.pools)
        out << "pool " << p.name << " domain " << p.domain << " fairshare " << p.fairshare << " lent " << p.lent
            << " standing " << p.standing << " np " << p.np_used() << '+' << p.np_reserved() << " p " << p.p_used()
            << " held " << p.held_jobs << '\n';
    for (const PendingResult &r : ev.pending) {
        out << "pending " << r.job_id << " at " << r.position << " prio " << r.priority << '/' << r.nominal << ' '
            << admission_name(r.admission) << " hold " << int(r.hold) << " tasks " << r.admitted_tasks << " standing "
            << r.group_standing << " refused";
        for (const Refusal &x : r.refused) out << ' ' << x.pool << ':' << x.taken << ':' << x.level << ':' << int(x.by);
        out << " reason '" << e.reason_of(r) << "'";
        std::string parts;
        for (const SnapJob &j : s.jobs)
            if (j.id == r.job_id) job_ref(j, parts);
        out << " starts '" << e.start_partitions(r.job_id, parts) << "'\n";
    }
    std::vector<uint32_t> ids;
    for (const auto &[id, ri] : ev.running) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (uint32_t id : ids) {
        const RunningInfo &ri = ev.running.at(id);
        out << "running " << id << " class " << int(ri.cls) << " rank " << ri.rank << " walk " << ri.walk << " excess "
            << ri.excess << '\n';
    }
    // Every pending job against every running one, as the preempt plugin asks.
    for (const SnapJob &p : s.jobs) {
        if (p.state != JobState::Pending) continue;
        std::string pparts;
        const JobRef pref = job_ref(p, pparts);
        for (const SnapJob &v : s.jobs) {
            if (v.state != JobState::Running) continue;
            std::string vparts;
            const Verdict vd = e.preemptable(job_ref(v, vparts), pref, now);
            out << "verdict " << p.id << ' ' << v.id << ' ' << vd.allowed << ' ' << rule_name(vd.rule) << " '"
                << vd.why << "'\n";
        }
    }
}

// World `world`'s decisions; `compared`: whether the digests hold them.
std::string decisions(uint32_t world, bool *compared = nullptr) {
    World w = random_world(0x5eed0000u + world);
    if (compared) {
        *compared = !w.pools_to_fairshare;
        if (!*compared) return "";
    }
    std::ostringstream out;
    Config cfg = parse_config(w.conf, "world.conf");
    if (w.count_all) cfg.counted = {{true, true, true}};
    Engine e;
    e.set_config(cfg);
    // Two passes an hour apart, so that usage history counts.
    e.evaluate(w.snap, 10000);
    write_pass(e, w.snap, 10000, out);
    for (const SnapJob &j : w.later) {
        w.snap.add_job(j);
        const PendingResult r = e.provisional(j, 10500);
        out << "provisional " << j.id << ' ' << admission_name(r.admission) << " prio " << r.priority << " reason '"
            << e.reason_of(r) << "'\n";
    }
    for (size_t i = 0; i < w.snap.jobs.size(); ++i)
        if (w.snap.jobs[i].state == JobState::Running) {
            const uint32_t id = w.snap.jobs[i].id;
            out << "ended " << id << ' ' << e.job_ended(id, 10600) << " changes";
            for (uint32_t c : e.job_end_changes()) out << ' ' << c;
            out << '\n';
            w.snap.jobs.erase(w.snap.jobs.begin() + std::ptrdiff_t(i));
            break;
        }
    e.evaluate(w.snap, 13600);
    write_pass(e, w.snap, 13600, out);
    return out.str();
}

uint64_t fnv1a(const std::string &s, uint64_t h = 0xcbf29ce484222325ull) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

std::string srcdir() {
    const char *d = std::getenv("srcdir");
    return d && *d ? d : ".";
}

uint32_t env_u32(const char *name, uint32_t def) {
    const char *v = std::getenv(name);
    return v && *v ? uint32_t(std::strtoul(v, nullptr, 10)) : def;
}

}  // namespace

TEST(Decisions, EveryWorldDecidesAsTheRecordedEngineDid) {
    if (const char *dump = std::getenv("GPUPOOL_DECISION_DUMP")) {
        std::fputs(decisions(uint32_t(std::strtoul(dump, nullptr, 10))).c_str(), stdout);
        return;
    }
    const uint32_t worlds = env_u32("GPUPOOL_DECISION_WORLDS", 150000);
    std::map<uint32_t, std::string> expected;  // block -> digest
    std::string made_by;
    {
        std::ifstream in(srcdir() + "/tests/unit/data/decisions/digests.txt");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("# made by ", 0) == 0) made_by = line.substr(10);
            unsigned block;
            char digest[17];
            if (std::sscanf(line.c_str(), "block %u %16s", &block, digest) == 2) expected[block] = digest;
        }
    }
    const char *write = std::getenv("GPUPOOL_DECISION_WRITE");
    if (!write) {
        ASSERT_FALSE(expected.empty()) << "no digests in data/decisions/digests.txt";
    }
    std::ostringstream written;
    uint64_t lines = 0, differing = 0, compared = 0;
    for (uint32_t block = 0; block * kWorldsPerBlock < worlds; ++block) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint32_t w = block * kWorldsPerBlock; w < (block + 1) * kWorldsPerBlock; ++w) {
            bool held_to_digest = false;
            const std::string text = decisions(w, &held_to_digest);
            if (!held_to_digest) continue;
            ++compared;
            lines += uint64_t(std::count(text.begin(), text.end(), '\n'));
            h = fnv1a(text, h);
        }
        char digest[17];
        std::snprintf(digest, sizeof digest, "%016" PRIx64, h);
        written << "block " << block << ' ' << digest << '\n';
        if (write) continue;
        auto it = expected.find(block);
        ASSERT_NE(it, expected.end()) << "no recorded digest for block " << block;
        if (it->second != digest) {
            ++differing;
            ADD_FAILURE() << "worlds " << block * kWorldsPerBlock << "-" << (block + 1) * kWorldsPerBlock - 1
                          << " decide otherwise than the engine of " << made_by
                          << " did; GPUPOOL_DECISION_DUMP=W prints a world's decisions to diff against that build";
        }
    }
    std::printf("decisions: %u worlds run, %" PRIu64 " compared, %" PRIu64 " decisions, %" PRIu64
                " blocks of %u worlds differ from %s\n",
                worlds, compared, lines, differing, kWorldsPerBlock, made_by.c_str());
    if (worlds >= 150000) EXPECT_GE(compared, 100000u);
    if (write) {
        std::ofstream(write) << "# made by " << (std::getenv("GPUPOOL_DECISION_COMMIT") ?: "?") << '\n' << written.str();
    }
}

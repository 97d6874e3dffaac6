// `gpupool whatif`: --set edits of gpupool.conf text, and the comparison
// of two passes over one fixed cluster view.
#include <gtest/gtest.h>
#include <jansson.h>

#include <memory>
#include <sstream>

#include "commands.hpp"
#include "settings.hpp"
#include "test_helpers.hpp"
#include "json_ptr.hpp"

using namespace gpupool;
using namespace gpupool::cli;
using namespace gpupool::test;

namespace {
constexpr int64_t T0 = 1'700'000'000;

using Json = JsonPtr;

Json parse(const std::string &text) {
    json_error_t err;
    Json j(json_loads(text.c_str(), 0, &err));
    EXPECT_TRUE(j) << err.text << "\n" << text;
    return j;
}

// A JSON value as compact text, keys sorted, for exact comparisons.
std::string dump(json_t *j) {
    if (!j) return "(missing)";
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    std::string out = s ? s : "";
    std::free(s);
    return out;
}

json_t *at(json_t *o, const char *key) { return json_object_get(o, key); }

json_t *pool_of(json_t *root, const std::string &name) {
    size_t i;
    json_t *p;
    json_array_foreach(at(root, "pools"), i, p) if (name == json_string_value(at(p, "name"))) return p;
    return nullptr;
}

std::string set_in(const std::string &text, const std::string &setting) {
    return apply_setting(text, parse_config(text, "g.conf"), setting);
}

std::string error_of(const std::string &text, const std::string &setting) {
    try {
        set_in(text, setting);
    } catch (const ConfigError &e) {
        return e.what();
    }
    return "(no error)";
}

const std::string kConf = "# site\n"
                          "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
                          "Tier=low QOS=low Priority=100 Preemptible=yes   # scavenger\n"
                          "DefaultTier=normal UsageWeight=0\n"
                          "Pool=pool1 Quota=2 # team A\n"
                          "Pool=pool2 Quota=2 Weight=1\n";

// OSMO's tiers, pool1 and pool2 sharing 4 one-GPU nodes.
ClusterView two_pools(int64_t now) {
    ClusterView v;
    v.cluster = "test";
    v.conf_path = "test.conf";
    v.now = now;
    v.history.available = true;
    v.snap = cluster(4);
    partition(v.snap, "pool1", 0, 3);
    partition(v.snap, "pool2", 0, 3);
    return v;
}

void meta(ClusterView &v, uint32_t id, const std::string &name, const std::string &part) {
    JobMeta m;
    m.name = name;
    m.user = "alice";
    m.partition = part;
    v.meta[id] = m;
}

struct Result {
    int rc = -1;
    std::string out, err;
    Json root;
};

Result whatif(const std::string &conf, const ClusterView &v, const std::vector<std::string> &sets, bool json) {
    Engine e = engine_with(conf);
    std::string text = conf;
    for (const std::string &s : sets) text = apply_setting(text, parse_config(text, "test.conf"), s);
    Options o;
    o.json = json;
    o.whatif_set = sets;
    std::ostringstream out, err;
    Result r;
    r.rc = cmd_whatif(e, parse_config(text, "test.conf"), v, o, out, err);
    r.out = out.str();
    r.err = err.str();
    if (json && r.rc == 0) r.root = parse(r.out);
    return r;
}
}  // namespace

// ------------------------------------------------------------------ --set

TEST(WhatifSet, ReplacesAKeyOnTheRecordsLine) {
    EXPECT_EQ(set_in(kConf, "pool1.Quota=4"),
              "# site\n"
              "Tier=normal QOS=normal Priority=200 Preemptible=no\n"
              "Tier=low QOS=low Priority=100 Preemptible=yes   # scavenger\n"
              "DefaultTier=normal UsageWeight=0\n"
              "Pool=pool1 Quota=4 # team A\n"
              "Pool=pool2 Quota=2 Weight=1\n");
    // Keys in any case; the documented spelling is written.
    EXPECT_EQ(set_in(kConf, "pool2.weight=3"), set_in(kConf, "pool2.Weight=3"));
    EXPECT_NE(set_in(kConf, "pool2.weight=3").find("\nPool=pool2 Quota=2 Weight=3\n"), std::string::npos);
}

TEST(WhatifSet, AddsAKeyTheRecordLacks) {
    std::string t = set_in(kConf, "pool1.MinRuntime=1:00:00");
    EXPECT_NE(t.find("\nPool=pool1 Quota=2 MinRuntime=1:00:00 # team A\n"), std::string::npos) << t;
    t = set_in(kConf, "low.GraceTime=30");
    EXPECT_NE(t.find("\nTier=low QOS=low Priority=100 Preemptible=yes GraceTime=30 # scavenger\n"), std::string::npos)
        << t;
    EXPECT_EQ(parse_config(t, "x").find_tier("low")->grace_time, 30);
}

TEST(WhatifSet, GlobalKeys) {
    // Set where it is, added at the end where it is not.
    EXPECT_NE(set_in(kConf, "usageweight=1").find("\nDefaultTier=normal UsageWeight=1\n"), std::string::npos);
    std::string t = set_in(kConf, "PreemptionOrder=oldest");
    EXPECT_EQ(t, kConf + "PreemptionOrder=oldest\n");
    EXPECT_EQ(parse_config(t, "x").preemption_order, PreemptionOrder::Oldest);
}

TEST(WhatifSet, BadSettingsSayWhatIsWrong) {
    EXPECT_EQ(error_of(kConf, "pool9.Quota=4"), "--set 'pool9.Quota=4': no Pool=pool9 or Tier=pool9 in g.conf");
    EXPECT_EQ(error_of(kConf, "pool1.Priority=4"),
              "--set 'pool1.Priority=4': unknown key 'Priority' for Pool=pool1 (pool keys: Quota, Weight, Rank, MinRuntime, DecayHalfLife, UsageWindow, UsageWeight, Placement)");
    EXPECT_EQ(error_of(kConf, "low.Quota=4"),
              "--set 'low.Quota=4': unknown key 'Quota' for Tier=low (tier keys: QOS, Priority, Preemptible, "
              "PreemptMode, GraceTime)");
    EXPECT_EQ(error_of(kConf, "Quota=4"),
              "--set 'Quota=4': unknown global key 'Quota' (global keys: QuotaTRES, PreemptionOrder, ReclaimBy, "
              "ReclaimTo, DecayHalfLife, UsageWindow, UsageWeight, MinRuntime, RecalcInterval, StateSaveInterval, "
              "PreemptiblePriority, DefaultTier, Consolidation, ConsolidationTries, Swap)");
    EXPECT_EQ(error_of(kConf, "pool1.Quota"), "--set 'pool1.Quota': expected POOL.Key=VALUE, TIER.Key=VALUE or Key=VALUE");
    EXPECT_EQ(error_of(kConf, "pool1.Quota="), "--set 'pool1.Quota=': no value");
    EXPECT_EQ(error_of(kConf, "pool1.Quota=4 #x"), "--set 'pool1.Quota=4 #x': the value must be one word (no space or '#')");
    // A bad value is the parser's, at the record's line of the file.
    try {
        std::string t = set_in(kConf, "pool1.Quota=-1");
        parse_config(t, "g.conf");
        ADD_FAILURE() << "no error";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()).rfind("g.conf:5: ", 0), 0u) << e.what();
    }
}

// ------------------------------------------------------------------ whatif

// Acceptance 2's case: pool1 at quota with two NORMAL jobs held; raising
// the quota to 3 lets exactly the first start; the quotas then add up to
// more than the 4 GPUs pool1 and pool2 share, so nothing is divided over
// quota any more: pool1's fairshare falls from 4 (pool2's idle quota
// too, as pool2 asks for nothing) to its quota, 3.  Borrowable: the 4
// GPUs nobody else uses, less its quota.
TEST(Whatif, QuotaRaiseStartsTheFirstHeldJob) {
    const std::string conf = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";
    ClusterView v = two_pools(T0 + 100);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "normal", 1, T0 + 1));
    v.snap.add_job(pending(3, "pool1", "normal", 1, T0 + 2));
    v.snap.add_job(pending(4, "pool1", "normal", 1, T0 + 3));
    for (uint32_t id : {1, 2, 3, 4}) meta(v, id, "n" + std::to_string(id), "pool1");

    Result r = whatif(conf, v, {"pool1.Quota=3"}, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(dump(at(r.root.get(), "command")), "\"whatif\"");
    EXPECT_EQ(dump(at(r.root.get(), "set")), "[\"pool1.Quota=3\"]");
    EXPECT_EQ(dump(at(r.root.get(), "would_start")), "[3]");
    EXPECT_EQ(dump(at(r.root.get(), "would_not_start")), "[]");
    json_t *p1 = pool_of(r.root.get(), "pool1");
    EXPECT_EQ(dump(at(p1, "before")),
              "{\"borrowable\":2,\"borrowed\":0,\"capacity\":4,\"fairshare\":4,\"free_quota\":0,\"held_jobs\":2,"
              "\"lent\":0,\"min_runtime\":0,\"quota\":2,\"reclaimable\":0,\"used\":2,\"weight\":1}");
    EXPECT_EQ(dump(at(p1, "after")),
              "{\"borrowable\":1,\"borrowed\":0,\"capacity\":4,\"fairshare\":3,\"free_quota\":0,\"held_jobs\":1,"
              "\"lent\":0,\"min_runtime\":0,\"quota\":3,\"reclaimable\":0,\"used\":2,\"weight\":1}");
    // Job 3 starts; job 4 stays held, now at 3/3: its reason code is the same.
    json_t *pend = at(r.root.get(), "pending");
    ASSERT_EQ(json_array_size(pend), 1u) << dump(pend);
    EXPECT_EQ(dump(at(at(json_array_get(pend, 0), "before"), "reason_text")), "\"quota full: pool1 2/2\"");
    EXPECT_EQ(dump(at(at(json_array_get(pend, 0), "after"), "reason")), "\"starting\"");
    EXPECT_EQ(dump(at(r.root.get(), "warnings")),
              "[\"pools pool1,pool2 share 4 GPUs but their quotas add up to 5: quotas cannot all be honoured\"]");
    EXPECT_EQ(dump(at(r.root.get(), "warnings_before")), "[]");

    Result t = whatif(conf, v, {"pool1.Quota=3"}, false);
    ASSERT_EQ(t.rc, 0) << t.err;
    EXPECT_EQ(t.out,
              "What if pool1.Quota=3 (figures now->with the change):\n"
              "POOL   CAPACITY  QUOTA  WEIGHT  MIN_RUNTIME  FAIRSHARE  BORROWABLE  BORROWED  LENT  RECLAIMABLE  HELD\n"
              "pool1         4   2->3       1         0:00       4->3        2->1         0     0            0  2->1\n"
              "pool2         4      2       1         0:00          2           0         0     0            0     0\n"
              "\n"
              "Pending jobs that would start:\n"
              "JOBID  PARTITION  NAME  USER   TIER    GPUS  NOW\n"
              "3      pool1      n3    alice  normal     1  quota full: pool1 2/2\n"
              "\n"
              "Pending jobs that would no longer start: none.\n"
              "\n"
              "Running jobs that would become reclaimable: none.\n"
              "\n"
              "Running jobs that would no longer be reclaimable: none.\n"
              "\n"
              "Running jobs that would be preempted now: none.\n"
              "\n"
              "Warning with the change: pools pool1,pool2 share 4 GPUs but their quotas add up to 5: quotas cannot "
              "all be honoured\n");
}

// OSMO's borrowing example (pool1: WF1 NORMAL, WF2 and WF3 LOW, WF3
// borrowing pool2's idle GPU): lowering pool1's quota to 1 makes WF2
// borrow too.  The node set then has a GPU in nobody's quota, which is
// lent first, to the newest borrower (WF3, the first victim): WF3 no
// longer holds a pool's quota, WF2 holds pool2's.
TEST(Whatif, ReclaimableJobsChange) {
    const std::string conf = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=2\n";
    ClusterView v = two_pools(T0 + 7);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "low", 1, T0 + 1));
    v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    v.snap.add_job(running(3, "pool1", "low", 1, T0 + 5));
    for (uint32_t id : {1, 2, 3}) meta(v, id, "wf" + std::to_string(id), "pool1");
    meta(v, 4, "wf4", "pool2");

    Result r = whatif(conf, v, {"pool1.Quota=1"}, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(dump(at(r.root.get(), "would_be_reclaimable")), "[2]");
    EXPECT_EQ(dump(at(r.root.get(), "would_not_be_reclaimable")), "[3]");
    json_t *run = at(r.root.get(), "running");
    ASSERT_EQ(json_array_size(run), 2u) << dump(run);
    for (size_t i = 0; i < 2; ++i) {
        json_t *j = json_array_get(run, i);
        if (json_integer_value(at(j, "job_id")) == 3) {
            EXPECT_EQ(dump(at(at(j, "before"), "lenders")), "[{\"gpus\":1,\"pool\":\"pool2\"}]");
            EXPECT_EQ(dump(at(at(j, "after"), "lenders")), "[{\"gpus\":1,\"pool\":null}]");
            EXPECT_EQ(dump(at(at(j, "after"), "reclaimable")), "0");
        } else {
            EXPECT_EQ(json_integer_value(at(j, "job_id")), 2);
            EXPECT_EQ(dump(at(at(j, "before"), "borrowed")), "0");
            EXPECT_EQ(dump(at(at(j, "after"), "lenders")), "[{\"gpus\":1,\"pool\":\"pool2\"}]");
            EXPECT_EQ(dump(at(at(j, "after"), "reclaimable")), "1");
        }
    }
    EXPECT_EQ(dump(at(at(pool_of(r.root.get(), "pool1"), "after"), "borrowed")), "2");
    EXPECT_EQ(dump(at(at(pool_of(r.root.get(), "pool2"), "after"), "reclaimable")), "1");
    EXPECT_EQ(dump(at(r.root.get(), "would_start")), "[]");

    // MinRuntime protects WF3 (started 2 s ago): not reclaimable any more.
    r = whatif(conf, v, {"pool1.MinRuntime=10:00"}, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(dump(at(r.root.get(), "would_not_be_reclaimable")), "[3]");
    EXPECT_EQ(dump(at(r.root.get(), "would_be_reclaimable")), "[]");
    json_t *j = json_array_get(at(r.root.get(), "running"), 0);
    EXPECT_EQ(dump(at(at(j, "after"), "protected_until")), std::to_string(T0 + 5 + 600));
    EXPECT_EQ(dump(at(at(pool_of(r.root.get(), "pool1"), "after"), "min_runtime")), "600");
}

// Raising pool2's quota from 1 to 2 entitles its pending NORMAL job to
// take back the GPU pool1's LOW job borrows: that job would be preempted
// now, by rule Reclaim.
TEST(Whatif, PreemptionsTheChangeWouldCause) {
    const std::string conf = kOsmoTiers + "Pool=pool1 Quota=2\nPool=pool2 Quota=1\n";
    ClusterView v = two_pools(T0 + 7);
    v.snap.add_job(running(1, "pool1", "normal", 1, T0));
    v.snap.add_job(running(2, "pool1", "low", 1, T0 + 1));
    v.snap.add_job(running(4, "pool2", "normal", 1, T0 + 2));
    v.snap.add_job(running(3, "pool1", "low", 1, T0 + 5));
    v.snap.add_job(pending(5, "pool2", "normal", 1, T0 + 6));
    Result r = whatif(conf, v, {"pool2.Quota=2"}, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(dump(at(r.root.get(), "would_be_preempted")),
              "[{\"gpus\":1,\"job_id\":3,\"pool\":\"pool1\",\"preemptor\":5,\"rule\":\"Reclaim\",\"user\":\"?\"}]");
    json_t *pend = at(r.root.get(), "pending");
    ASSERT_EQ(json_array_size(pend), 1u);
    EXPECT_EQ(dump(at(at(json_array_get(pend, 0), "before"), "reason")), "\"quota_full\"");
    EXPECT_EQ(dump(at(at(json_array_get(pend, 0), "after"), "reason")), "\"waiting_for_reclaim\"");
    EXPECT_EQ(dump(at(r.root.get(), "would_start")), "[]");
}

// --config with a pool the current file lacks: its "before" is null.
TEST(Whatif, APoolOnlyOneSideHas) {
    const std::string conf = kOsmoTiers + "Pool=pool1 Quota=2\n";
    ClusterView v = two_pools(T0 + 7);
    v.snap.add_job(pending(5, "pool2", "normal", 1, T0 + 6));
    Engine e = engine_with(conf);
    Options o;
    o.json = true;
    o.whatif_config = "new.conf";
    std::ostringstream out, err;
    ASSERT_EQ(cmd_whatif(e, parse_config(conf + "Pool=pool2 Quota=1\n", "new.conf"), v, o, out, err), 0) << err.str();
    Json root = parse(out.str());
    EXPECT_EQ(dump(at(root.get(), "modified_config")), "\"new.conf\"");
    json_t *p2 = pool_of(root.get(), "pool2");
    ASSERT_TRUE(p2);
    EXPECT_TRUE(json_is_null(at(p2, "before")));
    EXPECT_EQ(dump(at(at(p2, "after"), "quota")), "1");
    // In no pool now, Slurm's to start or not: not a job that would start.
    EXPECT_EQ(dump(at(root.get(), "would_start")), "[]");
    ASSERT_EQ(json_array_size(at(root.get(), "pending")), 1u);
    EXPECT_EQ(dump(at(at(json_array_get(at(root.get(), "pending"), 0), "before"), "reason")), "\"not_managed\"");

    std::ostringstream text;
    o.json = false;
    ASSERT_EQ(cmd_whatif(e, parse_config(conf + "Pool=pool2 Quota=1\n", "new.conf"), v, o, text, err), 0);
    EXPECT_NE(text.str().find("What if gpupool.conf were new.conf (figures now->with the change):\n"),
              std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("\npool2   none->4  none->1  none->1   none->0:00    none->1     none->3   none->0  none->0      none->0  none->0\n"), std::string::npos)
        << text.str();
}

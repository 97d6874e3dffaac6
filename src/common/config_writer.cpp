// write_config(): a Config as gpupool.conf text that parses back to it.
// The fuzzer (tests/fuzz/fuzz_config.cpp) checks the round trip on every
// input the parser accepts; the bound below keeps each line within what
// the parser reads.
#include <charconv>
#include <stdexcept>

#include "config.hpp"

namespace gpupool {

namespace {

// The longest text of each value the writer emits, in bytes.
constexpr size_t kU32 = 10;          // 4294967295
constexpr size_t kU64 = 20;          // 18446744073709551615
constexpr size_t kDuration = 14;     // 36500-00:00:00 (the parser's 100 years)
// gres/gpu=N,cpu=N,mem=NS: always the plain GPU name (the parser takes
// gres/gpu whatever QuotaTRES says), so a long GRES type is never repeated.
constexpr size_t kTres = 9 + kU64 + 5 + kU64 + 5 + kU64 + 1;

// A tier with every key.
constexpr size_t kTierLine = 5 + kMaxTierNameBytes + 5 + kMaxQosListBytes + 10 + kU32 + 16 + 20 + 11 + kU32;
// A pool: Quota in TRES syntax, Weight, Rank, MinRuntime.
constexpr size_t kPoolLine = 5 + kMaxPoolNameBytes + 7 + kTres + 8 + kU32 + 12 + kDuration;
// An account: Pool, Quota, Weight, Rank, Limit, LendingLimit.
constexpr size_t kAccountLine =
    8 + kMaxAccountNameBytes + 6 + kMaxPoolNameBytes + 7 + kTres + 8 + kU32 + 7 + kTres + 14 + kTres;
// QuotaTRES=gres/gpu:TYPE,cpu,mem; DefaultTier=NAME; UsageWeight=D, whose
// fixed form is at most 309 digits (DBL_MAX) or "0." and 326 more (the
// smallest subnormal).
constexpr size_t kGlobalLine = 12 + 2 + 326;
static_assert(kTierLine <= kMaxConfigLineBytes && kPoolLine <= kMaxConfigLineBytes &&
                  kAccountLine <= kMaxConfigLineBytes && kGlobalLine <= kMaxConfigLineBytes &&
                  10 + 9 + kMaxGresTypeBytes + 8 <= kMaxConfigLineBytes,
              "write_config() could write a line the parser refuses: raise kMaxConfigLineBytes or lower a limit");

// The shortest fixed-point text that reads back as `d` (no exponent: the
// parser takes none).
std::string decimal(double d) {
    char buf[512];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
    if (res.ec != std::errc()) throw std::logic_error("write_config: UsageWeight does not format");
    return std::string(buf, res.ptr);
}

std::string tres(const ResourceAmounts &a) { return format_resource_amounts(a, "gres/gpu"); }

void write_globals(const Config &c, std::string &out) {
    out += "QuotaTRES=" + c.quota_tres + (c.counted[kCpu] ? ",cpu" : "") + (c.counted[kMem] ? ",mem" : "") + "\n";
    out += std::string("PreemptionOrder=") + (c.preemption_order == PreemptionOrder::Newest ? "newest" : "oldest") + "\n";
    out += std::string("ReclaimBy=") + (c.reclaim_by == ReclaimBy::All ? "all" : "nonpreemptible") + "\n";
    out += std::string("ReclaimTo=") + (c.reclaim_to == ReclaimTo::Fairshare ? "fairshare" : "quota") + "\n";
    out += "DecayHalfLife=" + format_duration(c.decay_half_life) + "\n";
    out += "UsageWindow=" + format_duration(c.usage_window) + "\n";
    out += "UsageWeight=" + decimal(c.usage_weight) + "\n";
    out += "MinRuntime=" + format_duration(c.min_runtime) + "\n";
    out += "RecalcInterval=" + std::to_string(c.recalc_interval) + "\n";
    out += "StateSaveInterval=" + std::to_string(c.state_save_interval) + "\n";
    out += std::string("Consolidation=") + (c.consolidation ? "yes" : "no") + "\n";
    out += "ConsolidationTries=" + std::to_string(c.consolidation_tries) + "\n";
    out += std::string("Swap=") + (c.swap == SwapWhen::LeastWork ? "least-work" : "needed") + "\n";
    if (c.has_preemptible_priority) out += "PreemptiblePriority=" + std::to_string(c.preemptible_priority) + "\n";
    out += "DefaultTier=" + c.default_tier + "\n";
}

void write_tier(const Config &c, const Tier &t, std::string &out) {
    out += "Tier=" + t.name;
    // The tier's own name is the default: leaving it out keeps a long name
    // from being written twice.
    if (t.qos.size() != 1 || t.qos[0] != t.name) {
        out += " QOS=";
        for (size_t i = 0; i < t.qos.size(); ++i) out += (i ? "," : "") + t.qos[i];
    }
    out += " Priority=" + std::to_string(t.priority);
    if (!c.has_preemptible_priority) out += std::string(" Preemptible=") + (t.preemptible ? "yes" : "no");
    if (t.preempt_mode == PreemptMode::Requeue) out += " PreemptMode=requeue";
    if (t.preempt_mode == PreemptMode::Cancel) out += " PreemptMode=cancel";
    if (t.grace_time >= 0) out += " GraceTime=" + std::to_string(t.grace_time);
    out += "\n";
}

void write_pool(const Pool &p, std::string &out) {
    const ResourceAmounts &q = p.quota_by_resource;
    out += "Pool=" + p.name + " Quota=" + (q.has(kCpu) || q.has(kMem) ? tres(q) : std::to_string(p.quota));
    out += " Weight=" + std::to_string(p.weight);
    if (p.rank) out += " Rank=" + std::to_string(p.rank);
    if (p.min_runtime >= 0) out += " MinRuntime=" + format_duration(p.min_runtime);
    if (p.decay_half_life >= 0) out += " DecayHalfLife=" + format_duration(p.decay_half_life);
    if (p.usage_window >= 0) out += " UsageWindow=" + format_duration(p.usage_window);
    if (p.usage_weight >= 0) out += " UsageWeight=" + decimal(p.usage_weight);
    if (p.placement != Placement::Default)  // Placement=slurm
        out += std::string(" Placement=") + (p.placement == Placement::Pack ? "pack" : "spread");
    out += "\n";
}

void write_account(const AccountQuota &a, std::string &out) {
    out += "Account=" + a.account + " Pool=" + a.pool;
    // The parser gives an account without Quota= 0 of every counted
    // resource: written out, it reads the same.
    if (!a.quota.empty()) out += " Quota=" + tres(a.quota);
    if (a.weight_given) out += " Weight=" + std::to_string(a.weight);
    if (a.rank) out += " Rank=" + std::to_string(a.rank);
    if (!a.limit.empty()) out += " Limit=" + tres(a.limit);
    if (!a.lending_limit.empty()) out += " LendingLimit=" + tres(a.lending_limit);
    out += "\n";
}

}  // namespace

std::string write_config(const Config &c) {
    std::string out;
    write_globals(c, out);
    for (const Tier &t : c.tiers) write_tier(c, t, out);
    for (const Pool &p : c.pools) write_pool(p, out);
    for (const AccountQuota &a : c.accounts) write_account(a, out);
    return out;
}

}  // namespace gpupool

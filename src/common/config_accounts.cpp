// The account queues' gpupool.conf settings: QuotaTRES as a list (the GPU TRES, then
// cpu and mem), ReclaimTo=, quotas in Slurm's TRES syntax, and
// Account=NAME Pool=POOL|* records.  The plugins and the gpupool command
// pass jobs' accounts, CPUs and memory and Slurm's account tree (ABI 11).
#include "config_parser.hpp"

#include <stdexcept>

namespace gpupool {
namespace detail {

namespace {

// One resource's amount in TRES syntax: "cpu=8", "mem=4T".
std::string amount_text(Resource r, uint64_t v, const std::string &gpu_tres) {
    ResourceAmounts one;
    one.set(r, v);
    return format_resource_amounts(one, gpu_tres);
}

}  // namespace

// gres/gpu or gres/gpu:TYPE first (the GRES that counts GPUs), then cpu
// and/or mem, each once.
void Parser::quota_tres(const std::string &value) {
    const std::string bad = "bad value " + quote(value) + " for QuotaTRES: ";
    const std::string expected = bad + "expected gres/gpu or gres/gpu:TYPE";
    std::vector<std::string> items;
    for (size_t start = 0; start <= value.size();) {
        size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        items.push_back(value.substr(start, comma - start));
        start = comma + 1;
    }
    static const std::string base = "gres/gpu";
    const std::string &gpu = items[0];
    // A GRES type: a name, so no ':', control or non-ASCII bytes.
    bool gpu_ok = gpu == base || (gpu.compare(0, base.size() + 1, base + ":") == 0 &&
                                  valid_name(gpu.substr(base.size() + 1)));
    if (!gpu_ok) fail(expected);
    if (gpu.size() > base.size() + 1 + kMaxGresTypeBytes)
        fail(bad + "a GRES type longer than " + std::to_string(kMaxGresTypeBytes) +
             " bytes (slurmdbd keeps the TRES name gpu:TYPE in 255 bytes): use a shorter type");
    std::array<bool, kResources> counted{{true, false, false}};
    for (size_t i = 1; i < items.size(); ++i) {
        Resource r = items[i] == "cpu" ? kCpu : items[i] == "mem" ? kMem : kGpu;
        if (r == kGpu) fail(expected);
        if (counted[r]) fail(bad + items[i] + " listed twice");
        counted[r] = true;
    }
    cfg_.quota_tres = gpu;
    cfg_.counted = counted;
    quota_tres_line_ = line_;
}

void Parser::reclaim_to(const std::string &value) {
    std::string e = get_enum("ReclaimTo", value, {"quota", "fairshare"}, "quota or fairshare");
    cfg_.reclaim_to = e == "fairshare" ? ReclaimTo::Fairshare : ReclaimTo::Quota;
}

void Parser::account_line(const std::vector<std::string> &words) {
    AccountQuota acc;
    acc.account = split(words[0]).value;
    acc.line = line_;
    check_name("Account", acc.account);
    // sacctmgr and slurmctld lower-case account names: a capital would
    // never match a job's account.
    if (has_upper(acc.account))
        fail("bad name " + quote(acc.account) + " for Account: Slurm account names are lower case; write " +
             quote(conf_text::lower(acc.account)));
    const std::string where = " in Account=" + clip(acc.account);

    std::map<std::string, bool> seen;
    AccountText text;
    for (size_t i = 1; i < words.size(); ++i) {
        Token t = record_key(words[i], config_keys().account, where, seen);
        const std::string &v = t.value;
        if (t.lkey == "pool") {
            if (v != "*") check_name("Pool", v);
            acc.pool = v;
        } else if (t.lkey == "quota") {
            text.quota = v;
        } else if (t.lkey == "weight") {
            acc.weight = get_u32("Weight", v);
            acc.weight_given = true;
        } else if (t.lkey == "rank") {
            acc.rank = get_u32("Rank", v);
        } else if (t.lkey == "limit") {
            text.limit = v;
        } else if (t.lkey == "lendinglimit") {
            text.lending_limit = v;
        }
    }
    if (acc.pool.empty()) fail("missing required key 'Pool'" + where);
    auto first = account_lines_.emplace(std::make_pair(acc.account, acc.pool), line_);
    if (!first.second)
        fail("duplicate Account=" + clip(acc.account) + " Pool=" + clip(acc.pool) + " (first defined on line " +
             std::to_string(first.first->second) + ")");
    cfg_.accounts.push_back(acc);
    account_text_.push_back(text);
}

// A TRES value of `key`, once QuotaTRES is known: every resource it names
// must be counted.
ResourceAmounts Parser::tres_amounts(int line, const std::string &key, const std::string &value,
                                     const std::string &where) const {
    ResourceAmounts a;
    try {
        a = parse_resource_amounts(value, cfg_.quota_tres);
    } catch (const std::invalid_argument &e) {
        fail_at(line, "bad value " + quote(value) + " for " + key + where + ": " + e.what());
    }
    for (Resource r : {kCpu, kMem}) {
        if (!a.has(r) || cfg_.counted[r]) continue;
        const std::string what = key + "=" + clip(value) + where + " names " + resource_name(r);
        fail_at(line, what + ", which QuotaTRES does not count (" + cfg_.quota_tres + " only" +
                          (quota_tres_line_ ? ", line " + std::to_string(quota_tres_line_) : std::string()) +
                          "): add " + resource_name(r) + " to QuotaTRES or remove it from " + key + "=");
    }
    return a;
}

// Pool=NAME Quota=TRES: the GPUs must be named (0 for none), as Quota=N
// always names them.
void Parser::finish_pool_quotas() {
    for (size_t i = 0; i < cfg_.pools.size(); ++i) {
        const std::string &text = pool_quota_text_[i];
        if (text.empty()) continue;
        Pool &pool = cfg_.pools[i];
        const std::string where = " in Pool=" + clip(pool.name);
        ResourceAmounts a = tres_amounts(pool.line, "Quota", text, where);
        if (!a.has(kGpu))
            fail_at(pool.line, "Quota=" + clip(text) + where + " gives no GPUs: write " + cfg_.quota_tres +
                                   "=N first (0 for none)");
        if (a.value[kGpu] > std::numeric_limits<uint32_t>::max())
            fail_at(pool.line, "bad value " + quote(text) + " for Quota" + where + ": more than 4294967295 GPUs");
        pool.quota = static_cast<uint32_t>(a.value[kGpu]);
        pool.quota_by_resource = a;
    }
}

// Each account's pool exists (Pool= records may follow), its TRES values
// name counted resources, and Limit >= Quota >= LendingLimit.
void Parser::finish_accounts() {
    for (size_t i = 0; i < cfg_.accounts.size(); ++i) {
        AccountQuota &acc = cfg_.accounts[i];
        const AccountText &text = account_text_[i];
        const std::string where = " in Account=" + clip(acc.account) + " Pool=" + clip(acc.pool);
        if (acc.pool != "*" && !pool_index_.count(acc.pool))
            fail_at(acc.line, "Pool=" + clip(acc.pool) + " in Account=" + clip(acc.account) +
                                  " names no Pool= record (define it, or write Pool=* for every pool)");
        if (text.quota.empty()) {
            for (size_t r = 0; r < kResources; ++r)
                if (cfg_.counted[r]) acc.quota.set(static_cast<Resource>(r), 0);
        } else {
            acc.quota = tres_amounts(acc.line, "Quota", text.quota, where);
        }
        if (!text.limit.empty()) acc.limit = tres_amounts(acc.line, "Limit", text.limit, where);
        if (!text.lending_limit.empty())
            acc.lending_limit = tres_amounts(acc.line, "LendingLimit", text.lending_limit, where);
        for (size_t ri = 0; ri < kResources; ++ri) {
            Resource r = static_cast<Resource>(ri);
            const std::string quota = amount_text(r, acc.quota.get(r), cfg_.quota_tres);
            if (acc.limit.has(r) && acc.limit.value[r] < acc.quota.get(r))
                fail_at(acc.line, "Limit=" + clip(text.limit) + where + " is below the quota: " +
                                      amount_text(r, acc.limit.value[r], cfg_.quota_tres) + " < " + quota);
            if (acc.lending_limit.has(r) && acc.lending_limit.value[r] > acc.quota.get(r))
                fail_at(acc.line, "LendingLimit=" + clip(text.lending_limit) + where +
                                      " is above the quota (a queue lends only what it is guaranteed): " +
                                      amount_text(r, acc.lending_limit.value[r], cfg_.quota_tres) + " > " +
                                      quota);
        }
    }
}

}  // namespace detail
}  // namespace gpupool

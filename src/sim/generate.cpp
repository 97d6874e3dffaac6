// A seeded synthetic workload for `gpupool sim`: Poisson arrivals, each job
// drawing its pool, QOS, GPU count and duration independently.  Same seed
// and spec, same jobs: std::mt19937_64's output is fixed by the standard,
// and the distributions are written here (std::normal_distribution and
// friends may differ between library versions).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <locale>
#include <random>
#include <set>
#include <sstream>

#include "config.hpp"
#include "input_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

constexpr uint64_t kMaxJobs = 50000000;
constexpr double kTwoPi = 6.283185307179586476925286766559;

class Draw {
public:
    explicit Draw(uint64_t seed) : rng_(seed) {}

    // [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
    // (0, 1]: safe under log().
    double uniform_open0() { return 1.0 - uniform(); }
    double exponential(double mean) { return -std::log(uniform_open0()) * mean; }
    // Box-Muller, one value per call (two uniforms): each job draws the same
    // number of values whatever came before.
    double normal() {
        const double r = std::sqrt(-2.0 * std::log(uniform_open0()));
        return r * std::cos(kTwoPi * uniform());
    }

private:
    std::mt19937_64 rng_;
};

// Index into a weight list by cumulative weight.
class Discrete {
public:
    template <typename Pairs>
    explicit Discrete(const Pairs &pairs) {
        double sum = 0;
        for (const auto &p : pairs) {
            sum += p.second;
            cumulative_.push_back(sum);
        }
        total_ = sum;
    }
    size_t pick(Draw &d) const {
        const double x = d.uniform() * total_;
        size_t i = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin());
        return std::min(i, cumulative_.size() - 1);
    }

private:
    std::vector<double> cumulative_;
    double total_ = 0;
};

class SpecParser {
public:
    SpecParser(const std::string &source) : source_(source) {}

    // `overrides`: tokens that replace the same keys of `text` (a variant
    // of a kept spec on the command line).
    GeneratorSpec parse(const std::string &text, const std::string &overrides) {
        std::istringstream keys(overrides);
        for (std::string tok; keys >> tok;) overridden_.insert(lower(tok.substr(0, tok.find('='))));
        lines(text);
        if (!overrides.empty()) {
            overridden_.clear();
            source_ = "--generate";
            line_ = 0;
            lines(overrides);
        }
        if (spec_.pools.empty()) fail(0, "Pools= is required, e.g. Pools=pool1,pool2");
        if (spec_.tiers.empty()) fail(0, "Tiers= is required, e.g. Tiers=high:0.2,normal:0.5,low:0.3");
        if (spec_.gpus.empty()) spec_.gpus.push_back({1, 1.0});
        if (spec_.duration_max > 0 && spec_.duration_max < spec_.duration_min)
            fail(0, "DurationMax is below DurationMin");
        apply_account_tiers();
        if (spec_.pool_per_account && spec_.accounts.empty()) fail(0, "PoolPerAccount=yes needs Accounts=");
        return spec_;
    }

private:
    void lines(const std::string &text) {
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) {
            ++line_;
            size_t hash = line.find('#');
            if (hash != std::string::npos) line.erase(hash);
            std::istringstream tokens(line);
            std::string tok;
            while (tokens >> tok)
                if (!overridden_.count(lower(tok.substr(0, tok.find('='))))) token(tok);
        }
    }

    [[noreturn]] void fail(uint64_t line, const std::string &message) const { input_error(source_, line, message); }
    [[noreturn]] void bad(const std::string &key, const std::string &value, const std::string &expected) const {
        fail(line_, "bad value " + quote(value) + " for " + key + ": expected " + expected);
    }

    double weight(const std::string &key, const std::string &value, std::string_view w) const {
        double d = 0;
        if (!parse_decimal(w, &d)) bad(key, value, "NAME[:WEIGHT],... with weights >= 0");
        return d;
    }

    template <typename T, typename Name>
    std::vector<std::pair<T, double>> weighted(const std::string &key, const std::string &value, Name name) const {
        std::vector<std::pair<T, double>> out;
        double sum = 0;
        for (const std::string &item : split_top_level(value, ',')) {
            size_t colon = item.find(':');
            double w = colon == std::string::npos ? 1.0 : weight(key, value, std::string_view(item).substr(colon + 1));
            out.push_back({name(item.substr(0, colon)), w});
            sum += w;
        }
        if (!(sum > 0)) bad(key, value, "weights adding up to more than 0");
        return out;
    }

    int64_t seconds(const std::string &key, const std::string &value) const {
        double s = parse_seconds(value);
        if (s < 0 || s > 1e12) bad(key, value, "a duration: seconds, or with a unit s, m, h, d");
        return std::llround(s);
    }

    uint64_t count(const std::string &key, const std::string &value, uint64_t max) const {
        uint64_t n = 0;
        if (!parse_uint(value, max, &n)) bad(key, value, "a whole number up to " + std::to_string(max));
        return n;
    }

    void token(const std::string &tok) {
        size_t eq = tok.find('=');
        if (eq == std::string::npos || eq == 0) fail(line_, "expected Key=Value, got " + quote(tok));
        const std::string key = tok.substr(0, eq), value = tok.substr(eq + 1), k = lower(key);
        if (!seen_.insert(k).second) fail(line_, "key " + quote(key) + " given twice");
        auto pool_name = [&](const std::string &n) {
            if (!valid_name(n)) bad(key, value, std::string("pool names: ") + kNameRule);
            return n;
        };
        if (k == "seed") {
            spec_.seed = count(key, value, UINT64_MAX);
        } else if (k == "jobs") {
            spec_.jobs = count(key, value, kMaxJobs);
        } else if (k == "pools") {
            spec_.pools = weighted<std::string>(key, value, pool_name);
        } else if (k == "tiers") {
            spec_.tiers = weighted<std::string>(key, value, pool_name);
        } else if (k == "gpus") {
            spec_.gpus = weighted<uint32_t>(key, value, [&](const std::string &n) {
                uint64_t g = 0;
                if (!parse_uint(n, 1000000, &g) || g == 0) bad(key, value, "COUNT[:WEIGHT],... with COUNT >= 1");
                return static_cast<uint32_t>(g);
            });
        } else if (k == "duration") {
            std::vector<std::string_view> p;
            split(value, ':', p);
            const std::string form = lower(p[0]);
            const std::string forms = "fixed:T, exp:MEAN, lognormal:MEDIAN:SIGMA or uniform:MIN:MAX";
            if (form == "fixed" && p.size() == 2) {
                spec_.duration = GeneratorSpec::Duration::Fixed;
                spec_.duration_a = static_cast<double>(seconds(key, std::string(p[1])));
            } else if (form == "exp" && p.size() == 2) {
                spec_.duration = GeneratorSpec::Duration::Exponential;
                spec_.duration_a = parse_seconds(p[1]);
            } else if (form == "lognormal" && p.size() == 3) {
                spec_.duration = GeneratorSpec::Duration::Lognormal;
                spec_.duration_a = parse_seconds(p[1]);
                if (!parse_decimal(p[2], &spec_.duration_b) || spec_.duration_b > 10) bad(key, value, forms + " (SIGMA <= 10)");
            } else if (form == "uniform" && p.size() == 3) {
                spec_.duration = GeneratorSpec::Duration::Uniform;
                spec_.duration_a = parse_seconds(p[1]);
                spec_.duration_b = parse_seconds(p[2]);
                if (spec_.duration_b < spec_.duration_a) bad(key, value, forms + " (MIN <= MAX)");
            } else {
                bad(key, value, forms);
            }
            if (!(spec_.duration_a > 0)) bad(key, value, forms + " with durations > 0");
        } else if (k == "durationmin") {
            spec_.duration_min = std::max<int64_t>(1, seconds(key, value));
        } else if (k == "durationmax") {
            spec_.duration_max = seconds(key, value);
        } else if (k == "load") {
            if (!parse_decimal(value, &spec_.load) || !(spec_.load > 0)) bad(key, value, "a number > 0");
        } else if (k == "interarrival") {
            double s = parse_seconds(value);
            if (!(s > 0)) bad(key, value, "a duration > 0");
            spec_.interarrival = s;
        } else if (k == "users") {
            spec_.users = static_cast<uint32_t>(count(key, value, 1000000));
        } else if (k == "start") {
            spec_.start = static_cast<int64_t>(count(key, value, 1ull << 40));
        } else if (k == "accounts") {
            accounts(key, value, pool_name);
        } else if (k == "accounttiers") {
            account_tiers_ = {key, value, line_};
        } else if (k == "poolperaccount") {
            const std::string v = lower(value);
            if (v != "yes" && v != "no") bad(key, value, "yes or no");
            spec_.pool_per_account = v == "yes";
        } else if (k == "cpuspergpu") {
            spec_.cpus_per_gpu = static_cast<uint32_t>(count(key, value, 100000));
        } else if (k == "mempergpu") {
            spec_.mem_mb_per_gpu = mebibytes(key, value);
        } else {
            fail(line_, "unknown key " + quote(key) +
                            " (Seed, Jobs, Pools, Tiers, Gpus, Duration, DurationMin, DurationMax, Load, "
                            "Interarrival, Users, Start, Accounts, AccountTiers, PoolPerAccount, CpusPerGpu, "
                            "MemPerGpu)");
        }
    }

    // Accounts=DEPT/PROJECT[:WEIGHT],...: a project named twice, or a
    // name both a project and a department, is an error.
    template <typename Name>
    void accounts(const std::string &key, const std::string &value, Name name) {
        std::set<std::string> projects, departments;
        for (const auto &[path, weight] : weighted<std::string>(key, value, [](const std::string &n) { return n; })) {
            GeneratorSpec::Account a;
            a.weight = weight;
            for (const std::string &part : split_top_level(path, '/')) a.path.push_back(name(part));
            if (a.path.empty()) bad(key, value, "PATH[:WEIGHT],... with PATH like physics/qcd");
            if (!projects.insert(a.path.back()).second) bad(key, value, "each project once");
            for (size_t i = 0; i + 1 < a.path.size(); ++i) departments.insert(a.path[i]);
            spec_.accounts.push_back(std::move(a));
        }
        for (const std::string &d : departments)
            if (projects.count(d)) bad(key, value, quote(d) + " as a project and a department: one or the other");
    }

    // AccountTiers=ACCOUNT:TIER[+TIER...],..., once Accounts and Tiers are known.
    void apply_account_tiers() {
        if (account_tiers_.value.empty()) return;
        line_ = account_tiers_.line;
        const std::string &key = account_tiers_.key, &value = account_tiers_.value;
        for (const std::string &item : split_top_level(value, ',')) {
            const size_t colon = item.find(':');
            if (colon == std::string::npos) bad(key, value, "ACCOUNT:TIER[+TIER...],...");
            auto a = std::find_if(spec_.accounts.begin(), spec_.accounts.end(),
                                  [&](const GeneratorSpec::Account &x) { return x.path.back() == item.substr(0, colon); });
            if (a == spec_.accounts.end()) bad(key, value, "accounts that Accounts= names");
            for (const std::string &tier : split_top_level(item.substr(colon + 1), '+')) {
                auto t = std::find_if(spec_.tiers.begin(), spec_.tiers.end(), [&](const auto &x) { return x.first == tier; });
                if (t == spec_.tiers.end() || !(t->second > 0)) bad(key, value, "QOS that Tiers= names with a weight > 0");
                a->tiers.push_back(tier);
            }
        }
    }

    uint64_t mebibytes(const std::string &key, const std::string &value) const {
        std::string digits = value;
        uint64_t unit = 1;
        const char last = digits.empty() ? '\0' : static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
        if (last == 'M' || last == 'G' || last == 'T') {
            unit = last == 'M' ? 1 : last == 'G' ? 1024 : 1024 * 1024;
            digits.pop_back();
        }
        uint64_t n = 0;
        if (!parse_uint(digits, (1ull << 40) / unit, &n)) bad(key, value, "MiB, or with a unit M, G, T");
        return n * unit;
    }

    struct Deferred {
        std::string key, value;
        uint64_t line = 0;
    };

    std::string source_;
    uint64_t line_ = 0;
    GeneratorSpec spec_;
    Deferred account_tiers_;
    std::set<std::string> seen_;
    std::set<std::string> overridden_;  // keys the overrides give
};

std::vector<std::pair<size_t, double>> account_weights(const GeneratorSpec &spec) {
    std::vector<std::pair<size_t, double>> out;
    for (size_t i = 0; i < spec.accounts.size(); ++i) out.push_back({i, spec.accounts[i].weight});
    if (out.empty()) out.push_back({0, 1.0});
    return out;
}

// Each account's tier mix: Tiers' weights, zero for the tiers it does not
// submit, so that a pick takes one uniform draw as Tiers' own does.
std::vector<Discrete> tiers_by_account(const GeneratorSpec &spec) {
    std::vector<Discrete> out;
    for (const GeneratorSpec::Account &a : spec.accounts) {
        std::vector<std::pair<size_t, double>> mix;
        for (const auto &[name, weight] : spec.tiers) {
            const bool listed = a.tiers.empty() || std::find(a.tiers.begin(), a.tiers.end(), name) != a.tiers.end();
            mix.push_back({mix.size(), listed ? weight : 0.0});
        }
        out.emplace_back(mix);
    }
    return out;
}

// The tree the accounts' paths make: each name's parent, "root" on top.
AccountTree account_tree(const GeneratorSpec &spec) {
    AccountTree tree;
    for (const GeneratorSpec::Account &a : spec.accounts)
        for (size_t i = 0; i < a.path.size(); ++i) tree[a.path[i]] = i == 0 ? "root" : a.path[i - 1];
    return tree;
}

}  // namespace

GeneratorSpec parse_generator_spec(const std::string &text, const std::string &source, const std::string &overrides) {
    return SpecParser(source).parse(text, overrides);
}

double mean_gpus(const GeneratorSpec &spec) {
    double sum = 0, weights = 0;
    for (const auto &g : spec.gpus) {
        sum += g.first * g.second;
        weights += g.second;
    }
    return weights > 0 ? sum / weights : 1;
}

double mean_duration(const GeneratorSpec &spec) {
    switch (spec.duration) {
    case GeneratorSpec::Duration::Fixed:
    case GeneratorSpec::Duration::Exponential: return spec.duration_a;
    case GeneratorSpec::Duration::Lognormal: return spec.duration_a * std::exp(spec.duration_b * spec.duration_b / 2);
    case GeneratorSpec::Duration::Uniform: return (spec.duration_a + spec.duration_b) / 2;
    }
    return spec.duration_a;
}

Workload generate_workload(const GeneratorSpec &spec, uint64_t cluster_gpus) {
    if (spec.pools.empty() || spec.tiers.empty()) throw InputError("generator: Pools and Tiers are required");
    if (spec.jobs > kMaxJobs) throw InputError("generator: at most " + std::to_string(kMaxJobs) + " jobs");
    double interarrival = spec.interarrival;
    if (!(interarrival > 0)) {
        if (cluster_gpus == 0) throw InputError("generator: Load needs a cluster with GPUs (or give Interarrival)");
        interarrival = mean_gpus(spec) * mean_duration(spec) / (spec.load * static_cast<double>(cluster_gpus));
    }
    const Discrete pools(spec.pools), tiers(spec.tiers), gpus(spec.gpus);
    const Discrete accounts(account_weights(spec));
    const std::vector<Discrete> account_tiers = tiers_by_account(spec);
    Draw d(spec.seed);
    Workload w;
    w.account_parent = account_tree(spec);
    w.jobs.reserve(spec.jobs);
    double t = 0;
    for (uint64_t i = 1; i <= spec.jobs; ++i) {
        // Always the same draws in the same order per job (the account's
        // first, with accounts only: specs without them are unchanged).
        t += d.exponential(interarrival);
        // Submit times stay in int64 with room for durations (as the trace
        // readers bound theirs): an Interarrival or Load that spaces jobs
        // further is refused, not cast out of range.
        if (!(t <= 1099511627776.0))
            throw InputError("generator: job " + std::to_string(i) +
                             " would be submitted over 2^40 s after Start: Interarrival is too long or Load too low");
        const size_t account = spec.accounts.empty() ? 0 : accounts.pick(d);
        const Discrete &tier_mix = spec.accounts.empty() ? tiers : account_tiers[account];
        const size_t pool = pools.pick(d), tier = tier_mix.pick(d), g = gpus.pick(d);
        double dur = 0;
        switch (spec.duration) {
        case GeneratorSpec::Duration::Fixed: dur = spec.duration_a; break;
        case GeneratorSpec::Duration::Exponential: dur = d.exponential(spec.duration_a); break;
        case GeneratorSpec::Duration::Lognormal: dur = spec.duration_a * std::exp(spec.duration_b * d.normal()); break;
        case GeneratorSpec::Duration::Uniform:
            dur = spec.duration_a + d.uniform() * (spec.duration_b - spec.duration_a);
            break;
        }
        const double user = d.uniform();
        int64_t seconds = dur >= 9e15 ? INT64_MAX / 4 : std::llround(dur);
        seconds = std::max<int64_t>(seconds, std::max<int64_t>(1, spec.duration_min));
        if (spec.duration_max > 0) seconds = std::min(seconds, spec.duration_max);

        SimJob j;
        j.id = static_cast<uint32_t>(i);
        j.label = "g" + std::to_string(i);
        j.submit = spec.start + static_cast<int64_t>(t);
        j.duration = seconds;
        j.gpus = spec.gpus[g].first;
        j.qos = spec.tiers[tier].first;
        if (!spec.accounts.empty()) j.account = spec.accounts[account].path.back();
        j.pools.push_back(spec.pool_per_account ? j.account : spec.pools[pool].first);
        if (uint64_t(j.gpus) * spec.cpus_per_gpu > UINT32_MAX)
            throw InputError("generator: " + std::to_string(j.gpus) + " GPUs x CpusPerGpu=" +
                             std::to_string(spec.cpus_per_gpu) + " is over 4294967295 CPUs for one job");
        j.cpus = j.gpus * spec.cpus_per_gpu;
        j.mem_mb = j.gpus * spec.mem_mb_per_gpu;
        if (spec.users > 0)
            j.user = "u" + std::to_string(1 + std::min<uint64_t>(spec.users - 1, static_cast<uint64_t>(user * spec.users)));
        w.jobs.push_back(std::move(j));
    }
    std::ostringstream note;
    note.imbue(std::locale::classic());
    note << "generated " << spec.jobs << " jobs with seed " << spec.seed << ": a job every " << interarrival
         << " s on average, " << mean_gpus(spec) << " GPUs and " << mean_duration(spec) << " s each";
    if (!(spec.interarrival > 0)) note << " (load " << spec.load << " on " << cluster_gpus << " GPUs)";
    w.notes.push_back(note.str());
    return w;
}

}  // namespace gpupool::sim

// A seeded synthetic workload for `gpupool sim`: Poisson arrivals, each job
// drawing its pool, QOS, GPU count and duration independently.  Same seed
// and spec, same jobs: std::mt19937_64's output is fixed by the standard,
// and the distributions are written here (std::normal_distribution and
// friends may differ between library versions).
#include <algorithm>
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

    GeneratorSpec parse(const std::string &text) {
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) {
            ++line_;
            size_t hash = line.find('#');
            if (hash != std::string::npos) line.erase(hash);
            std::istringstream tokens(line);
            std::string tok;
            while (tokens >> tok) token(tok);
        }
        if (spec_.pools.empty()) fail(0, "Pools= is required, e.g. Pools=pool1,pool2");
        if (spec_.tiers.empty()) fail(0, "Tiers= is required, e.g. Tiers=high:0.2,normal:0.5,low:0.3");
        if (spec_.gpus.empty()) spec_.gpus.push_back({1, 1.0});
        if (spec_.duration_max > 0 && spec_.duration_max < spec_.duration_min)
            fail(0, "DurationMax is below DurationMin");
        return spec_;
    }

private:
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
        } else {
            fail(line_, "unknown key " + quote(key) +
                            " (Seed, Jobs, Pools, Tiers, Gpus, Duration, DurationMin, DurationMax, Load, "
                            "Interarrival, Users, Start)");
        }
    }

    std::string source_;
    uint64_t line_ = 0;
    GeneratorSpec spec_;
    std::set<std::string> seen_;
};

}  // namespace

GeneratorSpec parse_generator_spec(const std::string &text, const std::string &source) {
    return SpecParser(source).parse(text);
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
    Draw d(spec.seed);
    Workload w;
    w.jobs.reserve(spec.jobs);
    double t = 0;
    for (uint64_t i = 1; i <= spec.jobs; ++i) {
        // Always the same draws in the same order per job.
        t += d.exponential(interarrival);
        const size_t pool = pools.pick(d), tier = tiers.pick(d), g = gpus.pick(d);
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
        j.pools.push_back(spec.pools[pool].first);
        j.qos = spec.tiers[tier].first;
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

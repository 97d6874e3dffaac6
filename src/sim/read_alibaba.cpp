// The Alibaba GPU cluster trace v2023 (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
// Gradient Descent", USENIX ATC '23) as a gpupool workload.  Read where it
// lies (../shared/traces/alibaba-gpu-v2023), never copied.
//
// The mapping (also in workload.hpp and doc/evaluation.md):
//   Kubernetes QoS class   QOS          tier (etc/sim/alibaba.conf)
//   LS, Guaranteed         ls, guaranteed  high, non-preemptible
//   Burstable              burstable    normal, non-preemptible
//   BE                     be           low, preemptible
// A fraction of one GPU is one whole GPU (Slurm allocates whole GPUs);
// tasks without GPUs are skipped.  Pools: the trace has no tenants (and no
// gpu_spec in this file), so each task goes to pool1..poolN by a seeded
// hash of its name; every pool spans every node, quotas split evenly.
#include <algorithm>
#include <fstream>
#include <unordered_set>

#include "config.hpp"
#include "input_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

uint64_t fnv1a64(const std::string &s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A CSV file without quoting (the trace has none): its header's columns by
// name, then one record per call.
class CsvReader {
public:
    explicit CsvReader(const std::string &path) : path_(path), in_(path, std::ios::binary) {
        if (!in_) input_error(path, 0, "cannot read the file");
        if (!next()) input_error(path, 0, "empty: no header line");
        for (std::string_view f : fields_) header_.emplace_back(trim(f));
    }

    // The index of a column; required ones missing are an error.
    int column(const char *name, bool required = true) const {
        for (size_t i = 0; i < header_.size(); ++i)
            if (header_[i] == name) return static_cast<int>(i);
        if (required) input_error(path_, 1, std::string("no column '") + name + "' in the header");
        return -1;
    }

    bool next() {
        while (std::getline(in_, line_)) {
            ++lineno_;
            if (!line_.empty() && line_.back() == '\r') line_.pop_back();
            if (trim(line_).empty()) continue;
            if (line_.find('"') != std::string::npos) fail("quoted CSV fields are not supported");
            split(line_, ',', fields_);
            if (!header_.empty() && fields_.size() != header_.size())
                fail(std::to_string(fields_.size()) + " fields where the header has " + std::to_string(header_.size()));
            return true;
        }
        return false;
    }

    std::string_view field(int c) const { return c >= 0 ? trim(fields_[static_cast<size_t>(c)]) : std::string_view(); }

    uint64_t number(int c, uint64_t max) const {
        uint64_t v = 0;
        if (!parse_uint(field(c), max, &v))
            fail(header_[static_cast<size_t>(c)] + " " + quote(std::string(field(c))) + ": expected a whole number up to " +
                 std::to_string(max));
        return v;
    }

    [[noreturn]] void fail(const std::string &message) const { input_error(path_, lineno_, message); }
    uint64_t line() const { return lineno_; }

private:
    std::string path_;
    std::ifstream in_;
    std::string line_;
    std::vector<std::string_view> fields_;
    std::vector<std::string> header_;
    uint64_t lineno_ = 0;
};

constexpr uint64_t kMaxTime = 1ull << 40;  // seconds; the trace spans 1.3e7

}  // namespace

std::vector<std::string> alibaba_pools(const AlibabaOptions &options) {
    std::vector<std::string> pools;
    for (uint32_t i = 1; i <= options.pools; ++i) pools.push_back("pool" + std::to_string(i));
    return pools;
}

SimCluster read_alibaba_nodes(const std::string &path, const AlibabaOptions &options) {
    if (options.pools == 0) throw InputError("Alibaba trace: at least one pool");
    CsvReader csv(path);
    int sn = csv.column("sn"), gpu = csv.column("gpu");
    SimCluster c;
    std::unordered_set<std::string> names;
    while (csv.next()) {
        std::string name(csv.field(sn));
        if (name.empty()) csv.fail("empty sn");
        if (!names.insert(name).second) csv.fail("node " + quote(name) + " listed twice");
        uint32_t gpus = static_cast<uint32_t>(csv.number(gpu, 1000000));
        if (gpus > 0) c.nodes.push_back({name, gpus});
    }
    for (const std::string &p : alibaba_pools(options)) {
        SimPartition part{p, {}};
        for (uint32_t i = 0; i < c.nodes.size(); ++i) part.nodes.push_back(i);
        c.partitions.push_back(std::move(part));
    }
    return c;
}

Workload read_alibaba_pods(const std::string &path, const AlibabaOptions &options) {
    if (options.pools == 0) throw InputError("Alibaba trace: at least one pool");
    const std::vector<std::string> pools = alibaba_pools(options);
    CsvReader csv(path);
    const int name = csv.column("name"), num_gpu = csv.column("num_gpu"), gpu_milli = csv.column("gpu_milli"),
              qos = csv.column("qos"), creation = csv.column("creation_time"),
              deletion = csv.column("deletion_time"), scheduled = csv.column("scheduled_time"),
              phase = csv.column("pod_phase", false);
    Workload w;
    NoteTally tally;
    uint32_t index = 0;
    while (csv.next()) {
        ++index;  // the task's place in the file: its id, skipped or not
        std::string label(csv.field(name));
        if (label.empty()) csv.fail("empty name");
        std::string_view cls = csv.field(qos);
        std::string q;
        if (cls == "LS") q = "ls";
        else if (cls == "Guaranteed") q = "guaranteed";
        else if (cls == "Burstable") q = "burstable";
        else if (cls == "BE") q = "be";
        else csv.fail("qos " + quote(std::string(cls)) + ": expected LS, Guaranteed, Burstable or BE");
        uint64_t gpus = csv.number(num_gpu, 1000000);
        uint64_t milli = csv.field(gpu_milli).empty() ? 0 : csv.number(gpu_milli, 1000);
        uint64_t created = csv.number(creation, kMaxTime), deleted = csv.number(deletion, kMaxTime);
        int64_t start = -1;
        if (!csv.field(scheduled).empty()) start = static_cast<int64_t>(csv.number(scheduled, kMaxTime));
        if (deleted < created) csv.fail("deletion_time " + std::to_string(deleted) + " is before creation_time " +
                                        std::to_string(created));
        if (start >= 0 && (static_cast<uint64_t>(start) < created || static_cast<uint64_t>(start) > deleted))
            csv.fail("scheduled_time " + std::to_string(start) + " is outside [creation_time, deletion_time] = [" +
                     std::to_string(created) + ", " + std::to_string(deleted) + "]");
        if (gpus == 0) {
            tally.add("task[s] without GPUs (num_gpu 0): skipped", label);
            continue;
        }
        if (gpus == 1 && milli < 1000)
            tally.add("task[s] asking for a fraction of one GPU (gpu_milli < 1000): replayed with 1 whole GPU", label);
        int64_t duration;
        if (start >= 0) {
            duration = static_cast<int64_t>(deleted) - start;
        } else {
            duration = static_cast<int64_t>(deleted - created);
            tally.add("task[s] never scheduled (no scheduled_time): run time = deletion_time - creation_time", label);
        }
        if (phase >= 0 && csv.field(phase) == "Running")
            tally.add("task[s] still Running at the trace's end: run time cut there", label);
        if (duration == 0) {
            tally.add("task[s] that ran 0 s: replayed as 1 s", label);
            duration = 1;
        }
        SimJob j;
        j.id = index;
        j.label = std::move(label);
        j.submit = static_cast<int64_t>(created);
        j.duration = duration;
        j.gpus = static_cast<uint32_t>(gpus);
        j.pools.push_back(pools[splitmix64(fnv1a64(j.label) ^ options.seed) % pools.size()]);
        j.qos = std::move(q);
        j.recorded_start = start;
        w.jobs.push_back(std::move(j));
    }
    std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const SimJob &a, const SimJob &b) {
        return a.submit != b.submit ? a.submit < b.submit : a.id < b.id;
    });
    tally.emit(w.notes);
    return w;
}

Scenario read_alibaba(const std::string &dir, const AlibabaOptions &options) {
    std::string d = dir.empty() || dir.back() == '/' ? dir : dir + "/";
    Scenario s;
    s.cluster = read_alibaba_nodes(d + "openb_node_list_gpu_node.csv", options);
    s.workload = read_alibaba_pods(d + "openb_pod_list_default.csv", options);
    return s;
}

std::string alibaba_gpupool_conf(const SimCluster &cluster, const AlibabaOptions &options) {
    const std::vector<std::string> pools = alibaba_pools(options);
    const uint64_t gpus = total_gpus(cluster);
    std::string out =
        "# gpupool.conf for the Alibaba GPU cluster trace v2023 (gpupool sim; the\n"
        "# mapping is in doc/evaluation.md).  " + std::to_string(pools.size()) + " pools over all " +
        std::to_string(cluster.nodes.size()) + " nodes (" + std::to_string(gpus) +
        " GPUs),\n"
        "# quotas split evenly.  Trace: Weng et al., USENIX ATC '23.\n"
        "QuotaTRES=gres/gpu\n"
        "PreemptionOrder=newest\n"
        "ReclaimBy=nonpreemptible\n"
        "DecayHalfLife=7-0\n"
        "UsageWindow=7-0\n"
        "UsageWeight=1\n"
        "# Kubernetes QoS classes: LS and Guaranteed -> high, Burstable -> normal,\n"
        "# BE (best effort) -> low, the only preemptible tier.\n"
        "Tier=high   QOS=ls,guaranteed Priority=300 Preemptible=no\n"
        "Tier=normal QOS=burstable     Priority=200 Preemptible=no\n"
        "Tier=low    QOS=be            Priority=100 Preemptible=yes\n"
        "DefaultTier=normal\n";
    for (size_t i = 0; i < pools.size(); ++i) {
        uint64_t quota = gpus / pools.size() + (i < gpus % pools.size() ? 1 : 0);
        out += "Pool=" + pools[i] + " Quota=" + std::to_string(quota) + "\n";
    }
    return out;
}

}  // namespace gpupool::sim

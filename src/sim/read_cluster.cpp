// The cluster `gpupool sim` replays on: the GPU nodes and partitions of a
// slurm.conf, or the command line's shorthand (make_cluster).  Only what
// changes where a job can run is read: a node's GPUs (Gres=) and Weight
// (the select plugin tries lower weights first), partitions' nodes; and a
// node's CPUs= and RealMemory=, which CPU and memory quotas divide.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "config.hpp"
#include "input_text.hpp"
#include "slurm_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

constexpr int kMaxIncludeDepth = 8;

// --- slurm.conf -----------------------------------------------------------

struct Token {
    std::string key, value;  // key as written; value without quotes
    bool has_value = false;
};

struct NodeDef {
    std::string name;
    uint32_t gpus = 0;
    uint64_t cpus = 0, mem_mb = 0;  // CPUs=, RealMemory= (for CPU and memory quotas); 0: not given
    uint64_t weight = 1;
    std::vector<std::string> features;
    std::string where;  // FILE:LINE
};

struct SetDef {  // a partition or a NodeSet, resolved once every node is known
    std::string name;
    std::string nodes;      // Nodes= as written ("" = none)
    std::string feature;    // NodeSet Feature=
    bool lln = false;       // partition LLN=YES
    std::string source;
    uint64_t line = 0;
};

class SlurmConfReader {
public:
    explicit SlurmConfReader(std::vector<std::string> *notes) : notes_(notes) {}

    void parse(const std::string &text, const std::string &source, int depth) {
        std::istringstream in(text);
        std::string raw, logical;
        uint64_t lineno = 0, first = 0;
        while (std::getline(in, raw)) {
            ++lineno;
            if (!raw.empty() && raw.back() == '\r') raw.pop_back();
            std::string line = strip_comment(raw);
            if (logical.empty()) first = lineno;
            // A '\' at the end continues the line (as Slurm's parser does).
            std::string_view t = trim(line);
            if (!t.empty() && t.back() == '\\') {
                logical += std::string(t.substr(0, t.size() - 1)) + " ";
                continue;
            }
            logical += line;
            handle_line(logical, source, first, depth);
            logical.clear();
        }
        if (!logical.empty()) handle_line(logical, source, first, depth);
    }

    SimCluster finish() {
        // The order the select plugin tries nodes in: Weight, then slurm.conf.
        std::vector<size_t> order(nodes_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return nodes_[a].weight < nodes_[b].weight; });
        SimCluster c;
        std::vector<int64_t> new_index(nodes_.size(), -1);
        NoteTally tally;
        for (size_t i : order) {
            if (nodes_[i].gpus == 0) {
                tally.add("node[s] without GPUs (no Gres=gpu): left out", nodes_[i].name);
                continue;
            }
            new_index[i] = static_cast<int64_t>(c.nodes.size());
            c.weights.push_back(static_cast<uint32_t>(nodes_[i].weight));
            c.nodes.push_back({nodes_[i].name, nodes_[i].gpus, static_cast<uint32_t>(nodes_[i].cpus), nodes_[i].mem_mb});
        }
        std::map<std::string, std::vector<size_t>> sets;  // NodeSet -> definition indices
        for (const SetDef &s : nodesets_) sets[s.name] = resolve(s, {}, "NodeSet");
        for (const SetDef &p : partitions_) {
            SimPartition part;
            part.name = p.name;
            part.lln = p.lln;
            for (size_t i : resolve(p, sets, "partition")) {
                if (new_index[i] >= 0) part.nodes.push_back(static_cast<uint32_t>(new_index[i]));
            }
            std::sort(part.nodes.begin(), part.nodes.end());
            part.nodes.erase(std::unique(part.nodes.begin(), part.nodes.end()), part.nodes.end());
            if (part.nodes.empty()) tally.add("partition[s] without GPU nodes", part.name);
            c.partitions.push_back(std::move(part));
        }
        if (notes_) tally.emit(*notes_);
        return c;
    }

private:
    static std::string strip_comment(const std::string &line) {
        std::string out;
        for (size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '#') {
                out += '#';
                ++i;
            } else if (line[i] == '#') {
                break;
            } else {
                out += line[i];
            }
        }
        return out;
    }

    static std::vector<Token> tokens(const std::string &line, const std::string &source, uint64_t lineno) {
        std::vector<Token> out;
        size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
            if (i >= line.size()) break;
            Token t;
            while (i < line.size() && line[i] != '=' && !std::isspace(static_cast<unsigned char>(line[i])))
                t.key += line[i++];
            if (i < line.size() && line[i] == '=') {
                t.has_value = true;
                ++i;
                if (i < line.size() && line[i] == '"') {
                    size_t close = line.find('"', i + 1);
                    if (close == std::string::npos) input_error(source, lineno, "'\"' without its closing '\"'");
                    t.value = line.substr(i + 1, close - i - 1);
                    i = close + 1;
                } else {
                    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) t.value += line[i++];
                }
            }
            out.push_back(std::move(t));
        }
        return out;
    }

    // GPUs of a Gres= value: "gpu:4", "gpu:a100:4", "gpu:a100:2,gpu:v100:2",
    // "gpu:4(S:0-1)", "gpu:a100:no_consume:4", "gpu" (1); other GRES count 0.
    static uint32_t gres_gpus(const std::string &value, const std::string &source, uint64_t lineno) {
        uint64_t total = 0;
        for (const cli::GresEntry &e : cli::gres_entries(value)) {
            if (e.fields[0] != "gpu") continue;
            uint64_t n = 1;
            if (e.fields.size() > 1) {
                std::optional<uint64_t> count = cli::slurm_count(e.fields.back(), 1000000);
                if (!count)
                    input_error(source, lineno, "Gres " + quote(e.text) +
                                                    ": expected gpu:COUNT or gpu:TYPE:COUNT (COUNT up to 1000000)");
                n = *count;
            }
            total += n;
        }
        if (total > 1000000) input_error(source, lineno, "Gres " + quote(value) + ": more than 1000000 GPUs on one node");
        return static_cast<uint32_t>(total);
    }

    void handle_line(const std::string &line, const std::string &source, uint64_t lineno, int depth) {
        std::vector<Token> toks = tokens(line, source, lineno);
        if (toks.empty()) return;
        const Token &head = toks[0];
        if (!head.has_value && iequals(head.key, "include")) {
            if (toks.size() != 2 || toks[1].has_value)
                input_error(source, lineno, "expected 'Include FILE'");
            include(toks[1].key, source, lineno, depth);
        } else if (head.has_value && iequals(head.key, "NodeName")) {
            node_line(toks, source, lineno);
        } else if (head.has_value && iequals(head.key, "PartitionName")) {
            set_line(toks, source, lineno, /*partition=*/true);
        } else if (head.has_value && iequals(head.key, "NodeSet")) {
            set_line(toks, source, lineno, /*partition=*/false);
        }
    }

    void include(const std::string &file, const std::string &source, uint64_t lineno, int depth) {
        if (depth >= kMaxIncludeDepth)
            input_error(source, lineno, "Include nested more than " + std::to_string(kMaxIncludeDepth) + " deep");
        std::string path = file;
        size_t slash = source.rfind('/');
        if (!path.empty() && path[0] != '/' && slash != std::string::npos) path = source.substr(0, slash + 1) + path;
        std::ifstream in(path, std::ios::binary);
        if (!in) input_error(source, lineno, "Include " + quote(file) + ": cannot read " + quote(path));
        std::ostringstream text;
        text << in.rdbuf();
        parse(text.str(), path, depth + 1);
    }

    void node_line(const std::vector<Token> &toks, const std::string &source, uint64_t lineno) {
        NodeDef def = node_default_;
        bool is_default = iequals(toks[0].value, "DEFAULT");
        for (size_t i = 1; i < toks.size(); ++i) {
            const Token &t = toks[i];
            if (iequals(t.key, "Gres")) {
                def.gpus = gres_gpus(t.value, source, lineno);
            } else if (iequals(t.key, "Weight")) {
                if (!parse_uint(t.value, UINT32_MAX, &def.weight))
                    input_error(source, lineno, "Weight " + quote(t.value) + ": expected a number");
            } else if (iequals(t.key, "CPUs") || iequals(t.key, "RealMemory")) {
                uint64_t &slot = iequals(t.key, "CPUs") ? def.cpus : def.mem_mb;
                if (!parse_uint(t.value, iequals(t.key, "CPUs") ? 1000000 : (1ull << 40), &slot))
                    input_error(source, lineno, t.key + " " + quote(t.value) + ": expected a number");
            } else if (iequals(t.key, "Features") || iequals(t.key, "Feature")) {
                def.features = split_top_level(t.value, ',');
            }
        }
        if (is_default) {
            node_default_ = def;
            return;
        }
        std::vector<std::string> names;
        try {
            names = expand_hostlist(toks[0].value);
        } catch (const std::invalid_argument &e) {
            input_error(source, lineno, std::string("NodeName: ") + e.what());
        }
        def.where = source + ":" + std::to_string(lineno);
        for (std::string &n : names) {
            auto [it, fresh] = node_index_.emplace(n, nodes_.size());
            if (!fresh)
                input_error(source, lineno, "node " + quote(n) + " is defined twice (first at " +
                                                nodes_[it->second].where + ")");
            def.name = std::move(n);
            nodes_.push_back(def);
        }
    }

    void set_line(const std::vector<Token> &toks, const std::string &source, uint64_t lineno, bool partition) {
        SetDef def = partition ? partition_default_ : SetDef{};
        def.name = toks[0].value;
        def.source = source;
        def.line = lineno;
        for (size_t i = 1; i < toks.size(); ++i) {
            if (iequals(toks[i].key, "Nodes")) def.nodes = toks[i].value;
            else if (!partition && (iequals(toks[i].key, "Feature") || iequals(toks[i].key, "Features")))
                def.feature = toks[i].value;
            else if (partition && iequals(toks[i].key, "LLN"))
                def.lln = iequals(toks[i].value, "yes");
        }
        const char *what = partition ? "partition" : "NodeSet";
        if (partition && iequals(def.name, "DEFAULT")) {
            partition_default_ = def;
            return;
        }
        if (!valid_name(def.name))
            input_error(source, lineno, std::string(what) + " " + quote(def.name) + ": " + kNameRule);
        std::vector<SetDef> &list = partition ? partitions_ : nodesets_;
        for (const SetDef &other : list)
            if (other.name == def.name)
                input_error(source, lineno, std::string(what) + " " + quote(def.name) + " is defined twice (first at " +
                                                other.source + ":" + std::to_string(other.line) + ")");
        list.push_back(std::move(def));
    }

    // Definition indices of the nodes a partition or NodeSet names.
    std::vector<size_t> resolve(const SetDef &s, const std::map<std::string, std::vector<size_t>> &sets,
                                const char *what) const {
        std::vector<size_t> out;
        if (!s.feature.empty()) {
            for (size_t i = 0; i < nodes_.size(); ++i)
                if (std::find(nodes_[i].features.begin(), nodes_[i].features.end(), s.feature) !=
                    nodes_[i].features.end())
                    out.push_back(i);
        }
        if (s.nodes.empty()) return out;
        for (const std::string &item : split_top_level(s.nodes, ',')) {
            if (iequals(item, "ALL")) {
                for (size_t i = 0; i < nodes_.size(); ++i) out.push_back(i);
                continue;
            }
            auto set = sets.find(item);
            if (set != sets.end()) {
                out.insert(out.end(), set->second.begin(), set->second.end());
                continue;
            }
            std::vector<std::string> names;
            try {
                names = expand_hostlist(item);
            } catch (const std::invalid_argument &e) {
                input_error(s.source, s.line, std::string(what) + " " + quote(s.name) + ": Nodes: " + e.what());
            }
            for (const std::string &n : names) {
                auto it = node_index_.find(n);
                if (it == node_index_.end())
                    input_error(s.source, s.line, std::string(what) + " " + quote(s.name) + ": node " + quote(n) +
                                                      " has no NodeName line");
                out.push_back(it->second);
            }
        }
        return out;
    }

    std::vector<std::string> *notes_;
    NodeDef node_default_;
    SetDef partition_default_;
    std::vector<NodeDef> nodes_;
    std::unordered_map<std::string, size_t> node_index_;
    std::vector<SetDef> partitions_, nodesets_;
};

}  // namespace

SimCluster parse_slurm_conf(const std::string &text, const std::string &source, std::vector<std::string> *notes) {
    SlurmConfReader r(notes);
    r.parse(text, source, 0);
    return r.finish();
}

SimCluster read_slurm_conf(const std::string &path, std::vector<std::string> *notes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) input_error(path, 0, "cannot read the file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_slurm_conf(text.str(), path, notes);
}

SimCluster make_cluster(const std::string &nodes, const std::string &pools) {
    SimCluster c;
    for (const std::string &group : split_top_level(nodes, '+')) {
        size_t x = group.find('x');
        uint64_t count = 0, gpus = 0;
        if (x == std::string::npos || !parse_uint(std::string_view(group).substr(0, x), 10000000, &count) ||
            !parse_uint(std::string_view(group).substr(x + 1), 1000000, &gpus) || count == 0 || gpus == 0)
            throw InputError("--nodes: " + quote(group) + ": expected COUNTxGPUS, e.g. 1250x8");
        if (c.nodes.size() + count > 10000000) throw InputError("--nodes: more than 10,000,000 nodes");
        for (uint64_t i = 0; i < count; ++i)
            c.nodes.push_back({"node" + std::to_string(c.nodes.size() + 1), static_cast<uint32_t>(gpus)});
    }
    std::unordered_map<std::string, uint32_t> index;
    for (uint32_t i = 0; i < c.nodes.size(); ++i) index.emplace(c.nodes[i].name, i);
    for (const std::string &entry : split_top_level(pools, ',')) {
        size_t colon = entry.find(':');
        SimPartition p;
        p.name = entry.substr(0, colon);
        if (!valid_name(p.name)) throw InputError("--pools: " + quote(p.name) + ": " + kNameRule);
        for (const SimPartition &other : c.partitions)
            if (other.name == p.name) throw InputError("--pools: " + quote(p.name) + " is named twice");
        if (colon == std::string::npos) {
            for (uint32_t i = 0; i < c.nodes.size(); ++i) p.nodes.push_back(i);
        } else {
            std::vector<std::string> names;
            try {
                names = expand_hostlist(entry.substr(colon + 1));
            } catch (const std::invalid_argument &e) {
                throw InputError("--pools: " + p.name + ": " + e.what());
            }
            for (const std::string &n : names) {
                auto it = index.find(n);
                if (it == index.end())
                    throw InputError("--pools: " + p.name + ": no node " + quote(n) + " (nodes are node1..node" +
                                     std::to_string(c.nodes.size()) + ")");
                p.nodes.push_back(it->second);
            }
            std::sort(p.nodes.begin(), p.nodes.end());
            p.nodes.erase(std::unique(p.nodes.begin(), p.nodes.end()), p.nodes.end());
        }
        c.partitions.push_back(std::move(p));
    }
    return c;
}

uint64_t total_gpus(const SimCluster &cluster) {
    uint64_t n = 0;
    for (const SimNode &node : cluster.nodes) n += node.gpus;
    return n;
}

}  // namespace gpupool::sim

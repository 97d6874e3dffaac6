// Slurm's account tree for `gpupool sim` (the account queues'
// tree): the associations
// `sacctmgr -P show assoc format=account,parentname` prints, as the
// plugins read the tree from slurmctld's association manager.  The format
// is in workload.hpp.
#include <algorithm>
#include <fstream>
#include <istream>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "input_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

struct TreeColumns {
    size_t account = 0, parent = 1;
};

// The header's columns, when `fields` is one: a first line that names a
// column the reader takes ("Account|Par Name|...").  A header without
// both is refused; read as data, its columns would land anywhere.
bool read_header(const std::vector<std::string_view> &fields, TreeColumns &c, const std::string &source,
                 uint64_t lineno) {
    int account = -1, parent = -1;
    for (size_t i = 0; i < fields.size(); ++i) {
        const std::string_view f = trim(fields[i]);
        if (iequals(f, "Account")) account = static_cast<int>(i);
        else if (iequals(f, "Par Name") || iequals(f, "ParentName")) parent = static_cast<int>(i);
    }
    if (account < 0 && parent < 0) return false;
    if (account < 0 || parent < 0)
        input_error(source, lineno, std::string("the header lacks the required column ") +
                                        (account < 0 ? "Account" : "Par Name") +
                                        ": run sacctmgr -P show assoc format=account,parentname");
    c.account = static_cast<size_t>(account);
    c.parent = static_cast<size_t>(parent);
    return true;
}

// A loop (a parent chain that comes back) is an error: the core's tree
// would have no root.  Each account is walked once (linear in the tree).
// `lines` holds each account's line, in the order of the file.
void check_no_loop(const AccountTree &tree, const std::vector<std::pair<std::string, uint64_t>> &lines,
                   const std::string &source) {
    std::unordered_map<std::string_view, size_t> index;
    for (size_t i = 0; i < lines.size(); ++i) index.emplace(lines[i].first, i);
    enum State : uint8_t { kNew, kOnWalk, kDone };
    std::vector<State> state(lines.size(), kNew);
    std::vector<size_t> walk;
    for (size_t first = 0; first < lines.size(); ++first) {
        walk.clear();
        for (size_t at = first;;) {
            if (state[at] == kDone) break;
            if (state[at] == kOnWalk) {
                // The loop: the walk from `at` on.  Named from its account
                // that comes first in the file, so the line is where to look.
                std::vector<size_t> loop(std::find(walk.begin(), walk.end(), at), walk.end());
                std::rotate(loop.begin(), std::min_element(loop.begin(), loop.end()), loop.end());
                std::string path;
                for (size_t i : loop) path += lines[i].first + " > ";
                const std::string &name = lines[loop.front()].first;
                input_error(source, lines[loop.front()].second,
                            "account " + quote(name) + " is its own ancestor (" + path + name + ")");
            }
            state[at] = kOnWalk;
            walk.push_back(at);
            auto up = index.find(tree.at(lines[at].first));
            if (up == index.end()) break;  // a top-level account's parent: root, or one not listed
            at = up->second;
        }
        for (size_t i : walk) state[i] = kDone;
    }
}

}  // namespace

AccountTree parse_account_tree(std::istream &in, const std::string &source) {
    AccountTree tree;
    std::vector<std::pair<std::string, uint64_t>> lines;  // each account's line
    TreeColumns col;
    bool first = true;
    std::string line;
    std::vector<std::string_view> f;
    uint64_t lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (trim(line).empty()) continue;
        split(line, '|', f);
        if (first) {
            first = false;
            if (read_header(f, col, source, lineno)) continue;
        }
        if (f.size() <= std::max(col.account, col.parent))
            input_error(source, lineno, "expected ACCOUNT|PARENT (sacctmgr -P show assoc format=account,parentname)");
        const std::string account(trim(f[col.account])), parent(trim(f[col.parent]));
        if (account.empty() || parent.empty()) continue;  // a user's association, or root's
        if (!valid_name(account) || !valid_name(parent))
            input_error(source, lineno, "account " + quote(account.empty() ? parent : account) + ": " + kNameRule);
        auto [it, fresh] = tree.emplace(account, parent);
        if (fresh) lines.emplace_back(account, lineno);
        else if (it->second != parent)
            input_error(source, lineno, "account " + quote(account) + " has two parents: " + quote(it->second) +
                                            " and " + quote(parent));
    }
    check_no_loop(tree, lines, source);
    return tree;
}

AccountTree read_account_tree(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) input_error(path, 0, "cannot read the file");
    return parse_account_tree(in, path);
}

}  // namespace gpupool::sim

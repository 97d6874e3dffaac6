// Slurm's account tree for `gpupool sim` (the account queues'
// tree): the associations
// `sacctmgr -P show assoc format=account,parentname` prints, as the
// plugins read the tree from slurmctld's association manager.  The format
// is in workload.hpp.
#include <algorithm>
#include <fstream>
#include <istream>

#include "config.hpp"
#include "input_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

namespace {

struct TreeColumns {
    size_t account = 0, parent = 1;
};

// The header's columns, when `fields` is one ("Account|Par Name|...").
bool read_header(const std::vector<std::string_view> &fields, TreeColumns &c) {
    bool account = false, parent = false;
    for (size_t i = 0; i < fields.size(); ++i) {
        const std::string_view f = trim(fields[i]);
        if (iequals(f, "Account")) {
            c.account = i;
            account = true;
        } else if (iequals(f, "Par Name") || iequals(f, "ParentName")) {
            c.parent = i;
            parent = true;
        }
    }
    return account && parent;
}

// A loop (a parent chain that comes back) is an error: the core's tree
// would have no root.
void check_no_loop(const AccountTree &tree, const std::string &source) {
    std::vector<std::string> names;
    for (const auto &entry : tree) names.push_back(entry.first);
    std::sort(names.begin(), names.end());  // the first name on a loop, whatever the hash order
    for (const std::string &name : names) {
        std::string at = name;
        for (size_t steps = 0; steps <= tree.size(); ++steps) {
            auto up = tree.find(at);
            if (up == tree.end()) break;
            at = up->second;
            if (steps == tree.size()) input_error(source, 0, "the account tree has a loop through " + quote(name));
        }
    }
}

}  // namespace

AccountTree parse_account_tree(std::istream &in, const std::string &source) {
    AccountTree tree;
    TreeColumns col;
    std::string line;
    std::vector<std::string_view> f;
    uint64_t lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (trim(line).empty()) continue;
        split(line, '|', f);
        if (lineno == 1 && read_header(f, col)) continue;
        if (f.size() <= std::max(col.account, col.parent))
            input_error(source, lineno, "expected ACCOUNT|PARENT (sacctmgr -P show assoc format=account,parentname)");
        const std::string account(trim(f[col.account])), parent(trim(f[col.parent]));
        if (account.empty() || parent.empty()) continue;  // a user's association, or root's
        if (!valid_name(account) || !valid_name(parent))
            input_error(source, lineno, "account " + quote(account.empty() ? parent : account) + ": " + kNameRule);
        auto [it, fresh] = tree.emplace(account, parent);
        if (!fresh && it->second != parent)
            input_error(source, lineno, "account " + quote(account) + " has two parents: " + quote(it->second) +
                                            " and " + quote(parent));
    }
    check_no_loop(tree, source);
    return tree;
}

AccountTree read_account_tree(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) input_error(path, 0, "cannot read the file");
    return parse_account_tree(in, path);
}

}  // namespace gpupool::sim

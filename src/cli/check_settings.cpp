// `gpupool check`'s slurm.conf settings: the table below is the one list of
// what gpupool needs from slurm.conf (doc/admin-guide.md, "slurm.conf"),
// read from slurmctld as `scontrol show config` prints it.
#include <pwd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "check.hpp"

namespace gpupool::cli {

namespace {

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The items of a comma-separated value, lower case ("(null)": none).
std::vector<std::string> items(const std::string &value) {
    std::vector<std::string> out;
    if (value == "(null)") return out;
    std::string item;
    std::istringstream in(lower(value));
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

bool has_item(const std::string &value, const std::string &item) {
    for (const std::string &i : items(value))
        if (i == lower(item)) return true;
    return false;
}

// What is wrong with a setting ("" where nothing is) and what to do.
struct Verdict {
    std::string what, fix;
};

// One row: a key as `scontrol show config` prints it, whether a problem
// is an error (else a warning), and the test of its value; `cfg` is null
// when gpupool.conf did not parse.  A key slurmctld does not print is not
// tested.
struct Setting {
    const char *key;
    bool error;
    Verdict (*test)(const std::string &value, const Config *cfg);
};

Verdict priority_type(const std::string &v, const Config *) {
    if (v == "priority/gpupool") return {};
    return {"PriorityType=" + v + ": gpupool orders and holds jobs only as priority/gpupool",
            "set PriorityType=priority/gpupool in slurm.conf and restart slurmctld (a reconfigure does not change it)"};
}

Verdict preempt_type(const std::string &v, const Config *) {
    if (v == "preempt/gpupool") return {};
    return {"PreemptType=" + v + ": no borrowing, reclaim or preemption by gpupool",
            "set PreemptType=preempt/gpupool in slurm.conf and restart slurmctld"};
}

Verdict preempt_mode_suspend(const std::string &v, const Config *) {
    if (!has_item(v, "suspend")) return {};
    return {"PreemptMode=" + v + ": Slurm keeps a suspended job's GPUs allocated, so suspending a victim frees "
                                 "nothing for the job that preempts; preempt/gpupool refuses to start",
            "set PreemptMode=REQUEUE or CANCEL (jobs that checkpoint: GraceTime= in gpupool.conf with "
            "SlurmctldParameters=preempt_send_user_signal)"};
}

Verdict preempt_mode_off(const std::string &v, const Config *) {
    if (has_item(v, "suspend") || has_item(v, "requeue") || has_item(v, "cancel")) return {};
    return {"PreemptMode=" + v + ": gpupool never preempts, so borrowed GPUs are never taken back",
            "set PreemptMode=REQUEUE or CANCEL in slurm.conf"};
}

Verdict job_submit(const std::string &v, const Config *) {
    std::vector<std::string> list = items(v);
    if (!list.empty() && (list[0] == "gpupool" || list[0] == "job_submit/gpupool")) return {};
    return {"JobSubmitPlugins=" + v + ": gpupool is not first in the list, so a hold on a job gpupool holds is "
                                      "lost, and an array's throttle may start tasks over quota until the next pass",
            "put gpupool first: JobSubmitPlugins=gpupool (then the others)"};
}

Verdict enforce(const std::string &v, const Config *) {
    std::string missing;
    for (const char *need : {"associations", "limits", "qos"})
        if (!has_item(v, need)) missing += std::string(missing.empty() ? "" : ",") + need;
    if (missing.empty()) return {};
    return {"AccountingStorageEnforce=" + v + " lacks " + missing +
                ": without qos users pick any QOS and so any tier; without limits quota is given back only at "
                "the next pass",
            "set AccountingStorageEnforce=associations,limits,qos (keeping what else it has) in slurm.conf and "
            "restart slurmctld"};
}

Verdict storage_tres(const std::string &v, const Config *cfg) {
    const std::string tres = cfg ? cfg->quota_tres : "gres/gpu";
    if (has_item(v, tres)) return {};
    return {"AccountingStorageTRES=" + v + " lacks " + tres + ", which QuotaTRES counts: jobs' TRES carry no " +
                "count of it (gpupool, sacct and sreport read it there)",
            "add " + tres + " to AccountingStorageTRES in slurm.conf and restart slurmctld"};
}

Verdict weight(const char *key, const char *column, const std::string &v) {
    if (v != "0") return {};
    return {std::string(key) + "=0: sprio shows no " + column + " column",
            std::string("set ") + key + "=1 (any non-zero value; gpupool's priorities are ranks)"};
}

Verdict auth_info(const std::string &v, const Config *) {
    const size_t at = lower(v).find("cred_expire=");
    const long secs = at == std::string::npos ? 1200 : std::atol(v.c_str() + at + 12);
    if (secs <= 60) return {};
    return {"AuthInfo=" + v + (at == std::string::npos ? " sets no cred_expire" : "") + ": a requeued batch job "
                "starts again only " + std::to_string(secs + 1) + " s after it was preempted (cred_expire + 1)",
            "add cred_expire=30 to AuthInfo in slurm.conf"};
}

Verdict exempt_time(const std::string &v, const Config *) {
    if (v == "00:00:00" || v == "NONE" || v == "0" || v == "(null)") return {};
    return {"PreemptExemptTime=" + v + " applies on top of gpupool's MinRuntime",
            "remove PreemptExemptTime from slurm.conf and set MinRuntime= in gpupool.conf"};
}

Verdict strict_order(const std::string &v, const Config *) {
    if (has_item(v, "preempt_strict_order")) return {};
    return {"SchedulerParameters=" + v + " lacks preempt_strict_order: in its retry passes select/cons_tres "
                "re-sorts the victims preempt/gpupool offers node group by node group, so the victim plan's order "
                "(its cheapest node first) is lost",
            "add preempt_strict_order to SchedulerParameters in slurm.conf and run scontrol reconfigure"};
}

const Setting kSettings[] = {
    {"PriorityType", true, priority_type},
    {"PreemptType", true, preempt_type},
    {"PreemptMode", true, preempt_mode_suspend},
    {"PreemptMode", false, preempt_mode_off},
    {"AccountingStorageEnforce", true, enforce},
    {"AccountingStorageTRES", true, storage_tres},
    {"JobSubmitPlugins", false, job_submit},
    {"PriorityWeightAge", false, [](const std::string &v, const Config *) { return weight("PriorityWeightAge", "AGE", v); }},
    {"PriorityWeightFairshare", false,
     [](const std::string &v, const Config *) { return weight("PriorityWeightFairshare", "FAIRSHARE", v); }},
    {"PriorityWeightQOS", false, [](const std::string &v, const Config *) { return weight("PriorityWeightQOS", "QOS", v); }},
    {"AuthInfo", false, auth_info},
    {"PreemptExemptTime", false, exempt_time},
    {"SchedulerParameters", false, strict_order},
};

}  // namespace

// The value of `key` in `settings`, in any case (scontrol prints
// PriorityWeightFairShare, slurm.conf's documentation PriorityWeightFairshare).
static const std::string *setting(const std::map<std::string, std::string> &settings, const std::string &key) {
    for (const auto &[k, v] : settings)
        if (lower(k) == lower(key)) return &v;
    return nullptr;
}

std::map<std::string, std::string> parse_show_config(const std::string &text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const size_t eq = line.find(" = ");
        if (eq == std::string::npos) continue;
        std::string key = line.substr(0, eq);
        key.erase(key.find_last_not_of(' ') + 1);
        if (key.empty() || key.find(' ') != std::string::npos) continue;
        out.emplace(key, line.substr(eq + 3));
    }
    return out;
}

uint32_t slurm_user_id(const std::map<std::string, std::string> &settings) {
    const std::string *user = setting(settings, "SlurmUser");
    if (!user) return 0;
    const size_t open = user->rfind('('), close = user->rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open + 2) return 0;
    const std::string digits = user->substr(open + 1, close - open - 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return 0;
    return static_cast<uint32_t>(std::stoul(digits));
}

namespace {
// The last SlurmUser= of slurm.conf `text` outside comments, as Slurm's
// parser takes it: any case, blanks around '=', a quoted value; "" if none.
std::string slurm_user_name_of_conf(const std::string &text) {
    std::string name;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        line.erase(std::min(line.find('#'), line.size()));
        const std::string low = lower(line);
        for (size_t at = low.find("slurmuser"); at != std::string::npos; at = low.find("slurmuser", at + 1)) {
            if (at > 0 && !std::isspace(static_cast<unsigned char>(line[at - 1]))) continue;
            size_t v = line.find_first_not_of(" \t", at + 9);
            if (v == std::string::npos || line[v] != '=') continue;
            v = line.find_first_not_of(" \t", v + 1);
            if (v == std::string::npos) continue;
            const bool quoted = line[v] == '"';
            if (quoted) ++v;
            const size_t end = quoted ? line.find('"', v) : line.find_first_of(" \t\r", v);
            name = line.substr(v, end == std::string::npos ? std::string::npos : end - v);
        }
    }
    return name;
}

// A user name's uid here, or a uid as Slurm takes one; nullopt if neither.
std::optional<uint32_t> uid_of(const std::string &name) {
    struct passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_uid;
    if (!name.empty() && name.size() <= 9 && name.find_first_not_of("0123456789") == std::string::npos)
        return static_cast<uint32_t>(std::stoul(name));
    return std::nullopt;
}
}  // namespace

uint32_t slurm_user_of_conf(const std::string &text) {
    const std::string name = slurm_user_name_of_conf(text);
    return name.empty() ? 0 : uid_of(name).value_or(0);
}

uint32_t trust_slurm_uid(const CheckCluster &cluster) {
    if (setting(cluster.settings, "SlurmUser")) return slurm_user_id(cluster.settings);
    return slurm_user_of_conf(cluster.slurm_conf_text);
}

bool trust_slurm_uid_guessed(const CheckCluster &cluster) {
    if (setting(cluster.settings, "SlurmUser")) return false;
    if (cluster.slurm_conf_text.empty()) return true;
    const std::string name = slurm_user_name_of_conf(cluster.slurm_conf_text);
    return !name.empty() && !uid_of(name);
}

int line_of_key(const std::string &text, const std::string &key) {
    const std::string want = lower(key);
    std::istringstream in(text);
    int n = 0, found = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        line.erase(std::min(line.find('#'), line.size()));
        const size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos) continue;
        // Key=Value tokens anywhere on the line (gpupool.conf's global lines).
        std::istringstream words(line);
        for (std::string w; words >> w;)
            if (lower(w.substr(0, w.find('='))) == want && w.find('=') != std::string::npos) found = n;
    }
    return found;
}

void check_settings(const CheckCluster &cluster, const Config *cfg, const std::string &path,
                    const std::string &text, std::vector<CheckProblem> &out) {
    for (const Setting &s : kSettings) {
        const std::string *value = setting(cluster.settings, s.key);
        if (!value) continue;
        Verdict v = s.test(*value, cfg);
        if (v.what.empty()) continue;
        CheckProblem p{cluster.slurm_conf, line_of_key(cluster.slurm_conf_text, s.key), s.error, v.what, v.fix};
        // A typed QuotaTRES is gpupool.conf's request: said on its line.
        const int quota_tres_line = line_of_key(text, "QuotaTRES");
        if (std::string(s.key) == "AccountingStorageTRES" && cfg && cfg->quota_tres != "gres/gpu" && quota_tres_line) {
            p.what = "QuotaTRES=" + cfg->quota_tres + " counts a TRES that slurm.conf does not account (" +
                     cluster.slurm_conf + (p.line ? ":" + std::to_string(p.line) : std::string()) +
                     ": AccountingStorageTRES=" + *value + "): jobs' TRES carry no count of it";
            p.file = path;
            p.line = quota_tres_line;
        }
        out.push_back(std::move(p));
    }
}

}  // namespace gpupool::cli

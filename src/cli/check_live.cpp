// `gpupool check` over the live cluster: the CheckCluster of check.hpp from
// libslurm: slurmctld's settings as `scontrol show config` prints them,
// slurm.conf's text for line numbers, nodes and partitions as gpupool reads
// them, and from slurmdbd the QOS and the account tree.
#include "check_live.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "slurm_compat.hpp"
#include "slurm_view.hpp"

namespace gpupool::cli {

namespace {

// `scontrol show config`'s text: slurm_print_ctl_conf into memory.
std::string show_config_text() {
    slurm_conf_t *c = nullptr;
    if (slurm_load_ctl_conf(0, &c) != SLURM_SUCCESS)
        throw std::runtime_error(std::string("cannot read slurmctld's configuration: ") +
                                 slurm_strerror(compat::slurm_errno()));
    char *buf = nullptr;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (mem) {
        slurm_print_ctl_conf(mem, c);
        std::fclose(mem);
    }
    compat::free_ctl_conf(c);
    std::string text = buf ? std::string(buf, len) : std::string();
    std::free(buf);
    return text;
}

// The QOS slurmdbd knows (sacctmgr show qos).
bool load_qos(std::set<std::string> &out, std::string &why_not) {
    uint16_t flags = 0;
    void *db = slurmdb_connection_get(&flags);
    if (!db) {
        why_not = "slurmdbd not reachable";
        return false;
    }
    slurmdb_qos_cond_t cond;
    std::memset(&cond, 0, sizeof cond);
    compat::list_ptr recs = slurmdb_qos_get(db, &cond);
    if (!recs) {
        why_not = "slurmdbd gave no QOS";
    } else {
        compat::list_itr_ptr it = slurm_list_iterator_create(recs);
        while (auto *q = static_cast<slurmdb_qos_rec_t *>(slurm_list_next(it)))
            if (q->name) out.insert(q->name);
        slurm_list_iterator_destroy(it);
        slurm_list_destroy(recs);
    }
    slurmdb_connection_close(&db);
    return recs != nullptr;
}

}  // namespace

CheckCluster load_check_cluster(const ControllerConf &cc, const Config *cfg) {
    CheckCluster out;
    out.cluster_name = cc.cluster;
    out.slurm_conf = cc.slurm_conf.empty() ? "slurm.conf" : cc.slurm_conf;
    out.settings = parse_show_config(show_config_text());
    std::ifstream in(out.slurm_conf);
    if (in) {
        std::ostringstream text;
        text << in.rdbuf();
        out.slurm_conf_text = text.str();
    }
    out.qos_known = load_qos(out.qos, out.qos_error);
    if (!cfg) return out;  // nothing to count GPUs by: the file did not parse
    load_nodes_partitions(out.snap, *cfg, &out.priority_tier);
    out.nodes_known = true;
    if (!cfg->accounts.empty()) out.accounts_known = load_account_tree(cc, out.snap, out.accounts_error);
    return out;
}

}  // namespace gpupool::cli

// SPDX-License-Identifier: GPL-2.0-or-later
#include "slurm_conf.hpp"

extern "C" {
#include <slurm/slurm.h>
// slurm.h has the type; only Slurm's private headers declare the variable.
extern slurm_conf_t slurm_conf;
}

#include <cstdlib>

namespace leftover::node {

NodeInfo node_info_from_slurm_conf(const std::string& node_name) {
    NodeInfo node;
    node.node_name = node_name;
    const std::string short_host = short_hostname();
    if (slurm_conf.slurmd_spooldir != nullptr && *slurm_conf.slurmd_spooldir != '\0')
        node.spool_dir = expand_slurmd_path(slurm_conf.slurmd_spooldir, node_name, short_host);
    if (slurm_conf.slurmd_pidfile != nullptr && *slurm_conf.slurmd_pidfile != '\0')
        node.slurmd_pid_file = expand_slurmd_path(slurm_conf.slurmd_pidfile, node_name, short_host);
    node.slurm_uids = {static_cast<uid_t>(slurm_conf.slurm_user_id), static_cast<uid_t>(slurm_conf.slurmd_user_id)};
    node.prolog_contain = prolog_contain();
    // From 23.02 on slurmstepd's slurm_conf has no path (slurmd sends a "lite" conf), but
    // slurmd exports SLURM_CONF to it and to the job epilog.
    if (slurm_conf.slurm_conf != nullptr && *slurm_conf.slurm_conf != '\0')
        node.slurm_conf = slurm_conf.slurm_conf;
    else if (const char* env = std::getenv("SLURM_CONF"); env != nullptr)
        node.slurm_conf = env;
    return node;
}

bool prolog_contain() { return (slurm_conf.prolog_flags & PROLOG_FLAG_CONTAIN) != 0; }

}  // namespace leftover::node

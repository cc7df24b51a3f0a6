// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/slurm_conf.hpp"

extern "C" {
#include <slurm/slurm.h>
// slurm.h has the type; only Slurm's private headers declare the variable.
extern slurm_conf_t slurm_conf;

// From Slurm's private read_config.h: the NodeName lines of the slurm.conf this process
// read. Only the first three members of slurm_conf_node_t are used, which have been
// nodenames, hostnames, addresses in this order from 22.05 to 26.05. Exported by
// libslurm and libslurmfull alike; a process without the lines gets 0 (a NULL table).
struct leftover_conf_node_prefix {
    char* nodenames;
    char* hostnames;
    char* addresses;
};
int slurm_conf_nodename_array(leftover_conf_node_prefix*** ptr_array);
}

#include "node/controller_host.hpp"
#include "node/host_nodes.hpp"

#include <cstdint>
#include <cstdlib>
#include <memory>

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
    node.slurmd_uid = static_cast<uid_t>(slurm_conf.slurmd_user_id);
    node.prolog_contain = prolog_contain();
    // Set whenever slurm.conf was read (its default when unset, 60 s, or from 24.05 on
    // 5 x MessageTimeout if more); slurmstepd gets it in its lite conf from 23.02 on.
    if (slurm_conf.unkillable_timeout > 0 && slurm_conf.unkillable_timeout != NO_VAL16)
        node.unkillable_step_timeout = slurm_conf.unkillable_timeout;
    // From 23.02 on slurmstepd's slurm_conf has no path (slurmd sends a "lite" conf), but
    // slurmd exports SLURM_CONF to it and to the job epilog.
    if (slurm_conf.slurm_conf != nullptr && *slurm_conf.slurm_conf != '\0')
        node.slurm_conf = slurm_conf.slurm_conf;
    else if (const char* env = std::getenv("SLURM_CONF"); env != nullptr)
        node.slurm_conf = env;
    std::vector<std::string> control_machines;
    for (std::uint32_t i = 0; slurm_conf.control_machine != nullptr && i < slurm_conf.control_cnt; ++i)
        if (slurm_conf.control_machine[i] != nullptr) control_machines.emplace_back(slurm_conf.control_machine[i]);
    node.slurmctld_host = slurmctld_host_naming(control_machines, this_host().names);
    return node;
}

namespace {

// A Slurm host list ("n[1-3],x") one name at a time, through slurm.h's own API.
std::vector<std::string> expand_host_list(const char* list) {
    std::vector<std::string> names;
    if (list == nullptr || *list == '\0') return names;
    auto* hosts = slurm_hostlist_create(list);
    if (hosts == nullptr) return names;
    while (char* name = slurm_hostlist_shift(hosts)) {
        names.emplace_back(name);
        std::free(name);  // NOLINT(cppcoreguidelines-no-malloc): slurm_hostlist_shift: "free() the returned string"
    }
    slurm_hostlist_destroy(hosts);
    return names;
}

}  // namespace

std::string slurmd_spool_pattern() {
    return slurm_conf.slurmd_spooldir != nullptr ? std::string(slurm_conf.slurmd_spooldir) : std::string();
}

bool add_configured_host_nodes(NodeInfo& node) {
    leftover_conf_node_prefix** lines = nullptr;
    const int count = slurm_conf_nodename_array(&lines);
    if (count <= 0 || lines == nullptr) return false;
    std::vector<NodeLine> expanded;
    for (int i = 0; i < count; ++i) {
        if (lines[i] == nullptr) continue;
        expanded.push_back({expand_host_list(lines[i]->nodenames), expand_host_list(lines[i]->hostnames),
                            expand_host_list(lines[i]->addresses)});
    }
    const std::string pattern = slurmd_spool_pattern();
    const std::string short_host = short_hostname();
    for (const std::string& name : nodes_on_host(expanded, this_host()))
        add_host_node(node, {name, expand_slurmd_path(pattern, name, short_host), false});
    return true;
}

bool prolog_contain() { return (slurm_conf.prolog_flags & PROLOG_FLAG_CONTAIN) != 0; }

}  // namespace leftover::node

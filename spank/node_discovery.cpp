// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/node_discovery.hpp"

#include "controller/helper_protocol.hpp"
#include "controller/query_accounts.hpp"
#include "controller/query_controller.hpp"
#include "node/running_slurmd.hpp"
#include "node/slurm_conf.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include <cstdlib>

namespace leftover::spank {
namespace {

// The path of leftover.so itself.
std::string plugin_path() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&plugin_path), &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
    return {};
}

}  // namespace

// Each running slurmd's node: a slurmd that slurm.conf does not place on this host (a
// dynamic -Z node, a NodeHostname that is not this host's), with a spool dir of its own
// that a sweep which did not read it would miss, and the only way the job epilog learns
// the others from 23.02 on (its slurm.conf has no NodeName lines, so slurm.conf's pick
// for a slurmd without -N is not known here). A slurmd whose node cannot be told is said
// in the log: a socket of its node in a spool dir we read is a lookup error all the same
// (local_steps.hpp).
Status add_running_host_nodes(node::NodeInfo& node) {
    auto daemons = node::running_daemons("/proc", node.slurm_uids);
    LEFTOVER_TRY(daemons);
    node.slurmctlds_seen = std::move(daemons->slurmctlds);  // for the controller-host check: one pass, not two
    const std::vector<node::RunningSlurmd>& running = daemons->slurmds;
    // At a step end slurmd's pid is not known: this node's slurmd, when it runs without
    // -N, is told by the name slurmd gave this process (SLURMD_NODENAME).
    const std::string host_name = node::full_hostname();
    const node::SlurmdNaming naming{node::pick_from_running(node.node_name, running, host_name), host_name,
                                    node::slurmd_spool_pattern(), node::short_hostname()};
    for (const std::string& unknown : node::add_running_nodes(node, running, naming))
        node.other_nodes_note += fmt::format("{}{}", node.other_nodes_note.empty() ? "" : "; ", unknown);
    return Ok{};
}

Result<node::NodeInfo> discover_node(std::optional<pid_t> slurmd_pid) {
    const char* node_name = std::getenv("SLURMD_NODENAME");
    if (node_name == nullptr || *node_name == '\0')
        return Error::lookup("SLURMD_NODENAME is not set: cannot tell which node's steps to ask", ErrorSource::other);
    node::NodeInfo node = node::node_info_from_slurm_conf(node_name);
    if (node.spool_dir.empty()) return Error::lookup("SlurmdSpoolDir is unknown in this process", ErrorSource::other);
    // Other slurmd on this host: slurmstepd knows the node table from slurm.conf (22.05
    // reads the whole file; from 23.02 on slurmd sends it the NodeName lines, but not to
    // the job epilog); the running slurmd tell the rest (add_running_host_nodes).
    if (!node::add_configured_host_nodes(node))
        node.other_nodes_note =
            "no NodeName lines in this process's slurm.conf: other nodes of this host are known here only from "
            "the running slurmd";
    node.slurmd_pid = slurmd_pid;
    return node;
}

std::unique_ptr<controller::Controller> make_controller(const node::NodeInfo& node) {
    return std::make_unique<controller::QueryController>(controller::query_helper_path(plugin_path()), node.slurm_conf);
}

std::unique_ptr<AccountDatabase> make_bounded_accounts() {
    return std::make_unique<controller::QueryAccounts>(controller::query_helper_path(plugin_path()));
}

}  // namespace leftover::spank

// SPDX-License-Identifier: GPL-2.0-or-later
// Which node the command speaks for: slurmd's node name and spool directory, learned
// from slurm.conf the way slurmd learns them (node_discovery_slurm.cpp, which links libslurm),
// or given with --node / --spool-dir.
#pragma once

#include "errors/result.hpp"
#include "node/node_info.hpp"
#include "node/running_slurmd.hpp"

#include <functional>
#include <optional>
#include <string>

namespace leftover::cli {

struct NodeOverrides {
    std::optional<std::string> node_name;
    std::optional<std::string> spool_dir;
};

using NodeDiscovery = std::function<Result<node::NodeInfo>(const NodeOverrides&)>;

// The spool directory must exist and be a directory: a missing one means slurmd never
// ran here (or the name is wrong), and reading "no steps" from it would be a lie.
Status check_spool_dir(const std::string& path);

// The pid in slurmd's pid file (SlurmdPidFile; slurmd writes it at start and removes it
// when it stops). Whether it still names slurmd, in this pid namespace, the evaluation
// checks on every scan. A missing or malformed file is a lookup error: without a
// running slurmd there is no pid namespace to compare with.
Result<pid_t> read_slurmd_pid(const std::string& pid_file);

// Adds the node of each running slurmd to node.other_nodes (node::add_running_nodes). A
// slurmd whose node cannot be told is a lookup error: its steps could not be found.
Status add_running_slurmds(node::NodeInfo& node, const std::vector<node::RunningSlurmd>& running,
                           const node::SlurmdNaming& naming);

// libslurm's answer (slurmd's pid included), with the overrides applied. Defined in node_discovery_slurm.cpp, which
// only the executable links: the unit tests pass their own NodeDiscovery.
Result<node::NodeInfo> discover_slurm_node(const NodeOverrides& overrides);

}  // namespace leftover::cli

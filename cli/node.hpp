// SPDX-License-Identifier: GPL-2.0-or-later
// Which node the command speaks for: slurmd's node name and spool directory, learned
// from slurm.conf the way slurmd learns them (slurm_node.cpp, which links libslurm),
// or given with --node / --spool-dir.
#pragma once

#include "node_info.hpp"
#include "result.hpp"

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

// libslurm's answer, with the overrides applied. Defined in slurm_node.cpp, which only
// the executable links: the unit tests pass their own NodeDiscovery.
Result<node::NodeInfo> discover_slurm_node(const NodeOverrides& overrides);

}  // namespace leftover::cli

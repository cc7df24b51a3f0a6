// SPDX-License-Identifier: GPL-2.0-or-later
// What this node's slurmd really uses, asked of the Slurm process we are loaded into.
#pragma once

#include "accounts/accounts.hpp"
#include "controller/controller.hpp"
#include "errors/result.hpp"
#include "node/node_info.hpp"

#include <memory>
#include <optional>

namespace leftover::spank {

// SlurmdSpoolDir from slurm_conf (expanded as slurmd does), the node name slurmd was
// given (SLURMD_NODENAME: slurmd -N wins over the host name), Slurm's own accounts and
// PrologFlags. A missing piece is a lookup error: guessing could read another node's state.
// `slurmd_pid`, known in the job epilog only: this node's slurmd.
Result<node::NodeInfo> discover_node(std::optional<pid_t> slurmd_pid = std::nullopt);

// Adds each running slurmd's node (other than this one) from /proc, for a sweep: at a step
// end as in the job epilog (node/running_slurmd.hpp add_running_nodes tells this node's
// slurmd where its pid is not known). Lookup error when /proc cannot be read.
Status add_running_host_nodes(node::NodeInfo& node);

// The controller as seen through the leftover-query helper next to this plugin.
std::unique_ptr<controller::Controller> make_controller(const node::NodeInfo& node);

// Account lookups through the same helper, bounded by each caller's deadline.
std::unique_ptr<AccountDatabase> make_bounded_accounts();

}  // namespace leftover::spank

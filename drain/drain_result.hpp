// SPDX-License-Identifier: GPL-2.0-or-later
// What a drain request for this node came to, and the line that says so: the drain's
// result type, which the metrics count (leftover_node_drains_total) and the front ends log.
#pragma once

#include <string>

namespace leftover::drain {

// What a drain request for this node came to (drain_on_survivors, check --health --drain):
// the label of leftover_node_drains_total.
enum class DrainResult {
    drained,  // slurmctld took the node out of service with our reason
    kept,     // the node was already drained, draining, down or failing: its reason kept
    failed,   // slurmctld could not be asked, or refused
};

// A drain request's result and the line to log about it (a warning when drained, an
// error when failed, else information): the drain returns it, the front ends log it.
struct DrainReport {
    DrainResult result = DrainResult::failed;
    std::string text;
};

}  // namespace leftover::drain

// SPDX-License-Identifier: GPL-2.0-or-later
// What a drain request for this node came to, and the lines that say so: the drain's
// result type, which the metrics count (leftover_node_drains_total), and what the drain
// after a sweep returns for the front ends to log.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// What the drain after a sweep has to say: its lines, and the request when it made one.
struct DrainOutcome {
    std::vector<std::pair<LogLevel, std::string>> notes;  // logged first, e.g. why no drain was asked for
    std::optional<DrainReport> request;                   // when slurmctld was asked to drain the node
};

}  // namespace leftover::drain

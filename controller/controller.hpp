// SPDX-License-Identifier: GPL-2.0-or-later
// Questions for slurmctld, each bounded by a deadline. Used only for job_source:
// controller, and to confirm an allocation that local state cannot show.
#pragma once

#include "controller/drain.hpp"
#include "errors/result.hpp"
#include "steps/live_work.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::controller {

class Controller {
public:
    virtual ~Controller() = default;
    // Users and jobs with a running or suspended job on any of `nodes` (every node this
    // host runs), apart from `ending_job`.
    virtual Result<steps::LiveWork> jobs_on_nodes(const std::vector<std::string>& nodes,
                                                  std::optional<std::uint32_t> ending_job,
                                                  std::chrono::steady_clock::time_point deadline) = 0;
    // Drains `node` with `reason`, unless slurmctld shows it drained, draining, down or
    // failing already (then its reason is kept): the state is asked and the drain sent
    // in one bounded call. A controller that cannot drain says so.
    virtual Result<DrainAnswer> drain_node(const std::string& node, const std::string& reason,
                                           std::chrono::steady_clock::time_point deadline) {
        (void)node, (void)reason, (void)deadline;
        return Error::lookup("no controller connection to drain through", ErrorSource::controller);
    }
};

}  // namespace leftover::controller

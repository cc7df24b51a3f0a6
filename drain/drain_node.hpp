// SPDX-License-Identifier: GPL-2.0-or-later
// drain_on_survivors: after a sweep whose strays outlived SIGKILL, take the node out of
// service through slurmctld with a reason that names them, bounded, and never on doubt.
// What happened is returned with the line to log: the front ends log it.
#pragma once

#include "config/config.hpp"
#include "controller/controller.hpp"
#include "drain/drain_result.hpp"
#include "drain/reason.hpp"
#include "kill/executor.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace leftover::drain {

// The report's survivors that got a SIGKILL and are still there now, read again as the
// scan reads a process (procfs/): the same process (start time) in `proc_root`, not a
// zombie by the scan's rule (a leader with live threads is alive), with the state it
// shows. A process that cannot be read is a lookup error: no answer, no drain.
Result<std::vector<Survivor>> survivors_after_sigkill(const KillReport& report, const std::string& proc_root);

// What a drain request came to: drained (with the reason), kept (the node's own state and
// reason), failed (why; the node stays as it is). `what` says who asks, e.g. "job 12 epilog".
DrainReport request_drain(controller::Controller* controller, const std::string& node_name, const std::string& reason,
                          std::chrono::steady_clock::time_point deadline, const std::string& what);

struct DrainContext {
    std::string label;      // the trigger's label, for the log
    std::string node_name;  // the node to drain
    bool step_end = false;  // a step end never drains: the job epilog follows
    std::string proc_root = "/proc";
};

// Drains when the config asks for it and the sweep ended, without an error and not dry,
// with processes that outlived SIGKILL. Survivors it cannot tell are a note, never a drain.
DrainOutcome drain_on_survivors(const Config& config, const DrainContext& context, const KillReport& report,
                                controller::Controller* controller);

}  // namespace leftover::drain

// SPDX-License-Identifier: GPL-2.0-or-later
// drain_on_survivors: a process that leftover's SIGKILL did not end drains the node through
// slurmctld when a later sweep finds it still alive (the same pid and start time, not
// exiting) UnkillableStepTimeout after that SIGKILL, as Slurm drains for its own steps: a
// process in uninterruptible sleep for a while (a large sync, the exit of a huge address
// space), which any user can cause, does not. The survivors wait in a record between sweeps
// (survivor_record.hpp); no sweep waits for them. Bounded, never on doubt; what happened
// is returned with the lines to log: the front ends log them.
#pragma once

#include "config/config.hpp"
#include "controller/controller.hpp"
#include "drain/drain_result.hpp"
#include "drain/reason.hpp"
#include "drain/survivor_record.hpp"
#include "kill/executor.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leftover::drain {

// One process that got leftover's SIGKILL and is still there, as /proc shows it now.
struct LiveSurvivor {
    pid_t pid = 0;
    std::uint64_t start_time = 0;
    Survivor shown;        // uid, user, state
    bool exiting = false;  // PF_EXITING: it is being ended; never a reason to drain
};

// The report's survivors that got a SIGKILL and are still there now, read again as the
// scan reads a process (procfs/): the same process (start time) in `proc_root`, not a
// zombie by the scan's rule (a leader with live threads is alive), with the state it
// shows. A process that cannot be read is a lookup error: no answer, no drain.
Result<std::vector<LiveSurvivor>> survivors_after_sigkill(const KillReport& report, const std::string& proc_root);

// What a drain request came to: drained (with the reason), kept (the node's own state and
// reason), failed (why; the node stays as it is). `what` says who asks, e.g. "job 12 epilog".
DrainReport request_drain(controller::Controller* controller, const std::string& node_name, const std::string& reason,
                          std::chrono::steady_clock::time_point deadline, const std::string& what);

struct DrainContext {
    std::string label;      // the trigger's label, for the log
    std::string node_name;  // the node to drain
    bool step_end = false;  // a step end never drains: the job epilog follows
    std::string proc_root = "/proc";
    RecordPlace record;  // where the survivors wait between sweeps (boot_id read from proc_root when empty)
    // UnkillableStepTimeout: how long after its SIGKILL a survivor must still be alive.
    std::chrono::seconds bound{60};
    std::optional<std::chrono::milliseconds> now;  // CLOCK_BOOTTIME; unset: the clock's
};

// After a job epilog's sweep or `leftover sweep` with drain_on_survivors, not dry and
// without an error: records what outlived this sweep's SIGKILL, keeps what earlier sweeps
// recorded while it lives, and drains the node for those alive `bound` after their
// SIGKILL. Survivors it cannot tell, or a record it cannot believe, are a note, never a drain.
DrainOutcome drain_on_survivors(const Config& config, const DrainContext& context, const KillReport& report,
                                controller::Controller* controller);

}  // namespace leftover::drain

// SPDX-License-Identifier: GPL-2.0-or-later
// Sweeps of one node take turns. The step ends and job epilogs of a job array's tasks,
// and `leftover sweep`, end up sweeping one node at once; two sweeps that stop, continue
// and signal the same processes undo each other's work (one's SIGCONT crosses the
// other's SIGSTOP) and spend their deadlines on it, so that none reaches SIGKILL. So a
// sweep whose first plan would signal takes the node's turn before its first signal: an
// flock on leftover-sweep-<node>.lock in the node's SlurmdSpoolDir (beside its
// survivors' record), held until its drain and cleanup are done. A later sweep waits for
// it, by its own deadline, and then plans afresh: it judges only what the first left. A
// sweep with nothing to signal (most step ends), a dry run and `leftover check` take
// none: reading /proc and the step sockets while another sweep signals is harmless, and
// a step end must not wait out another sweep's grace for nothing. Nor is the turn taken
// while a job is on its way onto the node: the executor waits that out first, so that
// the sweeps a burst of job starts holds up wait for it side by side.
// The turn is the executor's KillOptions::take_turn, called right before its first stop.
#pragma once

#include "errors/error.hpp"
#include "metrics/metrics.hpp"
#include "sweep/log.hpp"
#include "sweep/sweep_request.hpp"
#include "util/file_lock.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace leftover::sweep {

// leftover-sweep-<node>.lock in `spool_dir` (the node name as in the survivors' record).
std::string turn_lock_path(const std::string& spool_dir, const std::string& node_name);

// One sweep's turn on its node: held until release() or its end, on every way out.
class NodeTurn {
public:
    // Waits for the node's turn until `deadline`, trying every `poll`. A wait is logged
    // (info) when the turn comes. A lock file that cannot be opened or locked (no spool
    // dir, a read-only one, a file a user could hold) must not stop the node's sweeps:
    // the sweep goes on alone, and one warning says so.
    static NodeTurn take(const SweepRequest& request, std::chrono::steady_clock::time_point deadline, Logger& log,
                         std::chrono::milliseconds poll = std::chrono::milliseconds(10));

    SweepTurn outcome() const { return outcome_; }
    // Another sweep held the turn until the deadline: this one must signal nothing.
    bool missed() const { return outcome_ == SweepTurn::missed; }
    // Why a missed turn signalled nothing, for the report and the summary.
    Error missed_error() const;
    void release();

private:
    NodeTurn(std::optional<FileLock> lock, std::string path, SweepTurn outcome, std::chrono::duration<double> waited)
        : lock_(std::move(lock)), path_(std::move(path)), outcome_(outcome), waited_(waited) {}

    std::optional<FileLock> lock_;  // none when the sweep runs alone
    std::string path_;
    SweepTurn outcome_;
    std::chrono::duration<double> waited_;
};

}  // namespace leftover::sweep

// SPDX-License-Identifier: GPL-2.0-or-later
// `check --health --failures N [--drain]`: a failed check counts towards a streak kept in
// a file (state dir, /run/leftover by default: gone at reboot, like the strays it counted);
// a passed check clears it. Only the Nth failure in a row fails the health check, and
// with --drain drains the node with the health line as reason, where a sweep would reap
// its strays. An error fails the check at once and never drains.
#pragma once

#include "config/config.hpp"
#include "config/metrics_config.hpp"
#include "controller/controller.hpp"
#include "drain/drain_result.hpp"
#include "errors/result.hpp"
#include "sweep/log.hpp"

#include <optional>
#include <string>

namespace leftover::cli {

// The file under `state_dir` that holds the streak.
std::string streak_path(const std::string& state_dir);

// The failures in a row so far: 0 without a file. A file that is not one number, or a
// state dir that is not root's directory, is an error (the streak is then unknown).
Result<unsigned> read_streak(const std::string& state_dir);

// Writes the streak (0 removes the file), creating the state dir (0755) when missing.
Status write_streak(const std::string& state_dir, unsigned failures);

// What one check means for the streak and the health check.
struct HealthVerdict {
    unsigned streak = 0;  // after this check
    bool fails = false;   // the health check fails now (and --drain may drain)
    // A config or lookup error (or not a Slurm node): it says nothing of strays, so it
    // fails at once, leaves the streak as it was and never drains.
    bool error = false;
    std::string line;  // the line to print, with the streak when it matters
};

// `line`: format_check_health's line (with its newline); `status`: the check's exit status;
// `previous`: the streak before; `needed`: --failures.
HealthVerdict judge_health(const std::string& line, int status, unsigned previous, unsigned needed);

// Why a failing check must not drain: nothing reaps its strays (dry_run), or they are
// reaped only when their own user's job ends here (scope job_user), so their staying is
// no sign of a sick node. nullopt: a sweep would reap them, the drain may go ahead.
std::optional<std::string> why_not_drain(const Config& config);

// What --drain does at a failing check (not an error): asks slurmctld to drain the node
// with the health line as reason, bounded by slurm_timeout, logs what came of it and
// counts it in the metrics; or, where why_not_drain says so, logs once per streak (when
// it reaches --failures: `first`) that it did not drain.
struct HealthDrain {
    const Config& config;
    const std::optional<MetricsSettings>& metrics;
    controller::Controller* controller = nullptr;
    const std::string& node_name;
    const HealthVerdict& verdict;
    bool first = true;
};
std::optional<drain::DrainResult> drain_for_health(const HealthDrain& health, sweep::Logger& log);

}  // namespace leftover::cli

// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation's metrics: the sample taken from what the pipeline already has, and
// the update of the metrics file, whose every failure is a log line and nothing more.
#pragma once

#include "config/metrics_config.hpp"
#include "metrics/metrics.hpp"
#include "sweep/log.hpp"
#include "sweep/run_sweep.hpp"

#include <optional>

namespace leftover::sweep {

struct SampleInput {
    MetricsTrigger trigger = MetricsTrigger::sweep;
    const KillReport& report;
    bool dry_run = false;
    bool users = false;  // metrics_users: count kills per user name
    std::chrono::steady_clock::time_point started;
    std::optional<DrainResult> drain;  // when the sweep asked slurmctld to drain the node
    std::optional<SweepTurn> turn;     // how a sweep that would signal got its turn (sweep/turn.hpp)
    int answers_asked = 0;             // slurmctld's answers used (sweep/job_state_source.hpp)
    int answers_shared = 0;
};

// The failure counted is the report's error's source (or the deadline, when the
// evaluation stopped at it with no error).
EvaluationSample sample_of(const SampleInput& input);

// step, epilog or sweep, from what ended.
MetricsTrigger trigger_of(const Trigger& trigger);

// Adds the sample to the metrics file, when one is set. Logs why it could not, or that
// a file that was not ours was replaced; never fails anything else. Only root writes
// it: a user's `leftover check` leaves it alone.
// The lock beside the file is not waited for past `deadline`, the evaluation's.
void record_metrics(const std::optional<MetricsSettings>& settings, const EvaluationSample& sample, Logger& log,
                    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// Counts one drain request on its own, after the evaluation that led to it was counted.
void record_drain(const std::optional<MetricsSettings>& settings, DrainResult result, Logger& log);

}  // namespace leftover::sweep

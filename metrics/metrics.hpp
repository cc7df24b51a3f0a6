// SPDX-License-Identifier: GPL-2.0-or-later
// What leftover did, as Prometheus counters and gauges: one evaluation's sample, the
// totals kept in the metrics file, and that file's text (node_exporter's textfile
// collector reads it). Only our own text is parsed back; anything else is not ours.
#pragma once

#include "drain/drain_result.hpp"
#include "errors/error.hpp"
#include "errors/result.hpp"
#include "policy/decision.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace leftover {

// What started an evaluation: a step's end, a job's epilog, `leftover sweep`, `leftover check`.
enum class MetricsTrigger { step, epilog, sweep, check };

// How a sweep whose first plan would signal got its turn on the node (sweeps of one node
// take turns, sweep/turn.hpp): the label of leftover_sweep_turns_total. free: no other
// sweep held it; waited: after another sweep of the node; missed: another held it until
// this sweep's deadline, so nothing was signalled; alone: the lock file could not be
// used, so the sweep ran without taking turns.
enum class SweepTurn { free, waited, missed, alone };

// What a drain request came to: the label of leftover_node_drains_total.
using drain::DrainResult;

// One evaluation, as run_sweep saw it. Counts only: no pids, no names unless users.
struct EvaluationSample {
    MetricsTrigger trigger = MetricsTrigger::sweep;
    std::uint64_t killed_sigterm = 0;  // processes whose last signal was SIGTERM
    std::uint64_t killed_sigkill = 0;  // processes that needed (or got only) SIGKILL
    std::map<Reason, std::uint64_t> kept;
    std::uint64_t users_swept = 0;       // users whose strays were signalled
    std::uint64_t survivors = 0;         // strays left after a real (not dry) sweep
    std::optional<ErrorSource> failure;  // what the evaluation could not learn: see failure_label
    std::uint64_t strays_found = 0;      // the first plan's kills (also in a dry run and a check)
    double timestamp_seconds = 0;        // wall clock at the end, seconds since the epoch
    double duration_seconds = 0;
    std::map<std::string, std::uint64_t> killed_by_user;  // only with metrics_users: true
    std::optional<DrainResult> drain;                     // when this evaluation asked for a drain
    std::optional<SweepTurn> turn;                        // a sweep that would signal (not a dry run nor a check)
    std::uint64_t answers_asked = 0;                      // slurmctld questions the evaluation asked itself
    std::uint64_t answers_shared = 0;                     // answers of another sweep of the node it took instead
    // false: no evaluation, only a drain to count (check --health --drain, whose check
    // was counted already): every other field is ignored.
    bool evaluation = true;
};

// The counters since the file was created and the last evaluation's gauges. Every
// fixed label value is present from the start (at 0), so rate() works from the first
// scrape and a dashboard never shows "no data" for a reason that did not occur yet.
class Metrics {
public:
    Metrics();

    void add(const EvaluationSample& sample);

    // The value of one series; label_value empty for a family without a label.
    double value(std::string_view family, std::string_view label_value = {}) const;

    // Prometheus text exposition format, with # HELP and # TYPE lines. Per-user
    // series only when `users` (metrics_users: true): otherwise no name appears.
    std::string render(bool users) const;

    // Our own text back. Anything else — an unknown metric, label or value, a line
    // that is not ours, a negative or non-numeric count — is an error saying where.
    static Result<Metrics> parse(std::string_view text);

    // family -> label value -> value; the label value is empty for a family without one.
    using Series = std::map<std::string, std::map<std::string, double>>;
    const Series& series() const { return series_; }

private:
    Series series_;
};

const char* to_string(MetricsTrigger trigger);
// The label of leftover_lookup_errors_total for an error from `source`, one of 7 fixed
// words. `other` has none of its own: it counts as proc, the scan of /proc being what
// an evaluation reads besides the sources named.
const char* failure_label(ErrorSource source);
const char* to_string(DrainResult result);
const char* to_string(SweepTurn turn);

}  // namespace leftover

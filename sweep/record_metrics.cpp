// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/record_metrics.hpp"

#include "metrics/metrics_file.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <csignal>
#include <map>
#include <set>

namespace leftover::sweep {

MetricsTrigger trigger_of(const Trigger& trigger) {
    if (trigger.ending_step) return MetricsTrigger::step;
    if (trigger.job_ending) return MetricsTrigger::epilog;
    return MetricsTrigger::sweep;
}

EvaluationSample sample_of(const SampleInput& in) {
    EvaluationSample sample;
    sample.trigger = in.trigger;
    sample.drain = in.drain;
    sample.turn = in.turn;
    sample.answers_asked = static_cast<std::uint64_t>(in.answers_asked);
    sample.answers_shared = static_cast<std::uint64_t>(in.answers_shared);
    const KillReport& report = in.report;
    if (report.error)
        sample.failure = report.error->source;
    else if (report.deadline_reached)
        sample.failure = ErrorSource::deadline;
    // Each process once, under the last signal it got (SIGTERM, then SIGKILL if it lived on).
    std::map<pid_t, const KillRecord*> last_signal;
    for (const KillRecord& record : report.actions)
        if (record.outcome == Outcome::signalled) last_signal[record.pid] = &record;
    std::set<std::string> users;
    for (const auto& [pid, record] : last_signal) {
        ++(record->signal == SIGKILL ? sample.killed_sigkill : sample.killed_sigterm);
        const std::string user = record->user.empty() ? fmt::format("uid {}", record->uid) : record->user;
        users.insert(user);
        if (in.users) ++sample.killed_by_user[user];
    }
    sample.users_swept = users.size();
    for (const auto& [reason, count] : report.first_plan.count_by_reason())
        if (reason != Reason::stray) sample.kept[reason] = count;
    sample.strays_found = report.first_plan.kills().size();
    sample.survivors = in.dry_run ? 0 : report.survivors.size();
    sample.timestamp_seconds =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    sample.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - in.started).count();
    return sample;
}

void record_metrics(const std::optional<MetricsSettings>& settings, const EvaluationSample& sample, Logger& log,
                    std::chrono::steady_clock::time_point deadline) {
    if (!settings) return;
    if (::geteuid() != 0) {
        log.debug(fmt::format("metrics file {} left alone: only root updates it", settings->file));
        return;
    }
    const auto updated =
        update_metrics_file(settings->file, sample, MetricsFileOptions{.users = settings->users, .deadline = deadline});
    if (!updated.ok()) {
        log.warn(fmt::format("metrics not written: {}", updated.error().message));
        return;
    }
    if (!updated->replaced_because.empty())
        log.warn(fmt::format("metrics file {} was not leftover's ({}): replaced, its counters start again",
                             settings->file, updated->replaced_because));
}

void record_drain(const std::optional<MetricsSettings>& settings, DrainResult result, Logger& log) {
    EvaluationSample sample;
    sample.evaluation = false;
    sample.drain = result;
    record_metrics(settings, sample, log);
}

}  // namespace leftover::sweep

// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation's sample, taken from the kill report the pipeline already has.
#include "support/plans.hpp"
#include "sweep/record_metrics.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using leftover::test::decision_for;
using namespace leftover::sweep;

namespace {

KillRecord action(pid_t pid, int signal, Outcome outcome, std::string user = "lo_alice") {
    KillRecord record;
    record.pid = pid;
    record.uid = 41001;
    record.user = std::move(user);
    record.signal = signal;
    record.outcome = outcome;
    return record;
}

Decision decision(pid_t pid, Verdict verdict, Reason reason) { return decision_for(pid, 0, verdict, reason); }

SampleInput input(const KillReport& report, bool dry_run, bool users) {
    return {MetricsTrigger::epilog, report, dry_run, users, {}, std::nullopt, std::nullopt};
}

}  // namespace

TEST_CASE("metrics sample: each process once, under the last signal it got, and kept by reason") {
    KillReport report;
    report.first_plan.decisions = {
        decision(1, Verdict::keep, Reason::init), decision(300, Verdict::kill, Reason::stray),
        decision(301, Verdict::kill, Reason::stray), decision(302, Verdict::kill, Reason::stray),
        decision(400, Verdict::keep, Reason::has_live_job)};
    report.actions = {action(300, SIGTERM, Outcome::signalled), action(301, SIGTERM, Outcome::signalled),
                      action(302, SIGTERM, Outcome::gone), action(301, SIGKILL, Outcome::signalled),
                      action(303, SIGKILL, Outcome::pid_reused, "lo_bob")};
    const auto sample = sample_of(input(report, false, true));
    CHECK(sample.trigger == MetricsTrigger::epilog);
    CHECK(sample.killed_sigterm == 1);
    CHECK(sample.killed_sigkill == 1);
    CHECK(sample.users_swept == 1);
    CHECK(sample.strays_found == 3);
    CHECK(sample.kept == std::map<Reason, std::uint64_t>{{Reason::init, 1}, {Reason::has_live_job, 1}});
    CHECK(sample.killed_by_user == std::map<std::string, std::uint64_t>{{"lo_alice", 2}});
    CHECK_FALSE(sample.failure);
    CHECK(sample.timestamp_seconds > 1.7e9);
    CHECK(sample_of(input(report, false, false)).killed_by_user.empty());
}

TEST_CASE("metrics sample: a failed evaluation counts its error's source, or the deadline it stopped at") {
    KillReport report;
    CHECK_FALSE(sample_of(input(report, false, false)).failure);
    report.deadline_reached = true;
    CHECK(sample_of(input(report, false, false)).failure == ErrorSource::deadline);
    report.error = Error::lookup("slurmstepd socket x: timed out", ErrorSource::step_socket);
    CHECK(sample_of(input(report, false, false)).failure == ErrorSource::step_socket);
}

TEST_CASE("metrics sample: a dry run signals nothing and leaves no survivors to count") {
    KillReport report;
    report.first_plan.decisions = {decision(300, Verdict::kill, Reason::stray)};
    report.actions = {action(300, SIGTERM, Outcome::dry_run)};
    report.survivors = {decision(300, Verdict::kill, Reason::stray)};
    const auto dry = sample_of(input(report, true, false));
    CHECK(dry.killed_sigterm + dry.killed_sigkill == 0);
    CHECK(dry.users_swept == 0);
    CHECK(dry.survivors == 0);
    CHECK(dry.strays_found == 1);
    CHECK(sample_of(input(report, false, false)).survivors == 1);
}

TEST_CASE("metrics sample: the trigger of a step end, a job epilog and a node sweep") {
    Trigger trigger;
    CHECK(trigger_of(trigger) == MetricsTrigger::sweep);
    trigger.job_ending = true;
    CHECK(trigger_of(trigger) == MetricsTrigger::epilog);
    trigger.job_ending = false;
    trigger.ending_step = steps::StepId{7, 0};
    CHECK(trigger_of(trigger) == MetricsTrigger::step);
}

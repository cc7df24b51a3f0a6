// SPDX-License-Identifier: GPL-2.0-or-later
// The words the plugin and the command log: one line per action, one summary per sweep.
#include "support/plans.hpp"
#include "sweep/report.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <csignal>
#include <string>

using namespace leftover;
using namespace leftover::sweep;
using leftover::test::decision_for;

namespace {

KillRecord stray_sleep(Outcome outcome, int signal = SIGTERM) {
    return {.pid = 123,
            .uid = 41001,
            .user = "alice",
            .comm = "sleep",
            .signal = signal,
            .reason = Reason::stray,
            .detail = "no live work on this node",
            .outcome = outcome};
}

Decision decided(pid_t pid, Reason reason, Verdict verdict = Verdict::keep) {
    return decision_for(pid, 0, verdict, reason);
}

}  // namespace

TEST_CASE("report: one line per action, saying who, which signal and why") {
    CHECK(format_action(stray_sleep(Outcome::signalled)) ==
          "SIGTERM pid=123 user=alice uid=41001 comm='sleep' reason=stray (no live work on this node)");
    CHECK(format_action(stray_sleep(Outcome::dry_run)) ==
          "would kill pid=123 user=alice uid=41001 comm='sleep' reason=stray (no live work on this node) (dry run)");
    CHECK(format_action(stray_sleep(Outcome::gone, SIGKILL)) ==
          "SIGKILL not needed: pid=123 user=alice uid=41001 comm='sleep' already exited");
    CHECK(format_action(stray_sleep(Outcome::pid_reused)) == "SIGTERM not sent: pid 123 now names another process");
    CHECK(format_action(stray_sleep(Outcome::permission_denied, SIGKILL)) ==
          "SIGKILL failed: pid=123 user=alice uid=41001 comm='sleep': permission denied");
    KillRecord failed = stray_sleep(Outcome::failed);
    failed.error = EIO;
    CHECK(format_action(failed) == "SIGTERM failed: pid=123 user=alice uid=41001 comm='sleep': Input/output error");
}

TEST_CASE("report: an unknown user is a question mark, a reason without detail stands alone") {
    KillRecord record = stray_sleep(Outcome::signalled, SIGKILL);
    record.user.clear();
    record.detail.clear();
    CHECK(format_action(record) == "SIGKILL pid=123 user=? uid=41001 comm='sleep' reason=stray");
    CHECK(signal_name(SIGTERM) == "SIGTERM");
    CHECK(signal_name(SIGKILL) == "SIGKILL");
    CHECK(signal_name(SIGHUP) == "signal 1");
}

TEST_CASE("report: the summary names the trigger, the users swept, what was kept and why") {
    KillReport report;
    report.first_plan.decisions = {decided(1, Reason::init), decided(50, Reason::protected_owner),
                                   decided(51, Reason::protected_owner), decided(60, Reason::has_live_job),
                                   decided(123, Reason::stray, Verdict::kill)};
    report.actions = {stray_sleep(Outcome::signalled), stray_sleep(Outcome::signalled, SIGKILL)};  // one pid, twice
    KillRecord nameless = stray_sleep(Outcome::signalled);
    nameless.pid = 124;
    nameless.uid = 41009;
    nameless.user.clear();
    report.actions.push_back(nameless);
    report.actions.push_back(stray_sleep(Outcome::gone));  // not a kill of its own
    const SummaryInput input{"job 12 step 0", 41001, "alice", false, 3.14};
    CHECK(format_summary(input, report) ==
          "job 12 step 0 (user alice uid 41001): swept [alice, uid 41009]; killed 2; "
          "kept 4 (init 1, protected_owner 2, has_live_job 1); survivors 0; lookup errors 0; 3.1 ms");
}

TEST_CASE("report: the summary of a dry run, an error, survivors and a deadline") {
    KillReport report;
    report.actions = {stray_sleep(Outcome::dry_run)};
    report.survivors = {decided(123, Reason::stray, Verdict::kill)};
    const SummaryInput dry{"node sweep", std::nullopt, "", true, 0};
    CHECK(format_summary(dry, report) ==
          "node sweep: dry run: swept [alice]; would kill 1; kept 0; survivors 1; lookup errors 0; 0.0 ms");

    KillReport failed;
    failed.error = Error::lookup("slurmstepd did not answer", ErrorSource::step_socket);
    failed.deadline_reached = true;
    const SummaryInput epilog{"job 12 epilog", 41001, "", false, 12.34};
    CHECK(format_summary(epilog, failed) ==
          "job 12 epilog (user ? uid 41001): swept []; killed 0; kept 0; survivors 0; lookup errors 1; 12.3 ms; "
          "deadline reached");
}

TEST_CASE("report: stopping and continuing are lines of their own and kill nobody") {
    CHECK(format_action(stray_sleep(Outcome::signalled, SIGSTOP)) ==
          "SIGSTOP pid=123 user=alice uid=41001 comm='sleep' reason=stray (no live work on this node)");
    KillRecord released = stray_sleep(Outcome::signalled, SIGCONT);
    released.reason = Reason::has_live_job;
    released.detail.clear();
    CHECK(format_action(released) == "SIGCONT pid=123 user=alice uid=41001 comm='sleep' reason=has_live_job");
    CHECK(format_action(stray_sleep(Outcome::deadline, SIGKILL)) ==
          "SIGKILL not sent: pid=123 user=alice uid=41001 comm='sleep': the deadline passed");
    KillRecord not_stopped = stray_sleep(Outcome::not_stopped, SIGSTOP);
    not_stopped.detail = "stopped already";
    CHECK(format_action(not_stopped) == "SIGSTOP not sent: pid=123 user=alice uid=41001 comm='sleep': stopped already");

    KillReport report;
    report.first_plan.decisions = {decided(123, Reason::stray, Verdict::kill)};
    report.actions = {stray_sleep(Outcome::signalled, SIGSTOP), released};
    const SummaryInput input{"job 12 epilog", 41001, "alice", false, 1.0};
    CHECK(format_summary(input, report).starts_with("job 12 epilog (user alice uid 41001): swept []; killed 0; "));
}

TEST_CASE("report: cleanup lines escape paths, and the summary adds counts and bytes after the old fields") {
    CleanupRecord file(ObjectKind::file, "/tmp/x'\n\xff", 41001, 3);
    CHECK(format_cleanup_record(file) == "removed file path='/tmp/x\\x27\\x0a\\xff' uid=41001 bytes=3");
    file.outcome = CleanupOutcome::would_remove;
    CHECK(format_cleanup_record(file) == "would remove file path='/tmp/x\\x27\\x0a\\xff' uid=41001 bytes=3 (dry run)");
    CleanupRecord segment(ObjectKind::shm_segment, "32769", 41001, 4096, CleanupOutcome::failed);
    segment.error = EPERM;
    CHECK(format_cleanup_record(segment) ==
          "removing shm id=32769 uid=41001 bytes=4096 failed: Operation not permitted");
    CleanupRecord changed(ObjectKind::semaphore, "7", 41001, 0, CleanupOutcome::changed);
    changed.detail = "owner now uid 0 (creator 41001)";
    CHECK(format_cleanup_record(changed) == "not removed: sem id=7 uid=41001 bytes=0: owner now uid 0 (creator 41001)");

    CHECK(format_bytes(512) == "512 B");
    CHECK(format_bytes(1288490188) == "1.2 GiB");
    const CleanupTotals totals{3, 2, 1288490188, 0, true};
    const SummaryInput input{"job 12 epilog", 41001, "alice", false, 1.0};
    CHECK(format_summary(input, KillReport{}, totals) ==
          "job 12 epilog (user alice uid 41001): swept []; killed 0; kept 0; survivors 0; lookup errors 0; 1.0 ms; "
          "cleanup: would remove 3 IPC objects, 2 files, 1.2 GiB");
    CHECK(format_summary(input, KillReport{}) ==
          "job 12 epilog (user alice uid 41001): swept []; killed 0; kept 0; survivors 0; lookup errors 0; 1.0 ms");
}

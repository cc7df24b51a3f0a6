// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor against real processes. Every test uses a uid of its own, scope
// job_user and an account database that knows only that uid (support/sweeper.hpp), so
// tests running in parallel (and anything else on the machine) can never be touched.
#include "evaluation.hpp"
#include "executor.hpp"
#include "support/fake_accounts.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <thread>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

TEST_CASE("sweep: a user's strays, a double-forked setsid daemon among them, are gone, and a dry run leaves them") {
    Sweeper sweeper(41101);
    SharedDir dir;
    const pid_t plain = spawn_as(41101, {"sleep", "1000"});
    spawn_as(41101, {"sh", "-c", "setsid sh -c 'echo $$ > " + (dir / "daemon.pid") + "; exec sleep 1000' &"});
    const pid_t daemon = wait_pid_file(dir / "daemon.pid");
    REQUIRE(daemon > 0);

    // Without a real sweep they live on.
    const KillReport dry = sweeper.run(2000ms, true);
    CHECK(action_for(dry, plain, SIGTERM) != nullptr);
    CHECK(action_for(dry, plain, SIGTERM)->outcome == Outcome::dry_run);
    CHECK(is_running(plain));
    CHECK(is_running(daemon));

    const KillReport report = sweeper.run();
    CHECK(wait_gone(plain));
    CHECK(wait_gone(daemon));
    REQUIRE(action_for(report, daemon, SIGTERM) != nullptr);
    CHECK(action_for(report, daemon, SIGTERM)->outcome == Outcome::signalled);
    CHECK(action_for(report, daemon, SIGTERM)->reason == Reason::stray);
    CHECK(action_for(report, daemon, SIGTERM)->user == "stray.user");
    CHECK(report.survivors.empty());
    CHECK_FALSE(report.error);
}

TEST_CASE("sweep: a process that ignores SIGTERM dies by SIGKILL after grace") {
    Sweeper sweeper(41102);
    SharedDir dir;
    const pid_t stubborn = spawn_stubborn(41102, dir);
    REQUIRE(is_running(stubborn));
    const KillReport report = sweeper.run(300ms);
    CHECK(wait_gone(stubborn));
    CHECK(action_for(report, stubborn, SIGTERM) != nullptr);
    REQUIRE(action_for(report, stubborn, SIGKILL) != nullptr);
    CHECK(action_for(report, stubborn, SIGKILL)->outcome == Outcome::signalled);
    CHECK(report.survivors.empty());
}

TEST_CASE("sweep: grace 0 sends SIGKILL at once") {
    Sweeper sweeper(41103);
    const pid_t stray = spawn_as(41103, {"sleep", "1000"});
    const KillReport report = sweeper.run(0ms);
    CHECK(wait_gone(stray));
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(action_for(report, stray, SIGKILL) != nullptr);
}

TEST_CASE("sweep: a stray that keeps forking converges to none left") {
    Sweeper sweeper(41104);
    SharedDir dir;
    REQUIRE(spawn_stubborn(41104, dir, "while :; do sleep 1000 & sleep 0.01; done") > 0);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    std::size_t seen = 0;
    while ((seen = processes_of(41104).size()) < 10 && std::chrono::steady_clock::now() < deadline) ::usleep(10000);
    REQUIRE(seen >= 10);
    const KillReport report = sweeper.run(200ms);
    CHECK(report.survivors.empty());
    CHECK(processes_of(41104).empty());
}

TEST_CASE("sweep: a protected user's processes and a mixed-uid process survive") {
    Sweeper sweeper(41105, "op.erator");
    sweeper.config.protected_users = {"op.erator"};
    const pid_t protected_process = spawn_as(41105, {"sleep", "1000"});
    const KillReport report = sweeper.run(200ms);
    CHECK(report.actions.empty());
    CHECK(is_running(protected_process));

    Sweeper mixed_sweeper(41106);
    // A root daemon that switched its effective uid (execve resets the saved uid to the
    // effective one, so the real uid is what stays different).
    const pid_t mixed = mixed_sweeper.spawned.emplace_back(spawn_with_uids(0, 41106, 41106, {"sleep", "1000"}));
    const KillReport mixed_report = mixed_sweeper.run(200ms);
    CHECK(mixed_report.actions.empty());
    CHECK(is_running(mixed));
    // euid != ruid makes a process non-dumpable, so /proc shows it as root's: kept either
    // as not inspected or, when it is inspected, as mixed uids (decision_test covers that).
    bool kept = false;
    for (const Decision& d : mixed_report.first_plan.decisions)
        if (d.pid == mixed)
            kept =
                d.verdict == Verdict::keep && (d.reason == Reason::mixed_uids || d.reason == Reason::protected_owner);
    CHECK(kept);
}

TEST_CASE("sweep: a child of a slurmstepd survives, a child of a process merely named slurmstepd does not") {
    Sweeper sweeper(41107);
    SharedDir dir;
    // A stand-in slurmstepd: root, and its executable is named slurmstepd.
    std::filesystem::copy_file("/bin/sh", dir / "slurmstepd");
    ::chmod((dir / "slurmstepd").c_str(), 0755);
    const std::string child = "setpriv --reuid=41107 --regid=41107 --clear-groups sleep 1000 & echo $! > ";
    const pid_t stepd =
        sweeper.spawned.emplace_back(spawn_as(0, {dir / "slurmstepd", "-c", child + (dir / "in-step.pid") + "; wait"}));
    const pid_t in_step = wait_pid_file(dir / "in-step.pid");
    // An impostor: root, with comm set to slurmstepd (any user can set comm).
    sweeper.spawned.push_back(
        spawn_as(0, {"sh", "-c", "printf slurmstepd > /proc/$$/comm; " + child + (dir / "impostor.pid") + "; wait"}));
    const pid_t under_impostor = wait_pid_file(dir / "impostor.pid");
    REQUIRE(in_step > 0);
    REQUIRE(under_impostor > 0);
    // Each pid file is written at fork; setpriv runs as root until it execs sleep.
    REQUIRE(wait_owner(in_step, 41107));
    REQUIRE(wait_owner(under_impostor, 41107));

    const KillReport report = sweeper.run(200ms);
    CHECK(wait_gone(under_impostor));
    CHECK(is_running(in_step));
    for (const Decision& d : report.first_plan.decisions)
        if (d.pid == in_step) {
            CHECK(d.reason == Reason::inside_live_step);
            CHECK(d.detail == "slurmstepd " + std::to_string(stepd));
        }
}

TEST_CASE("sweep: a job of the same user that starts during grace keeps its processes") {
    Sweeper sweeper(41108);
    bool terminated = false;
    sweeper.observer.on_action = [&terminated](const KillRecord& r) {
        if (r.signal == SIGTERM && r.outcome == Outcome::signalled) terminated = true;
    };
    sweeper.job_state = [&terminated] {
        LiveWork live;
        if (terminated) live.uids.insert(41108);  // the new job appears after SIGTERM
        return Result<LiveWork>(live);
    };
    SharedDir dir;
    const pid_t stubborn = spawn_stubborn(41108, dir);
    REQUIRE(is_running(stubborn));
    const KillReport report = sweeper.run(300ms);
    CHECK(action_for(report, stubborn, SIGTERM) != nullptr);
    CHECK(action_for(report, stubborn, SIGKILL) == nullptr);
    CHECK(is_running(stubborn));
}

TEST_CASE(
    "issue 13 case 2: a user slurmctld cleared before SIGTERM but holding an allocation by SIGKILL keeps the process") {
    Sweeper sweeper(41113);
    bool terminated = false;
    sweeper.observer.on_action = [&terminated](const KillRecord& r) {
        if (r.signal == SIGTERM && r.outcome == Outcome::signalled) terminated = true;
    };
    int asked = 0;
    // No PrologFlags=contain: a multi-node job of the user lands here during grace.
    sweeper.allocation_check = [&](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
        ++asked;
        return terminated ? uids : std::set<uid_t>{};
    };
    SharedDir dir;
    const pid_t stubborn = spawn_stubborn(41113, dir);
    REQUIRE(is_running(stubborn));
    const KillReport report = sweeper.run(300ms);
    REQUIRE(action_for(report, stubborn, SIGTERM) != nullptr);
    CHECK(action_for(report, stubborn, SIGTERM)->outcome == Outcome::signalled);
    CHECK(action_for(report, stubborn, SIGKILL) == nullptr);
    CHECK(asked >= 2);
    CHECK(is_running(stubborn));
    CHECK(report.survivors.empty());
    REQUIRE(sweeper.last_plan);
    CHECK(reason_of(*sweeper.last_plan, stubborn) == Reason::has_live_job);
}

TEST_CASE("sweep: a lookup error kills nothing") {
    Sweeper sweeper(41109);
    sweeper.job_state = [] { return Result<LiveWork>(Error::lookup("slurmstepd did not answer")); };
    const pid_t stray = spawn_as(41109, {"sleep", "1000"});
    const KillReport report = sweeper.run(0ms);
    REQUIRE(report.error);
    CHECK(report.error->message == "slurmstepd did not answer");
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
}

namespace {

// Faults through the one system-call seam.
class FaultyCalls : public SystemCalls {
public:
    int open_error = 0;             // pidfd_open fails with it
    int signal_error = 0;           // pidfd_send_signal fails with it
    std::set<int> failing_signals;  // with signal_error: only these fail (empty: every one)
    bool identity_shifted = false;
    bool identity_gone = false;
    bool swallow_signals = false;  // pretend to signal, send nothing
    int signals_sent = 0;
    std::function<void(int signal)> before_signal;  // e.g. a signal that takes long

    int pidfd_open(pid_t pid) override { return open_error ? -open_error : SystemCalls::pidfd_open(pid); }
    int pidfd_send_signal(int pidfd, int signal) override {
        if (before_signal) before_signal(signal);
        if (signal_error && (failing_signals.empty() || failing_signals.count(signal) != 0)) return -signal_error;
        if (swallow_signals) return 0;
        ++signals_sent;
        return SystemCalls::pidfd_send_signal(pidfd, signal);
    }
    std::optional<Identity> read_identity(const std::string& root, pid_t pid) override {
        if (identity_gone) return std::nullopt;
        auto identity = SystemCalls::read_identity(root, pid);
        if (identity && identity_shifted) identity->start_time += 1;  // as if the pid now named another process
        return identity;
    }
};

Outcome only_outcome(const KillReport& report) {
    REQUIRE_FALSE(report.actions.empty());
    for (const KillRecord& r : report.actions) CHECK(r.outcome == report.actions.front().outcome);
    return report.actions.front().outcome;
}

}  // namespace

TEST_CASE("sweep: a pid that names another process by signal time is never signalled") {
    Sweeper sweeper(41110);
    const pid_t target = spawn_as(41110, {"sleep", "1000"});
    FaultyCalls calls;
    calls.identity_shifted = true;
    const KillReport report = sweeper.run(0ms, false, calls, 3s);
    CHECK(only_outcome(report) == Outcome::pid_reused);
    CHECK(calls.signals_sent == 0);
    CHECK(is_running(target));
}

TEST_CASE("sweep: injected faults are reported, never fatal") {
    Sweeper sweeper(41111);
    const pid_t target = spawn_as(41111, {"sleep", "1000"});
    FaultyCalls calls;
    SUBCASE("pidfd_open EPERM") {
        calls.open_error = EPERM;
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::permission_denied);
    }
    SUBCASE("pidfd_send_signal EPERM") {
        calls.signal_error = EPERM;
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::permission_denied);
    }
    SUBCASE("pidfd_send_signal EIO") {
        calls.signal_error = EIO;
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::failed);
    }
    SUBCASE("ESRCH is success") {
        calls.signal_error = ESRCH;
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::gone);
    }
    SUBCASE("identity unreadable after pinning") {
        calls.identity_gone = true;
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::gone);
    }
    CHECK(is_running(target));
}

TEST_CASE("sweep: a target that never dies ends the sweep at its budget with a survivor") {
    Sweeper sweeper(41112);
    const pid_t target = spawn_as(41112, {"sleep", "1000"});
    FaultyCalls calls;
    calls.swallow_signals = true;
    const auto started = std::chrono::steady_clock::now();
    const KillReport report = sweeper.run(100ms, false, calls, 1500ms);
    CHECK(std::chrono::steady_clock::now() - started < 15s);  // hang detector only
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == target);
    CHECK(is_running(target));
}

TEST_CASE("issue 13 case 6: an evaluation that returns after the deadline sends no signal at all") {
    Sweeper sweeper(41114);
    const pid_t stray = spawn_as(41114, {"sleep", "1000"});
    // The first evaluation's job-state read ends only after the deadline.
    sweeper.job_state = [&sweeper] {
        std::this_thread::sleep_until(sweeper.deadline + 20ms);
        return Result<LiveWork>(LiveWork{});
    };
    FaultyCalls calls;
    const KillReport report = sweeper.run(2000ms, false, calls, 300ms);
    CHECK(calls.signals_sent == 0);
    CHECK(report.actions.empty());
    CHECK(report.deadline_reached);
    CHECK(report.evaluations == 1);
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == stray);
    CHECK(is_running(stray));
}

TEST_CASE("issue 13 case 6: a deadline that passes midway through a long target list stops the signals there") {
    Sweeper sweeper(41115);
    std::vector<pid_t> strays;
    for (int i = 0; i < 6; ++i) strays.push_back(spawn_as(41115, {"sleep", "1000"}));
    FaultyCalls calls;
    int kills = 0;
    // The second SIGKILL takes until the deadline.
    calls.before_signal = [&](int signal) {
        if (signal == SIGKILL && ++kills == 2) std::this_thread::sleep_until(sweeper.deadline);
    };
    KillReport report;
    SUBCASE("without stopping first") {
        sweeper.freeze_rounds = 0;
        report = sweeper.run(0ms, false, calls, 2s);
        CHECK(calls.signals_sent == 2);
        CHECK(report.evaluations == 1);
    }
    SUBCASE("stopped first: what was not killed runs again") {
        report = sweeper.run(0ms, false, calls, 2s);
        CHECK(report.evaluations == 2);  // before SIGSTOP, and after it
    }
    INFO(format_actions(report));
    CHECK(report.deadline_reached);
    std::size_t not_sent = 0;
    for (const pid_t pid : strays) {
        const KillRecord* kill = action_for(report, pid, SIGKILL);
        REQUIRE(kill != nullptr);
        if (kill->outcome == Outcome::signalled) {
            CHECK(wait_gone(pid));
            continue;
        }
        ++not_sent;
        CHECK(kill->outcome == Outcome::deadline);
        CHECK(kill->reason == Reason::stray);
        CHECK(is_running(pid));
        CHECK(wait_not_stopped(pid));  // never left stopped
        CHECK(std::ranges::count_if(report.survivors, [pid](const Decision& d) { return d.pid == pid; }) == 1);
    }
    CHECK(not_sent == 4);
}

TEST_CASE("issue 13 case 6: the grace wait ends at the deadline") {
    Sweeper sweeper(41116);
    SharedDir dir;
    const pid_t stubborn = spawn_stubborn(41116, dir);
    const auto started = std::chrono::steady_clock::now();
    const KillReport report = sweeper.run(20000ms, false, real_system_calls(), 500ms);
    CHECK(std::chrono::steady_clock::now() - started < 10s);  // hang detector only: grace is 20 s
    CHECK(action_for(report, stubborn, SIGTERM) != nullptr);
    CHECK(action_for(report, stubborn, SIGKILL) == nullptr);
    CHECK(report.deadline_reached);
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == stubborn);
    CHECK(wait_not_stopped(stubborn));
}

TEST_CASE("issue 13 case 10: a stopped process that no signal could kill runs again when the sweep returns") {
    Sweeper sweeper(41122);
    const pid_t target = spawn_as(41122, {"sleep", "1000"});
    FaultyCalls calls;
    calls.signal_error = EPERM;
    calls.failing_signals = {SIGTERM, SIGKILL};
    const KillReport report = sweeper.run(100ms, false, calls, 5s);
    INFO(format_actions(report));
    REQUIRE(action_for(report, target, SIGSTOP) != nullptr);
    CHECK(action_for(report, target, SIGTERM)->outcome == Outcome::permission_denied);
    REQUIRE_FALSE(report.actions.empty());
    const KillRecord& last = report.actions.back();
    CHECK(last.pid == target);
    CHECK(last.signal == SIGCONT);
    CHECK(last.outcome == Outcome::signalled);
    CHECK(last.detail == "not killed: the sweep ended before its kill");
    CHECK(is_running(target));
    CHECK(wait_not_stopped(target));
    REQUIRE(report.survivors.size() == 1);
}

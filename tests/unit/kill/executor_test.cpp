// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor against real processes. Every test uses a uid of its own, scope
// job_user and an account database that knows only that uid (support/sweeper.hpp), so
// tests running in parallel (and anything else on the machine) can never be touched.
#include "kill/executor.hpp"
#include "policy/evaluation.hpp"
#include "support/fake_accounts.hpp"
#include "support/plans.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <set>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

TEST_CASE("executor: a user's strays, a double-forked setsid daemon among them, are gone, and a dry run leaves them") {
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

TEST_CASE("executor: a process that ignores SIGTERM dies by SIGKILL after grace") {
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

TEST_CASE("executor: a grace longer than the time left ends in time for the look before SIGKILL") {
    Sweeper sweeper(41144);
    sweeper.replan_time = 1000ms;
    SharedDir dir;
    const pid_t stubborn = spawn_stubborn(41144, dir);
    REQUIRE(is_running(stubborn));
    // 5 s of grace in a sweep with 2.5 s left: a grace that ran its course would meet
    // the deadline, and the stray would outlive the sweep.
    const KillReport report = sweeper.run(5000ms, false, real_system_calls(), 2500ms);
    CHECK(wait_gone(stubborn));
    REQUIRE(action_for(report, stubborn, SIGKILL) != nullptr);
    CHECK(action_for(report, stubborn, SIGKILL)->outcome == Outcome::signalled);
    CHECK(report.survivors.empty());
    CHECK_FALSE(report.deadline_reached);
    CHECK_FALSE(report.error);
}

TEST_CASE("executor: grace 0 sends SIGKILL at once") {
    Sweeper sweeper(41103);
    const pid_t stray = spawn_as(41103, {"sleep", "1000"});
    const KillReport report = sweeper.run(0ms);
    CHECK(wait_gone(stray));
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(action_for(report, stray, SIGKILL) != nullptr);
}

TEST_CASE("executor: a stray that keeps forking converges to none left") {
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

TEST_CASE("executor: a protected user's processes and a mixed-uid process survive") {
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
    // /proc/<pid> is owned by the effective uid (also when euid != ruid made the process
    // non-dumpable): it is inspected and kept as mixed uids (or, should the owner still be
    // root's from before the switch, as a protected owner).
    bool kept = false;
    for (const Decision& d : mixed_report.first_plan.decisions)
        if (d.pid == mixed)
            kept =
                d.verdict == Verdict::keep && (d.reason == Reason::mixed_uids || d.reason == Reason::protected_owner);
    CHECK(kept);
}

TEST_CASE("executor: a child of a slurmstepd survives, a child of a process merely named slurmstepd does not") {
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

TEST_CASE("executor: a job of the same user that starts during grace keeps its processes") {
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

TEST_CASE("fault catalogue: a user cleared before SIGTERM but holding an allocation by SIGKILL keeps the process") {
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

TEST_CASE("executor: a lookup error kills nothing") {
    Sweeper sweeper(41109);
    sweeper.job_state = [] {
        return Result<LiveWork>(Error::lookup("slurmstepd did not answer", ErrorSource::step_socket));
    };
    const pid_t stray = spawn_as(41109, {"sleep", "1000"});
    const KillReport report = sweeper.run(0ms);
    REQUIRE(report.error);
    CHECK(report.error->message == "slurmstepd did not answer");
    CHECK(report.actions.empty());
    CHECK(is_running(stray));
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor under injected faults (the SystemCalls seam) and against its deadline,
// on real processes of a test uid each (support/sweeper.hpp).
#include "kill/executor.hpp"
#include "kill/signaller.hpp"
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"
#include "support/sweeper.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

Outcome only_outcome(const KillReport& report) {
    REQUIRE_FALSE(report.actions.empty());
    for (const KillRecord& r : report.actions) CHECK(r.outcome == report.actions.front().outcome);
    return report.actions.front().outcome;
}

}  // namespace

TEST_CASE("executor: a pid that names another process by signal time is never signalled") {
    Sweeper sweeper(41110);
    const pid_t target = spawn_as(41110, {"sleep", "1000"});
    ScriptedSystemCalls calls;
    calls.script.read_identity = [](const std::string& root, pid_t pid) {
        auto identity = real_system_calls().read_identity(root, pid);
        if (identity) identity->start_time += 1;  // as if the pid now named another process
        return identity;
    };
    const KillReport report = sweeper.run(0ms, false, calls, 3s);
    CHECK(only_outcome(report) == Outcome::pid_reused);
    CHECK(calls.count.pidfd_send_signal == 0);
    CHECK(is_running(target));
}

TEST_CASE("executor: injected faults are reported, never fatal") {
    Sweeper sweeper(41111);
    const pid_t target = spawn_as(41111, {"sleep", "1000"});
    ScriptedSystemCalls calls;
    const auto fail_with = [](int error) { return [error](auto...) { return -error; }; };
    SUBCASE("pidfd_open EPERM") {
        calls.script.pidfd_open = fail_with(EPERM);
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::permission_denied);
    }
    SUBCASE("pidfd_send_signal EPERM") {
        calls.script.pidfd_send_signal = fail_with(EPERM);
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::permission_denied);
    }
    SUBCASE("pidfd_send_signal EIO") {
        calls.script.pidfd_send_signal = fail_with(EIO);
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::failed);
    }
    SUBCASE("ESRCH is success") {
        calls.script.pidfd_send_signal = fail_with(ESRCH);
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::gone);
    }
    SUBCASE("identity unreadable after pinning") {
        calls.script.read_identity = [](const std::string&, pid_t) { return std::optional<Identity>(); };
        CHECK(only_outcome(sweeper.run(0ms, false, calls, 2s)) == Outcome::gone);
    }
    CHECK(is_running(target));
}

TEST_CASE("executor: a target that never dies ends the sweep at its budget with a survivor") {
    Sweeper sweeper(41112);
    const pid_t target = spawn_as(41112, {"sleep", "1000"});
    ScriptedSystemCalls calls;
    calls.script.pidfd_send_signal = [](int, int) { return 0; };  // pretend to signal, send nothing
    const auto started = std::chrono::steady_clock::now();
    const KillReport report = sweeper.run(100ms, false, calls, 1500ms);
    CHECK(std::chrono::steady_clock::now() - started < 15s);  // hang detector only
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == target);
    CHECK(is_running(target));
}

TEST_CASE("fault catalogue: an evaluation that returns after the deadline sends no signal at all") {
    Sweeper sweeper(41114);
    const pid_t stray = spawn_as(41114, {"sleep", "1000"});
    // The first evaluation's job-state read ends only after the deadline.
    sweeper.job_state = [&sweeper] {
        std::this_thread::sleep_until(sweeper.deadline + 20ms);
        return Result<LiveWork>(LiveWork{});
    };
    ScriptedSystemCalls calls;
    const KillReport report = sweeper.run(2000ms, false, calls, 300ms);
    CHECK(calls.count.pidfd_send_signal == 0);
    CHECK(report.actions.empty());
    CHECK(report.deadline_reached);
    CHECK(report.evaluations == 1);
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors.front().pid == stray);
    CHECK(is_running(stray));
}

TEST_CASE("fault catalogue: a deadline that passes midway through a long target list stops the signals there") {
    Sweeper sweeper(41115);
    std::vector<pid_t> strays;
    for (int i = 0; i < 6; ++i) strays.push_back(spawn_as(41115, {"sleep", "1000"}));
    ScriptedSystemCalls calls;
    int kills = 0;
    // The second SIGKILL takes until the deadline.
    calls.script.pidfd_send_signal = [&](int pidfd, int signal) {
        if (signal == SIGKILL && ++kills == 2) std::this_thread::sleep_until(sweeper.deadline);
        return real_system_calls().pidfd_send_signal(pidfd, signal);
    };
    KillReport report;
    SUBCASE("without stopping first") {
        sweeper.stop_rounds = 0;
        report = sweeper.run(0ms, false, calls, 2s);
        CHECK(calls.count.pidfd_send_signal == 2);
        CHECK(report.evaluations == 1);
    }
    SUBCASE("stopped first: what was not killed runs again") {
        report = sweeper.run(0ms, false, calls, 2s);
        // Before SIGSTOP only: the stop met every target and nothing new, and the job
        // state was unchanged (executor_stop_test has the rule).
        CHECK(report.evaluations == 1);
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

TEST_CASE("fault catalogue: the grace wait ends at the deadline") {
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

TEST_CASE("fault catalogue: a stopped process that no signal could kill runs again when the sweep returns") {
    Sweeper sweeper(41122);
    const pid_t target = spawn_as(41122, {"sleep", "1000"});
    ScriptedSystemCalls calls;
    calls.script.pidfd_send_signal = [](int pidfd, int signal) {
        if (signal == SIGTERM || signal == SIGKILL) return -EPERM;
        return real_system_calls().pidfd_send_signal(pidfd, signal);
    };
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

TEST_CASE("fault catalogue: a stopped process kept by an evaluation that ends past the deadline runs again") {
    Sweeper sweeper(41123);
    const pid_t stray = spawn_as(41123, {"sleep", "1000"});
    int reads = 0;
    // The evaluation after SIGSTOP sees a new job of the user, and returns late (the first
    // one reads the job state twice: before its scan and, since it would kill, after it).
    sweeper.job_state = [&] {
        LiveWork live;
        if (++reads > 2) {
            std::this_thread::sleep_until(sweeper.deadline + 20ms);
            live.uids.insert(41123);
        }
        return Result<LiveWork>(live);
    };
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 500ms);
    INFO(format_actions(report));
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    const KillRecord* cont = action_for(report, stray, SIGCONT);
    REQUIRE(cont != nullptr);
    CHECK(cont->outcome == Outcome::signalled);
    CHECK(cont->reason == Reason::has_live_job);
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(wait_not_stopped(stray));
}

TEST_CASE("executor: a descriptor limit short of a pin per target still gives every target its SIGTERM and grace") {
    Sweeper sweeper(41490);
    std::vector<pid_t> strays;
    for (int i = 0; i < 40; ++i) strays.push_back(sweeper.spawn({"sleep", "1000"}));
    for (const pid_t stray : strays) REQUIRE(is_running(stray));
    // Room to hold about 10 pins beside the descriptors a sweep keeps spare: as if the
    // limit were just above what is open now.
    const int lowest_free = ::dup(0);
    REQUIRE(lowest_free >= 0);
    ::close(lowest_free);
    ScriptedSystemCalls calls;
    calls.script.open_file_limit = [lowest_free] {
        return static_cast<std::uint64_t>(lowest_free) + kSpareDescriptors + 10;
    };
    const KillReport report = sweeper.run(5s, false, calls, 20s);
    std::set<pid_t> stopped, left_running, termed, killed;
    for (const KillRecord& r : report.actions) {
        if (r.signal == SIGSTOP && r.outcome == Outcome::signalled) stopped.insert(r.pid);
        if (r.signal == SIGSTOP && r.outcome == Outcome::not_stopped &&
            r.detail.find("no descriptor to spare") != std::string::npos)
            left_running.insert(r.pid);
        if (r.signal == SIGTERM && r.outcome == Outcome::signalled) termed.insert(r.pid);
        if (r.signal == SIGKILL && r.outcome == Outcome::signalled) killed.insert(r.pid);
    }
    CHECK(stopped.size() <= 10);
    CHECK(stopped.size() + left_running.size() == strays.size());
    CHECK(termed.size() == strays.size());  // the grace the config asks for, for every one
    CHECK(killed.empty());                  // sleep ends at its SIGTERM
    CHECK(report.survivors.empty());
    CHECK_FALSE(report.error);
    for (const pid_t stray : strays) CHECK(wait_gone(stray));
}

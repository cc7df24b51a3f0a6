// SPDX-License-Identifier: GPL-2.0-or-later
// No process the kill executor stopped is left stopped, on any way out of a sweep: also
// not one that changed what it is while it was being stopped (a setuid exec), which no
// later identity check lets a signal through to. On real processes of a test uid each;
// the setuid exec is forced into the moment of the SIGSTOP through the SystemCalls seam.
#include "kill/executor.hpp"
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"
#include "support/sweeper.hpp"

#include <sys/ptrace.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <csignal>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

// Scripts `calls` so that a process's SIGSTOP lands as it execs a setuid-root program:
// from then on its uids read U/0/0/0, its start time unchanged (an exec keeps it). The
// process itself stays as it is; only what the executor reads of it changes. `setuid`
// gets the processes that exec'd.
void exec_setuid_at_stop(ScriptedSystemCalls& calls, std::set<pid_t>& setuid) {
    auto pid_of = std::make_shared<std::map<int, pid_t>>();
    calls.script.pidfd_open = [pid_of](pid_t pid) {
        const int fd = real_system_calls().pidfd_open(pid);
        if (fd >= 0) (*pid_of)[fd] = pid;
        return fd;
    };
    calls.script.pidfd_send_signal = [pid_of, &setuid](int pidfd, int signal) {
        const int rc = real_system_calls().pidfd_send_signal(pidfd, signal);
        if (rc == 0 && signal == SIGSTOP) setuid.insert(pid_of->at(pidfd));
        return rc;
    };
    calls.script.read_identity = [&setuid](const std::string& root, pid_t pid) {
        auto identity = real_system_calls().read_identity(root, pid);
        if (identity && setuid.count(pid) != 0) {
            identity->uids.effective = 0;
            identity->uids.saved = 0;
            identity->uids.filesystem = 0;
        }
        return identity;
    };
}

}  // namespace

TEST_CASE("executor: a target that execs a setuid program as it is stopped runs again on every way out") {
    constexpr uid_t user = 41130;
    Sweeper sweeper(user);
    const pid_t target = sweeper.spawn({"sleep", "1000"});
    REQUIRE(wait_owner(target, user));
    ScriptedSystemCalls calls;
    std::set<pid_t> setuid;  // the processes that exec'd
    exec_setuid_at_stop(calls, setuid);
    int reads = 0;
    // The first evaluation reads the job state twice (before its scan and, since it would
    // kill, after it); the reads after the SIGSTOP take each way out.
    const auto after_stop = [&reads](const std::function<void(LiveWork&)>& then) {
        return [&reads, then] {
            LiveWork live;
            if (++reads > 2) then(live);
            return Result<LiveWork>(live);
        };
    };
    KillReport report;
    std::string why;
    SUBCASE("refusal: every kill is refused (mixed uids), the rounds run out") {
        report = sweeper.run(0ms, false, calls, 10s);
        CHECK(action_for(report, target, SIGKILL)->outcome == Outcome::pid_reused);
        why = "not killed: the sweep ended before its kill";
    }
    SUBCASE("refusal of SIGTERM, then the rounds run out") {
        report = sweeper.run(100ms, false, calls, 10s);
        CHECK(action_for(report, target, SIGTERM)->outcome == Outcome::pid_reused);
        why = "not killed: the sweep ended before its kill";
    }
    SUBCASE("error: the evaluation after the stop fails") {
        sweeper.job_state = [&reads] {
            if (++reads > 2) return Result<LiveWork>(Error::lookup("stepd gone", ErrorSource::step_socket));
            return Result<LiveWork>(LiveWork{});
        };
        report = sweeper.run(0ms, false, calls, 10s);
        CHECK(report.error);
        why = "not killed: the sweep stopped at an error";
    }
    SUBCASE("deadline: the evaluation after the stop returns past it") {
        sweeper.job_state =
            after_stop([&sweeper](LiveWork&) { std::this_thread::sleep_until(sweeper.deadline + 20ms); });
        report = sweeper.run(0ms, false, calls, 1s);
        CHECK(report.deadline_reached);
        why = "not killed: the sweep ended before its kill";
    }
    SUBCASE("released: its user gets live work meanwhile") {
        sweeper.job_state = after_stop([&](LiveWork& live) { live.uids.insert(user); });
        report = sweeper.run(0ms, false, calls, 10s);
        CHECK(action_for(report, target, SIGKILL) == nullptr);
        why = "";
    }
    SUBCASE("an exception: the evaluation after the stop throws, the executor's destructor continues it") {
        sweeper.job_state = after_stop([](LiveWork&) { throw std::runtime_error("no memory"); });
        CHECK_THROWS_AS(sweeper.run(0ms, false, calls, 10s), std::runtime_error);
        CHECK(setuid.count(target) == 1);
        CHECK(is_running(target));
        CHECK(wait_not_stopped(target));
        return;
    }
    INFO(format_actions(report));
    REQUIRE(setuid.count(target) == 1);  // it was stopped, and changed then
    CHECK(is_running(target));
    CHECK(wait_not_stopped(target));
    const KillRecord& last = report.actions.back();
    CHECK(last.pid == target);
    CHECK(last.signal == SIGCONT);
    CHECK(last.outcome == Outcome::signalled);
    if (!why.empty()) CHECK(last.detail == why);
    REQUIRE(report.survivors.size() == (why.empty() || report.error ? 0U : 1U));
}

TEST_CASE("executor: a stopped target is killed through the pin that stopped it, not a second one") {
    constexpr uid_t user = 41131;
    Sweeper sweeper(user);
    const pid_t target = sweeper.spawn({"sleep", "1000"});
    REQUIRE(wait_owner(target, user));
    // Counts pins; no process changes.
    ScriptedSystemCalls calls;
    const KillReport report = sweeper.run(0ms, false, calls);
    INFO(format_actions(report));
    REQUIRE(action_for(report, target, SIGSTOP) != nullptr);
    CHECK(action_for(report, target, SIGKILL)->outcome == Outcome::signalled);
    CHECK(wait_gone(target));
    CHECK(calls.count.pidfd_open == 1);
}

TEST_CASE("fault catalogue: out of memory mid-round, every stopped target runs again, continued through its pin") {
    // Memory runs out once a round's signal has gone to one of two targets, and stays out:
    // every read of /proc from then on (read_identity, whose strings need memory) throws
    // std::bad_alloc. The exception leaves the sweep; what it stopped must run again, and
    // its SIGCONT may read nothing and need no memory: only the pin that stopped it.
    constexpr uid_t user = 41761;
    Sweeper sweeper(user);
    const pid_t first = sweeper.spawn({"sleep", "1000"});
    const pid_t second = sweeper.spawn({"sleep", "1000"});
    REQUIRE(wait_owner(first, user));
    REQUIRE(wait_owner(second, user));
    ScriptedSystemCalls calls;
    auto pid_of = std::make_shared<std::map<int, pid_t>>();
    int out_after = 0;    // the signal after which memory runs out
    pid_t hit = 0;        // the target it went to
    int reads_after = 0;  // reads of /proc tried after that
    calls.script.pidfd_open = [pid_of](pid_t pid) {
        const int fd = real_system_calls().pidfd_open(pid);
        if (fd >= 0) (*pid_of)[fd] = pid;
        return fd;
    };
    calls.script.pidfd_send_signal = [&](int pidfd, int signal) {
        const int rc = real_system_calls().pidfd_send_signal(pidfd, signal);
        if (rc == 0 && signal == out_after && hit == 0) hit = pid_of->at(pidfd);
        return rc;
    };
    calls.script.read_identity = [&](const std::string& root, pid_t pid) {
        if (hit != 0) {
            ++reads_after;
            throw std::bad_alloc();
        }
        return real_system_calls().read_identity(root, pid);
    };
    std::chrono::milliseconds grace = 0ms;
    SUBCASE("in the SIGSTOP round: one target stopped, the other not yet") { out_after = SIGSTOP; }
    SUBCASE("in the SIGTERM round: both stopped, one sent SIGTERM and not continued yet") {
        out_after = SIGTERM;
        grace = 2s;
    }
    SUBCASE("in the SIGKILL round: both stopped, one killed") { out_after = SIGKILL; }
    CHECK_THROWS_AS(sweeper.run(grace, false, calls), std::bad_alloc);
    REQUIRE(hit != 0);
    CHECK(reads_after == 1);  // the read that failed: nothing else read /proc
    const pid_t other = hit == first ? second : first;
    if (out_after == SIGSTOP) {
        CHECK(is_running(hit));
        CHECK(wait_not_stopped(hit));
    } else {
        CHECK(wait_gone(hit));  // its SIGTERM (acted on once continued) or SIGKILL ended it
    }
    CHECK(is_running(other));
    CHECK(wait_not_stopped(other));
}

TEST_CASE("fault catalogue: a process its user stopped before the sweep is left stopped, never continued") {
    // Stopped by its user (Ctrl-Z, kill -STOP) or held by a debugger before the sweep looks;
    // the sweep decides to kill it, then keeps it (its user gets live work) or ends at an
    // error. A SIGCONT would undo the user's stop: the sweep continues only what it stopped.
    constexpr uid_t user = 41762;
    Sweeper sweeper(user);
    pid_t held = 0;
    char state = 0;
    SUBCASE("stopped by its user (state T)") {
        held = sweeper.spawn({"sleep", "1000"});
        REQUIRE(wait_owner(held, user));
        REQUIRE(::kill(held, SIGSTOP) == 0);
        state = 'T';
    }
    SUBCASE("held by a debugger (state t)") {
        // Traced by this test process, stopped at its own SIGSTOP until the tracer lets it go on.
        held = sweeper.spawned.emplace_back(spawn_forked_as(user, [] {
            ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
            ::raise(SIGSTOP);
            for (;;) ::pause();
        }));
        state = 't';
    }
    REQUIRE(wait_state(held, state));
    int reads = 0;
    const auto left_alone = [&](const KillReport& report) {
        INFO(format_actions(report));
        const KillRecord* stop = action_for(report, held, SIGSTOP);
        REQUIRE(stop != nullptr);
        CHECK(stop->outcome == Outcome::not_stopped);
        CHECK(
            sweep::format_action(*stop).ends_with(": stopped already, by its user or a tracer: not the sweep's to "
                                                  "stop, nor to continue but with its SIGTERM"));
        CHECK(action_for(report, held, SIGKILL) == nullptr);
        CHECK(action_for(report, held, SIGCONT) == nullptr);
        CHECK(state_of(held) == state);  // as its user or debugger left it
    };
    // The evaluation after the stop fails: the sweep ends there.
    sweeper.job_state = [&reads] {
        if (++reads > 2) return Result<LiveWork>(Error::lookup("stepd gone", ErrorSource::step_socket));
        return Result<LiveWork>(LiveWork{});
    };
    const KillReport failed = sweeper.run(0ms);
    CHECK(failed.error);
    left_alone(failed);
    // Its user gets live work after the first evaluation: kept.
    reads = 0;
    sweeper.job_state = [&reads] {
        LiveWork live;
        if (++reads > 2) live.uids.insert(uid_t{user});
        return Result<LiveWork>(live);
    };
    const KillReport kept = sweeper.run(0ms);
    CHECK_FALSE(kept.error);
    left_alone(kept);
}

// SPDX-License-Identifier: GPL-2.0-or-later
// PidRef, the one way kill/ signals a process: on real processes of a test uid each
// (4114x), in the tests' own pid namespace; what /proc shows is changed only through the
// SystemCalls seam.
#include "kill/pid_ref.hpp"
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <functional>

using namespace leftover;
using namespace leftover::test;

namespace {

// A read of /proc that shows what `change` makes of the process it reads.
auto reading_as(std::function<void(Identity&)> change) {
    return [change = std::move(change)](const std::string& root, pid_t pid) {
        auto identity = real_system_calls().read_identity(root, pid);
        if (identity) change(*identity);
        return identity;
    };
}

// Kills what a test of `uid` leaves.
struct Cleanup {
    uid_t uid;
    ~Cleanup() { kill_all_of(uid); }
};

// The decision a plan would make on `pid` now: its pid, uid and start time.
Decision decided_now(pid_t pid, uid_t uid) {
    const auto identity = read_identity("/proc", pid);
    REQUIRE(identity);
    Decision d;
    d.pid = pid;
    d.uid = uid;
    d.start_time = identity->start_time;
    d.verdict = Verdict::kill;
    return d;
}

PidRef pin(SystemCalls& calls, pid_t pid) {
    auto pinned = PidRef::pin(calls, pid);
    REQUIRE(pinned.ok());
    return std::move(pinned).value();
}

void reap(pid_t pid) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
}

}  // namespace

TEST_CASE("pid ref: a signal goes through the pin only when /proc, read right then, shows the decided process") {
    constexpr uid_t user = 41140;
    const Cleanup cleanup{user};
    const pid_t pid = spawn_as(user, {"sleep", "1000"});
    Decision decision = decided_now(pid, user);
    ScriptedSystemCalls calls;  // counts the signals sent through pins
    PidRef ref = pin(calls, pid);
    CHECK(ref.pid() == pid);
    const auto expect = [&decision](const Identity& now) { return is_decided(now, decision); };
    PinSignal result;

    SUBCASE("the decided process: signalled") {
        result = ref.signal_if("/proc", SIGKILL, expect);
        CHECK(result.check == PinSignal::Check::same);
        CHECK(result.sent());
        CHECK(calls.count.pidfd_send_signal == 1);
        CHECK(wait_gone(pid));
        CHECK(ref.has_exited());
        return;
    }
    SUBCASE("another start time: not signalled") {
        decision.start_time += 1;
        result = ref.signal_if("/proc", SIGKILL, expect);
        CHECK(result.check == PinSignal::Check::other);
    }
    SUBCASE("uids that are no longer all the decided one (a setuid exec): not signalled") {
        calls.script.read_identity = reading_as([](Identity& now) { now.uids.effective = 0; });
        result = ref.signal_if("/proc", SIGKILL, expect);
        CHECK(result.check == PinSignal::Check::other);
    }
    SUBCASE("/proc unreadable: gone, not signalled") {
        ScriptedSystemCalls unreadable;
        unreadable.script.read_identity = [](const std::string&, pid_t) { return std::optional<Identity>(); };
        PidRef other_ref = pin(unreadable, pid);
        result = other_ref.signal_if("/proc", SIGKILL, expect);
        CHECK(result.check == PinSignal::Check::gone);
        CHECK(unreadable.count.pidfd_send_signal == 0);
    }
    SUBCASE("reaped right after the read that showed it: not signalled") {
        // What /proc showed may have been another process under the pid by then. The
        // read shows what it showed before the reap, as a read racing the reap would.
        ScriptedSystemCalls racing;
        racing.script.read_identity = [pid, before = read_identity("/proc", pid)](const std::string&, pid_t) {
            reap(pid);
            return before;
        };
        PidRef racing_ref = pin(racing, pid);
        result = racing_ref.signal_if("/proc", SIGKILL, expect);
        CHECK(result.check == PinSignal::Check::same);
        CHECK(result.error == ESRCH);
        CHECK_FALSE(result.sent());
        CHECK(racing.count.pidfd_send_signal == 0);
        CHECK(racing_ref.has_exited());
        return;
    }
    CHECK_FALSE(result.sent());
    CHECK(calls.count.pidfd_send_signal == 0);
    CHECK(is_running(pid));
    CHECK(wait_not_stopped(pid));
    CHECK_FALSE(ref.has_exited());
}

TEST_CASE("pid ref: a process that took the pinned process's pid never gets a signal through the pin") {
    constexpr uid_t user = 41141, newcomer = 41142;
    const Cleanup cleanup{user}, cleanup_newcomer{newcomer};
    pid_t pid = spawn_as(user, {"sleep", "1000"});
    const Decision decision = decided_now(pid, user);
    ScriptedSystemCalls calls;
    PidRef ref = pin(calls, pid);
    // The pinned process ends and, through ns_last_pid, a process of another user gets its
    // pid (other tests may start processes meanwhile: try again until it does).
    reap(pid);
    pid_t replacement = 0;
    for (int attempt = 0; attempt < 100 && replacement != pid; ++attempt) {
        if (replacement > 0) reap(replacement);
        std::ofstream("/proc/sys/kernel/ns_last_pid") << pid - 1 << std::flush;
        replacement = spawn_as(newcomer, {"sleep", "1000"});
    }
    REQUIRE_MESSAGE(replacement == pid, "pid " << pid << " was not given out again");

    SUBCASE("the decided identity: /proc shows another process") {
        const PinSignal result =
            ref.signal_if("/proc", SIGKILL, [&decision](const Identity& now) { return is_decided(now, decision); });
        CHECK(result.check == PinSignal::Check::other);
    }
    SUBCASE("an expectation that /proc's process meets: the pin's process is reaped") {
        const PinSignal result = ref.signal_if("/proc", SIGKILL, [](const Identity&) { return true; });
        CHECK(result.check == PinSignal::Check::same);
        CHECK(result.error == ESRCH);
    }
    CHECK(calls.count.pidfd_send_signal == 0);
    CHECK(ref.has_exited());
    CHECK(is_running(replacement));
}

TEST_CASE("pid ref: a pid that no process holds cannot be pinned") {
    // pid_max itself is never given out.
    pid_t pid_max = 0;
    std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
    REQUIRE(pid_max > 0);
    const auto pinned = PidRef::pin(real_system_calls(), pid_max);
    REQUIRE_FALSE(pinned.ok());
    CHECK(pinned.error() == ESRCH);
    CHECK_FALSE(PidRef().valid());
}

TEST_CASE("pid ref: a process stopped through its pin runs again through it with no identity check") {
    constexpr uid_t user = 41143;
    const Cleanup cleanup{user};
    const pid_t pid = spawn_as(user, {"sleep", "1000"});
    const Decision decision = decided_now(pid, user);
    ScriptedSystemCalls calls;
    PidRef ref = pin(calls, pid);
    const auto expect = [&decision](const Identity& now) { return is_decided(now, decision); };
    REQUIRE(ref.signal_if("/proc", SIGSTOP, expect).sent());
    REQUIRE(wait_state(pid, 'T'));
    // It exec'd a setuid program as it stopped: no checked signal reaches it any more.
    calls.script.read_identity = reading_as([](Identity& now) { now.uids.effective = 0; });
    CHECK(ref.signal_if("/proc", SIGCONT, expect).check == PinSignal::Check::other);
    CHECK(state_of(pid) == 'T');
    CHECK(ref.continue_stopped() == 0);
    CHECK(wait_not_stopped(pid));
    CHECK(is_running(pid));
}

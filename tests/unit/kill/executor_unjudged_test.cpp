// SPDX-License-Identifier: GPL-2.0-or-later
// What the stop phase may stop before an evaluation judged it: only what this sweep's
// own processes made, never the first processes of a job of a swept user that is just
// starting. On real processes of a test uid.
#include "kill/executor.hpp"
#include "support/processes.hpp"
#include "support/scripted_system_calls.hpp"
#include "support/sweeper.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

TEST_CASE("executor: the first processes of a job of a swept user that starts during the stop are never stopped") {
    constexpr uid_t user = 41132;
    Sweeper sweeper(user);
    SharedDir dir;
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    REQUIRE(wait_owner(stray, user));
    // As the stray is stopped, a job of its user starts (a session of its own, a process
    // and its child: a batch script and what it runs), and the stray seems to have exited
    // (so the stop phase looks for what it may have forked).
    struct {
        pid_t script = 0, child = 0;
    } job;
    ScriptedSystemCalls calls;
    calls.script.pidfd_send_signal = [&](int pidfd, int signal) {
        if (signal != SIGSTOP || job.script != 0) return real_system_calls().pidfd_send_signal(pidfd, signal);
        sweeper.spawn(
            {"setsid", "sh", "-c",
             "echo $$ > " + (dir / "script.pid") + "; sleep 1000 & echo $! > " + (dir / "child.pid") + "; wait"});
        job.script = wait_pid_file(dir / "script.pid");
        job.child = wait_pid_file(dir / "child.pid");
        wait_owner(job.child, 41132);
        return -ESRCH;
    };
    int reads = 0;
    // The evaluation after the stop sees the job (the first one reads twice).
    sweeper.job_state = [&reads] {
        LiveWork live;
        if (++reads > 2) live.uids.insert(41132);
        return Result<LiveWork>(live);
    };
    const KillReport report = sweeper.run(0ms, false, calls);
    INFO(format_actions(report));
    REQUIRE(job.script > 0);
    REQUIRE(job.child > 0);
    CHECK(action_for(report, job.script, SIGSTOP) == nullptr);
    CHECK(action_for(report, job.child, SIGSTOP) == nullptr);
    CHECK(action_for(report, job.script, SIGKILL) == nullptr);
    CHECK(action_for(report, job.child, SIGKILL) == nullptr);
    CHECK(is_running(job.script));
    CHECK(wait_not_stopped(job.script));
    CHECK(wait_not_stopped(job.child));
    CHECK(wait_not_stopped(stray));
}

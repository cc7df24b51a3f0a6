// SPDX-License-Identifier: GPL-2.0-or-later
// The last look before a signal round: a job being set up on the node (its slurmstepd
// not answering on a step socket yet) is doubt. The round waits for it, and signals
// nothing if it is still starting at the deadline. On real processes of a test uid.
#include "kill/executor.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

TEST_CASE("fault catalogue: a job still starting at the deadline stops the SIGTERM round, and nothing stays stopped") {
    Sweeper sweeper(41133);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int asked = 0;
    sweeper.job_starting = [&asked] {
        ++asked;
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4242 has no step socket yet"));
    };
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 1500ms);
    INFO(format_actions(report));
    CHECK(asked > 1);  // it waited, reading again
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(action_for(report, stray, SIGKILL) == nullptr);
    REQUIRE(report.job_starting.has_value());
    CHECK(*report.job_starting == "slurmstepd pid 4242 has no step socket yet");
    CHECK_FALSE(report.error.has_value());
    // Stopped before the look, continued after it with the reason.
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    const KillRecord* cont = action_for(report, stray, SIGCONT);
    REQUIRE(cont != nullptr);
    CHECK(cont->detail.find("a job is starting on this node (slurmstepd pid 4242") != std::string::npos);
    CHECK(wait_not_stopped(stray));
    CHECK(is_running(stray));
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors[0].pid == stray);
}

TEST_CASE("fault catalogue: a user whose job was starting as the sweep looked keeps their strays once it answers") {
    Sweeper sweeper(41134);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    bool answers = false;  // the new job's slurmstepd, on its socket
    bool seen = false;     // by the last look at the job state
    sweeper.job_state = [&] {
        seen = answers;
        LiveWork live;
        if (seen) live.uids.insert(41134);
        return Result<LiveWork>(live);
    };
    int asked = 0;
    // As the product's: judged by the last look, whose sockets cannot show a stepd that
    // answers only since. Its socket appears while the round waits.
    sweeper.job_starting = [&] {
        if (++asked == 2) answers = true;
        if (seen) return Result<std::optional<std::string>>(std::optional<std::string>());
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4243 has no step socket yet"));
    };
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 4000ms);
    INFO(format_actions(report));
    CHECK(asked >= 2);
    CHECK(action_for(report, stray, SIGTERM) == nullptr);
    CHECK(action_for(report, stray, SIGKILL) == nullptr);
    CHECK_FALSE(report.job_starting.has_value());
    CHECK_FALSE(report.error.has_value());
    const KillRecord* cont = action_for(report, stray, SIGCONT);
    REQUIRE(cont != nullptr);
    CHECK(cont->reason == Reason::has_live_job);
    CHECK(wait_not_stopped(stray));
    CHECK(is_running(stray));
    CHECK(report.survivors.empty());
}

TEST_CASE("job starting: with no job starting the round goes ahead and the stray is killed") {
    Sweeper sweeper(41133);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    sweeper.job_starting = [] { return Result<std::optional<std::string>>(std::optional<std::string>()); };
    const KillReport report = sweeper.run(2000ms);
    INFO(format_actions(report));
    REQUIRE(action_for(report, stray, SIGTERM) != nullptr);
    CHECK(wait_gone(stray));
    CHECK(report.survivors.empty());
}

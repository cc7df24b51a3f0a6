// SPDX-License-Identifier: GPL-2.0-or-later
// The last look before a signal round: a job being set up on the node (its slurmstepd
// not answering on a step socket yet) is doubt. The round waits for it, a bounded time,
// and signals nothing if it is still starting then. On real processes of a test uid.
#include "kill/executor.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

namespace {

// The round skipped for a starting job: nothing signalled, the stray stopped before the
// look and continued after it with the reason, a survivor of the sweep.
void check_skipped_for_starting_job(const KillReport& report, pid_t stray, const std::string& sign) {
    REQUIRE(report.job_starting.has_value());
    CHECK(*report.job_starting == sign);
    CHECK_FALSE(report.error.has_value());
    REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
    const KillRecord* cont = check_continued_not_killed(report, stray);
    REQUIRE(cont != nullptr);
    CHECK(cont->detail == "not signalled: a job is starting on this node (" + sign + ")");
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors[0].pid == stray);
}

}  // namespace

TEST_CASE("fault catalogue: a job still starting at the deadline stops the SIGTERM round, and nothing stays stopped") {
    Sweeper sweeper(41133);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int asked = 0;
    sweeper.job_starting = [&asked] {
        ++asked;
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4242 has no step socket yet"));
    };
    sweeper.starting_wait = 20000ms;  // unbounded but by the deadline
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 1500ms);
    INFO(format_actions(report));
    CHECK(asked > 1);  // it waited, reading again
    CHECK(report.deadline_reached);
    check_skipped_for_starting_job(report, stray, "slurmstepd pid 4242 has no step socket yet");
}

TEST_CASE("fault catalogue: a job starting for longer than the bounded wait skips the round before the deadline") {
    Sweeper sweeper(41135);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    sweeper.job_starting = [] {
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4244 has no step socket yet"));
    };
    sweeper.starting_wait = 300ms;
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 20000ms);
    INFO(format_actions(report));
    // Skipped at the bound, with the reason, not held to the deadline 20 s away.
    CHECK_FALSE(report.deadline_reached);
    CHECK(std::chrono::steady_clock::now() < sweeper.deadline);
    check_skipped_for_starting_job(report, stray, "slurmstepd pid 4244 has no step socket yet");
}

TEST_CASE("fault catalogue: a job done starting too late for a fresh plan skips the round, never cuts the plan short") {
    Sweeper sweeper(41136);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    sweeper.starting_wait = 20000ms;
    sweeper.replan_time = 1000ms;
    // Its socket answers only once the time the fresh plan needs has begun: the wait
    // ends there, and so does the round.
    sweeper.job_starting = [&sweeper] {
        if (std::chrono::steady_clock::now() >= sweeper.deadline - 1000ms)
            return Result<std::optional<std::string>>(std::optional<std::string>());
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4245 has no step socket yet"));
    };
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 2500ms);
    INFO(format_actions(report));
    CHECK_FALSE(report.deadline_reached);
    CHECK_FALSE(report.error.has_value());
    check_skipped_for_starting_job(report, stray, "slurmstepd pid 4245 has no step socket yet");
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
    CHECK_FALSE(report.job_starting.has_value());
    CHECK_FALSE(report.error.has_value());
    const KillRecord* cont = check_continued_not_killed(report, stray);
    REQUIRE(cont != nullptr);
    CHECK(cont->reason == Reason::has_live_job);
    CHECK(report.survivors.empty());
}

TEST_CASE("executor: with no job starting the round goes ahead and the stray is killed") {
    Sweeper sweeper(41137);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    sweeper.job_starting = [] { return Result<std::optional<std::string>>(std::optional<std::string>()); };
    const KillReport report = sweeper.run(2000ms);
    INFO(format_actions(report));
    REQUIRE(action_for(report, stray, SIGTERM) != nullptr);
    CHECK(wait_gone(stray));
    CHECK(report.survivors.empty());
}

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

// The round skipped for a starting job: nothing signalled, a survivor of the sweep. A job
// seen starting before anything was stopped is waited out with nothing stopped (no
// action at all); one that began once the strays were stopped leaves each stray
// continued with the reason.
void check_skipped_for_starting_job(const KillReport& report, pid_t stray, const std::string& sign,
                                    bool stopped_first = false) {
    REQUIRE(report.job_starting.has_value());
    CHECK(*report.job_starting == sign);
    CHECK_FALSE(report.error.has_value());
    if (stopped_first) {
        REQUIRE(action_for(report, stray, SIGSTOP) != nullptr);
        const KillRecord* cont = check_continued_not_killed(report, stray);
        REQUIRE(cont != nullptr);
        CHECK(cont->detail == "not signalled: a job is starting on this node (" + sign + ")");
    } else {
        CHECK(report.actions.empty());
    }
    CHECK(is_running(stray));
    REQUIRE(report.survivors.size() == 1);
    CHECK(report.survivors[0].pid == stray);
}

}  // namespace

TEST_CASE("fault catalogue: a job still starting at the deadline stops the SIGTERM round, and nothing stays stopped") {
    Sweeper sweeper(41133);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int asked = 0;
    // None at the look before anything is stopped; its setup begins as the strays stop.
    sweeper.job_starting = [&asked] {
        if (++asked == 1) return Result<std::optional<std::string>>(std::optional<std::string>());
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4242 has no step socket yet"));
    };
    sweeper.starting_wait = 20000ms;  // unbounded but by the deadline
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 1500ms);
    INFO(format_actions(report));
    CHECK(asked > 2);  // it waited, reading again
    CHECK(report.deadline_reached);
    check_skipped_for_starting_job(report, stray, "slurmstepd pid 4242 has no step socket yet", true);
}

TEST_CASE("fault catalogue: a job starting before anything is stopped is waited out without the node turn") {
    Sweeper sweeper(41138);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int turns = 0;
    sweeper.take_turn = [&turns] {
        ++turns;
        return Result<bool>(false);
    };
    sweeper.job_starting = [] {
        return Result<std::optional<std::string>>(std::string("slurmstepd pid 4246 has no step socket yet"));
    };
    sweeper.starting_wait = 300ms;
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 20000ms);
    INFO(format_actions(report));
    // Other sweeps of the node, held up by the same start, wait for it side by side.
    CHECK(turns == 0);
    check_skipped_for_starting_job(report, stray, "slurmstepd pid 4246 has no step socket yet");
}

TEST_CASE("executor: the node turn is taken once right before the first stop, and a turn missed signals nothing") {
    Sweeper sweeper(41139);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    int turns = 0;
    sweeper.take_turn = [&turns] {
        ++turns;
        return Result<bool>(Error::lookup("another sweep held the turn", ErrorSource::deadline));
    };
    const KillReport missed = sweeper.run(2000ms);
    INFO(format_actions(missed));
    CHECK(turns == 1);
    REQUIRE(missed.error.has_value());
    CHECK(missed.error->message == "another sweep held the turn");
    CHECK(missed.actions.empty());
    CHECK(is_running(stray));

    sweeper.take_turn = [&turns] {
        ++turns;
        return Result<bool>(false);
    };
    const KillReport report = sweeper.run(0ms);
    INFO(format_actions(report));
    CHECK(turns == 2);
    REQUIRE(action_for(report, stray, SIGKILL) != nullptr);
    CHECK(wait_gone(stray));
}

TEST_CASE("executor: a turn that came after another sweep plans afresh and kills only what that sweep left") {
    Sweeper sweeper(41140);
    const pid_t stray = sweeper.spawn({"sleep", "1000"});
    const pid_t other = sweeper.spawn({"sleep", "1000"});
    // While this sweep waited for its turn, the other sweep killed one of the two.
    sweeper.take_turn = [other] {
        ::kill(other, SIGKILL);
        CHECK(wait_gone(other));
        return Result<bool>(true);
    };
    const KillReport report = sweeper.run(0ms);
    INFO(format_actions(report));
    CHECK(report.evaluations >= 2);
    // The report's plan is the one after the turn: the other is gone from it, or a zombie
    // (its parent, this test, reaps it when it likes) that it does not kill.
    const Decision* gone = decision_for(report.first_plan, other);
    CHECK((gone == nullptr || gone->verdict != Verdict::kill));
    CHECK(action_for(report, other, SIGKILL) == nullptr);
    REQUIRE(action_for(report, stray, SIGKILL) != nullptr);
    CHECK(wait_gone(stray));
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
    CHECK(report.actions.empty());  // waited out before anything was stopped
    CHECK(is_running(stray));
    REQUIRE(sweeper.last_plan.has_value());
    const Decision* kept = decision_for(*sweeper.last_plan, stray);
    REQUIRE(kept != nullptr);
    CHECK(kept->reason == Reason::has_live_job);
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

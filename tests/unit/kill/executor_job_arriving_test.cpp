// SPDX-License-Identifier: GPL-2.0-or-later
// A job that reaches the node while a round's signals go out: the look before the round
// could not see it, and the signals after it must not go as if it had not come. On real
// processes of a test uid.
#include "kill/executor.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;

TEST_CASE("fault catalogue: a job reaching the node as the signals go out stops them, and its user keeps the rest") {
    Sweeper sweeper(41856);
    const pid_t first = sweeper.spawn({"sleep", "1000"});
    const pid_t second = sweeper.spawn({"sleep", "1000"});
    REQUIRE(first < second);  // a round signals in pid order
    bool arrived = false;     // the user's next job reached the node: slurmd forked for it
    bool seen = false;        // by a look at the job state: its step socket answers
    // It arrives right after the round's first SIGTERM went, a few milliseconds after the
    // look before the round found nothing on its way.
    sweeper.observer.on_action = [&arrived](const KillRecord& record) {
        if (record.signal == SIGTERM && record.outcome == Outcome::signalled) arrived = true;
    };
    sweeper.job_state = [&] {
        seen = arrived;
        LiveWork live;
        if (seen) live.uids.insert(41856);
        return Result<LiveWork>(live);
    };
    // As the product's: a slurmstepd no look has seen is a job on its way.
    sweeper.job_starting = [&] {
        if (arrived && !seen)
            return Result<std::optional<std::string>>(std::string("slurmstepd pid 4246 has no step socket yet"));
        return Result<std::optional<std::string>>(std::optional<std::string>());
    };
    const KillReport report = sweeper.run(2000ms, false, real_system_calls(), 6000ms);
    INFO(format_actions(report));
    // Signalled before the job came: as without it.
    REQUIRE(action_for(report, first, SIGTERM) != nullptr);
    CHECK(wait_gone(first));
    // After: never signalled, continued with the reason once the job answers.
    const KillRecord* cont = check_continued_not_killed(report, second);
    REQUIRE(cont != nullptr);
    CHECK(cont->reason == Reason::has_live_job);
    // Paused once for it, not skipped.
    REQUIRE(report.paused.size() == 1);
    CHECK(report.paused[0] == "slurmstepd pid 4246 has no step socket yet");
    CHECK_FALSE(report.job_starting.has_value());
    CHECK_FALSE(report.error.has_value());
    CHECK(report.survivors.empty());
}

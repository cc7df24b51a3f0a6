// SPDX-License-Identifier: GPL-2.0-or-later
// Where the job-state reader asks slurmctld for the cleanup: with PrologFlags=contain a job
// slurmd is still setting up shows no step, so what a cleanup would remove is asked about,
// from the job epilog and the command; never at a step end (a helper started there may
// die mid-answer), and not where another question covers it.
#include "support/fake_controller.hpp"
#include "support/recording_sink.hpp"
#include "sweep/job_state_source.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>

using namespace leftover;
using namespace leftover::test;

namespace {

// What a job state source of a job epilog of job `job` of `uid` on node n1 works with: a
// config, slurmctld (a fake that says `uid` holds work) and a log.
struct JobEpilog {
    JobEpilog(uid_t uid, std::uint32_t job) : log(sink) {
        controller.live.uids = {uid};
        request.node.node_name = "n1";
        request.trigger.uid = uid;
        request.trigger.job_id = job;
        request.trigger.job_ending = true;
    }
    // A source whose sweep has `left` before its deadline.
    sweep::JobStateSource source(std::chrono::milliseconds left) {
        return sweep::JobStateSource(config, request, &controller, std::chrono::steady_clock::now() + left, log);
    }

    Config config;
    FakeController controller;
    RecordingSink sink;
    sweep::Logger log;
    sweep::SweepRequest request;
};

}  // namespace

TEST_CASE("job state source: the cleanup asks slurmctld with contain, from the job epilog and the command only") {
    JobEpilog epilog(41857, 7);
    epilog.request.node.prolog_contain = true;
    // The check it returns asks through the source: the source outlives it, as in a sweep.
    std::optional<sweep::JobStateSource> source;
    const auto check = [&] {
        source.emplace(epilog.source(std::chrono::seconds(10)));
        return source->cleanup_allocation_check();
    };
    SUBCASE("the job epilog: one query, the holders back") {
        const AllocationCheck asks = check();
        REQUIRE(asks);
        const auto holders = asks({41857, 41858});
        REQUIRE(holders.ok());
        CHECK(holders.value() == std::set<uid_t>{41857});
        CHECK(epilog.controller.calls == 1);
    }
    SUBCASE("the command (a node-wide sweep) asks too") {
        epilog.request.trigger = sweep::Trigger{};
        CHECK(check());
    }
    SUBCASE("a step end never asks") {
        epilog.request.trigger.job_ending = false;
        epilog.request.trigger.ending_step = steps::StepId{7, 0};
        CHECK_FALSE(check());
    }
    SUBCASE("without contain the evaluation's allocation check asks already") {
        epilog.request.node.prolog_contain = false;
        CHECK_FALSE(check());
    }
    SUBCASE("job_source controller: slurmctld is the word already") {
        epilog.config.job_source = JobSource::controller;
        CHECK_FALSE(check());
    }
}

TEST_CASE("job state source: a slurmctld question with too little time before the deadline is not asked") {
    JobEpilog epilog(41858, 8);
    // Without contain the job epilog asks before a user is swept; here with 100 ms left.
    sweep::JobStateSource source = epilog.source(std::chrono::milliseconds(100));
    const AllocationCheck asks = source.allocation_check();
    REQUIRE(asks);
    const auto holders = asks({41858});
    REQUIRE_FALSE(holders.ok());
    CHECK(holders.error().source == ErrorSource::deadline);
    CHECK(holders.error().message.find("slurmctld not asked") != std::string::npos);
    CHECK(epilog.controller.calls == 0);

    // With the time a question takes, it is asked.
    sweep::JobStateSource in_time = epilog.source(std::chrono::seconds(10));
    const auto answered = in_time.allocation_check()({41858});
    REQUIRE(answered.ok());
    CHECK(answered.value() == std::set<uid_t>{41858});
    CHECK(epilog.controller.calls == 1);
}

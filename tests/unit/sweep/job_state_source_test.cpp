// SPDX-License-Identifier: GPL-2.0-or-later
// Where the job-state reader asks slurmctld for the cleanup: with PrologFlags=contain a job
// slurmd is still setting up shows no step, so what a cleanup would remove is asked about,
// from the job epilog and the command; never at a step end (a helper started there may
// die mid-answer), and not where another question covers it.
#include "controller/shared_answer.hpp"
#include "steps/stepd_protocol.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_stepd.hpp"
#include "support/recording_sink.hpp"
#include "support/temp_dir.hpp"
#include "sweep/job_state_source.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <thread>

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

TEST_CASE("job state source: the job epilogs of a burst share one slurmctld answer, each leaving its own job out") {
    TempDir spool;
    // Both epilogs begin, then the first asks: the second takes only an answer asked
    // since it began.
    JobEpilog first(41859, 7);
    JobEpilog second(41860, 8);
    first.request.node.spool_dir = spool.path();
    first.controller.live = {};
    first.controller.live.job_users = {{7, 41859}, {8, 41860}, {9, 41859}};
    for (const auto& [job, uid] : first.controller.live.job_users) {
        first.controller.live.uids.insert(uid);
        first.controller.live.job_ids.insert(job);
    }
    sweep::JobStateSource asks = first.source(std::chrono::seconds(10));
    // Without contain the job epilog asks before a user is swept.
    const auto held = asks.allocation_check()({41859, 41860, 41861});
    REQUIRE(held.ok());
    CHECK(held.value() == std::set<uid_t>{41859, 41860});  // 41859 holds job 9 too
    CHECK(first.controller.calls == 1);
    CHECK(asks.answers_asked() == 1);

    // Job 8's epilog, on the same node: the answer is shared, without job 8.
    second.request.node.spool_dir = spool.path();
    second.log.set_threshold(LogLevel::debug);
    std::string job_start;
    SUBCASE("the node shows no job since") {}
    SUBCASE("the node shows a job it did not show when slurmctld was asked") { job_start = "job 40"; }
    std::optional<FakeStepd> started;
    if (!job_start.empty())
        started.emplace(spool / "n1_40.0", 41862, 2, Behaviour::answer, steps::build_stepd_protocol().version);
    sweep::JobStateSource shares = second.source(std::chrono::seconds(10));
    REQUIRE(shares.read().ok());  // the look at the node a sweep makes first
    const auto second_held = shares.allocation_check()({41859, 41860, 41861});
    REQUIRE(second_held.ok());
    INFO(second.sink.text());
    if (job_start.empty()) {
        CHECK(second_held.value() == std::set<uid_t>{41859});
        CHECK(second.controller.calls == 0);
        CHECK(shares.answers_shared() == 1);
        CHECK(second.sink.count("slurmctld's answer that another sweep of this node asked for ") == 1);
        // The first sweep asks again after grace: its own answer it does not take.
        CHECK(asks.allocation_check()({41859}).ok());
        CHECK(first.controller.calls == 2);
    } else {
        // A job start the answer cannot know of: slurmctld is asked again.
        CHECK(second.controller.calls == 1);
        CHECK(shares.answers_shared() == 0);
        CHECK(second.sink.count("job 40 showed here since (a job start the answer does not know)") == 1);
    }
}

TEST_CASE("job state source: a sweep that finds another's question in flight takes its answer, slow as it was") {
    TempDir spool;
    // Job 8's epilog begins, then job 7's asks slurmctld, which answers only after more
    // than an answer's life (a loaded node): job 8's epilog, asking meanwhile, waits for
    // that question and takes its answer rather than asking beside it.
    JobEpilog second(41866, 8);
    second.request.node.spool_dir = spool.path();
    second.log.set_threshold(LogLevel::debug);
    JobEpilog first(41865, 7);
    first.request.node.spool_dir = spool.path();
    sweep::JobStateSource shares = second.source(std::chrono::seconds(10));
    std::optional<Result<std::set<uid_t>>> second_held;
    std::thread asking;
    first.controller.during = [&] {
        asking = std::thread([&] { second_held = shares.allocation_check()({41865, 41866}); });
        std::this_thread::sleep_for(controller::kSharedAnswerLife + std::chrono::milliseconds(300));
    };
    const auto held = first.source(std::chrono::seconds(10)).allocation_check()({41865});
    asking.join();
    REQUIRE(held.ok());
    CHECK(first.controller.calls == 1);
    REQUIRE(second_held);
    REQUIRE(second_held->ok());
    INFO(second.sink.text());
    CHECK(second_held->value() == std::set<uid_t>{41865});  // 41866's job 8 is the one ending
    CHECK(second.controller.calls == 0);
    CHECK(shares.answers_shared() == 1);
}

TEST_CASE("job state source: an answer asked before the sweep began is not shared") {
    TempDir spool;
    JobEpilog first(41864, 7);
    first.request.node.spool_dir = spool.path();
    REQUIRE(first.source(std::chrono::seconds(10)).allocation_check()({41864}).ok());
    // Job 8's epilog begins after that question: the answer may list a job of its user's
    // that ended before it began.
    JobEpilog second(41864, 8);
    second.request.started += std::chrono::milliseconds(100);  // well after it, as clocks go
    second.request.node.spool_dir = spool.path();
    second.log.set_threshold(LogLevel::debug);
    REQUIRE(second.source(std::chrono::seconds(10)).allocation_check()({41864}).ok());
    CHECK(second.controller.calls == 1);
    CHECK(second.sink.count(" ms before this sweep began") == 1);
}

TEST_CASE("job state source: with job_source controller nothing is shared") {
    TempDir spool;
    JobEpilog first(41863, 7);
    first.request.node.spool_dir = spool.path();
    first.config.job_source = JobSource::controller;
    REQUIRE(first.source(std::chrono::seconds(10)).read().ok());
    JobEpilog second(41863, 8);
    second.request.node.spool_dir = spool.path();
    second.config.job_source = JobSource::controller;
    REQUIRE(second.source(std::chrono::seconds(10)).read().ok());
    CHECK(first.controller.calls == 1);
    CHECK(second.controller.calls == 1);
    CHECK_FALSE(test::path_exists(spool / "leftover-answer-n1"));
}

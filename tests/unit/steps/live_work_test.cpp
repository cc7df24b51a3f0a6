// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/live_work.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace leftover::steps;

namespace {

LocalStep step(std::uint32_t job, std::uint32_t id, uid_t uid, StepdState state = StepdState::running) {
    LocalStep s;
    s.job_id = job;
    s.step_id = id;
    s.uid = uid;
    s.state = state;
    return s;
}

}  // namespace

TEST_CASE("live work: the ending step must be among the answers, and does not count") {
    LocalJobState state;
    state.live = {step(10, 0, 41001), step(11, 0xfffffffbu, 41002)};
    auto live = live_work_from(state, StepId{10, 0}, "/spool for node n1");
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41002});
    CHECK(live->job_ids == std::set<std::uint64_t>{11});
}

TEST_CASE("live work: an ending step missing from the spool dir is a lookup error (wrong dir or node name)") {
    LocalJobState state;  // e.g. an unexpanded %n: nothing found at all
    auto live = live_work_from(state, StepId{10, 0}, "/var/spool/slurmd/%n for node n1");
    REQUIRE_FALSE(live.ok());
    CHECK(live.error().kind == ErrorKind::lookup);
    CHECK(live.error().message.find("the ending step 10.0 has no socket in /var/spool/slurmd/%n") != std::string::npos);
}

TEST_CASE("live work: the ending step's own socket held busy still proves the spool dir, and counts as nothing") {
    LocalJobState state;
    state.live = {step(11, 0, 41002)};
    state.unanswered = {{10, 0, "/spool/n1_10.0", "timed out connecting (listen backlog full)"}};
    auto live = live_work_from(state, StepId{10, 0}, "/spool for node n1");
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41002});
    CHECK(live->job_ids == std::set<std::uint64_t>{11});
    // Another step's unanswered socket is no proof: the ending step must be listed.
    state.unanswered = {{10, 1, "/spool/n1_10.1", "timed out connecting (listen backlog full)"}};
    CHECK_FALSE(live_work_from(state, StepId{10, 0}, "/spool for node n1").ok());
}

TEST_CASE("live work: steps already ending are not live work, other steps of the same job are") {
    LocalJobState state;
    state.live = {step(10, 0, 41001), step(10, 1, 41001), step(12, 0, 41003, StepdState::ending)};
    auto live = live_work_from(state, StepId{10, 0}, "x");
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41001});  // step 10.1 still runs
    CHECK(live->job_ids == std::set<std::uint64_t>{10});
}

TEST_CASE("live work: in the job epilog there is no ending step to find") {
    auto live = live_work_from(LocalJobState{}, std::nullopt, "x");
    REQUIRE(live.ok());
    CHECK(live->uids.empty());
}

TEST_CASE("live work: step names") {
    CHECK(describe_step(5, 0) == "5.0");
    CHECK(describe_step(5, 0xfffffffbu) == "5.batch");
    CHECK(describe_step(5, 0xfffffffcu) == "5.extern");
}

TEST_CASE("live work: a CANCELLED step is live (a job that traps scancel's TERM still runs)") {
    LocalJobState state;
    state.live = {step(20, 0, 41005, StepdState::cancelled), step(21, 0, 41006, StepdState::ending)};
    auto live = live_work_from(state, std::nullopt, "/spool for node n1");
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41005});
    CHECK(live->job_ids == std::set<std::uint64_t>{20});
}

TEST_CASE("live work: a live step's SLUID names its job cgroup (26.05), an ending step's does not") {
    LocalJobState state;
    state.live = {step(30, 0, 41007), step(31, 0, 41008, StepdState::ending)};
    state.live[0].sluid = 1;
    state.live[1].sluid = 2;
    auto live = live_work_from(state, std::nullopt, "/spool for node n1");
    REQUIRE(live.ok());
    CHECK(live->job_sluids == std::set<std::string>{"s0000000000001"});
}

TEST_CASE("fault catalogue: the stepd pids of live steps are live work, of the ending step and of ENDING steps not") {
    LocalJobState state;
    state.live = {step(40, 0, 41009), step(40, 0xfffffffcu, 41009), step(41, 0, 41010, StepdState::ending),
                  step(42, 0, 41011)};
    state.live[0].stepd_pid = 5000;  // the step whose exit hook runs
    state.live[1].stepd_pid = 5001;
    state.live[2].stepd_pid = 5002;
    // 42.0: a stepd in another pid namespace, whose pid says nothing here
    auto live = live_work_from(state, StepId{40, 0}, "/spool for node n1");
    REQUIRE(live.ok());
    CHECK(live->stepd_pids == std::set<pid_t>{5001});
    CHECK(live->uids == std::set<uid_t>{41009, 41011});
}

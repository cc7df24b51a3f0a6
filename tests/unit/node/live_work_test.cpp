// SPDX-License-Identifier: GPL-2.0-or-later
#include "run_sweep.hpp"
#include "live_work.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace leftover::node;

namespace {

LocalStep step(std::uint32_t job, std::uint32_t id, uid_t uid, bool ending = false) {
    LocalStep s;
    s.job_id = job;
    s.step_id = id;
    s.uid = uid;
    s.ending = ending;
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
    CHECK(live.error().message.find("the ending step 10.0 has no answering socket in /var/spool/slurmd/%n") !=
          std::string::npos);
}

TEST_CASE("live work: steps already ending are not live work; other steps of the same job are") {
    LocalJobState state;
    state.live = {step(10, 0, 41001), step(10, 1, 41001), step(12, 0, 41003, true)};
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

TEST_CASE("step names") {
    CHECK(describe_step(5, 0) == "5.0");
    CHECK(describe_step(5, 0xfffffffbu) == "5.batch");
    CHECK(describe_step(5, 0xfffffffcu) == "5.extern");
}

TEST_CASE("SlurmdSpoolDir and SlurmdPidFile are expanded as slurmd does it") {
    CHECK(expand_slurmd_path("/var/spool/slurmd", "n1", "host") == "/var/spool/slurmd");
    CHECK(expand_slurmd_path("/var/spool/slurmd/%n", "n1", "host") == "/var/spool/slurmd/n1");
    CHECK(expand_slurmd_path("/var/spool/%h/slurmd", "n1", "host") == "/var/spool/host/slurmd");
    CHECK(expand_slurmd_path("/s/%h/%n", "n1", "host") == "/s/host/n1");
    CHECK(expand_slurmd_path("/run/slurmd-%n.pid", "n1", "host") == "/run/slurmd-n1.pid");
}

// SPDX-License-Identifier: GPL-2.0-or-later
// Draining the node, slurmctld's side: the rule that keeps an earlier reason, the
// helper's answer, and the bounded helper call that asks slurmctld.
#include "controller/drain.hpp"
#include "controller/query_controller.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace leftover;
using namespace leftover::controller;
using namespace std::chrono_literals;

TEST_CASE("drain rule: a node drained, draining, down or failing keeps its reason, any other is drained") {
    CHECK_FALSE(keeps_its_reason({}));
    CHECK(keeps_its_reason({.drain = true}));
    CHECK(keeps_its_reason({.down = true}));
    CHECK(keeps_its_reason({.fail = true}));
}

TEST_CASE("drain answers: drained, or kept with the node's own state and reason, anything else is an error") {
    auto drained = parse_drain_output("drained\nend\n");
    REQUIRE(drained.ok());
    CHECK(drained->drained);
    auto kept = parse_drain_output("kept IDLE+DRAIN admin: bad DIMM\nend\n");
    REQUIRE(kept.ok());
    CHECK_FALSE(kept->drained);
    CHECK(kept->state == "IDLE+DRAIN");
    CHECK(kept->reason == "admin: bad DIMM");
    CHECK(parse_drain_output("drained\n").error().message.find("incomplete") != std::string::npos);
    CHECK_FALSE(parse_drain_output("").ok());
    CHECK_FALSE(parse_drain_output("drained\ndrained\nend\n").ok());
    CHECK_FALSE(parse_drain_output("maybe\nend\n").ok());
}

TEST_CASE("drain request: the helper gets the node and the reason as arguments, no shell between") {
    leftover::test::TempDir dir;
    const auto args = dir.path() + "/args";
    const auto helper =
        dir.write("leftover-query", "#!/bin/sh\nprintf '%s|' \"$@\" > " + args + "\necho drained\necho end\n", 0755);
    QueryController controller(helper, "");
    const std::string reason = "leftover: 1 process of b$(reboot) survived SIGKILL (D)";
    auto answer = controller.drain_node("n1", reason, std::chrono::steady_clock::now() + 5s);
    REQUIRE(answer.ok());
    CHECK(answer->drained);
    std::ifstream in(args);
    std::string line;
    std::getline(in, line);
    CHECK(line == "drain|--node|n1|--reason|" + reason + "|");
}

TEST_CASE("drain request: a helper that does not answer is killed at the deadline, an error and no more") {
    leftover::test::TempDir dir;
    const auto helper = dir.write("leftover-query", "#!/bin/sh\nexec sleep 60\n", 0755);
    QueryController controller(helper, "");
    const auto started = std::chrono::steady_clock::now();
    auto answer = controller.drain_node("n1", "leftover: x", started + 500ms);
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.error().message.find("did not finish before the deadline; killed") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - started < 10s);  // a hang detector, not a timing assert
}

TEST_CASE("drain request: slurmctld down is the helper's error, passed on with its words") {
    leftover::test::TempDir dir;
    const auto helper = dir.write(
        "leftover-query",
        "#!/bin/sh\necho 'slurm_load_node_single n1: Unable to contact slurm controller' >&2\nexit 2\n", 0755);
    QueryController controller(helper, "");
    auto answer = controller.drain_node("n1", "leftover: x", std::chrono::steady_clock::now() + 5s);
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.error().message.find("Unable to contact slurm controller") != std::string::npos);
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/helper_protocol.hpp"
#include "controller/query_controller.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace leftover;
using namespace leftover::controller;
using namespace std::chrono_literals;

TEST_CASE("controller answers: complete output is parsed") {
    auto live = parse_jobs_output("job 7 uid 41001\njob 9 uid 41002\nend\n");
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41001, 41002});
    CHECK(live->job_ids == std::set<std::uint64_t>{7, 9});
    CHECK(parse_jobs_output("end\n").ok());
}

TEST_CASE("controller answers: truncated or garbled output is a lookup error") {
    CHECK(parse_jobs_output("job 7 uid 41001\n").error().message.find("incomplete") != std::string::npos);
    CHECK(parse_jobs_output("").error().kind == ErrorKind::lookup);
    CHECK(parse_jobs_output("jobs 7 uid 1\nend\n").error().message.find("unexpected output line") != std::string::npos);
}

TEST_CASE("query controller: an untrusted helper is never run") {
    leftover::test::TempDir dir;
    const auto helper = dir.write("leftover-query", "#!/bin/sh\necho end\n", 0777);
    QueryController controller(helper, "");
    auto live = controller.jobs_on_nodes({"n1"}, std::nullopt, std::chrono::steady_clock::now() + 5s);
    REQUIRE_FALSE(live.ok());
    CHECK(live.error().message.find("writable by group or others") != std::string::npos);
}

TEST_CASE("fault catalogue: slurmctld is asked about every node of this host in one query") {
    leftover::test::TempDir dir;
    const auto args = dir.path() + "/args";
    const auto helper = dir.write("leftover-query", "#!/bin/sh\necho \"$@\" > " + args + "\necho end\n", 0755);
    QueryController controller(helper, "");
    REQUIRE(controller.jobs_on_nodes({"n1", "n2"}, 12u, std::chrono::steady_clock::now() + 5s).ok());
    std::ifstream in(args);
    std::string line;
    std::getline(in, line);
    CHECK(line == "--node n1 --node n2 --exclude-job 12");
}

TEST_CASE("query controller: a trusted helper's answer is used, the ending job is passed on") {
    leftover::test::TempDir dir;
    const auto helper =
        dir.write("leftover-query", "#!/bin/sh\n[ \"$4\" = 12 ] || exit 1\necho job 3 uid 41001\necho end\n", 0755);
    QueryController controller(helper, "/etc/slurm/slurm.conf");
    auto live = controller.jobs_on_nodes({"n1"}, 12u, std::chrono::steady_clock::now() + 5s);
    REQUIRE(live.ok());
    CHECK(live->uids == std::set<uid_t>{41001});
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The node the command speaks for: its spool directory, and slurmd's pid file as
// slurmd's create_pidfile writes it ("<pid>\n").
#include "cli/node_discovery.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;
using namespace leftover::test;

TEST_CASE("spool dir: must be an existing directory") {
    TempDir dir;
    CHECK(cli::check_spool_dir(dir.path()).ok());
    CHECK(cli::check_spool_dir(dir / "none").error().kind == ErrorKind::not_a_slurm_node);
    CHECK(cli::check_spool_dir(dir / "none").error().message.find("slurmd's spool directory") != std::string::npos);
    CHECK(cli::check_spool_dir(dir.write("file", "")).error().message.find("is not a directory") != std::string::npos);
}

TEST_CASE("slurmd's pid file: the pid it holds") {
    TempDir dir;
    CHECK(cli::read_slurmd_pid(dir.write("slurmd.pid", "4242\n")).value() == 4242);
    CHECK(cli::read_slurmd_pid(dir.write("slurmd.pid", "17")).value() == 17);
}

TEST_CASE("slurmd's pid file: missing, unreadable or malformed is a lookup error") {
    TempDir dir;
    std::string path;
    std::string expected;
    SUBCASE("missing") {
        path = dir / "absent.pid";
        expected = "slurmd's pid file " + path + " does not exist: slurmd does not run on this node";
    }
    SUBCASE("not configured") { expected = "slurm.conf names no SlurmdPidFile: cannot find slurmd"; }
    SUBCASE("a directory") {
        path = dir.path();
        expected = "cannot read slurmd's pid file " + path + ": Is a directory";
    }
    for (const char* text : {"", "\n", "0\n", "-5\n", "+5\n", "12x\n", "12\n13\n", " 12\n", "99999999999999999999\n"}) {
        SUBCASE(("holding '" + std::string(text) + "'").c_str()) {
            path = dir.write("slurmd.pid", text);
            expected = "slurmd's pid file " + path + " holds no pid";
        }
    }
    const Result<pid_t> pid = cli::read_slurmd_pid(path);
    REQUIRE_FALSE(pid.ok());
    CHECK(pid.error().kind == ErrorKind::lookup);
    CHECK(pid.error().message == expected);
}

TEST_CASE("fault catalogue: each running slurmd's node is read too, also beside an explicit --node") {
    node::NodeInfo info;
    info.node_name = "given";  // --node given, or slurmd's own pick
    info.spool_dir = "/spool/given";
    add_host_node(info, {"conf", "/spool/conf", false});  // slurm.conf puts it here; not seen running yet
    const node::SlurmdNaming names{"conf", "host.example", "/spool/%n", "host"};
    const std::vector<node::RunningSlurmd> running = {
        {10, {"lo-a", false, false}},        // -N lo-a
        {11, {std::nullopt, false, false}},  // no -N: slurmd's own pick from slurm.conf
        {12, {std::nullopt, true, false}},   // -Z: the host name
        {13, {"given", false, false}},       // the node itself
    };
    REQUIRE(cli::add_running_slurmds(info, running, names).ok());
    CHECK(info.other_nodes == std::vector<node::HostNode>{{"conf", "/spool/conf", true},
                                                          {"lo-a", "/spool/lo-a", true},
                                                          {"host.example", "/spool/host.example", true}});
}

TEST_CASE("fault catalogue: a running slurmd whose node cannot be told is a lookup error") {
    node::NodeInfo info;
    info.node_name = "n1";
    SUBCASE("-F without -N") {
        const auto status = cli::add_running_slurmds(info, {{42, {std::nullopt, false, true}}}, {"n1", "h", "/s", "h"});
        REQUIRE_FALSE(status.ok());
        CHECK(status.error().kind == ErrorKind::lookup);
        CHECK(status.error().message.find("slurmd pid 42 runs with -F and no -N") != std::string::npos);
    }
    SUBCASE("no -N, and slurm.conf names no node for this host") {
        const auto status =
            cli::add_running_slurmds(info, {{43, {std::nullopt, false, false}}}, {std::nullopt, "h", "/s", "h"});
        REQUIRE_FALSE(status.ok());
        CHECK(status.error().message.find("slurmd pid 43 runs without -N") != std::string::npos);
    }
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The node the command speaks for: its spool directory, and slurmd's pid file as
// slurmd's create_pidfile writes it ("<pid>\n").
#include "node.hpp"
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

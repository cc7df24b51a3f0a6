// SPDX-License-Identifier: GPL-2.0-or-later
// The failure streak of check --health: what each check makes of it, and the file it is
// kept in, refused when it is not one count or lies where others could write it.
#include "cli/exit_status.hpp"
#include "cli/health.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>

using namespace leftover;
using namespace leftover::cli;

TEST_CASE("health streak: a failure adds one, the Nth in a row fails, a pass clears it") {
    const std::string line = "leftover: ERROR: 1 stray process of 1 user\n";
    auto first = judge_health(line, kExitStrays, 0, 3);
    CHECK(first.streak == 1);
    CHECK_FALSE(first.fails);
    CHECK(first.line == "leftover: ERROR: 1 stray process of 1 user (1 of 3 failed checks in a row before it fails)\n");
    auto third = judge_health(line, kExitStrays, 2, 3);
    CHECK(third.streak == 3);
    CHECK(third.fails);
    CHECK(third.line == "leftover: ERROR: 1 stray process of 1 user (3 failed checks in a row)\n");
    // An error is no failure of the node's hygiene: it fails at once and leaves the streak as it was.
    const std::string error = "leftover: ERROR: lookup error: slurmstepd socket ...\n";
    auto doubt = judge_health(error, kExitError, 2, 3);
    CHECK(doubt.streak == 2);
    CHECK(doubt.fails);
    CHECK(doubt.error);
    CHECK(doubt.line == error);
    auto passed = judge_health("leftover: OK: no stray processes\n", kExitClean, 7, 3);
    CHECK(passed.streak == 0);
    CHECK_FALSE(passed.fails);
    CHECK(passed.line == "leftover: OK: no stray processes\n");
    // Without --failures (1) the line is the check's own.
    CHECK(judge_health(line, kExitStrays, 0, 1).line == line);
    CHECK(judge_health(line, kExitStrays, 0, 1).fails);
}

TEST_CASE("health streak file: written, read back, removed, created with its directory") {
    test::TempDir dir;
    const std::string state = dir / "state";
    CHECK(read_streak(state).value() == 0u);
    REQUIRE(write_streak(state, 2).ok());
    CHECK(read_streak(state).value() == 2u);
    REQUIRE(write_streak(state, 0).ok());
    CHECK(read_streak(state).value() == 0u);
    CHECK(::access(streak_path(state).c_str(), F_OK) != 0);
}

TEST_CASE("health streak file: not one count, or in a directory others may write, is an error") {
    test::TempDir dir;
    const std::string state = dir / "state";
    REQUIRE(::mkdir(state.c_str(), 0755) == 0);
    std::ofstream(streak_path(state)) << "2 or 3\n";
    CHECK(read_streak(state).error().message.find("holds no count of failures") != std::string::npos);
    std::ofstream(streak_path(state)) << "4\n";
    REQUIRE(::chmod(state.c_str(), 0777) == 0);
    CHECK(read_streak(state).error().message.find("not writable by group or others") != std::string::npos);
    CHECK_FALSE(write_streak(state, 5).ok());
}

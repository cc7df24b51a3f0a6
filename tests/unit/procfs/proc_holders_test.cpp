// SPDX-License-Identifier: GPL-2.0-or-later
// processes_holding (procfs/proc_holders.cpp) on a fake /proc: which processes hold a
// uid as any of their four uids, read from every status file whoever owns the entry.
#include "errors/error.hpp"
#include "procfs/proc_holders.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <vector>

using namespace leftover;
using namespace leftover::test;

TEST_CASE("processes holding a uid: any of the four uids, whoever owns the entry, zombies and vanished ones aside") {
    constexpr uid_t u = 41630;
    constexpr uid_t other = 41631;
    FakeProc fake;
    fake.add_process({.pid = 200, .uids = {u, 0, 0, 0}, .owner = 0});  // a setuid-root program she runs
    fake.add_process({.pid = 201, .uids = {0, u, 0, 0}});
    fake.add_process({.pid = 202, .uids = {0, 0, u, 0}, .owner = 0});
    fake.add_process({.pid = 203, .uids = {other, other, other, u}, .owner = other});
    fake.add_process({.pid = 204, .uids = {u, u, u, u}, .state = 'Z'});                // a zombie
    fake.add_process({.pid = 205, .uids = {u, u, u, u}, .state = 'Z', .threads = 2});  // its threads run
    fake.add_process({.pid = 206, .uids = {other, other, other, other}});
    fake.write_file("207", "");  // not a directory: no process
    const auto held = processes_holding(fake.root(), {u, other, 41632});
    REQUIRE(held.ok());
    CHECK(held->at(u) == std::vector<pid_t>{200, 201, 202, 203, 205});
    CHECK(held->at(other) == std::vector<pid_t>{203, 206});
    CHECK(held->count(41632) == 0);
    CHECK(processes_holding(fake.root(), {}).value().empty());
}

TEST_CASE("processes holding a uid: a status that cannot be read or parsed, and the deadline, are lookup errors") {
    FakeProc fake;
    fake.add_process({.pid = 200, .uids = {41630, 41630, 41630, 41630}});
    SUBCASE("garbage") {
        fake.write_file("200/status", "Name:\tx\nUid:\tnope\n");
        const auto held = processes_holding(fake.root(), {41630});
        REQUIRE_FALSE(held.ok());
        CHECK(held.error().message == "cannot read " + fake.root() + "/200/status: unexpected contents");
    }
    SUBCASE("no State line") {
        fake.write_file("200/status", "Name:\tx\nUid:\t1\t1\t1\t1\nThreads:\t1\n");
        CHECK_FALSE(processes_holding(fake.root(), {41630}).ok());
    }
    SUBCASE("the deadline") {
        const auto held = processes_holding(fake.root(), {41630}, std::chrono::steady_clock::now());
        REQUIRE_FALSE(held.ok());
        CHECK(held.error().source == ErrorSource::deadline);
    }
    SUBCASE("no proc root") { CHECK_FALSE(processes_holding(fake.root() + "/nonexistent", {41630}).ok()); }
}

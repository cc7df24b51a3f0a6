// SPDX-License-Identifier: GPL-2.0-or-later
// The running slurmd found in /proc (a fake tree) and the node name each command line gives.
#include "node/running_slurmd.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::node;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;

namespace {
std::string cmdline(const std::vector<std::string>& argv) {
    std::string text;
    for (const auto& arg : argv) text += arg + '\0';
    return text;
}
SlurmdOptions named(const std::string& name) { return {name, false, false}; }
}  // namespace

TEST_CASE("slurmd's command line: -N as getopt reads it, the last one winning") {
    CHECK(parse_slurmd_options({"slurmd"}) == SlurmdOptions{});
    CHECK(parse_slurmd_options({"slurmd", "-N", "n1"}) == named("n1"));
    CHECK(parse_slurmd_options({"slurmd", "-Nn1"}) == named("n1"));
    CHECK(parse_slurmd_options({"slurmd", "-DvN", "n1"}) == named("n1"));
    CHECK(parse_slurmd_options({"/usr/sbin/slurmd", "-D", "-f", "/etc/slurm/x.conf", "-N", "n1", "-N", "n2"}) ==
          named("n2"));
    CHECK(parse_slurmd_options({"slurmd", "-f", "-N", "-N", "n3"}) == named("n3"));  // -f's argument is "-N"
    CHECK(parse_slurmd_options({"slurmd", "--conf", "-N x", "-N", "n4"}) == named("n4"));
    CHECK(parse_slurmd_options({"slurmd", "--conf-server=h:6817", "-N", "n5"}) == named("n5"));
    CHECK(parse_slurmd_options({"slurmd", "--systemd", "-N", "n6"}) == named("n6"));
    CHECK(parse_slurmd_options({"slurmd", "--vers", "-N", "n7"}) == named("n7"));
    CHECK(parse_slurmd_options({"slurmd", "--", "-N", "n8"}) == SlurmdOptions{});
    CHECK(parse_slurmd_options({"slurmd", "-Z"}) == SlurmdOptions{std::nullopt, true, false});
    CHECK(parse_slurmd_options({"slurmd", "-Ffeat", "-N", "n9"}) == SlurmdOptions{"n9", false, true});
    CHECK(parse_slurmd_options({"slurmd", "-FN", "x"}) == SlurmdOptions{std::nullopt, false, true});  // "N" is F's
}

TEST_CASE("fault catalogue: every root slurmd of this pid namespace is found, with its -N") {
    FakeProc proc;
    // The caller (pid 100) is a root slurmd in the fake tree; give it a command line.
    proc.write_file("100/cmdline", cmdline({"slurmd", "-N", "caller"}));
    auto add = [&](pid_t pid, uid_t owner, const std::string& exe, const std::vector<std::string>& argv,
                   const std::string& ns = "pid:[4026531836]") {
        proc.add_process({.pid = pid, .uids = {owner, owner, owner, owner}, .comm = "slurmd", .exe = exe});
        proc.write_file(std::to_string(pid) + "/cmdline", cmdline(argv));
        proc.set_pid_ns(pid, ns);
    };
    add(200, 0, "/usr/sbin/slurmd-wlm", {"/usr/sbin/slurmd", "-D", "-N", "lo-a"});
    add(201, 0, "/usr/sbin/slurmd (deleted)", {"slurmd"});
    add(202, 1000, "/home/u/slurmd", {"slurmd", "-N", "fake"});                   // not root's
    add(203, 0, "/usr/bin/sleep", {"slurmd", "-N", "renamed"});                   // not slurmd's executable
    add(204, 0, "/usr/sbin/slurmd", {"slurmd", "-N", "ns"}, "pid:[4026532999]");  // another pid namespace
    add(205, 0, "/usr/sbin/slurmstepd", {"slurmstepd: [1.0]"});
    // An exe link that cannot be read (pid 1's in some containers, even for root): the
    // name the kernel took from the executable (stat's comm, "slurmd" here) counts.
    add(206, 0, "", {"slurmd", "-N", "lo-c"});
    proc.write_file("206/exe", "");  // a regular file: readlink fails with EINVAL

    auto found = running_slurmds(proc.root());
    REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
    REQUIRE(found->size() == 4);
    CHECK((*found)[0].pid == 100);
    CHECK((*found)[0].options == named("caller"));
    CHECK((*found)[1].pid == 200);
    CHECK((*found)[1].options == named("lo-a"));
    CHECK((*found)[2].pid == 201);
    CHECK((*found)[2].options == SlurmdOptions{});
    CHECK((*found)[3].pid == 206);
    CHECK((*found)[3].options == named("lo-c"));
}

TEST_CASE("running slurmd: a slurmd's forked child, its command line rewritten, is not a slurmd of its own") {
    FakeProc proc;
    proc.write_file("100/cmdline", cmdline({"slurmd", "-N", "caller"}));
    proc.add_process({.pid = 300, .ppid = 100, .uids = {0, 0, 0, 0}, .comm = "slurmd", .exe = "/usr/sbin/slurmd"});
    proc.write_file("300/cmdline", cmdline({"slurmd: epilog"}));
    proc.set_pid_ns(300, "pid:[4026531836]");
    auto found = running_slurmds(proc.root());
    REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
    REQUIRE(found->size() == 1);
    CHECK((*found)[0].pid == 100);
}

TEST_CASE("running slurmd: an unreadable /proc is a lookup error") {
    auto found = running_slurmds("/nonexistent-proc");
    REQUIRE_FALSE(found.ok());
    CHECK(found.error().kind == ErrorKind::lookup);
    CHECK(found.error().message.find("/nonexistent-proc") != std::string::npos);
}

TEST_CASE("which node each running slurmd is: one rule, each slurmd it cannot name said with its pid") {
    NodeInfo info;
    info.node_name = "ours";
    info.slurmd_pid = 10;  // the plugin's job epilog knows its slurmd; the command's discovery not yet
    const std::vector<RunningSlurmd> running = {
        {10, {std::nullopt, false, false}},  // our own slurmd without -N: it runs as node_name
        {11, {"lo-a", false, false}},        // -N
        {12, {std::nullopt, true, false}},   // -Z: the host name
        {13, {std::nullopt, false, false}},  // no -N: slurm.conf's pick, when known
        {14, {std::nullopt, false, true}},   // -F without -N: slurmctld names it
        {15, {"ours", false, false}},        // the node itself
    };
    SUBCASE("every name known (the command)") {
        const auto unknown = add_running_nodes(info, running, {"conf", "host.example", "/spool/%n", "host"});
        CHECK(info.other_nodes == std::vector<HostNode>{{"lo-a", "/spool/lo-a", true},
                                                        {"host.example", "/spool/host.example", true},
                                                        {"conf", "/spool/conf", true}});
        REQUIRE(unknown.size() == 1);
        CHECK(unknown[0].starts_with("slurmd pid 14 runs with -F and no -N"));
    }
    SUBCASE("slurm.conf's pick not known (the plugin's job epilog)") {
        const auto unknown = add_running_nodes(info, running, {std::nullopt, "host.example", "/spool/%n", "host"});
        CHECK(info.other_nodes ==
              std::vector<HostNode>{{"lo-a", "/spool/lo-a", true}, {"host.example", "/spool/host.example", true}});
        REQUIRE(unknown.size() == 2);
        CHECK(unknown[0].starts_with("slurmd pid 13 runs without -N"));
        CHECK(unknown[1].starts_with("slurmd pid 14 runs with -F and no -N"));
    }
    SUBCASE("a slurmd without -N that is not known to be ours") {
        info.slurmd_pid.reset();
        const auto unknown = add_running_nodes(info, running, {std::nullopt, std::nullopt, "/spool/%n", "host"});
        CHECK(info.other_nodes == std::vector<HostNode>{{"lo-a", "/spool/lo-a", true}});
        REQUIRE(unknown.size() == 4);
        CHECK(unknown[0].starts_with("slurmd pid 10 runs without -N"));
        CHECK(unknown[1].starts_with("slurmd pid 12 runs without -N"));
    }
}

TEST_CASE("slurm.conf's pick for this host, from the running slurmd: this node's, when none runs as it by name") {
    // The plugin at a step end: slurmd's pid is not known there (slurmd double-forks
    // slurmstepd), nor, from 23.02 on, slurm.conf's node table.
    const std::optional<std::string> host = "host.example";
    std::vector<RunningSlurmd> running = {
        {10, {std::nullopt, false, false}},  // no -N: slurm.conf's pick
        {11, {"lo-a", false, false}},        // -N
    };
    CHECK(pick_from_running("ours", running, host) == "ours");
    NodeInfo info;
    info.node_name = "ours";
    CHECK(add_running_nodes(info, running, {pick_from_running("ours", running, host), host, "/spool/%n", "host"})
              .empty());
    CHECK(info.other_nodes == std::vector<HostNode>{{"lo-a", "/spool/lo-a", true}});
    // A slurmd runs as this node by -N, or by -Z as the host name: the pick is not known.
    running.push_back({12, {"ours", false, false}});
    CHECK(pick_from_running("ours", running, host) == std::nullopt);
    running.back() = {12, {std::nullopt, true, false}};
    CHECK(pick_from_running("host.example", running, host) == std::nullopt);
    CHECK(pick_from_running("ours", running, host) == "ours");
}

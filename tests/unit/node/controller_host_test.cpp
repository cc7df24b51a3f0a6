// SPDX-License-Identifier: GPL-2.0-or-later
// Whether this host is slurmctld's: a slurmctld in /proc (a fake tree) or slurm.conf's
// SlurmctldHost naming it; a doubt is an error, never "not a controller host".
#include "node/controller_host.hpp"
#include "node/running_slurmd.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::node;
using leftover::test::FakeProc;

namespace {

constexpr uid_t kSlurmUser = 64030;

// A process with a command line, in the caller's pid namespace unless told otherwise.
void add_daemon(FakeProc& proc, pid_t pid, uid_t owner, const std::string& exe, const std::string& comm = "slurmctld",
                const std::string& ns = "pid:[4026531836]") {
    proc.add_process({.pid = pid, .uids = {owner, owner, owner, owner}, .comm = comm, .exe = exe});
    proc.write_file(std::to_string(pid) + "/cmdline", std::string("slurmctld") + '\0' + "-D" + '\0');
    proc.set_pid_ns(pid, ns);
}

NodeInfo node_with_slurm_user() {
    NodeInfo node;
    node.node_name = "n1";
    node.slurm_uids = {kSlurmUser, 0};
    return node;
}

}  // namespace

TEST_CASE("running slurmctld: root's or SlurmUser's, by its executable, in this pid namespace only") {
    FakeProc proc;
    add_daemon(proc, 300, 0, "/usr/sbin/slurmctld");
    add_daemon(proc, 301, kSlurmUser, "/usr/sbin/slurmctld (deleted)");                // dropped to SlurmUser
    add_daemon(proc, 302, 41001, "/home/u/slurmctld");                                 // a user's own copy
    add_daemon(proc, 303, 0, "/usr/bin/sleep", "slurmctld");                           // only named so
    add_daemon(proc, 304, 0, "/usr/sbin/slurmctld", "slurmctld", "pid:[4026532999]");  // a container's
    add_daemon(proc, 305, 0, "/usr/sbin/slurmd", "slurmd");

    auto found = running_slurmctlds(proc.root(), {kSlurmUser});
    REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
    CHECK(found.value() == std::vector<pid_t>{300, 301});
    // Without SlurmUser among the owners, only root's counts.
    auto root_only = running_slurmctlds(proc.root(), {});
    REQUIRE(root_only.ok());
    CHECK(root_only.value() == std::vector<pid_t>{300});
}

TEST_CASE("controller host: a running slurmctld makes one, and the reason names its pid") {
    FakeProc proc;
    const NodeInfo node = node_with_slurm_user();
    auto none = controller_host_reason(node, proc.root());
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());

    add_daemon(proc, 41001, 41001, "/home/u/slurmctld");  // a user cannot make one
    auto still_none = controller_host_reason(node, proc.root());
    REQUIRE(still_none.ok());
    CHECK_FALSE(still_none->has_value());

    add_daemon(proc, 812, kSlurmUser, "/usr/sbin/slurmctld");
    auto found = controller_host_reason(node, proc.root());
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    CHECK(**found == "slurmctld runs on this host (pid 812)");
}

TEST_CASE("controller host: slurm.conf's SlurmctldHost naming this host makes one, without a look at /proc") {
    NodeInfo node = node_with_slurm_user();
    node.slurmctld_host = "head1";
    auto found = controller_host_reason(node, "/nonexistent-proc");
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    CHECK(**found == "slurm.conf names this host as SlurmctldHost (head1)");
}

TEST_CASE("running daemons: one pass of /proc finds the slurmd and the slurmctld that the two looks find") {
    FakeProc proc;
    add_daemon(proc, 300, 0, "/usr/sbin/slurmctld");
    add_daemon(proc, 301, kSlurmUser, "/usr/sbin/slurmctld");
    add_daemon(proc, 305, 0, "/usr/sbin/slurmd", "slurmd");
    add_daemon(proc, 306, 0, "/usr/sbin/slurmd", "slurmd");
    proc.add_process({.pid = 307, .ppid = 306, .uids = {0, 0, 0, 0}, .comm = "slurmd", .exe = "/usr/sbin/slurmd"});
    proc.write_file("307/cmdline", std::string("slurmd") + '\0');  // 306's fork: no daemon
    proc.set_pid_ns(307, "pid:[4026531836]");
    add_daemon(proc, 308, kSlurmUser, "/usr/sbin/slurmd", "slurmd");  // slurmd is root's
    auto both = running_daemons(proc.root(), {kSlurmUser});
    REQUIRE_MESSAGE(both.ok(), (both.ok() ? "" : both.error().message));
    CHECK(both->slurmctlds == running_slurmctlds(proc.root(), {kSlurmUser}).value());
    CHECK(both->slurmctlds == std::vector<pid_t>{300, 301});
    std::vector<pid_t> slurmds;
    for (const RunningSlurmd& slurmd : both->slurmds) slurmds.push_back(slurmd.pid);
    CHECK(slurmds == std::vector<pid_t>{305, 306});
    CHECK(running_slurmds(proc.root()).value().size() == 2);
}

TEST_CASE("controller host: the slurmctlds the node's discovery saw answer it, without a second look at /proc") {
    NodeInfo node = node_with_slurm_user();
    node.slurmctlds_seen = std::vector<pid_t>{};
    auto none = controller_host_reason(node, "/nonexistent-proc");
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
    node.slurmctlds_seen = std::vector<pid_t>{812};
    auto found = controller_host_reason(node, "/nonexistent-proc");
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    CHECK(**found == "slurmctld runs on this host (pid 812)");
    // Not looked: /proc is read, and what cannot be read is an error.
    node.slurmctlds_seen.reset();
    CHECK_FALSE(controller_host_reason(node, "/nonexistent-proc").ok());
}

TEST_CASE("controller host: what cannot be read is a lookup error, never a host without slurmctld") {
    const NodeInfo node = node_with_slurm_user();
    SUBCASE("no /proc") {
        auto result = controller_host_reason(node, "/nonexistent-proc");
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message ==
              "cannot tell whether slurmctld runs on this host: cannot open /nonexistent-proc: "
              "No such file or directory");
    }
    SUBCASE("a root slurmctld whose pid namespace cannot be read") {
        FakeProc proc;
        add_daemon(proc, 300, 0, "/usr/sbin/slurmctld");
        proc.remove("300/ns/pid");
        proc.write_file("300/ns/pid", "");  // a regular file: readlink fails with EINVAL
        auto result = controller_host_reason(node, proc.root());
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("/300/ns/pid of a process of uid 0: ") != std::string::npos);
    }
    SUBCASE("a SlurmUser process whose executable and stat cannot be read") {
        FakeProc proc;
        add_daemon(proc, 301, kSlurmUser, "");
        proc.write_file("301/exe", "");  // readlink fails with EINVAL
        proc.remove("301/stat");
        proc.write_file("301/stat", "");  // unparsable
        auto result = controller_host_reason(node, proc.root());
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("/301/stat of a process of uid 64030") != std::string::npos);
    }
}

TEST_CASE("controller host: SlurmctldHost names this host by short or full name, an external-HA list, or localhost") {
    const std::set<std::string> host = {"head1", "head1.cluster.example"};
    CHECK(slurmctld_host_naming({"head1"}, host) == "head1");
    CHECK(slurmctld_host_naming({"head1.cluster.example"}, host) == "head1.cluster.example");
    CHECK(slurmctld_host_naming({"ctl0", "head1"}, host) == "head1");  // the backup controller
    CHECK(slurmctld_host_naming({"ctl0,head1"}, host) == "ctl0,head1");
    CHECK(slurmctld_host_naming({"localhost"}, host) == "localhost");
    CHECK_FALSE(slurmctld_host_naming({"ctl0", "ctl1"}, host));
    CHECK_FALSE(slurmctld_host_naming({"head"}, host));  // no prefix match
    CHECK_FALSE(slurmctld_host_naming({}, host));
    CHECK_FALSE(slurmctld_host_naming({""}, {""}));
}

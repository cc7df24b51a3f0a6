// SPDX-License-Identifier: GPL-2.0-or-later
// The process scan's ancestry over fake /proc trees: parent chains and which
// ancestors are slurmstepd.
#include "procfs/proc_table.hpp"
#include "support/fake_proc.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;
using leftover::test::get;
using leftover::test::scan_ok;

namespace {

const Uids root{};

// A slurmstepd as Slurm runs it: root, under pid 1, its exe the real binary.
FakeProcess stepd(pid_t pid, std::string exe = "/usr/sbin/slurmstepd") {
    return {.pid = pid,
            .ppid = 1,
            .uids = root,
            .comm = "slurmstepd: [5.0]",
            .start_time = 100,
            .cgroup = "0::/system.slice/slurmstepd.scope/job_5/step_0/slurm\n",
            .exe = std::move(exe)};
}

// Detailed scans of user processes only, as the plugin runs them.
ScanOptions users_only(const FakeProc& fake) {
    auto options = fake.options();
    options.wants_detail = [](uid_t owner) { return owner != 0; };
    return options;
}

}  // namespace

TEST_CASE("proc ancestry: a task under slurmstepd has it as stepd_ancestor") {
    FakeProc fake;
    fake.add_process(stepd(300));
    fake.add_process({.pid = 301, .ppid = 300, .comm = "bash", .start_time = 200});
    fake.add_process({.pid = 302, .ppid = 301, .comm = "python3", .start_time = 300});
    const auto table = scan_ok(users_only(fake));
    const Process& task = get(table, 302);
    CHECK(task.ancestors() == std::vector<pid_t>{301, 300, 1});
    CHECK(task.stepd_ancestor == std::optional<pid_t>{300});
    CHECK(get(table, 301).stepd_ancestor == std::optional<pid_t>{300});
    // The stepd itself was read as an ancestor, but its entry stays as listed (pid and
    // owner): the probe only notes that it is a slurmstepd.
    const Process& daemon = get(table, 300);
    CHECK(daemon.is_slurmstepd);
    CHECK_FALSE(daemon.detailed);
    CHECK(daemon.comm.empty());
    CHECK(daemon.owner == 0);
}

TEST_CASE("proc ancestry: a slurmstepd replaced by a package upgrade still counts") {
    FakeProc fake;
    fake.add_process(stepd(300, "/usr/sbin/slurmstepd (deleted)"));
    fake.add_process({.pid = 301, .ppid = 300, .start_time = 200});
    const auto table = scan_ok(users_only(fake));
    CHECK(get(table, 301).stepd_ancestor == std::optional<pid_t>{300});
}

TEST_CASE("proc ancestry: Debian's slurmstepd-wlm (the file behind the alternatives link) counts") {
    FakeProc fake;
    fake.add_process(stepd(300, "/usr/sbin/slurmstepd-wlm"));
    fake.add_process({.pid = 301, .ppid = 300, .start_time = 200});
    const auto table = scan_ok(users_only(fake));
    CHECK(get(table, 301).stepd_ancestor == std::optional<pid_t>{300});
}

TEST_CASE("proc ancestry: the nearest slurmstepd wins") {
    FakeProc fake;
    fake.add_process(stepd(300));
    auto inner = stepd(310, "/opt/slurm/22.05/sbin/slurmstepd");
    inner.ppid = 300;
    fake.add_process(inner);
    fake.add_process({.pid = 311, .ppid = 310, .start_time = 200});
    const auto table = scan_ok(users_only(fake));
    CHECK(get(table, 311).stepd_ancestor == std::optional<pid_t>{310});
    CHECK(get(table, 311).ancestors() == std::vector<pid_t>{310, 300, 1});
}

TEST_CASE("proc ancestry: slurmstepd is recognised by a root-owned exe, never by name") {
    FakeProc fake;
    SUBCASE("root process named slurmstepd running another binary") {
        auto impostor = stepd(300, "/usr/bin/python3");
        fake.add_process(impostor);
    }
    SUBCASE("user process whose exe is slurmstepd") {
        auto copy = stepd(300, "/home/user/bin/slurmstepd");
        copy.uids = {1000, 1000, 1000, 1000};
        fake.add_process(copy);
    }
    SUBCASE("user process running Debian's own slurmstepd-wlm") {
        auto run_by_user = stepd(300, "/usr/sbin/slurmstepd-wlm");
        run_by_user.uids = {1000, 1000, 1000, 1000};
        fake.add_process(run_by_user);
    }
    SUBCASE("exe whose directory is slurmstepd") { fake.add_process(stepd(300, "/opt/slurmstepd/bin/sh")); }
    SUBCASE("exe with another suffix") { fake.add_process(stepd(300, "/usr/sbin/slurmstepd.old")); }
    SUBCASE("exe with another dash suffix") { fake.add_process(stepd(300, "/usr/sbin/slurmstepd-wlmx")); }
    SUBCASE("root process without exe") { fake.add_process(stepd(300, "")); }
    // Only 301 is detailed, so 300 is judged as an ancestor whatever its owner.
    fake.add_process({.pid = 301, .ppid = 300, .uids = {1001, 1001, 1001, 1001}, .start_time = 200});
    auto options = fake.options();
    options.wants_detail = [](uid_t owner) { return owner == 1001; };
    const auto table = scan_ok(options);
    CHECK_FALSE(get(table, 301).stepd_ancestor.has_value());
    CHECK(get(table, 301).ancestors() == std::vector<pid_t>{300, 1});
    CHECK_FALSE(get(table, 300).is_slurmstepd);
}

TEST_CASE("proc ancestry: only ancestors of detailed processes are looked at") {
    FakeProc fake;
    fake.add_process(stepd(300));  // no detailed process under it
    fake.add_process({.pid = 320, .ppid = 1, .uids = root, .comm = "sshd", .exe = "/usr/sbin/sshd"});
    fake.write_file("320/stat", "garbage");  // would fail the scan if read
    fake.add_process({.pid = 330, .ppid = 1, .start_time = 200});
    const auto table = scan_ok(users_only(fake));
    CHECK_FALSE(get(table, 300).is_slurmstepd);
    CHECK(get(table, 300).comm.empty());
    CHECK(get(table, 330).ancestors() == std::vector<pid_t>{1});

    SUBCASE("an ancestor whose stat does not parse fails the scan") {
        fake.add_process({.pid = 321, .ppid = 320, .start_time = 200});
        const auto result = scan_processes(users_only(fake));
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().kind == ErrorKind::lookup);
        CHECK(result.error().message.find("/320/stat") != std::string::npos);
    }
}

TEST_CASE("proc ancestry: a root ancestor whose exe cannot be read fails the scan") {
    // Unknown is not "not a slurmstepd": the tasks under it would look stray.
    FakeProc fake;
    fake.add_process(stepd(300, ""));
    fake.write_file("300/exe", "a regular file: readlink fails with EINVAL\n");
    fake.add_process({.pid = 301, .ppid = 300, .start_time = 200});
    const auto result = scan_processes(users_only(fake));
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find("/300/exe") != std::string::npos);
}

TEST_CASE("proc ancestry: a loop in the parent chain marks its processes unreadable, not a hang") {
    FakeProc fake;
    fake.add_process({.pid = 400, .ppid = 401});
    fake.add_process({.pid = 401, .ppid = 402});
    fake.add_process({.pid = 402, .ppid = 400});
    fake.add_process({.pid = 405, .ppid = 405});  // its own parent
    fake.add_process({.pid = 406, .ppid = 1});
    const auto table = scan_ok(fake.options());
    for (const pid_t pid : {400, 401, 402, 405}) {
        CAPTURE(pid);
        CHECK(get(table, pid).ancestry_unreadable);
        CHECK(get(table, pid).ancestors().empty());
    }
    CHECK_FALSE(get(table, 406).ancestry_unreadable);
    CHECK(get(table, 406).ancestors() == std::vector<pid_t>{1});
}

TEST_CASE("proc ancestry: a parent that is missing ends the chain") {
    FakeProc fake;
    fake.add_process({.pid = 410, .ppid = 409});
    fake.add_process({.pid = 411, .ppid = 410, .start_time = 2000});
    const auto table = scan_ok(fake.options());
    CHECK(get(table, 410).ancestors().empty());
    CHECK(get(table, 411).ancestors() == std::vector<pid_t>{410});
    CHECK(get(table, 1).ancestors().empty());
    CHECK(get(table, 2).ancestors().empty());
}

TEST_CASE("proc ancestry: a parent younger than its child is a reused pid and ends the chain") {
    FakeProc fake;
    fake.add_process(stepd(420));
    fake.write_file("420/stat", FakeProc::stat_line({.pid = 420, .ppid = 1, .start_time = 9000}));
    fake.add_process({.pid = 421, .ppid = 420, .start_time = 500});
    const auto table = scan_ok(users_only(fake));
    CHECK(get(table, 421).ancestors().empty());
    CHECK_FALSE(get(table, 421).stepd_ancestor.has_value());
}

TEST_CASE("proc ancestry: a process reparented during the scan is walked from its new parent") {
    FakeProc fake;
    fake.add_process(stepd(430));
    fake.add_process({.pid = 431, .ppid = 432, .start_time = 500});
    fake.add_process({.pid = 432, .ppid = 430, .uids = root, .comm = "sudo", .start_time = 400});
    fake.add_process({.pid = 433, .uids = {1433, 1433, 1433, 1433}});
    auto options = users_only(fake);
    // After 431 was read, its parent exits and it is reparented to the stepd (a
    // subreaper). The trigger is the question about 433's owner, which comes later.
    options.wants_detail = [&](uid_t owner) {
        if (owner == 1433) {
            fake.remove("432");
            fake.write_file("431/stat", FakeProc::stat_line({.pid = 431, .ppid = 430, .start_time = 500}));
        }
        return owner != 0;
    };
    const auto table = scan_ok(options);
    CHECK(get(table, 431).ppid == 430);
    CHECK(get(table, 431).ancestors() == std::vector<pid_t>{430, 1});
    CHECK(get(table, 431).stepd_ancestor == std::optional<pid_t>{430});

    SUBCASE("and dropped when it exited too") {
        fake.add_process({.pid = 432, .ppid = 430, .uids = root, .comm = "sudo", .start_time = 400});
        fake.add_process({.pid = 431, .ppid = 432, .start_time = 500});
        options.wants_detail = [&](uid_t owner) {
            if (owner == 1433) {
                fake.remove("432");
                fake.remove("431/stat");
            }
            return owner != 0;
        };
        CHECK(scan_ok(options).find(431) == nullptr);
    }
}

TEST_CASE("proc read_ancestry: the parent chain of one process, nearest first") {
    FakeProc fake;
    fake.add_process(stepd(440));
    fake.add_process({.pid = 441, .ppid = 440});
    CHECK(read_ancestry(fake.root(), 441) == std::vector<pid_t>{440, 1});
    CHECK(read_ancestry(fake.root(), 1).empty());
    CHECK(read_ancestry(fake.root(), 442).empty());
    fake.add_process({.pid = 443, .ppid = 444});
    fake.add_process({.pid = 444, .ppid = 443});
    CHECK(read_ancestry(fake.root(), 443) == std::vector<pid_t>{444});
}

TEST_CASE("proc read_process: one process read again as the scan reads it, gone is no process, garbage an error") {
    FakeProc fake;
    fake.add_process(
        {.pid = 450, .uids = {41001, 41001, 41001, 41001}, .state = 'Z', .start_time = 4500, .threads = 2});
    fake.add_process({.pid = 451, .uids = {41001, 41001, 41001, 41001}, .state = 'Z', .start_time = 4510});
    const auto leader = read_process(fake.root(), 450);
    REQUIRE(leader.ok());
    REQUIRE(leader->has_value());
    CHECK((*leader)->start_time == 4500);
    CHECK((*leader)->threads == 2);
    CHECK((*leader)->uids == Uids{41001, 41001, 41001, 41001});
    CHECK((*leader)->owner == 41001);
    CHECK_FALSE((*leader)->zombie());  // the scan's rule: its other threads live
    const auto zombie = read_process(fake.root(), 451);
    REQUIRE(zombie.ok());
    REQUIRE(zombie->has_value());
    CHECK((*zombie)->zombie());
    const auto gone = read_process(fake.root(), 452);
    REQUIRE(gone.ok());
    CHECK_FALSE(gone->has_value());
    fake.write_file("450/status", "Name:\tx\nState:\tZ (zombie)\nUid:\t41001\t41001\t41001\t41001\nThreads:\tmany\n");
    const auto garbage = read_process(fake.root(), 450);
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.error().message.find("/450/status: unexpected contents") != std::string::npos);
}

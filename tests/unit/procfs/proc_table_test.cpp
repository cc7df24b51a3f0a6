// SPDX-License-Identifier: GPL-2.0-or-later
// The process scan over fake /proc trees: what it reads from each process, and the
// job cgroups read afterwards for the processes a plan would kill. Ancestry, view
// checks and the real /proc are in proc_ancestry_test.cpp and proc_view_test.cpp.
#include "procfs/proc_table.hpp"
#include "support/fake_proc.hpp"

#include <sys/stat.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;
using leftover::test::get;
using leftover::test::scan_ok;

namespace {

ProcessTable scan_without_cgroups(const FakeProc& fake) {
    ScanOptions options = fake.options();
    options.read_cgroup = false;
    return scan_ok(options);
}

}  // namespace

TEST_CASE("proc scan: hostile comm names are kept byte for byte") {
    const std::vector<std::string> names = {"a b", "x) Z 1", "two\nlines", "\x1b[31mred", "\xff\xfe\x80 bad utf8",
                                            "(",   ")",      "",           ") 9 9 (",     "((x))"};
    FakeProc fake;
    for (std::size_t i = 0; i < names.size(); ++i)
        fake.add_process({.pid = static_cast<pid_t>(200 + i),
                          .ppid = 1,
                          .comm = names[i],
                          .state = 'R',
                          .start_time = 4000 + i,
                          .flags = 0x400040});
    const auto table = scan_ok(fake.options());
    for (std::size_t i = 0; i < names.size(); ++i) {
        CAPTURE(i);
        const Process& p = get(table, static_cast<pid_t>(200 + i));
        CHECK(p.detailed);
        CHECK(p.comm == names[i]);
        // The fields after the last ')' are the real ones, not what the name imitates.
        CHECK(p.state == 'R');
        CHECK(p.ppid == 1);
        CHECK(p.start_time == 4000 + i);
        CHECK_FALSE(p.kernel_thread);
    }
}

TEST_CASE("proc scan: table is sorted by pid and find uses it") {
    FakeProc fake;
    for (const pid_t pid : {4000, 30, 777, 31}) fake.add_process({.pid = pid});
    fake.write_file("cpuinfo", "not a process\n");
    fake.add_process({.pid = 5});  // then made a non-directory below
    fake.remove("5");
    fake.write_file("5", "a file named like a pid\n");
    const auto table = scan_ok(fake.options());
    std::vector<pid_t> pids;
    for (const Process& p : table.processes) pids.push_back(p.pid);
    CHECK(pids == std::vector<pid_t>{1, 2, 30, 31, FakeProc::caller_pid, 777, 4000});
    CHECK(table.find(777)->pid == 777);
    CHECK(table.find(778) == nullptr);
    CHECK(table.find(0) == nullptr);
    CHECK(table.find(5000) == nullptr);
}

TEST_CASE("proc scan: a process whose files vanish is skipped silently") {
    FakeProc fake;
    fake.add_process({.pid = 300});
    fake.add_process({.pid = 301});
    fake.add_process({.pid = 302});
    fake.add_process({.pid = 303});
    fake.add_process({.pid = 304, .uids = {1304, 1304, 1304, 1304}});
    fake.add_process({.pid = 305});
    fake.remove("301/stat");
    fake.remove("302/status");
    fake.remove("303/cgroup");
    // 305 disappears after getdents listed it, while 304's owner is being asked about.
    auto options = fake.options();
    options.wants_detail = [&](uid_t owner) {
        if (owner == 1304) fake.remove("305");
        return true;
    };
    const auto table = scan_ok(options);
    CHECK(table.find(300) != nullptr);
    CHECK(table.find(301) == nullptr);
    CHECK(table.find(302) == nullptr);
    CHECK(table.find(303) == nullptr);
    CHECK(table.find(304) != nullptr);
    CHECK(table.find(305) == nullptr);
}

TEST_CASE("proc scan: a stat that does not parse is a lookup error, not a skipped process") {
    FakeProc fake;
    fake.add_process({.pid = 310});
    SUBCASE("garbage") { fake.write_file("310/stat", "310 no parentheses S 1\n"); }
    SUBCASE("truncated before start time") { fake.write_file("310/stat", "310 (sleep) S 1 310 310 0 -1 0\n"); }
    SUBCASE("names another pid") { fake.write_file("310/stat", FakeProc::stat_line({.pid = 311})); }
    SUBCASE("status without a Uid line") { fake.write_file("310/status", "Name:\tsleep\nGid:\t1\t1\t1\t1\n"); }
    SUBCASE("pgrp -1 of a task that is not dead") {
        fake.write_file("310/stat", "310 (sh) S 0 -1 -1 0 -1 4227084 85 0 0 0 0 0 0 0 20 0 0 0 3809664 0 0\n");
    }
    const auto result = scan_processes(fake.options());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find("/310/") != std::string::npos);
}

TEST_CASE("proc scan: a dead task already released (state X or Z, ppid 0, pgrp -1) is dead, not a lookup error") {
    FakeProc fake;
    fake.add_process({.pid = 330, .comm = "sh", .state = 'X', .exe = ""});
    // As the kernel writes it once release_task() took the task's signal handlers.
    fake.write_file("330/stat", "330 (sh) X 0 -1 -1 0 -1 4227084 85 0 0 0 0 0 0 0 20 0 0 0 3809664 0 0 0\n");
    // Its state read just before the parent reaped it, the rest just after.
    fake.add_process({.pid = 331, .comm = "sh", .state = 'Z', .exe = ""});
    fake.write_file("331/stat", "331 (sh) Z 0 -1 -1 0 -1 4227084 85 0 0 0 0 0 0 0 20 0 0 0 3809665 0 0 0\n");
    fake.add_process({.pid = 332, .state = 'S'});
    const auto table = scan_ok(fake.options());
    CHECK(get(table, 330).state == 'X');
    CHECK(get(table, 331).state == 'Z');
    for (const pid_t pid : {330, 331}) {
        CAPTURE(pid);
        CHECK(get(table, pid).zombie());
        CHECK(get(table, pid).ppid == 0);
        CHECK(get(table, pid).pgid == 0);
    }
    CHECK_FALSE(get(table, 332).zombie());
}

TEST_CASE("proc scan: zombies are kept with their state") {
    FakeProc fake;
    fake.add_process({.pid = 320, .comm = "defunct", .state = 'Z', .exe = ""});
    fake.add_process({.pid = 321, .comm = "dead", .state = 'X', .exe = ""});
    fake.add_process({.pid = 322, .state = 'S'});
    const auto table = scan_ok(fake.options());
    CHECK(get(table, 320).state == 'Z');
    CHECK(get(table, 320).zombie());
    CHECK(get(table, 320).detailed);
    CHECK(get(table, 321).zombie());
    CHECK_FALSE(get(table, 322).zombie());
}

TEST_CASE("proc scan: kernel threads by PF_KTHREAD alone, kthreadd itself included") {
    FakeProc fake;
    const Uids root{};
    fake.add_process({.pid = 40, .ppid = 2, .uids = root, .comm = "kworker/0:1", .flags = test::pf_kthread, .exe = ""});
    fake.add_process({.pid = 41, .ppid = 2, .uids = root, .comm = "modprobe", .flags = 0x400100});
    fake.add_process({.pid = 42, .ppid = 0, .uids = root, .comm = "odd", .flags = test::pf_kthread | 0x40, .exe = ""});
    fake.add_process({.pid = 43, .ppid = 1, .uids = root, .comm = "kworker/fake", .flags = 0x400000});
    const auto table = scan_ok(fake.options());
    CHECK(get(table, 2).kernel_thread);
    CHECK(get(table, 40).kernel_thread);
    CHECK_FALSE(get(table, 41).kernel_thread);  // a usermode helper that exec'd: root's process
    CHECK(get(table, 42).kernel_thread);
    CHECK_FALSE(get(table, 43).kernel_thread);  // a name is not a flag
    CHECK_FALSE(get(table, 1).kernel_thread);
}

TEST_CASE("proc scan: in a pid namespace of its own, pid 2 and its children are ordinary processes") {
    FakeProc fake;
    // A namespace's second process is whatever its init started first: here a user's shell.
    fake.add_process({.pid = 2, .ppid = 1, .uids = {41001, 41001, 41001, 41001}, .comm = "bash"});
    fake.add_process({.pid = 30, .ppid = 2, .uids = {41001, 41001, 41001, 41001}, .comm = "sleep"});
    const auto table = scan_ok(fake.options());
    CHECK_FALSE(get(table, 2).kernel_thread);
    CHECK_FALSE(get(table, 30).kernel_thread);
    CHECK(get(table, 30).detailed);
}

TEST_CASE("proc scan: every uid of status is read into its own field") {
    const std::vector<Uids> combinations = {
        {1001, 1002, 1003, 1004},  // all different
        {1000, 0, 0, 0},           // setuid root binary run by a user
        {0, 1000, 1000, 1000},     // root that dropped its effective uid
        {1000, 1000, 0, 1000},     // saved uid kept root
        {1000, 1000, 1000, 0},     // filesystem uid root
        {4294967294, 65534, 65534, 65534},
    };
    FakeProc fake;
    for (std::size_t i = 0; i < combinations.size(); ++i)
        fake.add_process(
            {.pid = static_cast<pid_t>(500 + i), .uids = combinations[i], .owner = static_cast<uid_t>(7000 + i)});
    const auto table = scan_ok(fake.options());
    for (std::size_t i = 0; i < combinations.size(); ++i) {
        CAPTURE(i);
        const Process& p = get(table, static_cast<pid_t>(500 + i));
        CHECK(p.uids == combinations[i]);
        CHECK(p.owner == 7000 + i);  // the directory's owner, not a status field
    }
}

TEST_CASE("proc scan: wants_detail false records pid and owner only, reading no stat") {
    FakeProc fake;
    fake.add_process({.pid = 600, .uids = {}, .comm = "rootd"});
    fake.add_process({.pid = 601, .uids = {}, .comm = "rootd"});
    fake.add_process({.pid = 602, .uids = {1602, 1602, 1602, 1602}});
    // Reading these would make the scan fail, so a passing scan proves they were not read.
    fake.write_file("600/stat", "garbage");
    fake.write_file("600/status", "garbage");
    fake.remove("601/stat");
    std::vector<uid_t> asked;
    auto options = fake.options();
    options.wants_detail = [&](uid_t owner) {
        asked.push_back(owner);
        return owner != 0;
    };
    const auto table = scan_ok(options);
    const Process& rootd = get(table, 600);
    CHECK_FALSE(rootd.detailed);
    CHECK(rootd.owner == 0);
    CHECK(rootd.comm.empty());
    CHECK(rootd.ancestors().empty());
    CHECK_FALSE(get(table, 601).detailed);
    CHECK(get(table, 602).detailed);
    CHECK(get(table, 602).uids.real == 1602);
    CHECK(asked.size() == table.processes.size());  // once per process
}

TEST_CASE("proc scan: cgroup files give the job of Slurm's own job cgroups only") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"});
    fake.add_process({.pid = 701,
                      .cgroup = "12:pids:/user.slice\n"
                                "11:memory:/slurm/uid_1000/job_43/step_batch/task_0\n"
                                "1:name=systemd:/system.slice/slurmd.service\n0::/\n"});
    fake.add_process({.pid = 702,
                      .cgroup = "0::/user.slice/user-1000.slice/user@1000.service/"
                                "system.slice/slurmstepd.scope/job_42/x\n"});
    fake.add_process({.pid = 703, .cgroup = ""});
    const auto table = scan_ok(fake.options());
    CHECK(get(table, 700).job_cgroup == "job_42");
    CHECK(get(table, 701).job_cgroup == "job_43");
    CHECK_FALSE(get(table, 702).job_cgroup.has_value());
    CHECK_FALSE(get(table, 703).job_cgroup.has_value());
}

TEST_CASE("job cgroups: only the listed processes are read, and only Slurm's own job cgroups count") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"});
    fake.add_process({.pid = 701, .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    fake.add_process({.pid = 702,
                      .cgroup = "0::/user.slice/user-1000.slice/user@1000.service/"
                                "system.slice/slurmstepd.scope/job_7\n"});
    ProcessTable table = scan_without_cgroups(fake);
    CHECK_FALSE(get(table, 700).job_cgroup.has_value());

    REQUIRE(read_job_cgroups(fake.root(), table, {700, 702}).ok());
    CHECK(get(table, 700).job_cgroup == "job_42");
    CHECK_FALSE(get(table, 701).job_cgroup.has_value());  // not listed
    CHECK_FALSE(get(table, 702).job_cgroup.has_value());  // a user's delegated subtree
}

TEST_CASE("job cgroups: a process gone since the scan is skipped, an unreadable cgroup is a lookup error") {
    FakeProc fake;
    fake.add_process({.pid = 700, .cgroup = "0::/system.slice/slurmstepd.scope/job_42/step_0\n"});
    fake.add_process({.pid = 701, .cgroup = "0::/system.slice/slurmstepd.scope/job_43/step_0\n"});
    ProcessTable table = scan_without_cgroups(fake);
    fake.remove("700/cgroup");
    REQUIRE(read_job_cgroups(fake.root(), table, {700}).ok());
    CHECK_FALSE(get(table, 700).job_cgroup.has_value());

    fake.remove("701/cgroup");
    REQUIRE(::mkdir(fake.path("701/cgroup").c_str(), 0755) == 0);  // a directory where the file should be
    auto status = read_job_cgroups(fake.root(), table, {701});
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().kind == ErrorKind::lookup);
}

TEST_CASE("proc read_identity: start time and uids, nullopt once gone") {
    FakeProc fake;
    fake.add_process({.pid = 800, .uids = {1001, 1002, 1003, 1004}, .state = 'T', .start_time = 123456789});
    const auto identity = read_identity(fake.root(), 800);
    REQUIRE(identity.has_value());
    CHECK(identity->start_time == 123456789);
    CHECK(identity->uids == Uids{1001, 1002, 1003, 1004});
    CHECK_FALSE(read_identity(fake.root(), 801).has_value());
    fake.remove("800/status");
    CHECK_FALSE(read_identity(fake.root(), 800).has_value());
    CHECK_FALSE(read_identity(fake.root() + "/nonexistent", 800).has_value());
}

TEST_CASE("fault catalogue: /proc read faults: a stat or status at EOF at once or cut short is a lookup error") {
    FakeProc fake;
    fake.add_process({.pid = 330});
    const std::string full = FakeProc::stat_line({.pid = 330});
    std::string file;
    SUBCASE("empty stat") {
        file = "330/stat";
        fake.write_file(file, "");
    }
    SUBCASE("stat cut inside the name") {
        file = "330/stat";
        fake.write_file(file, full.substr(0, full.find('(') + 3));
    }
    SUBCASE("empty status") {
        file = "330/status";
        fake.write_file(file, "");
    }
    SUBCASE("status cut inside the Uid line") {
        file = "330/status";
        fake.write_file(file, "Name:\tsleep\nUid:\t1000\t10");
    }
    const auto result = scan_processes(fake.options());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::lookup);
    CHECK(result.error().message.find("/" + file + ":") != std::string::npos);
}

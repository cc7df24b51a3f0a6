// SPDX-License-Identifier: GPL-2.0-or-later
// The view checks of the process scan (a /proc that would show only part of the
// processes is a lookup error), and one scan of the real /proc.
#include "procfs/proc_table.hpp"
#include "support/fake_proc.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

using namespace leftover;
using leftover::test::FakeProc;
using leftover::test::FakeProcess;

namespace {

// The caller (pid 100) with these credentials.
FakeProcess caller(Uids uids, std::uint64_t caps, std::vector<gid_t> gids = {0, 0, 0, 0},
                   std::vector<gid_t> groups = {}) {
    return {.pid = FakeProc::caller_pid,
            .uids = uids,
            .comm = "slurmd",
            .start_time = 50,
            .exe = "/usr/sbin/slurmd",
            .gids = std::move(gids),
            .groups = std::move(groups),
            .cap_eff = caps};
}

const Uids root{};
const Uids user{1000, 1000, 1000, 1000};

// Empty when the scan succeeded, else the lookup error's message.
std::string scan_error(const ScanOptions& options) {
    const auto result = scan_processes(options);
    if (result.ok()) return {};
    CHECK(result.error().kind == ErrorKind::lookup);
    return result.error().message;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("proc view: the default fake tree scans") {
    FakeProc fake;
    CHECK(scan_error(fake.options()) == "");
}

TEST_CASE("proc view: self must name the caller's pid") {
    FakeProc fake;
    auto options = fake.options();
    SUBCASE("self names another process") { fake.set_self(1); }
    SUBCASE("self is missing") { fake.remove("self"); }
    SUBCASE("caller pid not set") { options.caller_pid = 0; }
    SUBCASE("self is not a pid") { fake.symlink("100x", "self"); }
    CHECK(contains(scan_error(options), "/self"));
}

TEST_CASE("proc view: hidepid hides processes from a caller that is not exempt") {
    FakeProc fake;
    std::string mode;
    SUBCASE("hidepid=2, plain user") {
        mode = "hidepid=2";
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}));
    }
    SUBCASE("hidepid=invisible, root without CAP_SYS_PTRACE") {
        mode = "hidepid=invisible";
        fake.add_process(caller(root, test::all_caps & ~test::cap_sys_ptrace));
    }
    SUBCASE("hidepid=1, CAP_SYS_PTRACE but not root") {
        mode = "hidepid=1";
        fake.add_process(caller(user, test::all_caps, {1000, 1000, 1000, 1000}));
    }
    SUBCASE("hidepid=noaccess, saved uid not root") {
        mode = "hidepid=noaccess";
        fake.add_process(caller({0, 0, 1000, 0}, test::all_caps));
    }
    SUBCASE("hidepid=ptraceable, plain user") {
        mode = "hidepid=ptraceable";
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}));
    }
    SUBCASE("hidepid=2,gid=50, caller in another group") {
        mode = "hidepid=2,gid=50";
        fake.add_process(caller(user, 0, {51, 51, 51, 51}, {52, 53}));
    }
    fake.set_proc_mount("rw,nosuid," + mode);
    const auto error = scan_error(fake.options());
    CHECK(contains(error, mode.substr(0, mode.find(','))));
}

TEST_CASE("proc view: callers hidepid does not hide from") {
    FakeProc fake;
    SUBCASE("root with CAP_SYS_PTRACE") {
        fake.set_proc_mount("rw,hidepid=2");
        fake.add_process(caller(root, test::cap_sys_ptrace));
    }
    SUBCASE("member of the gid= group through Groups") {
        fake.set_proc_mount("rw,gid=50,hidepid=invisible");
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}, {10, 50}));
    }
    SUBCASE("the gid= group is the filesystem gid") {
        fake.set_proc_mount("rw,hidepid=2,gid=50");
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 50}));
    }
    SUBCASE("subset=pid only") {
        fake.set_proc_mount("rw,subset=pid");
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}));
    }
    SUBCASE("hidepid=0 and hidepid=off") {
        fake.set_proc_mount("rw,hidepid=0");
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}));
        CHECK(scan_error(fake.options()) == "");
        fake.set_proc_mount("rw,hidepid=off");
    }
    SUBCASE("a fake tree without mountinfo") {
        fake.remove(std::to_string(FakeProc::caller_pid) + "/mountinfo");
        fake.add_process(caller(user, 0, {1000, 1000, 1000, 1000}));
    }
    CHECK(scan_error(fake.options()) == "");
}

TEST_CASE("proc view: a mountinfo that cannot be read is a lookup error") {
    FakeProc fake;
    const auto mountinfo = std::to_string(FakeProc::caller_pid) + "/mountinfo";
    fake.remove(mountinfo);
    fake.add_process({.pid = 4100});
    fake.symlink("../4100/stat", mountinfo);  // not followed: O_NOFOLLOW
    CHECK(contains(scan_error(fake.options()), "self/mountinfo"));
}

TEST_CASE("proc view: the caller must share the Slurm daemon's pid namespace") {
    FakeProc fake;
    constexpr pid_t slurmd = 90;
    fake.add_process({.pid = slurmd,
                      .uids = {},
                      .comm = "slurmd",
                      .start_time = 40,
                      .exe = "/usr/sbin/slurmd",
                      .gids = {0, 0, 0, 0}});
    fake.set_pid_ns(slurmd, "pid:[4026531836]");
    auto options = fake.options();
    options.slurm_daemon_pid = slurmd;
    CHECK(scan_error(options) == "");
    SUBCASE("different namespace") {
        fake.set_pid_ns(slurmd, "pid:[4026532000]");
        CHECK(contains(scan_error(options), "pid:[4026532000]"));
    }
    SUBCASE("daemon's namespace unreadable") {
        fake.remove("90/ns/pid");
        CHECK(contains(scan_error(options), "the pid namespace of Slurm daemon pid 90"));
    }
    SUBCASE("own namespace unreadable") {
        fake.remove(std::to_string(FakeProc::caller_pid) + "/ns/pid");
        CHECK(contains(scan_error(options), "self/ns/pid"));
    }
    SUBCASE("slurmd upgraded on disk, Debian's slurmd-wlm, or a slurmstepd: still a Slurm daemon") {
        fake.add_process({.pid = slurmd,
                          .uids = {},
                          .comm = "slurmd",
                          .start_time = 40,
                          .exe = "/usr/sbin/slurmd (deleted)",
                          .gids = {0, 0, 0, 0}});
        CHECK(scan_error(options) == "");
        fake.add_process({.pid = slurmd,
                          .uids = {},
                          .comm = "slurmd",
                          .start_time = 40,
                          .exe = "/usr/sbin/slurmd-wlm",
                          .gids = {0, 0, 0, 0}});
        CHECK(scan_error(options) == "");
        fake.add_process({.pid = slurmd,
                          .uids = {},
                          .comm = "slurmstepd",
                          .start_time = 40,
                          .exe = "/usr/sbin/slurmstepd",
                          .gids = {0, 0, 0, 0}});
        CHECK(scan_error(options) == "");
    }
    SUBCASE("a pid that names no process: slurmd exited, or the pid is another namespace's") {
        options.slurm_daemon_pid = 4242;
        CHECK(contains(scan_error(options), "Slurm daemon pid 4242 is not in " + fake.root()));
    }
    SUBCASE("a pid that names another program: a stale pid file, or another namespace's pid") {
        options.slurm_daemon_pid = 1;  // same namespace as the caller, but systemd
        CHECK(contains(scan_error(options),
                       "pid 1 in " + fake.root() + " runs /usr/lib/systemd/systemd, not slurmd or slurmstepd"));
        fake.add_process({.pid = slurmd,
                          .uids = {},
                          .comm = "slurmd",
                          .start_time = 40,
                          .exe = "/usr/bin/slurmdx",
                          .gids = {0, 0, 0, 0}});
        options.slurm_daemon_pid = slurmd;
        CHECK(contains(scan_error(options), "runs /usr/bin/slurmdx, not slurmd"));
        fake.add_process({.pid = slurmd,
                          .uids = {},
                          .comm = "slurmd",
                          .start_time = 40,
                          .exe = "/usr/sbin/wlm",
                          .gids = {0, 0, 0, 0}});
        CHECK(contains(scan_error(options), "runs /usr/sbin/wlm, not slurmd"));
    }
}

TEST_CASE("proc view: a scan of the real /proc finds this test process as it is") {
    if (geteuid() != 0) {
        // Reading root processes' exe links needs root, as the plugin has.
        MESSAGE("skipped: needs root");
        return;
    }
    // Independent reading of our own start time: field 22, the 20th after the last ')'.
    std::ifstream in("/proc/self/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i) fields >> field;
    const std::uint64_t start_time = std::stoull(field);

    ScanOptions options;
    options.caller_pid = getpid();
    options.wants_detail = [](uid_t owner) { return owner == geteuid(); };
    const auto table = scan_processes(options);
    REQUIRE_MESSAGE(table.ok(), (table.ok() ? std::string() : table.error().message));
    const Process* self = table->find(getpid());
    REQUIRE(self != nullptr);
    uid_t real = 0, effective = 0, saved = 0;
    REQUIRE(getresuid(&real, &effective, &saved) == 0);
    CHECK(self->detailed);
    CHECK(self->uids == Uids{real, effective, saved, effective});
    CHECK(self->owner == effective);
    CHECK(self->start_time == start_time);
    CHECK(self->state == 'R');
    CHECK(self->ppid == getppid());
    REQUIRE_FALSE(self->ancestors().empty());
    CHECK(self->ancestors().front() == getppid());
    CHECK(self->ancestors().back() == 1);
    CHECK(table->processes.size() > 2);

    const auto identity = read_identity("/proc", getpid());
    REQUIRE(identity.has_value());
    CHECK(identity->start_time == start_time);
    CHECK(identity->uids == self->uids);
    CHECK(identity->ppid == getppid());
    CHECK(read_ancestry("/proc", getpid()) == self->ancestors());
}

TEST_CASE("proc view: a scan of the real /proc keeps an unreaped child as a zombie") {
    if (geteuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    // Wait until it has exited, without reaping it.
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) == 0);

    ScanOptions options;
    options.caller_pid = getpid();
    const auto table = scan_processes(options);
    REQUIRE_MESSAGE(table.ok(), (table.ok() ? std::string() : table.error().message));
    const Process* zombie = table->find(child);
    REQUIRE(zombie != nullptr);
    CHECK(zombie->zombie());
    CHECK(zombie->detailed);
    CHECK(zombie->ppid == getpid());
    CHECK(zombie->ancestors().front() == getpid());
    CHECK(waitpid(child, nullptr, 0) == child);
}

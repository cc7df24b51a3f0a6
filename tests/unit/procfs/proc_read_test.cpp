// SPDX-License-Identifier: GPL-2.0-or-later
// Reads of a real process's /proc files at the moment it dies: what the kernel answers
// then must read as "gone" (the scan skips it), never as a failure or a process.
#include "procfs/proc_read.hpp"
#include "support/root_lent_away.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <csignal>
#include <set>
#include <string>

using namespace leftover;

namespace {

// A child of ours that waits to be killed.
pid_t start_child() {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        for (;;) ::pause();
    }
    return pid;
}

void kill_and_reap(pid_t pid) {
    REQUIRE(::kill(pid, SIGKILL) == 0);
    REQUIRE(::waitpid(pid, nullptr, 0) == pid);
}

}  // namespace

TEST_CASE("fault catalogue: /proc read faults: ENOENT and ESRCH from a process that died mid-read read as gone") {
    UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(proc.valid());
    std::string buf;

    SUBCASE("its directory opened, then it died: each file's open fails") {
        const pid_t pid = start_child();
        UniqueFd dir;
        REQUIRE(open_pid_dir(proc.get(), pid, dir) == 0);
        kill_and_reap(pid);
        for (const char* file : {"stat", "status", "cgroup"}) {
            CAPTURE(file);
            const int err = read_file(dir.get(), file, buf);
            CHECK(vanished(err));
        }
        StatFields stat;
        CHECK(vanished(read_stat(dir.get(), pid, stat, buf)));
        CHECK(vanished(open_pid_dir(proc.get(), pid, dir)));
    }
    SUBCASE("its file opened, then it died: the read fails with ESRCH") {
        const pid_t pid = start_child();
        UniqueFd status(::openat(proc.get(), (std::to_string(pid) + "/status").c_str(), O_RDONLY | O_CLOEXEC));
        REQUIRE(status.valid());
        kill_and_reap(pid);
        char byte;
        CHECK(::read(status.get(), &byte, 1) == -1);
        CHECK(errno == ESRCH);
        CHECK(vanished(ESRCH));
    }
}

TEST_CASE(
    "fault catalogue: /proc read faults: a process reaped between the lookup of a link and its read refuses, and reads "
    "as gone") {
    UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(proc.valid());
    std::string link;

    SUBCASE("the kernel refuses the ns link of a reaped process with EACCES, not ESRCH") {
        const pid_t pid = start_child();
        UniqueFd ns(::openat(proc.get(), (std::to_string(pid) + "/ns/pid").c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        REQUIRE(ns.valid());
        kill_and_reap(pid);
        CHECK(read_link(ns.get(), "", link) == EACCES);
    }
    SUBCASE("a refusal from a reaped process's directory reads as gone") {
        const pid_t pid = start_child();
        UniqueFd dir;
        REQUIRE(open_pid_dir(proc.get(), pid, dir) == 0);
        kill_and_reap(pid);
        CHECK(gone_if_refused(dir.get(), EACCES) == ESRCH);
        CHECK(vanished(read_pid_link(dir.get(), "ns/pid", link)));
        CHECK(vanished(read_pid_link(dir.get(), "exe", link)));
    }
    SUBCASE("a refusal from a live process stays a refusal, and other errors pass") {
        const pid_t pid = start_child();
        UniqueFd dir;
        REQUIRE(open_pid_dir(proc.get(), pid, dir) == 0);
        CHECK(gone_if_refused(dir.get(), EACCES) == EACCES);
        CHECK(gone_if_refused(dir.get(), EINVAL) == EINVAL);
        CHECK(read_pid_link(dir.get(), "ns/pid", link) == 0);
        CHECK(link.starts_with("pid:["));
        kill_and_reap(pid);
    }
}

TEST_CASE(
    "fault catalogue: /proc read faults: a link refused while root was lent to a user is read again once root is "
    "back") {
    if (::getuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(proc.valid());
    const pid_t pid = start_child();  // root's, as slurmd is
    UniqueFd dir;
    REQUIRE(open_pid_dir(proc.get(), pid, dir) == 0);
    std::string link;
    {
        test::RootLentAway lent(41876, std::chrono::milliseconds(300));
        CHECK(read_link(dir.get(), "ns/pid", link) == EACCES);  // what the lend does to a plain read
        lent.give_back();  // root comes back 300 ms from now, while the read below waits for it
        CHECK(read_pid_link(dir.get(), "ns/pid", link) == 0);
        CHECK(link.starts_with("pid:["));
    }
    kill_and_reap(pid);
}

TEST_CASE("listing /proc: every pid-named entry is visited once, and a visitor's error stops the listing") {
    test::TempDir root;
    for (const char* name : {"1", "42", "7001", "self", "0042", "-3", "sys"})
        REQUIRE(::mkdir((root / name).c_str(), 0755) == 0);
    root.write("99", "");  // pid-named, not a directory: the visitor tells
    UniqueFd fd(::open(root.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
    std::set<pid_t> seen;
    REQUIRE(for_each_pid(fd.get(), root.path(), [&](pid_t pid, const char* name) -> Status {
                CHECK(std::to_string(pid) == name);
                CHECK(seen.insert(pid).second);
                return Ok{};
            }).ok());
    CHECK(seen == std::set<pid_t>{1, 42, 99, 7001});

    UniqueFd again(::open(root.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    int visits = 0;
    const Status stopped = for_each_pid(again.get(), root.path(), [&](pid_t, const char*) -> Status {
        ++visits;
        return Error::lookup("the deadline was reached", ErrorSource::deadline);
    });
    REQUIRE_FALSE(stopped.ok());
    CHECK(stopped.error().message == "the deadline was reached");
    CHECK(visits == 1);
}

TEST_CASE("a one-record /proc file is read whole in one read, and a file longer than the first read whole too") {
    const UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(proc.valid());
    std::string status;
    REQUIRE(read_record_file(proc.get(), "self/status", status) == 0);
    CHECK(status.starts_with("Name:\t"));
    CHECK(status.find("\nUid:\t") != std::string::npos);
    CHECK(status.ends_with("\n"));
    std::string stat;
    REQUIRE(read_record_file(proc.get(), "self/stat", stat) == 0);
    CHECK(stat.starts_with(std::to_string(::getpid()) + " ("));
    CHECK(stat.ends_with("\n"));

    // A fake tree's regular file: the first read fills the buffer, and the rest follows.
    const test::TempDir fake;
    const std::string long_status = "Name:\tx\n" + std::string(10000, 'a') + "\nUid:\t1\t1\t1\t1\n";
    fake.write("status", long_status);
    const UniqueFd dir(::open(fake.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(dir.valid());
    std::string read;
    REQUIRE(read_record_file(dir.get(), "status", read) == 0);
    CHECK(read == long_status);
}

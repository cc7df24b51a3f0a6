// SPDX-License-Identifier: GPL-2.0-or-later
// spank/privileges.cpp with a thread that drops this test process's privileges to test
// uid 41621 and takes them back, as Slurm 24.11's X11 cleanup thread does to slurmstepd.
#include "spank/privileges.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace leftover::spank;
using namespace std::chrono_literals;

namespace {

constexpr uid_t kUser = 41621;

}  // namespace

TEST_CASE("privileges: a sweep waits for root that another thread took away for a moment") {
    if (::getuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    std::atomic<bool> dropped{false};
    std::atomic<bool> release{false};
    std::thread cleanup([&] {
        // The order of drop_privileges and reclaim_privileges in Slurm.
        CHECK(::setegid(kUser) == 0);
        CHECK(::seteuid(kUser) == 0);
        dropped = true;
        while (!release) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(50ms);
        CHECK(::seteuid(0) == 0);
        CHECK(::setegid(0) == 0);
    });
    while (!dropped) std::this_thread::sleep_for(1ms);
    // glibc applied it to this thread too
    CHECK(::geteuid() == kUser);
    CHECK_FALSE(wait_for_root(std::chrono::steady_clock::now() + 20ms));  // not back yet: says so
    release = true;
    CHECK(wait_for_root(std::chrono::steady_clock::now() + 60s));  // a hang detector, not a timing
    CHECK(::geteuid() == 0);
    CHECK(::getegid() == 0);
    cleanup.join();
}

TEST_CASE("privileges: as root it returns at once, also past its deadline") {
    if (::getuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    CHECK(wait_for_root(std::chrono::steady_clock::time_point::min()));
}

TEST_CASE("privileges: a read that failed while another thread had lent root away is made again once root is back") {
    if (::getuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    // A file only root may read: in a directory of mode 0700.
    char dir_template[] = "/tmp/leftover-privileges-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    const std::string file = dir + "/leftover.conf";
    REQUIRE(::close(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) == 0);
    const auto readable = [&] {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
        return fd >= 0;
    };
    std::atomic<bool> dropped{false};
    std::atomic<bool> release{false};
    std::thread cleanup([&] {
        CHECK(::setegid(kUser) == 0);
        CHECK(::seteuid(kUser) == 0);
        dropped = true;
        while (!release) std::this_thread::sleep_for(1ms);
        CHECK(::seteuid(0) == 0);
        CHECK(::setegid(0) == 0);
    });
    while (!dropped) std::this_thread::sleep_for(1ms);
    int attempts = 0;
    const bool read = retried_as_root(
        [&] {
            const bool ok = readable();
            ++attempts;
            release = true;  // the lend ends after the first read, as 24.11's does
            return ok;
        },
        [](bool ok) { return ok; }, std::chrono::steady_clock::now() + 60s);  // a hang detector
    CHECK(read);
    CHECK(attempts == 2);  // the first, refused while lent, and one once root was back
    cleanup.join();
    // A failure of its own fails every try: the file gone, three tries, false.
    REQUIRE(::unlink(file.c_str()) == 0);
    attempts = 0;
    CHECK_FALSE(retried_as_root(
        [&] {
            ++attempts;
            return readable();
        },
        [](bool ok) { return ok; }, std::chrono::steady_clock::now() + 60s));
    CHECK(attempts == 3);
    CHECK(::rmdir(dir.c_str()) == 0);
}

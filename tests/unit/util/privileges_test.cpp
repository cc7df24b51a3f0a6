// SPDX-License-Identifier: GPL-2.0-or-later
// util/privileges.cpp with a thread that drops this test process's privileges to test
// uid 41621 and takes them back, as Slurm 24.11's X11 cleanup thread does to slurmstepd.
#include "support/root_lent_away.hpp"
#include "support/temp_dir.hpp"
#include "util/privileges.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace leftover;
using leftover::test::RootLentAway;
using leftover::test::TempDir;
using namespace std::chrono_literals;

namespace {

constexpr uid_t kUser = 41621;

}  // namespace

TEST_CASE("privileges: a sweep waits for root that another thread took away for a moment") {
    if (::getuid() != 0) {
        MESSAGE("skipped: needs root");
        return;
    }
    RootLentAway lent(kUser, 50ms);
    // glibc applied it to this thread too
    CHECK(::geteuid() == kUser);
    CHECK_FALSE(wait_for_root(std::chrono::steady_clock::now() + 20ms));  // not back yet: says so
    lent.give_back();
    CHECK(wait_for_root(std::chrono::steady_clock::now() + 60s));  // a hang detector, not a timing
    CHECK(::geteuid() == 0);
    CHECK(::getegid() == 0);
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
    const TempDir dir;
    const std::string file = dir.write("leftover.conf", "", 0600);
    const auto readable = [&] {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
        return fd >= 0;
    };
    {
        RootLentAway lent(kUser);
        int attempts = 0;
        const bool read = retried_as_root(
            [&] {
                const bool ok = readable();
                ++attempts;
                lent.give_back();  // the lend ends after the first read, as 24.11's does
                return ok;
            },
            [](bool ok) { return ok; }, std::chrono::steady_clock::now() + 60s);  // a hang detector
        CHECK(read);
        CHECK(attempts == 2);  // the first, refused while lent, and one once root was back
    }
    // A failure of its own fails every try: the file gone, three tries, false.
    REQUIRE(::unlink(file.c_str()) == 0);
    int attempts = 0;
    CHECK_FALSE(retried_as_root(
        [&] {
            ++attempts;
            return readable();
        },
        [](bool ok) { return ok; }, std::chrono::steady_clock::now() + 60s));
    CHECK(attempts == 3);
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <utility>

using leftover::UniqueFd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

TEST_CASE("unique fd: closed once, by whoever owns it last") {
    int raw = -1;
    {
        UniqueFd first(open_null());
        raw = first.get();
        REQUIRE(first.valid());
        UniqueFd second(std::move(first));
        CHECK_FALSE(first.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by design
        CHECK(second.get() == raw);
        UniqueFd third;
        third = std::move(second);
        CHECK(third.get() == raw);
        CHECK(is_open(raw));
    }
    CHECK_FALSE(is_open(raw));

    UniqueFd replaced(open_null());
    const int old = replaced.get();
    replaced.reset(open_null());
    CHECK_FALSE(is_open(old));
    CHECK(is_open(replaced.get()));

    const int kept = replaced.release();
    CHECK_FALSE(replaced.valid());
    CHECK(is_open(kept));
    ::close(kept);

    UniqueFd failed(-1);  // what a failed open returns owns nothing
    CHECK_FALSE(failed.valid());
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/file_room.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

using namespace leftover;

namespace {

// The process's limits for one test, put back after it.
struct KeptLimits {
    rlimit kept{};
    KeptLimits() { REQUIRE(::getrlimit(RLIMIT_NOFILE, &kept) == 0); }
    ~KeptLimits() { ::setrlimit(RLIMIT_NOFILE, &kept); }
};

rlimit limits() {
    rlimit now{};
    ::getrlimit(RLIMIT_NOFILE, &now);
    return now;
}

// Opens /dev/null `count` times: how many opened, and the error that stopped it.
std::pair<std::size_t, int> open_many(std::size_t count) {
    std::vector<UniqueFd> open;
    for (std::size_t i = 0; i < count; ++i) {
        UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!fd.valid()) return {open.size(), errno};
        open.push_back(std::move(fd));
    }
    return {open.size(), 0};
}

}  // namespace

TEST_CASE("file room: a descriptor limit too low for the pins is raised while they are held, then put back") {
    const KeptLimits kept;
    const rlimit low{64, kept.kept.rlim_max};
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    // The control: under the low limit, a thousand descriptors cannot be had.
    CHECK(open_many(1000).second == EMFILE);
    {
        const FileRoom room(1000);
        CHECK(room.raised());
        CHECK(room.before().rlim_cur == 64);
        CHECK(room.room() >= 1000);
        CHECK(open_many(1000) == std::pair<std::size_t, int>{1000, 0});
    }
    CHECK(limits().rlim_cur == 64);
    CHECK(limits().rlim_max == kept.kept.rlim_max);
}

// Whether this process may raise its hard limits (CAP_SYS_RESOURCE): root may, but
// not in every container (this machine kind's root lacks it).
bool may_raise_hard_limits() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("CapEff:"))
            return ((std::stoull(line.substr(7), nullptr, 16) >> CAP_SYS_RESOURCE) & 1) != 0;
    return false;
}

TEST_CASE("file room: a hard limit too low is raised where the process may, and what it got is said") {
    // In a child: a hard limit lowered cannot be raised again without the capability.
    const bool may = may_raise_hard_limits();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit low{64, 128};
        if (::setrlimit(RLIMIT_NOFILE, &low) != 0) ::_exit(10);
        int code = 0;
        {
            const FileRoom room(1000);
            const bool roomy = open_many(1000) == std::pair<std::size_t, int>{1000, 0};
            if (may && !(room.raised() && room.now().rlim_max > 128 && room.room() >= 1000 && roomy)) code = 11;
            if (!may && !(room.room() < 1000 && room.now().rlim_max == 128 && !roomy)) code = 12;
        }
        if (limits().rlim_cur != 64 || limits().rlim_max != 128) code = 13;
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    const std::string what = may ? "yes, the hard limit raised" : "no, the room short and said so";
    MESSAGE("CAP_SYS_RESOURCE: " << what);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("file room: with room enough already, nothing is raised") {
    const KeptLimits kept;
    const rlimit roomy{std::min<rlim_t>(4096, kept.kept.rlim_max), kept.kept.rlim_max};
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &roomy) == 0);
    const FileRoom room(100);
    CHECK_FALSE(room.raised());
    CHECK(room.room() >= 100);
    CHECK(limits().rlim_cur == roomy.rlim_cur);
}

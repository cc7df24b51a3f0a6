// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/file_room.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>

namespace leftover {
namespace {

// Headroom for what the process opens besides the pins (the sweep's own reads of /proc,
// other threads of slurmstepd).
constexpr std::size_t kSpare = 256;

// How many descriptors the process has open; 0 when it cannot be told.
std::size_t open_descriptors() {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return 0;
    std::size_t count = 0;
    while (const dirent* entry = ::readdir(dir))
        if (entry->d_name[0] != '.') ++count;
    ::closedir(dir);
    return count;
}

// fs.nr_open: the most any process's limit may be.
rlim_t nr_open() {
    rlim_t most = 1048576;  // the kernel's default
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "re")) {
        unsigned long long read = 0;
        if (std::fscanf(f, "%llu", &read) == 1 && read > 0) most = static_cast<rlim_t>(read);
        (void)std::fclose(f);  // read only: nothing to lose
    }
    return most;
}

}  // namespace

FileRoom::FileRoom(std::size_t wanted) {
    if (::getrlimit(RLIMIT_NOFILE, &now_) != 0) return;
    const std::size_t open = open_descriptors();
    const rlim_t needed = static_cast<rlim_t>(open + wanted + kSpare);
    const auto free_under = [&](rlim_t limit) { return limit > open ? static_cast<std::size_t>(limit - open) : 0; };
    if (now_.rlim_cur == RLIM_INFINITY || needed <= now_.rlim_cur) {
        room_ = now_.rlim_cur == RLIM_INFINITY ? wanted + kSpare : free_under(now_.rlim_cur);
        return;
    }
    const rlimit old = now_;
    rlimit raised = now_;
    if (raised.rlim_max != RLIM_INFINITY && needed > raised.rlim_max) raised.rlim_max = std::min(needed, nr_open());
    raised.rlim_cur = raised.rlim_max == RLIM_INFINITY ? needed : std::min(needed, raised.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
        raised.rlim_max = old.rlim_max;  // no CAP_SYS_RESOURCE: the soft limit up to the hard one
        raised.rlim_cur = raised.rlim_max == RLIM_INFINITY ? needed : std::min(needed, raised.rlim_max);
        if (raised.rlim_cur <= old.rlim_cur || ::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
            room_ = free_under(old.rlim_cur);
            return;
        }
    }
    before_ = old;
    now_ = raised;
    room_ = free_under(now_.rlim_cur);
}

FileRoom::~FileRoom() {
    if (before_) ::setrlimit(RLIMIT_NOFILE, &*before_);
}

}  // namespace leftover

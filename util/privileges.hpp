// SPDX-License-Identifier: GPL-2.0-or-later
// Whether this process runs as root now. Slurm 24.11's slurmstepd drops its privileges
// (seteuid and setegid to the job's user: glibc applies them to every thread) on its
// X11 cleanup thread while the main thread runs the plugins' exit hooks, and takes them
// back a moment later: 24-11-5-1 mgr.c:1129-1143 and :1584-1587, fixed in 25.05 by
// commit 1c065cb908 ("Fix x11 cleanup race condition"). A sweep started in that moment
// would read its config and users files as the user.
#pragma once

#include <chrono>

namespace leftover {

// Waits until the effective uid and gid are both 0, polling, at most until `deadline`.
// Whether they are.
bool wait_for_root(std::chrono::steady_clock::time_point deadline);

// `attempt()`, made again once root is back (wait_for_root), up to `tries` times in all,
// while `ok` says it failed: root checked is not root kept, since the X11 cleanup may lend
// the process away between the check and a read (seen on 24.11: "cannot open: Permission
// denied" for leftover.conf at an extern step's end). A failure of its own (a file that
// is missing or bad) fails every try alike, and is what is returned.
template <class Attempt, class Ok>
auto retried_as_root(Attempt attempt, Ok ok, std::chrono::steady_clock::time_point deadline, int tries = 3) {
    auto result = attempt();
    for (int i = 1; i < tries && !ok(result) && wait_for_root(deadline); ++i) result = attempt();
    return result;
}

}  // namespace leftover

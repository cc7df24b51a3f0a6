// SPDX-License-Identifier: GPL-2.0-or-later
// Room for many descriptors for a while: a sweep pins each process it signals with a
// pidfd and holds the pins while it waits for them to exit, so a user with tens of
// thousands of processes needs as many descriptors. slurmd's own systemd unit gives
// slurmstepd LimitNOFILE=131072; a slurmd started otherwise may leave 1024, and a pin
// that finds no descriptor is a target not signalled.
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <optional>

namespace leftover {

class FileRoom {
public:
    // Makes room for `wanted` descriptors beyond those open now: raises RLIMIT_NOFILE's
    // soft limit up to the hard one, and the hard one too (up to fs.nr_open) where the
    // process may (CAP_SYS_RESOURCE, as root has); nothing when there is room already.
    // Never fails: room() says what it got.
    explicit FileRoom(std::size_t wanted);
    ~FileRoom();  // puts the limits back as they were
    FileRoom(const FileRoom&) = delete;
    FileRoom& operator=(const FileRoom&) = delete;

    bool raised() const { return before_.has_value(); }
    rlimit before() const { return before_.value_or(now_); }
    rlimit now() const { return now_; }
    // Descriptors free under the limit now (an estimate: other threads open files too).
    std::size_t room() const { return room_; }

private:
    std::optional<rlimit> before_;  // set when the limits were raised
    rlimit now_{};
    std::size_t room_ = 0;
};

}  // namespace leftover

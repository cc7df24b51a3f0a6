// SPDX-License-Identifier: GPL-2.0-or-later
// Unix stream sockets in a spool directory, as slurmstepd makes them.
#pragma once

#include "util/unique_fd.hpp"

#include <string>
#include <vector>

namespace leftover::test {

// A socket bound to `path`, not yet listening.
UniqueFd bind_unix(const std::string& path);

// A socket file nobody listens on: what a crashed slurmstepd leaves behind.
void make_stale_socket(const std::string& path);

// A slurmstepd whose listen backlog a user's client has filled: it never accepts, and
// the client holds every connection the kernel let it make. A new connect gets EAGAIN.
class BlockedListener {
public:
    explicit BlockedListener(const std::string& path);

private:
    UniqueFd listener_;
    std::vector<UniqueFd> held_;
};

}  // namespace leftover::test

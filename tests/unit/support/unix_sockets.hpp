// SPDX-License-Identifier: GPL-2.0-or-later
// Unix stream sockets in a spool directory, as slurmstepd makes them.
#pragma once

#include "util/unique_fd.hpp"

#include <string>

namespace leftover::test {

// A socket bound to `path`, not yet listening.
UniqueFd bind_unix(const std::string& path);

// A socket file nobody listens on: what a crashed slurmstepd leaves behind.
void make_stale_socket(const std::string& path);

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
// The SysV IPC part of the cleanup: the tables in /proc/sysvipc and the namespace check.
#pragma once

#include "cleanup/cleanup_calls.hpp"
#include "errors/result.hpp"

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leftover {

struct SysvObject {
    int id = 0;
    uid_t uid = 0;
    uid_t cuid = 0;
    std::uint64_t attached = 0;  // shm: nattch
    std::uint64_t bytes = 0;     // shm: size; msg: cbytes; sem: 0
};

// Parses /proc/sysvipc/{shm,sem,msg} by the column names of its header line, so a kernel
// that adds a column still reads right. A line that does not parse is an error.
Result<std::vector<SysvObject>> parse_sysvipc(std::string_view text, SysvKind kind, const std::string& origin);

// Whether the caller is in pid 1's IPC namespace (/proc/self/ns/ipc against /proc/1/ns/ipc;
// where /proc/1's cannot be read, whether the caller's is the kernel's initial one).
Status in_initial_ipc_namespace(const std::string& proc_root, CleanupCalls& calls);

}  // namespace leftover

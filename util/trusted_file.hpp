// SPDX-License-Identifier: GPL-2.0-or-later
// Reading a file that decides who is protected: only a root-owned regular file that
// nobody else can write is believed, and the checks apply to the opened file itself.
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <string>

namespace leftover {

enum class FileFault {
    missing,      // ENOENT
    symlink,      // the path is a symbolic link
    not_regular,  // a directory, device, fifo ...
    bad_owner,    // not owned by the required owner (root)
    bad_mode,     // writable by group or others
    unreadable,   // open or read failed for another reason
    too_large,
    bad_parent,  // a directory above it is not root's or is writable by group or others
    changed,     // its size or times changed while it was read
};

struct FileError {
    FileFault fault;
    std::string message;  // "<path>: <why>"
};

inline constexpr std::size_t kMaxTrustedFileSize = std::size_t{4} << 20;  // 4 MiB

Result<std::string, FileError> read_trusted_file(const std::string& path, uid_t required_owner = 0);

// The same checks without reading: for a program we are about to run as root.
Status check_trusted_file(const std::string& path, uid_t required_owner = 0);

// The directory open as `dir_fd` and every directory above it, walked up by "..": each
// owned by root or `owner`, not writable by group or others unless sticky, as the
// directories of a trusted file. `name` is the directory's path, for the message.
Status check_trusted_directory_chain(int dir_fd, const std::string& name, uid_t owner = 0);

}  // namespace leftover

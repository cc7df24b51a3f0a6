// SPDX-License-Identifier: GPL-2.0-or-later
#include "trusted_file.hpp"

#include "errno_text.hpp"
#include "unique_fd.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace leftover {
namespace {

FileError fault(FileFault kind, const std::string& path, const std::string& why) {
    return {kind, fmt::format("{}: {}", path, why)};
}

// Opens `path` and checks the opened file itself: regular, owned by `required_owner`,
// not writable by group or others. Returns the descriptor.
Result<UniqueFd, FileError> open_trusted(const std::string& path, uid_t required_owner) {
    // O_NOFOLLOW refuses a symlink at the last component; O_NONBLOCK keeps a fifo from
    // blocking the open before fstat can reject it.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    if (!fd.valid()) {
        const int err = errno;
        if (err == ENOENT) return fault(FileFault::missing, path, "does not exist");
        if (err == ELOOP) return fault(FileFault::symlink, path, "is a symbolic link; expected a regular file");
        return fault(FileFault::unreadable, path, fmt::format("cannot open: {}", errno_text(err)));
    }

    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return fault(FileFault::unreadable, path, fmt::format("cannot stat: {}", errno_text(errno)));
    if (!S_ISREG(st.st_mode))
        return fault(FileFault::not_regular, path,
                     S_ISDIR(st.st_mode) ? "is a directory; expected a regular file" : "is not a regular file");
    if (st.st_uid != required_owner)
        return fault(FileFault::bad_owner, path,
                     fmt::format("is owned by uid {}; expected uid {} (root)", st.st_uid, required_owner));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return fault(FileFault::bad_mode, path,
                     fmt::format("has mode {:04o}; it must not be writable by group or others", st.st_mode & 07777));
    if (static_cast<std::size_t>(st.st_size) > kMaxTrustedFileSize)
        return fault(FileFault::too_large, path, fmt::format("is larger than {} bytes", kMaxTrustedFileSize));
    return fd;
}

}  // namespace

Status check_trusted_file(const std::string& path, uid_t required_owner) {
    const auto opened = open_trusted(path, required_owner);
    if (!opened.ok()) return Error::lookup(opened.error().message);
    return Ok{};
}

Result<std::string, FileError> read_trusted_file(const std::string& path, uid_t required_owner) {
    auto opened = open_trusted(path, required_owner);
    if (!opened.ok()) return opened.error();
    const int fd = opened.value().get();

    std::string content;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fault(FileFault::unreadable, path, fmt::format("cannot read: {}", errno_text(errno)));
        }
        if (n == 0) break;
        content.append(buffer, static_cast<std::size_t>(n));
        if (content.size() > kMaxTrustedFileSize)
            return fault(FileFault::too_large, path, fmt::format("is larger than {} bytes", kMaxTrustedFileSize));
    }
    return content;
}

}  // namespace leftover

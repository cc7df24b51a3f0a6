// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/trusted_file.hpp"

#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <utility>

namespace leftover {
namespace {

FileError fault(FileFault kind, const std::string& path, const std::string& why) {
    return {kind, fmt::format("{}: {}", path, why)};
}

// A directory nobody but root (or `owner`) can change: its owner, and not writable by
// group or others unless sticky (as /tmp, where nobody can rename or remove another's
// entries). Whoever could write it could swap the file, or remove it.
std::optional<std::string> untrusted_directory(const struct stat& st, uid_t owner) {
    if (st.st_uid != 0 && st.st_uid != owner)
        return fmt::format("is owned by uid {}; expected uid {} (root)", st.st_uid, owner);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
        return fmt::format("has mode {:04o}; it must not be writable by group or others", st.st_mode & 07777);
    return std::nullopt;
}

// Checks the directory open as `dir_fd`, named `name`, and every directory above it,
// walking up by "..", from the opened directory itself. `path`: what the message names.
std::optional<FileError> untrusted_chain(int dir_fd, std::filesystem::path name, const std::string& path,
                                         uid_t required_owner) {
    UniqueFd level(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    for (int depth = 0; level.valid() && depth < 4096; ++depth) {
        struct stat st {
        }, up_st{};
        if (::fstat(level.get(), &st) != 0)
            return fault(FileFault::unreadable, path,
                         fmt::format("cannot stat {}: {}", name.string(), errno_text(errno)));
        if (auto why = untrusted_directory(st, required_owner))
            return fault(FileFault::bad_parent, path, fmt::format("directory {} {}", name.string(), *why));
        UniqueFd up(::openat(level.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!up.valid() || ::fstat(up.get(), &up_st) != 0)
            return fault(FileFault::unreadable, path,
                         fmt::format("cannot open the directory above {}: {}", name.string(), errno_text(errno)));
        if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) return std::nullopt;  // reached /
        level = std::move(up);
        name = name.parent_path();
    }
    return fault(FileFault::unreadable, path, "has more than 4096 directories above it");
}

// A path's name for the messages only: the walks go by descriptors.
std::filesystem::path display_name(const std::string& path) {
    std::error_code ignored;
    return std::filesystem::weakly_canonical(std::filesystem::absolute(path), ignored);
}

// Opens the directory `path` names its file in and checks it and every directory above it.
Result<UniqueFd, FileError> open_trusted_parent(const std::string& path, uid_t required_owner) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    const std::string parent_name = parent.empty() ? "." : parent.string();
    UniqueFd dir(::open(parent_name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) {
        const int err = errno;
        if (err == ENOENT) return fault(FileFault::missing, path, "does not exist");
        return fault(FileFault::unreadable, path, fmt::format("cannot open: {}", errno_text(err)));
    }
    if (auto error = untrusted_chain(dir.get(), display_name(parent_name), path, required_owner)) return *error;
    return dir;
}

// Opens `path` and checks the opened file itself: regular, owned by `required_owner`,
// not writable by group or others, in directories only root can change. Returns the
// descriptor and what fstat said of it.
Result<std::pair<UniqueFd, struct stat>, FileError> open_trusted(const std::string& path, uid_t required_owner) {
    auto parent = open_trusted_parent(path, required_owner);
    LEFTOVER_TRY(parent);
    const std::string file = std::filesystem::path(path).filename().string();
    // O_NOFOLLOW refuses a symlink at the last component; O_NONBLOCK keeps a fifo from
    // blocking the open before fstat can reject it.
    UniqueFd fd(::openat(parent.value().get(), file.empty() ? "." : file.c_str(),
                         O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
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
    return std::pair<UniqueFd, struct stat>(std::move(fd), st);
}

bool same_times(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

Status check_trusted_directory_chain(int dir_fd, const std::string& name, uid_t owner) {
    // The message names the first directory that fails; `name` itself is said by the caller.
    if (auto error = untrusted_chain(dir_fd, display_name(name), name, owner)) {
        const std::string prefix = name + ": ";
        std::string why = error->message;
        if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
        return Error::lookup(why, ErrorSource::other);
    }
    return Ok{};
}

Status check_trusted_file(const std::string& path, uid_t required_owner) {
    const auto opened = open_trusted(path, required_owner);
    if (!opened.ok()) return Error::lookup(opened.error().message, ErrorSource::other);
    return Ok{};
}

Result<std::string, FileError> read_trusted_file(const std::string& path, uid_t required_owner) {
    auto opened = open_trusted(path, required_owner);
    LEFTOVER_TRY(opened);
    const int fd = opened.value().first.get();
    const struct stat before = opened.value().second;

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
    // An editor writing the file in place while we read it: what we read is neither the
    // old file nor the new one. (A file replaced by rename is read whole, the old one.)
    struct stat after {};
    if (::fstat(fd, &after) != 0)
        return fault(FileFault::unreadable, path, fmt::format("cannot stat: {}", errno_text(errno)));
    if (content.size() != static_cast<std::size_t>(before.st_size) || after.st_size != before.st_size ||
        !same_times(after.st_mtim, before.st_mtim) || !same_times(after.st_ctim, before.st_ctim))
        return fault(FileFault::changed, path,
                     fmt::format("changed while it was read (read {} bytes, its size was {}, then {}); nothing "
                                 "from it is used",
                                 content.size(), before.st_size, after.st_size));
    return content;
}

}  // namespace leftover

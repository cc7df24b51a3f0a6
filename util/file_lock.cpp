// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/file_lock.hpp"

#include "util/errno_text.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace leftover {
namespace {

Error lock_error(const std::string& path, const std::string& why) {
    return Error::lookup(fmt::format("lock file {}: {}", path, why), ErrorSource::other);
}

}  // namespace

Result<FileLock> FileLock::open(const std::string& path, std::optional<uid_t> dir_owner, uid_t file_owner) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos || slash + 1 == path.size()) return lock_error(path, "not a path to a file");
    const std::string dir = slash == 0 ? std::string("/") : path.substr(0, slash);
    const std::string name = path.substr(slash + 1);

    const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_fd.valid()) return lock_error(path, fmt::format("cannot open its directory: {}", errno_text(errno)));
    struct stat st {};
    if (::fstat(dir_fd.get(), &st) != 0)
        return lock_error(path, fmt::format("cannot stat its directory: {}", errno_text(errno)));
    if (st.st_uid != 0 && (!dir_owner || st.st_uid != *dir_owner))
        return lock_error(path, fmt::format("its directory is owned by uid {}, not by root", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return lock_error(
            path, fmt::format("its directory is writable by group or others (mode {:04o})", st.st_mode & 07777));

    // O_NONBLOCK: a fifo planted under the name must not block the open before fstat refuses it.
    UniqueFd fd(
        ::openat(dir_fd.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600));
    if (!fd.valid()) {
        const int err = errno;
        if (err == ELOOP) return lock_error(path, "is a symbolic link");
        return lock_error(path, fmt::format("cannot open it: {}", errno_text(err)));
    }
    if (::fstat(fd.get(), &st) != 0) return lock_error(path, fmt::format("cannot stat it: {}", errno_text(errno)));
    if (!S_ISREG(st.st_mode)) return lock_error(path, "is not a regular file");
    if (st.st_uid != file_owner || (st.st_mode & 077) != 0)
        return lock_error(
            path, fmt::format("must be a file of uid {} that only it can open (found uid {}, mode {:04o})", file_owner,
                              st.st_uid, st.st_mode & 07777));
    return FileLock(std::move(fd), path);
}

Result<FileLock::Taken> FileLock::take(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds poll) {
    if (held_) return Taken::at_once;
    bool waited = false;
    for (;;) {
        if (::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
            held_ = true;
            return waited ? Taken::after_wait : Taken::at_once;
        }
        if (errno == EWOULDBLOCK)
            waited = true;
        else if (errno != EINTR)
            return lock_error(path_, fmt::format("flock: {}", errno_text(errno)));
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return Taken::deadline;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(poll, deadline - now));
    }
}

Result<FileLock::Wait> FileLock::wait_for(const std::string& path, std::optional<uid_t> dir_owner,
                                          std::chrono::steady_clock::time_point deadline,
                                          std::chrono::milliseconds poll) {
    const auto started = std::chrono::steady_clock::now();
    auto lock = open(path, dir_owner);
    LEFTOVER_TRY(lock);
    const auto taken = lock->take(deadline, poll);
    LEFTOVER_TRY(taken);
    Wait wait;
    wait.how = taken.value();
    if (wait.how != Taken::deadline) wait.lock = std::move(lock).value();
    wait.waited = std::chrono::steady_clock::now() - started;
    return wait;
}

void FileLock::release() {
    if (!held_) return;
    ::flock(fd_.get(), LOCK_UN);
    held_ = false;
}

}  // namespace leftover

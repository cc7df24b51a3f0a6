// SPDX-License-Identifier: GPL-2.0-or-later
// An exclusive flock(2) on a lock file that processes of one host take in turns, waited
// for no longer than the caller's deadline. Anyone who can open a file can flock it and
// so hold everyone else off: the file must be root's (or `file_owner`'s) and openable by
// it alone, in a directory only root (or `dir_owner`) can change.
#pragma once

#include "errors/result.hpp"
#include "util/unique_fd.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace leftover {

class FileLock {
public:
    // How take() came to an end.
    enum class Taken {
        at_once,     // nobody held it
        after_wait,  // another holder had it and let it go before the deadline
        deadline,    // still held by another at the deadline: not taken
    };

    // Opens `path` for locking, creating it (mode 0600) when missing. Its directory is
    // opened without following a symlink in its last component and must be root's (or
    // `dir_owner`'s) and not writable by group or others; the file is opened with
    // O_NOFOLLOW and must be a regular file of `file_owner` with no permission for group
    // or others. An error says which, with the path; nothing is locked then.
    static Result<FileLock> open(const std::string& path, std::optional<uid_t> dir_owner = std::nullopt,
                                 uid_t file_owner = 0);

    // Takes the lock (LOCK_EX), trying again every `poll` (flock has no timeout) until
    // `deadline`; tried once when the deadline has passed. An error: flock itself failed
    // (ENOLCK ...), not that the lock was held.
    Result<Taken> take(std::chrono::steady_clock::time_point deadline,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(10));

    // What open() then take() came to: the lock, when taken; how the take ended; how long
    // the whole took.
    struct Wait;
    // open() and take() by `deadline`, the way the sweeps of one node wait for a node
    // lock; an error when the lock file could not be opened or locked (see open, take).
    static Result<Wait> wait_for(const std::string& path, std::optional<uid_t> dir_owner,
                                 std::chrono::steady_clock::time_point deadline,
                                 std::chrono::milliseconds poll = std::chrono::milliseconds(10));

    // Lets it go; closing the file (the destructor) does too.
    void release();
    bool held() const { return held_; }
    const std::string& path() const { return path_; }

    FileLock(FileLock&&) noexcept = default;
    FileLock& operator=(FileLock&&) noexcept = default;
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    ~FileLock() = default;  // the file's close releases the lock

private:
    FileLock(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

    UniqueFd fd_;
    std::string path_;
    bool held_ = false;
};

struct FileLock::Wait {
    std::optional<FileLock> lock;  // none when another held it at the deadline
    Taken how = Taken::deadline;
    std::chrono::duration<double> waited{};
};

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// The one seam between the cleanup and the kernel, so tests can inject faults and races.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leftover {

enum class SysvKind { shm, sem, msg };

// What IPC_STAT says about one SysV object.
struct SysvStat {
    uid_t uid = 0;               // owner
    uid_t cuid = 0;              // creator
    std::uint64_t attached = 0;  // shm only: nattch
};

// An entry as fstatat/statx(AT_SYMLINK_NOFOLLOW) sees it.
struct EntryStat {
    mode_t mode = 0;
    uid_t uid = 0;
    ino_t ino = 0;
    dev_t dev = 0;
    std::uint64_t mount_id = 0;  // 0: the kernel did not say (statx without STATX_MNT_ID)
    std::uint64_t size = 0;
};

class CleanupCalls {
public:
    virtual ~CleanupCalls() = default;
    // Each returns what the system call returns, or -errno on failure.
    virtual int sysv_stat(SysvKind kind, int id, SysvStat& out);
    virtual int sysv_remove(SysvKind kind, int id);
    // open(path, O_DIRECTORY|O_NOFOLLOW) and openat(dirfd, name, O_DIRECTORY|O_NOFOLLOW).
    virtual int open_dir(const std::string& path);
    virtual int open_dir_at(int dirfd, const std::string& name);
    // statx(dirfd, name, AT_SYMLINK_NOFOLLOW); an empty name: the directory fd itself.
    virtual int stat_at(int dirfd, const std::string& name, EntryStat& out);
    // The next entry names of an open directory (not . and ..), one getdents64 buffer
    // from the descriptor's offset, appended to `names`: the number of entries the
    // kernel returned (0 at the end), or -errno. A huge directory is read a batch at a
    // time so the walk's deadline and entry limit stop it mid-directory.
    virtual int read_dir(int dirfd, std::vector<std::string>& names);
    // The clock the walk's deadline is read against.
    virtual std::chrono::steady_clock::time_point now();
    virtual int unlink_at(int dirfd, const std::string& name, bool directory);
    // The text of a small file (/proc/sysvipc/*); nullopt with `error` set on failure.
    virtual std::optional<std::string> read_file(const std::string& path, int& error);
    // stat(path).st_ino/st_dev, following links (the /proc/<pid>/ns/ipc links).
    virtual int stat_path(const std::string& path, EntryStat& out);
    // Whether `path` is the root of an mqueue file system.
    virtual bool is_mqueue_fs(const std::string& path);
};

CleanupCalls& real_cleanup_calls();

}  // namespace leftover

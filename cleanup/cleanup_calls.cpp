// SPDX-License-Identifier: GPL-2.0-or-later
#include "cleanup/cleanup_calls.hpp"

#include "procfs/proc_read.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#ifndef MQUEUE_MAGIC
#define MQUEUE_MAGIC 0x19800202
#endif

namespace leftover {
namespace {

int result(int rc) { return rc < 0 ? -errno : rc; }

}  // namespace

int CleanupCalls::sysv_stat(SysvKind kind, int id, SysvStat& out) {
    switch (kind) {
        case SysvKind::shm: {
            shmid_ds ds{};
            if (::shmctl(id, IPC_STAT, &ds) < 0) return -errno;
            out = {ds.shm_perm.uid, ds.shm_perm.cuid, static_cast<std::uint64_t>(ds.shm_nattch)};
            return 0;
        }
        case SysvKind::sem: {
            semid_ds ds{};
            if (::semctl(id, 0, IPC_STAT, &ds) < 0) return -errno;
            out = {ds.sem_perm.uid, ds.sem_perm.cuid, 0};
            return 0;
        }
        case SysvKind::msg: {
            msqid_ds ds{};
            if (::msgctl(id, IPC_STAT, &ds) < 0) return -errno;
            out = {ds.msg_perm.uid, ds.msg_perm.cuid, 0};
            return 0;
        }
    }
    return -EINVAL;
}

int CleanupCalls::sysv_remove(SysvKind kind, int id) {
    switch (kind) {
        case SysvKind::shm: return result(::shmctl(id, IPC_RMID, nullptr));
        case SysvKind::sem: return result(::semctl(id, 0, IPC_RMID));
        case SysvKind::msg: return result(::msgctl(id, IPC_RMID, nullptr));
    }
    return -EINVAL;
}

int CleanupCalls::open_dir(const std::string& path) {
    return result(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

int CleanupCalls::open_dir_at(int dirfd, const std::string& name) {
    return result(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

int CleanupCalls::stat_at(int dirfd, const std::string& name, EntryStat& out) {
    struct statx st {};
    const int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name.empty() ? AT_EMPTY_PATH : 0);
    if (::statx(dirfd, name.c_str(), flags, STATX_BASIC_STATS | STATX_MNT_ID, &st) < 0) return -errno;
    out.mode = st.stx_mode;
    out.uid = st.stx_uid;
    out.ino = st.stx_ino;
    out.dev = makedev(st.stx_dev_major, st.stx_dev_minor);
    out.mount_id = (st.stx_mask & STATX_MNT_ID) != 0 ? st.stx_mnt_id : 0;
    out.size = st.stx_size;
    return 0;
}

int CleanupCalls::read_dir(int dirfd, std::vector<std::string>& names) {
    return read_dir_batch(dirfd, [&](const char* name) { names.emplace_back(name); });
}

std::chrono::steady_clock::time_point CleanupCalls::now() { return std::chrono::steady_clock::now(); }

int CleanupCalls::unlink_at(int dirfd, const std::string& name, bool directory) {
    return result(::unlinkat(dirfd, name.c_str(), directory ? AT_REMOVEDIR : 0));
}

std::optional<std::string> CleanupCalls::read_file(const std::string& path, int& error) {
    std::string text;
    error = leftover::read_file(AT_FDCWD, path.c_str(), text);
    if (error != 0) return std::nullopt;
    return text;
}

int CleanupCalls::stat_path(const std::string& path, EntryStat& out) {
    struct stat st {};
    if (::stat(path.c_str(), &st) < 0) return -errno;
    out.mode = st.st_mode;
    out.uid = st.st_uid;
    out.ino = st.st_ino;
    out.dev = st.st_dev;
    out.size = static_cast<std::uint64_t>(st.st_size);
    return 0;
}

bool CleanupCalls::is_mqueue_fs(const std::string& path) {
    struct statfs fs {};
    return ::statfs(path.c_str(), &fs) == 0 && static_cast<unsigned long>(fs.f_type) == MQUEUE_MAGIC;
}

CleanupCalls& real_cleanup_calls() {
    static CleanupCalls calls;
    return calls;
}

}  // namespace leftover

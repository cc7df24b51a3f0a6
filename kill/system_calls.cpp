// SPDX-License-Identifier: GPL-2.0-or-later
#include "kill/system_calls.hpp"

#include "procfs/proc_read.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <map>
#include <utility>

namespace leftover {

int SystemCalls::pidfd_open(pid_t pid) {
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : static_cast<int>(fd);
}

int SystemCalls::pidfd_send_signal(int pidfd, int signal) {
    const long rc = ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
    return rc < 0 ? -errno : 0;
}

int SystemCalls::pidfd_exists(int pidfd) {
    const long rc = ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0);
    return rc < 0 ? -errno : 0;
}

int SystemCalls::poll(pollfd* fds, nfds_t count, int timeout_ms) {
    const int rc = ::poll(fds, count, timeout_ms);
    return rc < 0 ? -errno : rc;
}

std::uint64_t SystemCalls::open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    return limit.rlim_cur;
}

std::optional<Identity> SystemCalls::read_identity(const std::string& proc_root, pid_t pid) {
    return leftover::read_identity(proc_root, pid);
}

std::vector<std::pair<pid_t, uid_t>> SystemCalls::processes_owned_by(const std::string& proc_root,
                                                                     const std::set<uid_t>& owners) {
    std::vector<std::pair<pid_t, uid_t>> pids;
    const UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return pids;
    // A listing that fails midway gives what it found: the caller stops what it can.
    (void)for_each_pid(root.get(), proc_root, [&](pid_t pid, const char* name) -> Status {
        struct stat st {};
        if (::fstatat(root.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && owners.count(st.st_uid) != 0)
            pids.emplace_back(pid, st.st_uid);
        return Ok{};
    });
    return pids;
}

std::optional<uid_t> SystemCalls::owner_of(const std::string& proc_root, pid_t pid) {
    struct stat st {};
    const std::string path = proc_root + "/" + std::to_string(pid);
    if (::fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
    return st.st_uid;
}

std::optional<std::vector<GroupMember>> SystemCalls::processes_in_groups(const std::string& proc_root,
                                                                         const std::set<pid_t>& groups) {
    std::vector<GroupMember> members;
    std::map<pid_t, std::pair<pid_t, pid_t>> group_and_session;  // of every process read
    std::vector<pid_t> parents;                                  // beside members
    const UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return std::nullopt;
    std::string buf;
    StatFields stat;
    bool unread = false;
    const Status listed = for_each_pid(root.get(), proc_root, [&](pid_t pid, const char*) -> Status {
        UniqueFd dir;
        struct stat st {};
        int err = open_pid_dir(root.get(), pid, dir);
        if (err == 0 && ::fstat(dir.get(), &st) != 0) err = errno;
        if (err == 0) err = read_stat(dir.get(), pid, stat, buf);
        if (err == 0) group_and_session[pid] = {stat.pgid, stat.session};
        if (err == 0 && groups.count(stat.pgid) != 0) {
            parents.push_back(stat.ppid);
            members.push_back({pid, stat.pgid, st.st_uid, stat.start_time});
        }
        unread = unread || (err != 0 && !vanished(err));
        return Ok{};
    });
    if (!listed || unread) return std::nullopt;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto member = group_and_session.find(members[i].pid);
        const auto parent = group_and_session.find(parents[i]);
        // A parent not read (gone meanwhile, outside this pid namespace) may be the link.
        members[i].linked = parent == group_and_session.end() ||
                            (parent->second.second == member->second.second && parent->second.first != members[i].pgid);
    }
    return members;
}

SystemCalls& real_system_calls() {
    static SystemCalls calls;
    return calls;
}

}  // namespace leftover

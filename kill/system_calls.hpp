// SPDX-License-Identifier: GPL-2.0-or-later
// The one seam between the kill executor and the kernel, so tests can inject faults.
#pragma once

#include "procfs/proc_table.hpp"

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leftover {

// A process of a process group, as its stat showed it.
struct GroupMember {
    pid_t pid = 0;
    pid_t pgid = 0;
    uid_t owner = 0;  // of /proc/<pid>
    std::uint64_t start_time = 0;
    // Its parent is in the same session and another group: the link that keeps the group
    // from being orphaned, which an exit (its own, or its parent's) may then cut.
    bool linked = false;
};

class SystemCalls {
public:
    virtual ~SystemCalls() = default;
    // Each returns what the system call returns, or -errno on failure.
    virtual int pidfd_open(pid_t pid);
    virtual int pidfd_send_signal(int pidfd, int signal);
    // pidfd_send_signal with no signal (0): 0 while the pinned process exists, a zombie
    // too; -ESRCH once it is reaped (and its pid free for another process).
    virtual int pidfd_exists(int pidfd);
    virtual int poll(pollfd* fds, nfds_t count, int timeout_ms);
    // RLIMIT_NOFILE's soft limit: a descriptor numbered at or above it cannot be opened.
    virtual std::uint64_t open_file_limit();
    // open/read of /proc/<pid>/{stat,status}; nullopt when gone or unreadable.
    virtual std::optional<Identity> read_identity(const std::string& proc_root, pid_t pid);
    // The pids whose /proc/<pid> one of `owners` owns, with that owner: one directory pass
    // and one fstatat per process, nothing more, so that what it lists can be stopped at once.
    virtual std::vector<std::pair<pid_t, uid_t>> processes_owned_by(const std::string& proc_root,
                                                                    const std::set<uid_t>& owners);
    // The owner of /proc/<pid> (one fstatat); nullopt when there is no such process.
    virtual std::optional<uid_t> owner_of(const std::string& proc_root, pid_t pid);
    // Every process whose process group is one of `groups`, read now: one directory pass,
    // one fstat and one read of stat per process, each member's parent read in the same
    // pass (GroupMember::linked). nullopt when the listing fails or a process cannot be
    // read for a reason other than its exit: what they hold is unknown.
    virtual std::optional<std::vector<GroupMember>> processes_in_groups(const std::string& proc_root,
                                                                        const std::set<pid_t>& groups);
};

SystemCalls& real_system_calls();

}  // namespace leftover

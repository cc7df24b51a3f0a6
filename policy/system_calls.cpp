// SPDX-License-Identifier: GPL-2.0-or-later
#include "system_calls.hpp"

#include <cerrno>
#include <csignal>
#include <sys/syscall.h>
#include <unistd.h>

namespace leftover {

int SystemCalls::pidfd_open(pid_t pid) {
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : static_cast<int>(fd);
}

int SystemCalls::pidfd_send_signal(int pidfd, int signal) {
    const long rc = ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
    return rc < 0 ? -errno : 0;
}

int SystemCalls::poll(pollfd* fds, nfds_t count, int timeout_ms) {
    const int rc = ::poll(fds, count, timeout_ms);
    return rc < 0 ? -errno : rc;
}

std::optional<Identity> SystemCalls::read_identity(const std::string& proc_root, pid_t pid) {
    return leftover::read_identity(proc_root, pid);
}

SystemCalls& real_system_calls() {
    static SystemCalls calls;
    return calls;
}

}  // namespace leftover

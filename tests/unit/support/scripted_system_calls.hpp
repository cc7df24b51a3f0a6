// SPDX-License-Identifier: GPL-2.0-or-later
// The tests' one fake of kill's SystemCalls: each call can be scripted (a fault, a race, a
// /proc that reads otherwise) by setting its std::function in `script`; a call with none
// set is the real one. A script reaches the real call through real_system_calls(). Every
// call is counted in `count`, scripted or not.
#pragma once

#include "kill/system_calls.hpp"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leftover::test {

class ScriptedSystemCalls : public SystemCalls {
public:
    struct Script {
        std::function<int(pid_t pid)> pidfd_open;
        std::function<int(int pidfd, int signal)> pidfd_send_signal;
        std::function<int(int pidfd)> pidfd_exists;
        std::function<int(pollfd* fds, nfds_t count, int timeout_ms)> poll;
        std::function<std::uint64_t()> open_file_limit;
        std::function<std::optional<Identity>(const std::string& proc_root, pid_t pid)> read_identity;
        std::function<std::vector<std::pair<pid_t, uid_t>>(const std::string& proc_root, const std::set<uid_t>& owners)>
            processes_owned_by;
        std::function<std::optional<uid_t>(const std::string& proc_root, pid_t pid)> owner_of;
        std::function<std::optional<std::vector<GroupMember>>(const std::string& proc_root,
                                                              const std::set<pid_t>& groups)>
            processes_in_groups;
    };
    struct Count {
        int pidfd_open = 0;
        int pidfd_send_signal = 0;
        int pidfd_exists = 0;
        int poll = 0;
        int open_file_limit = 0;
        int read_identity = 0;
        int processes_owned_by = 0;
        int owner_of = 0;
        int processes_in_groups = 0;
    };
    Script script;
    Count count;

    int pidfd_open(pid_t pid) override {
        ++count.pidfd_open;
        return script.pidfd_open ? script.pidfd_open(pid) : SystemCalls::pidfd_open(pid);
    }
    int pidfd_send_signal(int pidfd, int signal) override {
        ++count.pidfd_send_signal;
        return script.pidfd_send_signal ? script.pidfd_send_signal(pidfd, signal)
                                        : SystemCalls::pidfd_send_signal(pidfd, signal);
    }
    int pidfd_exists(int pidfd) override {
        ++count.pidfd_exists;
        return script.pidfd_exists ? script.pidfd_exists(pidfd) : SystemCalls::pidfd_exists(pidfd);
    }
    int poll(pollfd* fds, nfds_t n, int timeout_ms) override {
        ++count.poll;
        return script.poll ? script.poll(fds, n, timeout_ms) : SystemCalls::poll(fds, n, timeout_ms);
    }
    std::uint64_t open_file_limit() override {
        ++count.open_file_limit;
        return script.open_file_limit ? script.open_file_limit() : SystemCalls::open_file_limit();
    }
    std::optional<Identity> read_identity(const std::string& proc_root, pid_t pid) override {
        ++count.read_identity;
        return script.read_identity ? script.read_identity(proc_root, pid) : SystemCalls::read_identity(proc_root, pid);
    }
    std::vector<std::pair<pid_t, uid_t>> processes_owned_by(const std::string& proc_root,
                                                            const std::set<uid_t>& owners) override {
        ++count.processes_owned_by;
        return script.processes_owned_by ? script.processes_owned_by(proc_root, owners)
                                         : SystemCalls::processes_owned_by(proc_root, owners);
    }
    std::optional<uid_t> owner_of(const std::string& proc_root, pid_t pid) override {
        ++count.owner_of;
        return script.owner_of ? script.owner_of(proc_root, pid) : SystemCalls::owner_of(proc_root, pid);
    }
    std::optional<std::vector<GroupMember>> processes_in_groups(const std::string& proc_root,
                                                                const std::set<pid_t>& groups) override {
        ++count.processes_in_groups;
        return script.processes_in_groups ? script.processes_in_groups(proc_root, groups)
                                          : SystemCalls::processes_in_groups(proc_root, groups);
    }
};

}  // namespace leftover::test

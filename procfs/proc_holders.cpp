// SPDX-License-Identifier: GPL-2.0-or-later
#include "procfs/proc_holders.hpp"

#include "errors/error.hpp"
#include "procfs/proc_read.hpp"
#include "util/errno_text.hpp"

#include <fcntl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace leftover {
namespace {

// A status file's process is a zombie: state Z or X with no other thread left (a leader
// whose own thread exited shows Z while its threads run).
Result<bool> zombie(std::string_view status) {
    const auto state = status_value(status, "State");
    const auto threads = status_value(status, "Threads");
    if (!state || state->empty() || !threads) return Error::lookup("no State or Threads line", ErrorSource::proc);
    const auto count = parse_ids(*threads);
    if (!count || count->size() != 1) return Error::lookup("a Threads line that does not parse", ErrorSource::proc);
    return ((*state)[0] == 'Z' || (*state)[0] == 'X') && count->front() <= 1;
}

}  // namespace

Result<std::map<uid_t, std::vector<pid_t>>> processes_holding(const std::string& proc_root, const std::set<uid_t>& uids,
                                                              std::chrono::steady_clock::time_point deadline) {
    std::map<uid_t, std::vector<pid_t>> holders;
    if (uids.empty()) return holders;
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0)
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    const auto failure = [&](pid_t pid, int err) {
        const auto what = err == EBADMSG ? std::string("unexpected contents") : errno_text(err);
        return Error::lookup(fmt::format("cannot read {}/{}/status: {}", proc_root, pid, what), ErrorSource::proc);
    };
    std::string buf;
    const Status listed = for_each_pid(root.get(), proc_root, [&](pid_t pid, const char*) -> Status {
        if (std::chrono::steady_clock::now() >= deadline)
            return Error::lookup(
                fmt::format("the search of {} for processes of the cleanup's users stopped: the deadline was "
                            "reached",
                            proc_root),
                ErrorSource::deadline);
        UniqueFd dir;
        int err = open_pid_dir(root.get(), pid, dir);
        if (err == ENOTDIR) return Ok{};  // not a process
        if (!err) err = read_record_file(dir.get(), "status", buf);
        if (vanished(err)) return Ok{};
        if (err) return failure(pid, err);
        const auto value = status_value(buf, "Uid");
        const auto ids = value ? parse_uids(*value) : std::nullopt;
        if (!ids) return failure(pid, EBADMSG);
        const auto dead = zombie(buf);
        if (!dead.ok()) return failure(pid, EBADMSG);
        if (dead.value()) return Ok{};
        std::set<uid_t> held{ids->real, ids->effective, ids->saved, ids->filesystem};
        for (const uid_t uid : held)
            if (uids.count(uid) != 0) holders[uid].push_back(pid);
        return Ok{};
    });
    LEFTOVER_TRY(listed);
    for (auto& [uid, pids] : holders) std::sort(pids.begin(), pids.end());
    return holders;
}

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// Reads of single processes after the scan (proc_table.hpp): job cgroups of kill
// candidates, one process's identity for the executor, one process as the scan reads it
// (the drain's survivors), the caller's own ancestry.
#include "errors/error.hpp"
#include "procfs/proc_read.hpp"
#include "procfs/proc_table.hpp"
#include "util/errno_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>

namespace leftover {

Status read_job_cgroups(const std::string& proc_root, ProcessTable& table, const std::set<pid_t>& pids) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0)
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    std::string buf;
    for (const pid_t pid : pids) {
        Process* p = table.find(pid);
        if (p == nullptr || !p->detailed) continue;
        // No start-time check: if the pid now names another process, the scanned one is
        // gone and the executor's identity check refuses to signal it whatever its cgroup.
        const int err = read_file(root.get(), fmt::format("{}/cgroup", pid).c_str(), buf);
        if (vanished(err)) continue;
        if (err)
            return Error::lookup(fmt::format("cannot read {}/{}/cgroup: {}", proc_root, pid, errno_text(err)),
                                 ErrorSource::proc);
        p->job_cgroup = slurm_job_cgroup(buf);
    }
    return Ok{};
}

std::optional<Identity> read_identity(const std::string& proc_root, pid_t pid) {
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    UniqueFd dir;
    std::string buf;
    StatFields stat;
    if (root.get() < 0 || open_pid_dir(root.get(), pid, dir) != 0 || read_stat(dir.get(), pid, stat, buf) != 0 ||
        read_record_file(dir.get(), "status", buf) != 0)
        return std::nullopt;
    const auto value = status_value(buf, "Uid");
    const auto uids = value ? parse_uids(*value) : std::nullopt;
    if (!uids) return std::nullopt;
    return Identity{stat.start_time, *uids, stat.ppid, stat.pgid, stat.state};
}

Result<std::optional<Process>> read_process(const std::string& proc_root, pid_t pid) {
    const UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid())
        return Error::lookup(fmt::format("cannot open {}: {}", proc_root, errno_text(errno)), ErrorSource::proc);
    Process p;
    p.pid = pid;
    UniqueFd dir;
    const char* file = "";
    std::string buf;
    int err = open_pid_dir(root.get(), pid, dir);
    struct stat st {};
    if (!err && ::fstat(dir.get(), &st) != 0) err = errno;
    if (!err) {
        p.owner = st.st_uid;
        err = read_detail(dir.get(), p, false, file, buf);
    }
    if (vanished(err)) return std::optional<Process>();
    if (err) {
        const auto what = err == EBADMSG ? std::string("unexpected contents") : errno_text(err);
        const auto path = *file ? fmt::format("{}/{}/{}", proc_root, pid, file) : fmt::format("{}/{}", proc_root, pid);
        return Error::lookup(fmt::format("cannot read {}: {}", path, what), ErrorSource::proc);
    }
    p.detailed = true;
    return std::optional<Process>(std::move(p));
}

std::vector<pid_t> read_ancestry(const std::string& proc_root, pid_t pid) {
    // Used to protect the caller's own ancestors: a partial chain (an ancestor
    // exited meanwhile) still protects the part that was read.
    std::vector<pid_t> chain;
    UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return chain;
    std::string buf;
    StatFields stat;
    for (pid_t next = pid; chain.size() < max_ancestry_depth;) {
        UniqueFd dir;
        if (open_pid_dir(root.get(), next, dir) != 0 || read_stat(dir.get(), next, stat, buf) != 0) break;
        next = stat.ppid;
        if (next <= 0 || next == pid || std::ranges::count(chain, next) > 0) break;
        chain.push_back(next);
    }
    return chain;
}

}  // namespace leftover

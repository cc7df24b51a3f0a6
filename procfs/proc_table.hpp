// SPDX-License-Identifier: GPL-2.0-or-later
// Reading the process table from a /proc root (the real one or a fake tree in tests).
#pragma once

#include "errors/result.hpp"
#include "procfs/process.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>

namespace leftover {

struct ScanOptions {
    std::string proc_root = "/proc";
    // Called with the owner of /proc/<pid>; only processes for which it returns true
    // get their stat/status/cgroup read (and their ancestry resolved). Keeps a node
    // full of root daemons at about one fstatat per process.
    std::function<bool(uid_t owner)> wants_detail = [](uid_t) { return true; };
    // Read /proc/<pid>/cgroup in the detail pass. Off: read_job_cgroups() later, only
    // when a live job exists whose cgroup could protect a process.
    bool read_cgroup = true;
    // The pid the caller has in the pid namespace it runs in: <proc_root>/self must name it.
    pid_t caller_pid = 0;
    // A Slurm daemon (slurmd, or a slurmstepd) whose pid namespace the caller must share;
    // its exe must name slurmd or slurmstepd. Unset skips that check.
    std::optional<pid_t> slurm_daemon_pid;
    // Past it the scan stops with a lookup error: a sweep must end in time.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Checks the view (hidepid, pid namespace) and reads every process.
// A view that is incomplete or foreign is a lookup error, never an empty table.
Result<ProcessTable> scan_processes(const ScanOptions& options);

// Fills job_cgroup of the detailed processes among `pids` (after a scan made with
// read_cgroup off). A process gone meanwhile keeps none.
Status read_job_cgroups(const std::string& proc_root, ProcessTable& table, const std::set<pid_t>& pids);

// Re-reads one process's identity (start time and uids) for the kill executor's
// pid-reuse check, with its parent as of that read. nullopt when the process is gone or
// cannot be read.
// Start time and uids name the process; ppid is only what its parent was at the read
// (a parent's exit changes it), which is why there is no operator== to compare all three.
struct Identity {
    std::uint64_t start_time = 0;
    Uids uids;
    pid_t ppid = 0;
    pid_t pgid = 0;
    char state = '?';  // as stat says at the read: 'T' stopped, 't' held by a tracer ...
};
std::optional<Identity> read_identity(const std::string& proc_root, pid_t pid);

// One process read again after the scan, as the scan reads a process it details (owner,
// stat, status; no cgroup, no ancestry), so the same rules judge it (Process::zombie).
// nullopt when it is gone; a lookup error naming the file when it cannot be read.
Result<std::optional<Process>> read_process(const std::string& proc_root, pid_t pid);

// The parent chain of `pid` (nearest first, ending at pid 1), read from stat files.
// Empty when it cannot be read.
std::vector<pid_t> read_ancestry(const std::string& proc_root, pid_t pid);

}  // namespace leftover

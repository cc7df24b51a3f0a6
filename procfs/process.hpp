// SPDX-License-Identifier: GPL-2.0-or-later
// One process as the decision sees it, and the table of all of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leftover {

struct Uids {
    uid_t real = 0, effective = 0, saved = 0, filesystem = 0;
    bool all_equal() const { return real == effective && real == saved && real == filesystem; }
    bool operator==(const Uids&) const = default;
};

// One link of a parent chain, nearest first. Chains share their common part, so a fan
// of processes under one deep chain costs one link each.
struct AncestorLink {
    pid_t pid = 0;
    std::shared_ptr<const AncestorLink> next;
};

struct Process {
    pid_t pid = 0;
    pid_t ppid = 0;
    pid_t pgid = 0;                // process group (stat field 5; detailed only)
    uid_t owner = 0;               // owner of /proc/<pid> (the effective uid at exec)
    bool detailed = false;         // stat/status/cgroup were read (owner not protected)
    Uids uids;                     // from status (detailed only)
    std::string comm;              // raw bytes, may hold anything; escape before logging
    char state = '?';              // from stat: R S D Z T t X I ...
    std::uint64_t start_time = 0;  // clock ticks since boot (stat field 22)
    bool kernel_thread = false;    // PF_KTHREAD in stat flags, or a child of kthreadd (pid 2)
    bool exiting = false;          // PF_EXITING in stat flags: the kernel is ending it (detailed only)
    // The directory of a Slurm-owned job cgroup: "job_<id>", or the job's SLUID
    // ("s" and 13 base32 digits: 26.05 without CgroupJobIdPaths=yes).
    std::optional<std::string> job_cgroup;
    bool is_slurmstepd = false;           // uid 0 and /proc/<pid>/exe is a slurmstepd binary
    std::optional<pid_t> stepd_ancestor;  // nearest ancestor that is a slurmstepd

    // ppid chain up to pid 1 (detailed only), nearest first.
    std::shared_ptr<const AncestorLink> parent_chain;
    // The parent chain could not be read: deeper than the scan believes, a loop, or it
    // kept changing. Whether it descends from a live slurmstepd is then unknown.
    bool ancestry_unreadable = false;
    std::uint32_t threads = 1;  // from status (detailed only)

    std::vector<pid_t> ancestors() const {
        std::vector<pid_t> out;
        for (const AncestorLink* link = parent_chain.get(); link; link = link->next.get()) out.push_back(link->pid);
        return out;
    }
    // A leader whose own thread exited shows Z while its other threads run: alive.
    bool zombie() const { return (state == 'Z' || state == 'X') && threads <= 1; }
};

struct ProcessTable {
    std::vector<Process> processes;  // sorted by pid
    const Process* find(pid_t pid) const;
    Process* find(pid_t pid) { return const_cast<Process*>(static_cast<const ProcessTable&>(*this).find(pid)); }
};

}  // namespace leftover

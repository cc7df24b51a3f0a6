// SPDX-License-Identifier: GPL-2.0-or-later
// What a front end asks of one sweep: what ended (the trigger) and where (the node, the
// caller, the /proc root and the IPC directories).
#pragma once

#include "node/node_info.hpp"
#include "steps/live_work.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace leftover::sweep {

struct Trigger {
    std::string label;  // "job 12 step 0", "job 12 epilog", "node sweep"
    // The job's user. Unset for a node-wide sweep (the leftover command): no job ends,
    // so the scope is always node and slew/slew_max are the caller's business.
    std::optional<uid_t> uid;
    std::optional<std::uint32_t> job_id;
    std::optional<steps::StepId> ending_step;  // set in slurm_spank_exit
    // Set in the job epilog: the whole job is ending, so slurmctld's view of it (still
    // COMPLETING) is not live work. At a step's end the job's allocation lives on.
    bool job_ending = false;
};

struct SweepRequest {
    Trigger trigger;
    node::NodeInfo node;  // with node.slurmd_pid, the evaluation checks the pid namespace
    pid_t self = 0;
    std::set<pid_t> ending_stepds;
    std::string proc_root = "/proc";
    std::string shm_dir = "/dev/shm";        // POSIX shared memory, for `cleanup: [posix_shm]`
    std::string mqueue_dir = "/dev/mqueue";  // POSIX message queues, where mounted
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace leftover::sweep

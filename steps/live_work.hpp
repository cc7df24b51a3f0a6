// SPDX-License-Identifier: GPL-2.0-or-later
// Turns what the node's slurmstepd daemons said into the live work the decision uses,
// refusing an answer that cannot be complete.
#pragma once

#include "errors/result.hpp"
#include "steps/local_steps.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace leftover::steps {

// The work Slurm still has on the node, apart from what is ending.
struct LiveWork {
    std::set<uid_t> uids;                      // users with a live step or allocation here
    std::set<std::uint64_t> job_ids;           // jobs with a live step here
    std::set<std::string> job_sluids;          // their SLUIDs ("s..."), where the stepd tells (25.11+)
    std::set<pid_t> stepd_pids;                // their slurmstepd daemons, as each step socket told
    std::map<std::uint64_t, uid_t> job_users;  // each job's user, where slurmctld told
    bool operator==(const LiveWork&) const = default;
};

struct StepId {
    std::uint32_t job_id = 0;
    std::uint32_t step_id = 0;
};

// `ending_step`: the step whose slurm_spank_exit is running. It must be among the
// answers or the unanswered sockets (else the spool dir or node name is wrong: a lookup
// error), and it does not count as live work. The other unanswered sockets are the
// caller's to resolve. Steps already ending do not count either, so two jobs of one
// user that end together do not keep each other's strays alive.
Result<LiveWork> live_work_from(const LocalJobState& state, const std::optional<StepId>& ending_step,
                                const std::string& where);

std::string describe_step(std::uint32_t job_id, std::uint32_t step_id);

}  // namespace leftover::steps

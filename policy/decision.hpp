// SPDX-License-Identifier: GPL-2.0-or-later
// The decision: a pure function from one snapshot of the node to a plan that gives
// every process `kill` or `keep` and exactly one reason.
#pragma once

#include "config.hpp"
#include "exemptions.hpp"
#include "process.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover {

// The work Slurm still has on the node, apart from what is ending.
struct LiveWork {
    std::set<uid_t> uids;              // users with a live step or allocation here
    std::set<std::uint64_t> job_ids;   // jobs with a live step here
    std::set<std::string> job_sluids;  // their SLUIDs ("s..."), where the stepd tells (25.11+)
    std::set<pid_t> stepd_pids;        // their slurmstepd daemons, as each step socket told
    bool operator==(const LiveWork&) const = default;
};

// What ended, as far as the decision cares.
struct Event {
    Scope scope = Scope::node;
    std::optional<uid_t> job_uid;  // the ending step's or job's user; unset for node-wide sweeps
};

enum class Verdict { keep, kill };

// In the order the rules are applied: the first that fits is the reason.
enum class Reason {
    init,             // pid 1
    self,             // the caller
    caller_ancestor,  // the caller's parent chain
    never_touch,      // named by the caller
    kernel_thread,
    zombie,
    protected_owner,    // owner protected: only /proc/<pid>'s owner was read
    mixed_uids,         // real/effective/saved/filesystem uids differ
    protected_account,  // printed "protected" (a C++ keyword)
    // The parent chain is too deep, loops or kept changing: a live step above is unknown.
    unreadable_ancestry,
    inside_live_step,  // descends from a live slurmstepd (named by its socket, or root running its binary)
    live_job_cgroup,   // in the cgroup of a job with a live step
    has_live_job,      // its user has live work on the node
    out_of_scope,      // scope job_user and another user
    stray,             // kill
};

struct Decision {
    pid_t pid = 0;
    uid_t uid = 0;                 // the process's uid (real uid, or owner if not inspected)
    std::string user;              // account name when known
    std::string comm;              // raw; escape before logging
    std::uint64_t start_time = 0;  // for the executor's pid-reuse check
    pid_t ppid = 0;                // as scanned (detailed processes only; else 0)
    pid_t pgid = 0;                // as scanned, as ppid: an orphan in a target's group may be stopped
    Verdict verdict = Verdict::keep;
    Reason reason = Reason::stray;
    std::string detail;  // e.g. the exemption, the stepd pid, the job id
};

struct Plan {
    std::vector<Decision> decisions;  // one per process in the table, by pid

    std::vector<Decision> kills() const;
    std::set<uid_t> kill_uids() const;
    std::map<Reason, std::size_t> count_by_reason() const;
};

struct DecisionInput {
    const ProcessTable& table;
    const std::map<uid_t, Exemption>& exemptions;  // for every owner and uid in the table
    const LiveWork& live;
    Event event;
    pid_t self = 0;
    std::set<pid_t> caller_ancestors;  // read by the snapshot: the caller is usually root, so not inspected
    std::set<pid_t> never_touch;
    std::set<pid_t> ending_stepds;  // slurmstepds whose step is ending: their children get no protection
};

Plan decide(const DecisionInput& input);

// Decides again only the plan's kills: enough when what changed since `plan` was made
// can only add reasons to keep (a user classified by name, a job cgroup read).
void decide_kills_again(const DecisionInput& input, Plan& plan);

const char* to_string(Verdict verdict);
const char* to_string(Reason reason);

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// The decision: a pure function from one snapshot of the node to a plan that gives
// every process `kill` or `keep` and exactly one reason.
#pragma once

#include "config/config.hpp"
#include "policy/exemptions.hpp"
#include "procfs/process.hpp"
#include "steps/live_work.hpp"

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace leftover {

// The decision takes the live work as the step sockets define it.
using steps::LiveWork;

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

// Every reason once, with the word the log, the metrics, `check --json` and leftover(8)
// use, and whether `leftover check` lists such a process without --all (the machinery
// of the node is left out).
struct ReasonWord {
    Reason reason;
    std::string_view word;
    bool listed_by_check;
};
inline constexpr std::array<ReasonWord, 15> kReasonWords{{
    {Reason::init, "init", false},
    {Reason::self, "self", false},
    {Reason::caller_ancestor, "caller_ancestor", false},
    {Reason::never_touch, "never_touch", false},
    {Reason::kernel_thread, "kernel_thread", false},
    {Reason::zombie, "zombie", true},
    {Reason::protected_owner, "protected_owner", false},
    {Reason::mixed_uids, "mixed_uids", true},
    {Reason::protected_account, "protected", true},
    {Reason::unreadable_ancestry, "unreadable_ancestry", true},
    {Reason::inside_live_step, "inside_live_step", true},
    {Reason::live_job_cgroup, "live_job_cgroup", true},
    {Reason::has_live_job, "has_live_job", true},
    {Reason::out_of_scope, "out_of_scope", true},
    {Reason::stray, "stray", true},
}};

constexpr const ReasonWord& reason_word(Reason reason) {
    for (const ReasonWord& entry : kReasonWords)
        if (entry.reason == reason) return entry;
    return kReasonWords.back();  // unreachable: the table has every reason (decision_test holds it)
}
// Each word is a literal, so data() ends in NUL.
inline const char* to_string(Reason reason) { return reason_word(reason).word.data(); }

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation: snapshot (processes, live work, exemptions) -> pure decision -> plan.
// The kill executor calls it once per round, so every round decides on fresh state.
#pragma once

#include "accounts/accounts.hpp"
#include "errors/result.hpp"
#include "policy/decision.hpp"
#include "policy/exemptions.hpp"
#include "procfs/proc_table.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace leftover {

// Reads the users and jobs with live work on the node (a lookup error on any doubt).
using JobStateReader = std::function<Result<LiveWork>()>;

// Asked only when a plan would kill, or a cleanup may touch a user (ask_allocations_of):
// which of these users still hold an allocation on the node that local state cannot
// show (no PrologFlags=contain). Unset: not needed.
using AllocationCheck = std::function<Result<std::set<uid_t>>(const std::set<uid_t>& uids)>;

struct EvaluationContext {
    std::string proc_root = "/proc";
    pid_t self = 0;                         // the caller's pid
    std::optional<pid_t> slurm_daemon_pid;  // whose pid namespace the caller must share (slurmd)
    std::set<pid_t> never_touch;            // kept whatever their owner (slurmd)
    std::set<pid_t> ending_stepds;
    Event event;
    // Bounds the scan and the account lookups (the bounded lookups end there; see AccountDatabase).
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    // Read every process of a user with live work too (`leftover check` shows them all).
    // Off, as in a sweep: their processes are kept whatever they are, so only the owner
    // of /proc/<pid> is read, and a node full of a live job costs little more than getdents.
    bool examine_live_users = false;
};

// The exemption of every owner and uid in the table, as the decision looks them up: the
// range rules' when they protect it, else its classification by name from `by_name`,
// else (not looked up yet) unprotected.
std::map<uid_t, Exemption> table_exemptions(const ProcessTable& table, const Exemptions& rules,
                                            const std::map<uid_t, Exemption>& by_name);

class Evaluation {
public:
    Evaluation(const Exemptions& exemptions, const AccountDatabase& accounts, JobStateReader job_state,
               AllocationCheck allocation_check, EvaluationContext context);

    Result<Plan> operator()();

    const LiveWork& last_live_work() const { return live_; }
    // Users a cleanup may touch (the ending job's user, who may have left no process):
    // from the next evaluation on, asked about with the plan's kill candidates, in the
    // same query, whenever an allocation check is needed.
    void ask_allocations_of(std::set<uid_t> uids) { also_ask_ = std::move(uids); }
    // Whether slurmctld must clear a user before anything of theirs goes (no PrologFlags=contain).
    bool checks_allocations() const { return static_cast<bool>(allocation_check_); }
    // The users the last evaluation's allocation check said hold no allocation here.
    const std::set<uid_t>& cleared_allocations() const { return cleared_; }
    // Reads the job state again: whether it is what the last evaluation decided on (a
    // job that started since would protect its user). An error: it could not be read.
    Result<bool> job_state_unchanged();
    // The account name of a uid this sweep looked up, if it has one.
    std::optional<std::string> account_name(uid_t uid) const;
    // The uids whose account lookup failed this sweep (kept as unknown), and why.
    std::map<uid_t, std::string> failed_lookups() const;

private:
    struct Snapshot;
    Status classify_by_name(const std::set<uid_t>& uids);
    Status read_job_state();  // into live_, with the allocations confirmed this sweep
    // The steps of one evaluation, in order; each keep_by_* can only keep more.
    Result<ProcessTable> scan(const std::set<uid_t>& live_users) const;
    Snapshot snapshot(ProcessTable table) const;
    DecisionInput input(const Snapshot& now) const;
    Status look_again(const Snapshot& now, Plan& plan);
    Status keep_by_job_cgroup(Snapshot& now, Plan& plan) const;
    Status keep_by_account_name(Snapshot& now, Plan& plan);
    Status keep_by_allocation(const Snapshot& now, Plan& plan);

    const Exemptions& exemptions_;
    const AccountDatabase& accounts_;
    std::map<uid_t, Exemption> by_name_;  // uids classified by name this sweep
    AccountAnswers answers_;              // every account lookup this sweep, kept for the next rounds
    bool names_asked_ = false;            // the listed names are looked up once per sweep
    JobStateReader job_state_;
    AllocationCheck allocation_check_;
    EvaluationContext context_;
    LiveWork live_;
    std::set<uid_t> confirmed_allocations_;  // users the controller said hold an allocation here
    std::set<uid_t> also_ask_;               // see ask_allocations_of
    std::set<uid_t> cleared_;                // see cleared_allocations
};

}  // namespace leftover

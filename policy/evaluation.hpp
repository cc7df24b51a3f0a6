// SPDX-License-Identifier: GPL-2.0-or-later
// One evaluation: snapshot (processes, live work, exemptions) -> pure decision -> plan.
// The kill executor calls it once per round, so every round decides on fresh state.
#pragma once

#include "accounts.hpp"
#include "decision.hpp"
#include "exemptions.hpp"
#include "proc_table.hpp"
#include "result.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>

namespace leftover {

// Reads the users and jobs with live work on the node (a lookup error on any doubt).
using JobStateReader = std::function<Result<LiveWork>()>;

// Asked only when a plan would kill: which of these users still hold an allocation on
// the node that local state cannot show (no PrologFlags=contain). Unset: not needed.
using AllocationCheck = std::function<Result<std::set<uid_t>>(const std::set<uid_t>& uids)>;

struct EvaluationContext {
    std::string proc_root = "/proc";
    pid_t self = 0;                         // the caller's pid
    std::optional<pid_t> slurm_daemon_pid;  // whose pid namespace the caller must share (slurmd)
    std::set<pid_t> never_touch;            // kept whatever their owner (slurmd)
    std::set<pid_t> ending_stepds;
    Event event;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();  // of the scan
};

class Evaluation {
public:
    Evaluation(const Exemptions& exemptions, const AccountDatabase& accounts, JobStateReader job_state,
               AllocationCheck allocation_check, EvaluationContext context);

    Result<Plan> operator()();

    const LiveWork& last_live_work() const { return live_; }

private:
    const Exemptions& exemptions_;
    ExemptionCache cache_;
    JobStateReader job_state_;
    AllocationCheck allocation_check_;
    EvaluationContext context_;
    LiveWork live_;
    std::set<uid_t> asked_allocations_;      // the controller is asked once per user per sweep
    std::set<uid_t> confirmed_allocations_;  // users it said hold an allocation here
};

}  // namespace leftover

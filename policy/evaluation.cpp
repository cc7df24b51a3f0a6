// SPDX-License-Identifier: GPL-2.0-or-later
#include "evaluation.hpp"

#include <map>

namespace leftover {

Evaluation::Evaluation(const Exemptions& exemptions, const AccountDatabase& accounts, JobStateReader job_state,
                       AllocationCheck allocation_check, EvaluationContext context)
    : exemptions_(exemptions),
      cache_(exemptions, accounts),
      job_state_(std::move(job_state)),
      allocation_check_(std::move(allocation_check)),
      context_(std::move(context)) {}

Result<Plan> Evaluation::operator()() {
    // Processes first, job state second: a step whose processes are in the table has
    // registered its socket before they started, so its user is seen as live.
    ScanOptions scan;
    scan.proc_root = context_.proc_root;
    scan.caller_pid = context_.self;
    scan.slurm_daemon_pid = context_.slurm_daemon_pid;
    scan.deadline = context_.deadline;
    scan.wants_detail = [this](uid_t owner) { return !exemptions_.by_uid(owner).is_protected(); };
    scan.read_cgroup = false;  // read below, and only if some job could protect by cgroup
    auto scanned = scan_processes(scan);
    if (!scanned.ok()) return scanned.error();
    ProcessTable& table = scanned.value();

    auto live = job_state_();
    if (!live.ok()) return live.error();
    live_ = std::move(live).value();
    live_.uids.insert(confirmed_allocations_.begin(), confirmed_allocations_.end());

    auto ancestry = read_ancestry(context_.proc_root, context_.self);
    std::set<pid_t> caller_ancestors(ancestry.begin(), ancestry.end());

    std::map<uid_t, Exemption> exemptions;
    for (const Process& p : table.processes) {
        if (!p.detailed)
            exemptions.emplace(p.owner, exemptions_.by_uid(p.owner));
        else if (p.uids.all_equal())
            exemptions.emplace(p.uids.real, cache_.get(p.uids.real));
    }

    const auto decide_now = [&] {
        return decide(DecisionInput{table, exemptions, live_, context_.event, context_.self, caller_ancestors,
                                    context_.never_touch, context_.ending_stepds});
    };
    Plan plan = decide_now();

    // A job cgroup protects only processes of a job with a live step, and matters only
    // for processes that would otherwise be killed: read those cgroup files, decide again.
    if (!live_.job_ids.empty() || !live_.job_sluids.empty()) {
        std::set<pid_t> candidates;
        for (const Decision& d : plan.decisions)
            if (d.verdict == Verdict::kill) candidates.insert(d.pid);
        if (!candidates.empty()) {
            if (auto read = read_job_cgroups(context_.proc_root, table, candidates); !read.ok()) return read.error();
            plan = decide_now();
        }
    }

    if (allocation_check_) {
        std::set<uid_t> unasked;
        for (const uid_t uid : plan.kill_uids())
            if (asked_allocations_.count(uid) == 0) unasked.insert(uid);
        if (!unasked.empty()) {
            asked_allocations_.insert(unasked.begin(), unasked.end());
            auto holders = allocation_check_(unasked);
            if (!holders.ok()) return holders.error();
            if (!holders->empty()) {
                confirmed_allocations_.insert(holders->begin(), holders->end());
                live_.uids.insert(holders->begin(), holders->end());
                plan = decide_now();
            }
        }
    }
    return plan;
}

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/evaluation.hpp"

#include "errors/error.hpp"

#include <fmt/format.h>

#include <map>

namespace leftover {

std::map<uid_t, Exemption> table_exemptions(const ProcessTable& table, const Exemptions& rules,
                                            const std::map<uid_t, Exemption>& by_name) {
    // Per uid, never per process: which process of a uid comes first (a not-detailed
    // entry whose owner is that uid, a reused pid) cannot change how the uid is judged.
    std::map<uid_t, Exemption> exemptions;
    const auto add = [&](uid_t uid) {
        if (exemptions.count(uid) != 0) return;
        Exemption e = rules.by_uid(uid);
        if (!e.is_protected())
            if (const auto named = by_name.find(uid); named != by_name.end()) e = named->second;
        exemptions.emplace(uid, std::move(e));
    };
    for (const Process& p : table.processes) {
        if (!p.detailed)
            add(p.owner);
        else if (p.uids.all_equal())
            add(p.uids.real);
    }
    return exemptions;
}

Evaluation::Evaluation(const Exemptions& exemptions, const AccountDatabase& accounts, JobStateReader job_state,
                       AllocationCheck allocation_check, EvaluationContext context)
    : exemptions_(exemptions),
      accounts_(accounts),
      job_state_(std::move(job_state)),
      allocation_check_(std::move(allocation_check)),
      context_(std::move(context)) {}

std::optional<std::string> Evaluation::account_name(uid_t uid) const {
    const auto found = answers_.names.find(uid);
    if (found == answers_.names.end() || found->second.status != LookupStatus::found) return std::nullopt;
    return found->second.name;
}

std::map<uid_t, std::string> Evaluation::failed_lookups() const {
    std::map<uid_t, std::string> out;
    for (const auto& [uid, lookup] : answers_.names)
        if (lookup.status == LookupStatus::failed) out.emplace(uid, failure_text(lookup.error, lookup.failure));
    return out;
}

Status Evaluation::classify_by_name(const std::set<uid_t>& uids) {
    std::set<uid_t> ask;
    for (const uid_t uid : uids)
        if (by_name_.count(uid) == 0) ask.insert(uid);
    if (ask.empty()) return Ok{};
    // The job's user too, while asking anyway: the summary names them.
    if (context_.event.job_uid && answers_.names.count(*context_.event.job_uid) == 0)
        ask.insert(*context_.event.job_uid);
    // The listed names once per sweep: an alias protects the uid it resolves to.
    const std::set<std::string> names = names_asked_ ? std::set<std::string>{} : exemptions_.listed_names();
    names_asked_ = true;
    AccountAnswers answers = accounts_.look_up(ask, names, context_.deadline);
    answers_.names.merge(answers.names);
    answers_.uids.merge(answers.uids);
    // A listed name whose uid is unknown could protect any uid: judge nobody.
    for (const auto& [name, lookup] : answers_.uids)
        if (lookup.status == LookupStatus::failed)
            return Error::lookup(
                fmt::format("{}: account lookup failed: {}", describe_listed(name, exemptions_.listed().at(name)),
                            failure_text(lookup.error, lookup.failure)),
                ErrorSource::account_lookup);
    for (const uid_t uid : ask)
        if (uids.count(uid) != 0) by_name_.emplace(uid, exemptions_.classify(uid, answers_));
    return Ok{};
}

Status Evaluation::read_job_state() {
    auto live = job_state_();
    LEFTOVER_TRY(live);
    live_ = std::move(live).value();
    live_.uids.insert(confirmed_allocations_.begin(), confirmed_allocations_.end());
    return Ok{};
}

Result<bool> Evaluation::job_state_unchanged() {
    const LiveWork decided_on = live_;
    LEFTOVER_TRY(read_job_state());
    return live_ == decided_on;
}

// The snapshot one evaluation decides on, and the caller's ancestors read with it.
struct Evaluation::Snapshot {
    ProcessTable table;
    std::set<pid_t> caller_ancestors;
    // The range rules for every uid, names for those already looked up this sweep; the
    // rest look unprotected until a plan would kill them, and then they are looked up.
    std::map<uid_t, Exemption> exemptions;
};

Result<Plan> Evaluation::operator()() {
    cleared_.clear();
    // Who has live work before the scan: their processes are kept whatever they are, so
    // they need no detail reads.
    const bool look_first = !context_.examine_live_users;
    if (look_first) LEFTOVER_TRY(read_job_state());
    auto scanned = scan(look_first ? live_.uids : std::set<uid_t>{});
    LEFTOVER_TRY(scanned);
    // Processes first, job state second: a step whose processes are in the table has
    // registered its socket before they started, so its user is seen as live. (After a
    // first look, the second one comes below, once a plan would kill.)
    if (!look_first) LEFTOVER_TRY(read_job_state());
    Snapshot now = snapshot(std::move(scanned).value());

    Plan plan = decide(input(now));
    if (look_first && !plan.kill_uids().empty()) LEFTOVER_TRY(look_again(now, plan));
    // What follows the first decision (job cgroups, names, allocations) can only keep more:
    // only the kills are decided again, not every process of a busy node.
    LEFTOVER_TRY(keep_by_job_cgroup(now, plan));
    LEFTOVER_TRY(keep_by_account_name(now, plan));
    LEFTOVER_TRY(keep_by_allocation(now, plan));
    return plan;
}

Result<ProcessTable> Evaluation::scan(const std::set<uid_t>& live_users) const {
    ScanOptions options;
    options.proc_root = context_.proc_root;
    options.caller_pid = context_.self;
    options.slurm_daemon_pid = context_.slurm_daemon_pid;
    options.deadline = context_.deadline;
    options.wants_detail = [&](uid_t owner) {
        return !exemptions_.by_uid(owner).is_protected() && live_users.count(owner) == 0;
    };
    options.read_cgroup = false;  // read later, and only if some job could protect by cgroup
    return scan_processes(options);
}

Evaluation::Snapshot Evaluation::snapshot(ProcessTable table) const {
    const auto ancestry = read_ancestry(context_.proc_root, context_.self);
    Snapshot now{std::move(table), std::set<pid_t>(ancestry.begin(), ancestry.end()), {}};
    now.exemptions = table_exemptions(now.table, exemptions_, by_name_);
    return now;
}

DecisionInput Evaluation::input(const Snapshot& now) const {
    return DecisionInput{now.table,
                         now.exemptions,
                         live_,
                         context_.event,
                         context_.self,
                         now.caller_ancestors,
                         context_.never_touch,
                         context_.ending_stepds};
}

// The job state again once a plan would kill: a step that started during the scan
// protects its user.
Status Evaluation::look_again(const Snapshot& now, Plan& plan) {
    const LiveWork first_look = live_;
    LEFTOVER_TRY(read_job_state());
    if (!(live_ == first_look)) plan = decide(input(now));
    return Ok{};
}

// A job cgroup protects only processes of a job with a live step, and matters only
// for processes that would otherwise be killed: read those cgroup files, decide again.
Status Evaluation::keep_by_job_cgroup(Snapshot& now, Plan& plan) const {
    if (live_.job_ids.empty() && live_.job_sluids.empty()) return Ok{};
    std::set<pid_t> candidates;
    for (const Decision& d : plan.decisions)
        if (d.verdict == Verdict::kill) candidates.insert(d.pid);
    if (candidates.empty()) return Ok{};
    LEFTOVER_TRY(read_job_cgroups(context_.proc_root, now.table, candidates));
    decide_kills_again(input(now), plan);
    return Ok{};
}

// Account names only for the users a plan would kill, all in one bounded lookup.
Status Evaluation::keep_by_account_name(Snapshot& now, Plan& plan) {
    const std::set<uid_t> kill_uids = plan.kill_uids();
    if (kill_uids.empty()) return Ok{};
    LEFTOVER_TRY(classify_by_name(kill_uids));
    now.exemptions = table_exemptions(now.table, exemptions_, by_name_);
    decide_kills_again(input(now), plan);
    for (const uid_t uid : plan.kill_uids())
        if (by_name_.count(uid) == 0)
            return Error::lookup(fmt::format("uid {} would be killed without its account lookup", uid),
                                 ErrorSource::account_lookup);
    return Ok{};
}

// Only "holds an allocation" is remembered: a user cleared in one round is asked again
// in the next, since a job of theirs may land here during grace. The users a cleanup
// may touch are asked in the same query: a user who left no process is never killed,
// and may hold an allocation all the same.
Status Evaluation::keep_by_allocation(const Snapshot& now, Plan& plan) {
    if (!allocation_check_) return Ok{};
    std::set<uid_t> to_ask = plan.kill_uids();  // the confirmed ones are kept already
    for (const uid_t uid : also_ask_)
        if (live_.uids.count(uid) == 0) to_ask.insert(uid);
    if (to_ask.empty()) return Ok{};
    auto holders = allocation_check_(to_ask);
    LEFTOVER_TRY(holders);
    for (const uid_t uid : to_ask)
        if (holders->count(uid) == 0) cleared_.insert(uid);
    if (holders->empty()) return Ok{};
    confirmed_allocations_.insert(holders->begin(), holders->end());
    live_.uids.insert(holders->begin(), holders->end());
    decide_kills_again(input(now), plan);
    return Ok{};
}

}  // namespace leftover

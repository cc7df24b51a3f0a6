// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/run_cleanup.hpp"

#include "procfs/proc_holders.hpp"
#include "sweep/report.hpp"
#include "sweep/run_sweep.hpp"
#include "util/escape.hpp"

#include <fmt/format.h>

namespace leftover::sweep {
namespace {

// A process of `uid` in the fresh plan that would outlive the sweep, if any.
const Decision* left_of(uid_t uid, const Plan& plan, bool dry_run) {
    for (const Decision& d : plan.decisions) {
        if (d.uid != uid || d.reason == Reason::zombie) continue;
        if (dry_run && d.verdict == Verdict::kill) continue;  // it would be gone
        return &d;
    }
    return nullptr;
}

// A process that holds `uid` as one of its uids and would outlive the sweep, if any.
std::optional<pid_t> holder_of(uid_t uid, const GuardInput& in) {
    const auto found = in.holders->find(uid);
    if (found == in.holders->end()) return std::nullopt;
    for (const pid_t pid : found->second) {
        if (!in.dry_run) return pid;
        // A dry run's target counts as gone (its four uids are the one uid it is killed for).
        bool target = false;
        for (const Decision& d : in.fresh->decisions)
            if (d.pid == pid && d.verdict == Verdict::kill) target = true;
        if (!target) return pid;
    }
    return std::nullopt;
}

// Why the objects of candidate `uid` stay; nullopt: they may go.
std::optional<std::string> why_kept(uid_t uid, const Exemption& exemption, const GuardInput& in) {
    if (exemption.is_protected()) return exemption.describe();
    if (in.fresh_live->uids.count(uid) != 0) return std::string("live work on this node");
    if (in.cleared != nullptr && in.cleared->count(uid) == 0)
        return std::string("slurmctld says it holds an allocation on this node");
    if (in.survivors.count(uid) != 0) return std::string("a process of it survived the kill");
    if (const Decision* left = left_of(uid, *in.fresh, in.dry_run))
        return fmt::format("its process {} ('{}') is left ({})", left->pid, escape_for_log(left->comm),
                           to_string(left->reason));
    if (const auto holder = holder_of(uid, in)) return fmt::format("process {} holds it as one of its uids", *holder);
    return std::nullopt;
}

}  // namespace

std::set<uid_t> cleanup_candidates(const Config& config, const SweepRequest& request, const Plan& plan) {
    std::set<uid_t> candidates = plan.kill_uids();
    const auto& trigger = request.trigger;
    if (trigger.uid && trigger.job_ending && !trigger.ending_step) candidates.insert(*trigger.uid);
    if (config.scope == Scope::job_user && trigger.uid) {
        const bool has_job_user = candidates.count(*trigger.uid) != 0;
        candidates.clear();
        if (has_job_user) candidates.insert(*trigger.uid);
    }
    return candidates;
}

Result<GuardedUsers> guarded_uids(const GuardInput& in, const Exemptions& exemptions, const AccountDatabase& accounts,
                                  std::chrono::steady_clock::time_point deadline) {
    if (in.error)
        return Error::lookup(fmt::format("{}: {}", to_string(in.error->kind), in.error->message), in.error->source);
    if (in.failed_lookups)
        return Error::lookup("an account lookup failed in this evaluation", ErrorSource::account_lookup);
    if (in.deadline_reached) return Error::lookup("the evaluation reached its deadline", ErrorSource::deadline);
    if (in.job_starting)
        return Error::lookup(fmt::format("a job is starting on this node ({})", *in.job_starting), ErrorSource::other);
    if (in.fresh == nullptr || in.fresh_live == nullptr)
        return Error::lookup("no evaluation after the sweep", ErrorSource::other);
    if (in.holders == nullptr)
        return Error::lookup("the processes of the cleanup's users were not read", ErrorSource::proc);
    if (in.candidates.empty()) return GuardedUsers{};
    // Reaped users were judged by name already; the job's user may not have been (it may
    // have left no process): every candidate is classified again, by the same rule.
    const AccountAnswers answers = accounts.look_up(in.candidates, exemptions.listed_names(), deadline);
    for (const auto& [uid, lookup] : answers.names)
        if (lookup.status == LookupStatus::failed)
            return Error::lookup(fmt::format("account lookup for uid {} failed", uid), ErrorSource::account_lookup);
    for (const auto& [name, lookup] : answers.uids)
        if (lookup.status == LookupStatus::failed)
            return Error::lookup(fmt::format("account lookup for listed name '{}' failed", name),
                                 ErrorSource::account_lookup);
    GuardedUsers users;
    for (const uid_t uid : in.candidates) {
        const Exemption exemption = exemptions.classify(uid, answers);
        if (!exemption.account.empty()) users.names[uid] = exemption.account;
        if (auto why = why_kept(uid, exemption, in))
            users.kept[uid] = std::move(*why);
        else
            users.cleaned.insert(uid);
    }
    return users;
}

Result<std::set<uid_t>> cleared_by_controller(const AllocationCheck& check, const std::set<uid_t>& candidates,
                                              const LiveWork& live) {
    std::set<uid_t> asked;
    for (const uid_t uid : candidates)
        if (live.uids.count(uid) == 0) asked.insert(uid);
    if (asked.empty()) return asked;
    auto holders = check(asked);
    LEFTOVER_TRY(holders);
    for (const uid_t uid : holders.value()) asked.erase(uid);
    return asked;
}

CleanupOptions cleanup_options(const Config& config, const std::string& proc_root, const std::string& shm_dir,
                               const std::string& mqueue_dir, std::chrono::steady_clock::time_point deadline) {
    CleanupOptions options;
    options.kinds = config.cleanup;
    options.proc_root = proc_root;
    options.shm_dir = shm_dir;
    options.mqueue_dir = mqueue_dir;
    options.dirs = config.cleanup_dirs;
    options.dry_run = config.dry_run;
    options.deadline = deadline;
    return options;
}

std::optional<CleanupTotals> run_cleanup(const GuardInput& input, const Config& config, const Exemptions& exemptions,
                                         const AccountDatabase& accounts, const CleanupOptions& options, Logger& log) {
    if (options.kinds.empty() || input.candidates.empty()) return std::nullopt;
    const auto users = guarded_uids(input, exemptions, accounts, options.deadline);
    if (!users.ok()) {
        log.warn(fmt::format("cleanup: nothing removed: {}", users.error().message));
        return std::nullopt;
    }
    for (const auto& [uid, why] : users->kept) {
        const auto name = users->names.find(uid);
        log.info(fmt::format("cleanup: nothing of {}uid {} removed: {}",
                             name != users->names.end() ? "user " + name->second + " " : std::string(), uid, why));
    }
    if (users->cleaned.empty()) return std::nullopt;
    const CleanupReport report = clean_up(users->cleaned, options);
    for (const CleanupRecord& record : report.records) {
        const std::string line = "cleanup: " + format_cleanup_record(record);
        if (record.outcome == CleanupOutcome::failed)
            log.error(line);
        else if (record.outcome == CleanupOutcome::changed)
            log.warn(line);
        else
            log.action(LogLevel::info, line);
    }
    for (const std::string& error : report.errors) log.warn("cleanup: " + error);
    return totals_of(report, config.dry_run);
}

std::optional<CleanupTotals> clean_up_after_sweep(const Config& config, const Exemptions& exemptions,
                                                  const SweepRequest& request, const AccountDatabase& accounts,
                                                  Evaluation& evaluation, JobStateSource& job_state,
                                                  const KillReport& report,
                                                  std::chrono::steady_clock::time_point deadline, Logger& log) {
    const CleanupOptions options =
        cleanup_options(config, request.proc_root, request.shm_dir, request.mqueue_dir, deadline);
    GuardInput input;
    input.candidates = cleanup_candidates(config, request, report.first_plan);
    if (options.kinds.empty() || input.candidates.empty()) return std::nullopt;
    input.error = report.error;
    input.failed_lookups = !evaluation.failed_lookups().empty();
    input.deadline_reached = report.deadline_reached;
    input.job_starting = report.job_starting;
    // A dry run leaves every target as a "survivor": it counts as gone there (see nothing_left_of).
    if (!config.dry_run)
        for (const Decision& survivor : report.survivors) input.survivors.insert(survivor.uid);
    input.dry_run = config.dry_run;
    // Fresh state: a job of the user may have started, or a process appeared, meanwhile.
    // Not asked after a failure, which already keeps everything (a hung source would only
    // hold the step's end once more). Without contain, slurmctld clears every candidate
    // (the job's user who left no process too) in that evaluation's one allocation query;
    // with contain, in the job epilog and the command, in one query of the cleanup's own
    // (a job in its Prolog, or one slurmd has not forked for yet, shows no step here).
    // Then every process holding a candidate as any uid is looked for (the scan reads the
    // uids of unprotected owners only, and a setuid program's entry is root's), and last,
    // right before the removal, whether a job is being set up on the node.
    std::optional<Result<Plan>> fresh;
    std::optional<Result<std::map<uid_t, std::vector<pid_t>>>> holders;
    std::set<uid_t> cleared;
    if (!input.error && !input.failed_lookups && !input.deadline_reached && !input.job_starting) {
        evaluation.ask_allocations_of(input.candidates);
        fresh = evaluation();
        if (!fresh->ok()) input.error = fresh->error();
        if (fresh->ok()) input.fresh = &fresh->value();
        input.fresh_live = &evaluation.last_live_work();
        if (evaluation.checks_allocations()) input.cleared = &evaluation.cleared_allocations();
        if (!evaluation.failed_lookups().empty()) input.failed_lookups = true;
        if (!input.error) {
            holders = processes_holding(request.proc_root, input.candidates, deadline);
            if (holders->ok())
                input.holders = &holders->value();
            else
                input.error = holders->error();
        }
        if (!input.error && input.cleared == nullptr)
            if (const AllocationCheck check = job_state.cleanup_allocation_check()) {
                auto asked = cleared_by_controller(check, input.candidates, *input.fresh_live);
                if (asked.ok()) {
                    cleared = std::move(asked).value();
                    input.cleared = &cleared;
                } else {
                    input.error = asked.error();
                }
            }
        if (!input.error) {
            auto starting = job_state.job_starting();
            if (!starting.ok())
                input.error = starting.error();
            else
                input.job_starting = starting.value();
        }
    }
    return run_cleanup(input, config, exemptions, accounts, options, log);
}

std::optional<CleanupReport> preview_cleanup(const Config& config, const Exemptions& exemptions,
                                             const SweepRequest& request, const AccountDatabase& accounts,
                                             const Plan& plan, const LiveWork& live, const std::set<uid_t>* cleared,
                                             std::chrono::steady_clock::time_point deadline) {
    CleanupOptions options = cleanup_options(config, request.proc_root, request.shm_dir, request.mqueue_dir, deadline);
    options.dry_run = true;
    GuardInput input;
    input.candidates = cleanup_candidates(config, request, plan);
    if (options.kinds.empty() || input.candidates.empty()) return std::nullopt;
    input.fresh = &plan;
    input.fresh_live = &live;
    input.dry_run = true;
    input.cleared = cleared;
    const auto holders = processes_holding(request.proc_root, input.candidates, deadline);
    if (!holders.ok()) return std::nullopt;
    input.holders = &holders.value();
    const auto users = guarded_uids(input, exemptions, accounts, deadline);
    if (!users.ok() || users->cleaned.empty()) return std::nullopt;
    return clean_up(users->cleaned, options);
}

}  // namespace leftover::sweep

// SPDX-License-Identifier: GPL-2.0-or-later
// The cleanup's guard and its log lines: after the kills, which users' IPC objects and
// files may go (cleanup/cleanup.hpp removes them), and what is said about it.
#pragma once

#include "cleanup/cleanup.hpp"
#include "config/config.hpp"
#include "kill/executor.hpp"
#include "policy/decision.hpp"
#include "policy/evaluation.hpp"
#include "sweep/job_state_source.hpp"
#include "sweep/log.hpp"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::sweep {

// What the guard decides on.
struct GuardInput {
    std::set<uid_t> candidates;   // the users the sweep reaped, and the ending job's user in its epilog
    const Plan* fresh = nullptr;  // an evaluation after the kills (a check: its one plan)
    const LiveWork* fresh_live = nullptr;
    std::optional<Error> error;   // the sweep's or the fresh evaluation's error
    bool failed_lookups = false;  // an account lookup failed in the sweep
    bool deadline_reached = false;
    std::optional<std::string> job_starting;  // a job is starting here (a round skipped, or before the removal)
    std::set<uid_t> survivors;
    bool dry_run = false;  // processes a dry run would kill count as gone
    // Without PrologFlags=contain only slurmctld knows an allocation with no step here,
    // and with it only slurmctld knows a job that slurmd is still setting up: then set, to
    // the candidates its one query said hold none. Unset: not asked (a step end with
    // contain, job_source controller): the node's own state, or slurmctld's, is the word.
    const std::set<uid_t>* cleared = nullptr;
    // The processes holding each candidate as any of their four uids, read after the
    // fresh evaluation (processes_holding); unset is an error.
    const std::map<uid_t, std::vector<pid_t>>* holders = nullptr;
};

// The candidates the guard let through, and why each other one is kept.
struct GuardedUsers {
    std::set<uid_t> cleaned;             // their objects may go
    std::map<uid_t, std::string> kept;   // their objects stay: why ("live work on this node")
    std::map<uid_t, std::string> names;  // each candidate's account name, where it has one
};

// The uids whose objects may go: each a candidate that is not protected (by `exemptions`
// from `accounts`' answers), has no live work, is cleared by slurmctld where it must be,
// and has no process left (none holds it as any uid), and why each other is kept; or an
// error saying why nothing may go (then nothing is removed at all).
Result<GuardedUsers> guarded_uids(const GuardInput& input, const Exemptions& exemptions,
                                  const AccountDatabase& accounts, std::chrono::steady_clock::time_point deadline);

// Where the cleanup looks: the config's kinds and dirs, and the request's roots.
CleanupOptions cleanup_options(const Config& config, const std::string& proc_root, const std::string& shm_dir,
                               const std::string& mqueue_dir, std::chrono::steady_clock::time_point deadline);

// Runs the guard and the cleanup, logs one line per object and each error. Unset when
// cleanup is off or no user qualifies; the totals for the summary otherwise.
std::optional<CleanupTotals> run_cleanup(const GuardInput& input, const Config& config, const Exemptions& exemptions,
                                         const AccountDatabase& accounts, const CleanupOptions& options, Logger& log);

struct SweepRequest;

// The users a sweep may clean after, before the guard: those `plan` would kill, and the
// ending job's user in the job's epilog (a crashed job often leaves objects and no
// process); at a step end only the reaped ones; with scope job_user only the job's user.
std::set<uid_t> cleanup_candidates(const Config& config, const SweepRequest& request, const Plan& plan);

// The candidates without live work that slurmctld, asked by `check` in one query, says
// hold no allocation here; no query when every candidate has live work.
Result<std::set<uid_t>> cleared_by_controller(const AllocationCheck& check, const std::set<uid_t>& candidates,
                                              const LiveWork& live);

// After run_sweep's kills: the users it reaped (and, in a job's epilog, the job's user),
// judged by the guard on one more evaluation (with PrologFlags=contain, slurmctld asked
// about them as job_state's cleanup_allocation_check says) and one more look for a job
// being set up right before anything goes, then cleaned. Unset when cleanup is off or
// nothing qualified; the totals for the summary otherwise.
std::optional<CleanupTotals> clean_up_after_sweep(const Config& config, const Exemptions& exemptions,
                                                  const SweepRequest& request, const AccountDatabase& accounts,
                                                  Evaluation& evaluation, JobStateSource& job_state,
                                                  const KillReport& report,
                                                  std::chrono::steady_clock::time_point deadline, Logger& log);

// What a sweep would remove after `plan`, as a dry run that logs nothing (for `leftover
// check`): unset when cleanup is off or the guard lets nothing go. `cleared` as in
// GuardInput: the evaluation's cleared_allocations() when it checks allocations, else
// cleared_by_controller's answer where job_state's cleanup_allocation_check asks.
std::optional<CleanupReport> preview_cleanup(const Config& config, const Exemptions& exemptions,
                                             const SweepRequest& request, const AccountDatabase& accounts,
                                             const Plan& plan, const LiveWork& live, const std::set<uid_t>* cleared,
                                             std::chrono::steady_clock::time_point deadline);

}  // namespace leftover::sweep

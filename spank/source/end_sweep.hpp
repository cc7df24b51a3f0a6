// SPDX-License-Identifier: GPL-2.0-or-later
// One sweep when work ends on the node: the part of the plugin that is not SPANK glue,
// kept free of Slurm headers so the command and the tests can drive it too.
#pragma once

#include "config.hpp"
#include "controller.hpp"
#include "executor.hpp"
#include "exemptions.hpp"
#include "live_work.hpp"
#include "log.hpp"
#include "result.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>

namespace leftover::slurm {

// What this node's slurmd really uses, learned from Slurm.
struct NodeInfo {
    std::string spool_dir;           // SlurmdSpoolDir with %n/%h expanded
    std::string node_name;           // slurmd's own node name (slurmd -N)
    std::set<uid_t> slurm_uids;      // SlurmUser, SlurmdUser
    bool prolog_contain = false;     // PrologFlags=contain: every allocation has an extern step here
    std::string slurm_conf;          // the slurm.conf path, for helpers that ask slurmctld
};

// SlurmdSpoolDir as slurmd expands it: the first %h becomes the short host name, then
// the first %n the node name.
std::string expand_spool_dir(std::string pattern, const std::string& node_name, const std::string& short_host);

// Config and exemptions, read once per step (in task_exit when there is one).
struct Prepared {
    Result<Config> config = Error::config("not prepared");
    std::optional<Result<Exemptions>> exemptions;  // only when the config is valid
};
Prepared prepare(const std::string& config_path, bool path_given, const std::set<uid_t>& slurm_uids);

struct Trigger {
    std::string label;                       // "job 12 step 0", "job 12 epilog", "node sweep"
    // The job's user. Unset for a node-wide sweep (the leftover command): no job ends,
    // so the scope is always node and slew/slew_max are the caller's business.
    std::optional<uid_t> uid;
    std::optional<std::uint32_t> job_id;
    std::optional<StepId> ending_step;       // set in slurm_spank_exit
    // Set in the job epilog: the whole job is ending, so slurmctld's view of it (still
    // COMPLETING) is not live work. At a step's end the job's allocation lives on.
    bool job_ending = false;
};

struct SweepRequest {
    Trigger trigger;
    NodeInfo node;
    pid_t self = 0;
    std::set<pid_t> ending_stepds;
    std::string proc_root = "/proc";
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Evaluates and sweeps, logging every action, every error and one summary. Returns the
// report (its error set on any config or lookup error, in which case nothing was killed).
SweepReport run_end_sweep(const Prepared& prepared, const SweepRequest& request, Controller* controller,
                          const AccountDatabase& accounts, FrontEndLog& log);

// What one evaluation saw and decided, with nothing signalled and no action logged.
struct NodeCheck {
    Plan plan;
    LiveWork live;  // the users and jobs whose work the plan respected
};

// The evaluation run_end_sweep starts from (same job-state source, same context), for
// `leftover check`. Errors are returned, not logged: the caller reports them.
Result<NodeCheck> check_node(const Prepared& prepared, const SweepRequest& request, Controller* controller,
                             const AccountDatabase& accounts, FrontEndLog& log);

}  // namespace leftover::slurm

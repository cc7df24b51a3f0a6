// SPDX-License-Identifier: GPL-2.0-or-later
// One sweep when work ends on the node: the part of the plugin that is not SPANK glue,
// kept free of Slurm headers so the command and the tests can drive it too.
#pragma once

#include "cleanup/cleanup.hpp"
#include "config/config.hpp"
#include "config/metrics_config.hpp"
#include "controller/controller.hpp"
#include "errors/error.hpp"
#include "errors/result.hpp"
#include "kill/executor.hpp"
#include "node/node_info.hpp"
#include "policy/exemptions.hpp"
#include "steps/live_work.hpp"
#include "sweep/log.hpp"
#include "sweep/sweep_request.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::sweep {

// Config and exemptions, read once per step (in task_exit when there is one).
struct ConfigAndExemptions {
    Result<Config> config = Error::config("not loaded", ErrorSource::config);
    std::optional<Result<Exemptions>> exemptions;  // only when the config is valid
    std::optional<MetricsSettings> metrics;        // also from a config that failed to load
};
ConfigAndExemptions load_config_and_exemptions(const std::string& config_path, bool path_given,
                                               const std::set<uid_t>& slurm_uids);

// Evaluates and sweeps, logging every action, every error and one summary. Returns the
// report (its error set on any config or lookup error, in which case nothing was killed).
KillReport run_sweep(const ConfigAndExemptions& loaded, const SweepRequest& request, controller::Controller* controller,
                     const AccountDatabase& accounts, Logger& log);

// Warnings about listed names that protect nobody (no account has them) or cannot be
// looked up, asked of `accounts` within slurm_timeout: for `leftover config` and slurmd's start.
std::vector<std::string> listed_name_warnings(const Config& config, const Exemptions& exemptions,
                                              const AccountDatabase& accounts);

// What one evaluation saw and decided, with nothing signalled and no action logged.
struct NodeCheck {
    Plan plan;
    LiveWork live;                         // the users and jobs whose work the plan respected
    std::optional<CleanupReport> cleanup;  // what a sweep would remove now (with cleanup on)
    // Set on a host where slurmctld runs (without sweep_on_controller_host): why a sweep
    // here kills nothing; the plan is then what a sweep with that key would do.
    std::optional<std::string> controller_host;
};

// The evaluation run_sweep starts from (same job-state source, same context), for
// `leftover check`. Errors are returned, not logged: the caller reports them.
Result<NodeCheck> check_node(const ConfigAndExemptions& loaded, const SweepRequest& request,
                             controller::Controller* controller, const AccountDatabase& accounts, Logger& log);

}  // namespace leftover::sweep

// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/query_controller.hpp"

#include "controller/helper_protocol.hpp"
#include "errors/error.hpp"
#include "util/bounded_child.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>

namespace leftover::controller {

Result<std::string> QueryController::ask(const std::vector<std::string>& args,
                                         std::chrono::steady_clock::time_point deadline) {
    // We run it as root: it must be as trustworthy as our config.
    if (auto trusted = check_trusted_file(helper_); !trusted.ok())
        return Error::lookup(fmt::format("controller query helper {}", trusted.error().message),
                             ErrorSource::controller);
    std::vector<std::string> argv = {helper_};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    if (!slurm_conf_.empty()) env.push_back("SLURM_CONF=" + slurm_conf_);
    auto output = run_bounded(argv, env, deadline);
    if (!output.ok()) return Error::lookup("asking slurmctld: " + output.error().message, ErrorSource::controller);
    if (output->exit_code != 0)
        return Error::lookup(
            fmt::format("asking slurmctld failed (exit {}): {}", output->exit_code, error_text(*output)),
            ErrorSource::controller);
    return std::move(output->out);
}

Result<steps::LiveWork> QueryController::jobs_on_nodes(const std::vector<std::string>& nodes,
                                                       std::optional<std::uint32_t> ending_job,
                                                       std::chrono::steady_clock::time_point deadline) {
    auto output = ask(jobs_arguments(nodes, ending_job), deadline);
    LEFTOVER_TRY(output);
    return parse_jobs_output(output.value());
}

Result<DrainAnswer> QueryController::drain_node(const std::string& node, const std::string& reason,
                                                std::chrono::steady_clock::time_point deadline) {
    auto output = ask(drain_arguments(node, reason), deadline);
    LEFTOVER_TRY(output);
    return parse_drain_output(output.value());
}

}  // namespace leftover::controller

// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/query_controller.hpp"

#include "errors/error.hpp"
#include "util/bounded_child.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>

#include <sstream>

namespace leftover::controller {

Result<steps::LiveWork> parse_query_output(const std::string& text) {
    steps::LiveWork live;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line == "end") return live;
        std::istringstream fields(line);
        std::string job_word, uid_word;
        std::uint64_t job = 0;
        uid_t uid = 0;
        if (!(fields >> job_word >> job >> uid_word >> uid) || job_word != "job" || uid_word != "uid")
            return Error::lookup(fmt::format("leftover-query: unexpected output line '{}'", line),
                                 ErrorSource::controller);
        live.uids.insert(uid);
        live.job_ids.insert(job);
        live.job_users[job] = uid;
    }
    return Error::lookup("leftover-query: incomplete answer (no end line)", ErrorSource::controller);
}

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
    std::vector<std::string> args;
    for (const std::string& node : nodes) {
        args.emplace_back("--node");
        args.push_back(node);
    }
    if (ending_job) {
        args.emplace_back("--exclude-job");
        args.push_back(std::to_string(*ending_job));
    }
    auto output = ask(args, deadline);
    LEFTOVER_TRY(output);
    return parse_query_output(output.value());
}

Result<DrainAnswer> QueryController::drain_node(const std::string& node, const std::string& reason,
                                                std::chrono::steady_clock::time_point deadline) {
    auto output = ask({"drain", "--node", node, "--reason", reason}, deadline);
    LEFTOVER_TRY(output);
    return parse_drain_output(output.value());
}

}  // namespace leftover::controller

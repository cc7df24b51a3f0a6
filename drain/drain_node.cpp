// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/drain_node.hpp"

#include "procfs/proc_read.hpp"
#include "util/unique_fd.hpp"

#include <fmt/format.h>

#include <csignal>
#include <fcntl.h>
#include <set>

namespace leftover::drain {

std::vector<Survivor> survivors_after_sigkill(const KillReport& report, const std::string& proc_root) {
    std::set<pid_t> got_sigkill;
    for (const KillRecord& record : report.actions)
        if (record.signal == SIGKILL && record.outcome == Outcome::signalled) got_sigkill.insert(record.pid);
    std::vector<Survivor> out;
    const UniqueFd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return out;
    std::string buffer;
    for (const Decision& d : report.survivors) {
        if (got_sigkill.count(d.pid) == 0) continue;
        UniqueFd dir;
        StatFields stat;
        if (open_pid_dir(root.get(), d.pid, dir) != 0 || read_stat(dir.get(), d.pid, stat, buffer) != 0) continue;
        // Gone, or its pid reused since, or dead and waiting for its parent: not a survivor.
        if (stat.start_time != d.start_time || stat.state == 'Z' || stat.state == 'X') continue;
        out.push_back({d.uid, d.user, stat.state});
    }
    return out;
}

DrainReport request_drain(controller::Controller* controller, const std::string& node_name, const std::string& reason,
                          std::chrono::steady_clock::time_point deadline, const std::string& what) {
    if (controller == nullptr)
        return {DrainResult::failed,
                fmt::format("{}: drain of node {} not requested: no controller connection; the node stays as it is",
                            what, node_name)};
    const auto answer = controller->drain_node(node_name, reason, deadline);
    if (!answer.ok())
        return {DrainResult::failed, fmt::format("{}: drain of node {} failed: {}; the node stays as it is", what,
                                                 node_name, answer.error().message)};
    if (!answer->drained)
        return {DrainResult::kept,
                fmt::format("{}: node {} is {} already (reason '{}'): its reason kept, no drain requested", what,
                            node_name, answer->state, bounded_reason(answer->reason))};
    return {DrainResult::drained, fmt::format("{}: node {} drained: {}", what, node_name, reason)};
}

std::optional<DrainReport> drain_on_survivors(const Config& config, const DrainContext& context,
                                              const KillReport& report, controller::Controller* controller) {
    // Nothing on doubt: an error, a dry run; and a step end leaves it to the job epilog.
    if (!config.drain_on_survivors || config.dry_run || report.error || context.step_end) return std::nullopt;
    const auto survivors = survivors_after_sigkill(report, context.proc_root);
    if (survivors.empty()) return std::nullopt;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(config.slurm_timeout));
    return request_drain(controller, context.node_name, survivors_reason(survivors), deadline, context.label);
}

}  // namespace leftover::drain

// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/drain_node.hpp"

#include "procfs/proc_table.hpp"

#include <fmt/format.h>

#include <csignal>
#include <set>

namespace leftover::drain {

Result<std::vector<Survivor>> survivors_after_sigkill(const KillReport& report, const std::string& proc_root) {
    std::set<pid_t> got_sigkill;
    for (const KillRecord& record : report.actions)
        if (record.signal == SIGKILL && record.outcome == Outcome::signalled) got_sigkill.insert(record.pid);
    std::vector<Survivor> out;
    for (const Decision& d : report.survivors) {
        if (got_sigkill.count(d.pid) == 0) continue;
        auto now = read_process(proc_root, d.pid);
        LEFTOVER_TRY(now);
        // Gone, or its pid reused since, or dead and waiting for its parent: not a survivor.
        if (!*now || (*now)->start_time != d.start_time || (*now)->zombie()) continue;
        out.push_back({d.uid, d.user, (*now)->state});
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

DrainOutcome drain_on_survivors(const Config& config, const DrainContext& context, const KillReport& report,
                                controller::Controller* controller) {
    DrainOutcome outcome;
    // Nothing on doubt: an error, a dry run; and a step end leaves it to the job epilog.
    if (!config.drain_on_survivors || config.dry_run || report.error || context.step_end) return outcome;
    const auto survivors = survivors_after_sigkill(report, context.proc_root);
    if (!survivors.ok()) {
        outcome.notes.emplace_back(LogLevel::warn,
                                   fmt::format("{}: no drain of node {} requested: which processes outlived SIGKILL "
                                               "cannot be told: {}",
                                               context.label, context.node_name, survivors.error().message));
        return outcome;
    }
    if (survivors->empty()) return outcome;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(config.slurm_timeout));
    outcome.request =
        request_drain(controller, context.node_name, survivors_reason(*survivors), deadline, context.label);
    return outcome;
}

}  // namespace leftover::drain

// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/drain_node.hpp"

#include "procfs/proc_table.hpp"
#include "util/boot.hpp"
#include "util/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <set>

namespace leftover::drain {
namespace {

using std::chrono::milliseconds;

// A survivor recorded by an earlier sweep, read again: nullopt when it is gone, its pid
// names another process now, it is a zombie by the scan's rule, or it is exiting.
Result<std::optional<char>> state_if_alive(const RecordedSurvivor& recorded, const std::string& proc_root) {
    auto now = read_process(proc_root, recorded.pid);
    LEFTOVER_TRY(now);
    if (!*now || (*now)->start_time != recorded.start_time || (*now)->zombie() || (*now)->exiting)
        return std::optional<char>();
    return std::optional<char>((*now)->state);
}

struct Waiting {
    RecordedSurvivor recorded;
    char state = '?';
};

// "pid 501 (bob, D, 3 s after SIGKILL), pid 502 (uid 41003, D, 61 s after SIGKILL)",
// ten at most, then "+N more".
std::string describe(const std::vector<Waiting>& waiting, milliseconds now) {
    constexpr std::size_t kShown = 10;
    std::string out;
    for (std::size_t i = 0; i < waiting.size() && i < kShown; ++i) {
        const RecordedSurvivor& r = waiting[i].recorded;
        if (!out.empty()) out += ", ";
        out += fmt::format("pid {} ({}, {}, {} s after SIGKILL)", r.pid,
                           r.user.empty() ? fmt::format("uid {}", r.uid) : escape_for_log(r.user),
                           escape_for_log(std::string_view(&waiting[i].state, 1)),
                           std::chrono::duration_cast<std::chrono::seconds>(now - r.since).count());
    }
    if (waiting.size() > kShown) out += fmt::format(" +{} more", waiting.size() - kShown);
    return out;
}

}  // namespace

Result<std::vector<LiveSurvivor>> survivors_after_sigkill(const KillReport& report, const std::string& proc_root) {
    std::set<pid_t> got_sigkill;
    for (const KillRecord& record : report.actions)
        if (record.signal == SIGKILL && record.outcome == Outcome::signalled) got_sigkill.insert(record.pid);
    std::vector<LiveSurvivor> out;
    for (const Decision& d : report.survivors) {
        if (got_sigkill.count(d.pid) == 0) continue;
        auto now = read_process(proc_root, d.pid);
        LEFTOVER_TRY(now);
        // Gone, or its pid reused since, or dead and waiting for its parent: not a survivor.
        if (!*now || (*now)->start_time != d.start_time || (*now)->zombie()) continue;
        out.push_back({d.pid, d.start_time, {d.uid, d.user, (*now)->state}, (*now)->exiting});
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
    const milliseconds now = context.now.value_or(boot_clock_now());
    RecordPlace place = context.record;
    if (place.boot_id.empty()) place.boot_id = read_boot_id(context.proc_root);
    const auto no_drain = [&](const std::string& why) {
        outcome.notes.emplace_back(LogLevel::warn, fmt::format("{}: no drain of node {} requested: {}", context.label,
                                                               context.node_name, why));
        return outcome;
    };

    const auto fresh = survivors_after_sigkill(report, context.proc_root);
    if (!fresh.ok())
        return no_drain(fmt::format("which processes outlived SIGKILL cannot be told: {}", fresh.error().message));
    const auto recorded = read_survivor_record(place);
    if (!recorded.ok()) return no_drain(recorded.error().message);

    const auto same = [](const RecordedSurvivor& r, pid_t pid, std::uint64_t start_time) {
        return r.pid == pid && r.start_time == start_time;
    };
    std::vector<Waiting> waiting;
    // What outlived this sweep's SIGKILL, since it was first found so (now, or an earlier sweep).
    for (const LiveSurvivor& s : *fresh) {
        if (s.exiting) {
            outcome.notes.emplace_back(
                LogLevel::info,
                fmt::format("{}: pid {} outlived SIGKILL but is exiting (PF_EXITING, state {}): no reason to drain",
                            context.label, s.pid, escape_for_log(std::string_view(&s.shown.state, 1))));
            continue;
        }
        RecordedSurvivor r{s.pid, s.start_time, s.shown.uid, s.shown.user, now};
        const auto earlier = std::find_if(recorded->begin(), recorded->end(),
                                          [&](const RecordedSurvivor& e) { return same(e, s.pid, s.start_time); });
        if (earlier != recorded->end() && earlier->since <= now) r.since = earlier->since;
        waiting.push_back({std::move(r), s.shown.state});
    }
    // What earlier sweeps' SIGKILL did not end and this sweep did not signal, while it lives.
    for (const RecordedSurvivor& r : *recorded) {
        if (std::any_of(waiting.begin(), waiting.end(),
                        [&](const Waiting& w) { return same(w.recorded, r.pid, r.start_time); }))
            continue;
        const auto state = state_if_alive(r, context.proc_root);
        if (!state.ok())
            return no_drain(fmt::format("whether pid {} still lives cannot be told: {}", r.pid, state.error().message));
        if (*state) waiting.push_back({r, **state});
    }

    std::vector<RecordedSurvivor> keep;
    keep.reserve(waiting.size());
    for (const Waiting& w : waiting) keep.push_back(w.recorded);
    if (keep.empty() && recorded->empty()) return outcome;  // nothing kept, nothing to keep
    if (const auto written = write_survivor_record(place, keep); !written.ok())
        outcome.notes.emplace_back(LogLevel::warn, fmt::format("{}: {}; the survivors found now count from the next "
                                                               "sweep that can keep them",
                                                               context.label, written.error().message));

    std::vector<Survivor> due;
    for (const Waiting& w : waiting)
        if (now - w.recorded.since >= context.bound) due.push_back({w.recorded.uid, w.recorded.user, w.state});
    if (due.empty()) {
        if (!waiting.empty())
            outcome.notes.emplace_back(
                LogLevel::info,
                fmt::format("{}: {} outlived SIGKILL: node {} is drained if one is still alive {} s after its SIGKILL "
                            "(UnkillableStepTimeout) when a later sweep looks",
                            context.label, describe(waiting, now), context.node_name, context.bound.count()));
        return outcome;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(config.slurm_timeout));
    outcome.request = request_drain(controller, context.node_name, survivors_reason(due), deadline, context.label);
    return outcome;
}

}  // namespace leftover::drain

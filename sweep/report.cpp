// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/report.hpp"

#include "util/errno_text.hpp"
#include "util/escape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <csignal>
#include <map>
#include <set>

namespace leftover::sweep {
namespace {

std::string who(const KillRecord& r) {
    return fmt::format("pid={} user={} uid={} comm='{}'", r.pid, r.user.empty() ? "?" : r.user, r.uid, r.comm);
}

std::string why(const KillRecord& r) {
    return r.detail.empty() ? fmt::format("reason={}", to_string(r.reason))
                            : fmt::format("reason={} ({})", to_string(r.reason), r.detail);
}

}  // namespace

std::string signal_name(int signal) {
    switch (signal) {
        case SIGTERM: return "SIGTERM";
        case SIGKILL: return "SIGKILL";
        case SIGSTOP: return "SIGSTOP";
        case SIGCONT: return "SIGCONT";
        default: return fmt::format("signal {}", signal);
    }
}

std::string format_action(const KillRecord& r) {
    switch (r.outcome) {
        case Outcome::signalled: return fmt::format("{} {} {}", signal_name(r.signal), who(r), why(r));
        case Outcome::dry_run: return fmt::format("would kill {} {} (dry run)", who(r), why(r));
        case Outcome::gone: return fmt::format("{} not needed: {} already exited", signal_name(r.signal), who(r));
        case Outcome::pid_reused:
            return fmt::format("{} not sent: pid {} now names another process", signal_name(r.signal), r.pid);
        case Outcome::permission_denied:
            return fmt::format("{} failed: {}: permission denied", signal_name(r.signal), who(r));
        case Outcome::failed:
            return fmt::format("{} failed: {}: {}", signal_name(r.signal), who(r), errno_text(r.error));
        case Outcome::deadline:
            return fmt::format("{} not sent: {}: the deadline passed", signal_name(r.signal), who(r));
        case Outcome::not_stopped: return fmt::format("{} not sent: {}: {}", signal_name(r.signal), who(r), r.detail);
    }
    return "?";
}

std::string format_summary(const SummaryInput& in, const KillReport& report,
                           const std::optional<CleanupTotals>& cleanup) {
    std::string trigger = in.trigger;
    if (in.trigger_uid)
        trigger += fmt::format(" (user {} uid {})", in.trigger_user.empty() ? "?" : in.trigger_user, *in.trigger_uid);

    std::set<std::string> swept;
    std::set<pid_t> killed;
    for (const KillRecord& r : report.actions) {
        // Stopping and continuing kill nothing.
        if (r.signal != SIGTERM && r.signal != SIGKILL) continue;
        if (r.outcome != Outcome::signalled && r.outcome != Outcome::dry_run) continue;
        swept.insert(r.user.empty() ? fmt::format("uid {}", r.uid) : r.user);
        killed.insert(r.pid);
    }
    std::map<Reason, std::size_t> kept = report.first_plan.count_by_reason();
    kept.erase(Reason::stray);
    std::size_t kept_total = 0;
    std::string kept_detail;
    for (const auto& [reason, count] : kept) {
        kept_total += count;
        kept_detail += fmt::format("{}{} {}", kept_detail.empty() ? "" : ", ", to_string(reason), count);
    }
    if (!kept_detail.empty()) kept_detail = " (" + kept_detail + ")";
    return fmt::format("{}: {}swept [{}]; {} {}; kept {}{}; survivors {}; lookup errors {}; {:.1f} ms{}{}", trigger,
                       in.dry_run ? "dry run: " : "", fmt::join(swept, ", "), in.dry_run ? "would kill" : "killed",
                       killed.size(), kept_total, kept_detail, report.survivors.size(), report.error ? 1 : 0,
                       in.milliseconds, report.deadline_reached ? "; deadline reached" : "",
                       cleanup ? "; cleanup: " + format_cleanup_totals(*cleanup) : std::string());
}

std::string format_cleanup_record(const CleanupRecord& r) {
    const bool is_path =
        r.kind != ObjectKind::shm_segment && r.kind != ObjectKind::semaphore && r.kind != ObjectKind::message_queue;
    const std::string what =
        fmt::format("{} {}{} uid={} bytes={}", to_string(r.kind),
                    is_path ? "path='" : "id=", is_path ? escape_for_log(r.name) + "'" : r.name, r.uid, r.bytes);
    switch (r.outcome) {
        case CleanupOutcome::removed: return "removed " + what;
        case CleanupOutcome::would_remove: return "would remove " + what + " (dry run)";
        case CleanupOutcome::failed: return fmt::format("removing {} failed: {}", what, errno_text(r.error));
        case CleanupOutcome::changed: return fmt::format("not removed: {}: {}", what, r.detail);
    }
    return "?";
}

std::string format_bytes(std::uint64_t bytes) {
    constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double value = static_cast<double>(bytes) / 1024;
    std::size_t unit = 0;
    for (; value >= 1024 && unit + 1 < std::size(units); ++unit) value /= 1024;
    return fmt::format("{:.1f} {}", value, units[unit]);
}

std::string format_cleanup_totals(const CleanupTotals& t) {
    std::string text = fmt::format("{} {} IPC objects, {} files, {}", t.dry_run ? "would remove" : "removed",
                                   t.ipc_objects, t.files, format_bytes(t.bytes));
    if (t.errors > 0) text += fmt::format(", {} errors", t.errors);
    return text;
}

}  // namespace leftover::sweep

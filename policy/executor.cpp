// SPDX-License-Identifier: GPL-2.0-or-later
#include "executor.hpp"

#include "escape.hpp"
#include "poll_timeout.hpp"
#include "unique_fd.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <utility>

namespace leftover {
namespace {

using Clock = std::chrono::steady_clock;

// The one way a decision becomes the record of what was done to its process.
KillRecord record_for(const Decision& target, int signal, Outcome outcome) {
    KillRecord record;
    record.pid = target.pid;
    record.uid = target.uid;
    record.user = target.user;
    record.comm = escape_for_log(target.comm);
    record.signal = signal;
    record.reason = target.reason;
    record.detail = target.detail;
    record.outcome = outcome;
    return record;
}

struct Pinned {
    pid_t pid = 0;  // the pin is all that waiting needs: no copy of the decision
    UniqueFd pidfd;
};

class Executor {
public:
    Executor(const KillOptions& options, SystemCalls& calls, KillReport& report)
        : options_(options), calls_(calls), report_(report) {}

    // Every action goes into the report and, as it happens, to the observer.
    void note(const KillRecord& r) {
        report_.actions.push_back(r);
        if (options_.observer.on_action) options_.observer.on_action(r);
    }

    // Pins every target, checks its identity through the pin and signals it.
    // Returns the pinned processes that were signalled, for waiting.
    std::vector<Pinned> signal_all(const std::vector<Decision>& targets, int signal) {
        std::vector<Pinned> signalled;
        for (const Decision& target : targets) {
            KillRecord record = record_for(target, signal, Outcome::signalled);
            const int opened = calls_.pidfd_open(target.pid);
            if (opened < 0) {
                set_outcome(record, -opened);
                note(record);
                continue;
            }
            UniqueFd pidfd(opened);
            // pidfd_open pinned whatever process holds the pid now; only if it is still
            // the one that was decided on (same start time, same uids) may it be signalled.
            const auto identity = calls_.read_identity(options_.proc_root, target.pid);
            if (!identity) {
                record.outcome = Outcome::gone;
            } else if (identity->start_time != target.start_time || !identity->uids.all_equal() ||
                       identity->uids.real != target.uid) {
                record.outcome = Outcome::pid_reused;
            } else {
                const int rc = calls_.pidfd_send_signal(pidfd.get(), signal);
                set_outcome(record, -rc);
                if (record.outcome == Outcome::signalled) {
                    note(record);
                    signalled.push_back({target.pid, std::move(pidfd)});
                    continue;
                }
            }
            note(record);
        }
        return signalled;
    }

    // Waits until every pinned process has exited (a pidfd polls readable then; a zombie
    // counts as exited) or `until`; then closes the pins.
    void wait_and_release(std::vector<Pinned>& pinned, Clock::time_point until) {
        std::vector<pollfd> fds;
        fds.reserve(pinned.size());
        for (const Pinned& p : pinned) fds.push_back({p.pidfd.get(), POLLIN, 0});
        until = std::min(until, options_.deadline);
        while (!fds.empty()) {
            const int left_ms = poll_timeout_ms(until);
            if (left_ms == 0) break;
            const int rc = calls_.poll(fds.data(), fds.size(), std::min(left_ms, 1000));
            if (rc < 0 && rc != -EINTR) break;
            fds.erase(std::remove_if(fds.begin(), fds.end(), [](const pollfd& f) { return f.revents != 0; }),
                      fds.end());
        }
        pinned.clear();
    }

private:
    static void set_outcome(KillRecord& record, int error) {
        record.error = error;
        if (error == 0)
            record.outcome = Outcome::signalled;
        else if (error == ESRCH)
            record.outcome = Outcome::gone;
        else if (error == EPERM)
            record.outcome = Outcome::permission_denied;
        else
            record.outcome = Outcome::failed;
    }

    const KillOptions& options_;
    SystemCalls& calls_;
    KillReport& report_;
};

bool past(Clock::time_point deadline) { return Clock::now() >= deadline; }

}  // namespace

KillReport execute_kills(const Evaluate& evaluate, const KillOptions& options, SystemCalls& calls) {
    KillReport report;
    Executor executor(options, calls, report);

    auto next_plan = [&]() -> std::optional<Plan> {
        ++report.evaluations;
        auto plan = evaluate();
        if (!plan.ok()) {
            report.error = plan.error();
            return std::nullopt;
        }
        return std::move(plan).value();
    };

    // The plan acted on: the first one lives in the report (moved there, not copied);
    // each fresh evaluation replaces `fresh`, and the previous plan is freed before it.
    std::optional<Plan> fresh = next_plan();
    if (!fresh) return report;  // a lookup or config error: nothing is killed
    report.first_plan = std::move(*fresh);
    fresh.reset();
    const Plan* plan = &report.first_plan;
    const auto has_kills = [](const Plan& p) {
        return std::any_of(p.decisions.begin(), p.decisions.end(),
                           [](const Decision& d) { return d.verdict == Verdict::kill; });
    };
    const auto replan = [&]() -> bool {
        fresh.reset();
        fresh = next_plan();
        if (!fresh) return false;
        plan = &*fresh;
        return true;
    };
    if (options.dry_run) {
        const int first_signal = options.grace.count() > 0 ? SIGTERM : SIGKILL;
        for (const Decision& d : plan->kills()) executor.note(record_for(d, first_signal, Outcome::dry_run));
        report.survivors = plan->kills();
        return report;
    }

    if (!has_kills(*plan)) return report;

    // One list of targets per round, freed as soon as every one is signalled.
    const auto signal_round = [&](int signal) {
        auto targets = plan->kills();
        report.actions.reserve(report.actions.size() + targets.size());
        auto pinned = executor.signal_all(targets, signal);
        targets = {};
        return pinned;
    };

    if (options.grace.count() > 0) {
        auto pinned = signal_round(SIGTERM);
        if (!pinned.empty() && options.observer.on_grace_wait)
            options.observer.on_grace_wait(pinned.size(), options.grace);
        executor.wait_and_release(pinned, Clock::now() + options.grace);
        // Job state and processes are read again right before SIGKILL: a job that
        // started during grace protects its user's processes.
        if (!replan()) return report;
    }

    while (has_kills(*plan)) {
        if (report.rounds >= options.max_rounds || past(options.deadline)) {
            report.deadline_reached = past(options.deadline);
            break;
        }
        ++report.rounds;
        auto pinned = signal_round(SIGKILL);
        executor.wait_and_release(pinned, Clock::now() + options.settle);
        // A stray that forks keeps making new ones: decide again on a fresh scan.
        if (!replan()) return report;
    }
    report.survivors = plan->kills();
    return report;
}

}  // namespace leftover

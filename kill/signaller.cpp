// SPDX-License-Identifier: GPL-2.0-or-later
#include "kill/signaller.hpp"

#include "util/escape.hpp"
#include "util/poll_timeout.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace leftover {
namespace {

void set_outcome(KillRecord& record, int error) {
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

}  // namespace

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

void Signaller::note(const KillRecord& record) {
    if (record.outcome == Outcome::gone) exited_.insert(record.pid);
    report_.actions.push_back(record);
    if (!options_.observer.on_action) return;
    // A front end whose log fails must not stop the sweep halfway, with targets stopped.
    try {
        options_.observer.on_action(record);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the report still holds the record
    }
}

// `pin`: the target's pin (its SIGSTOP's) or, invalid, one to make here. It holds the
// pin when the signal went.
KillRecord Signaller::signal_one(const Decision& target, int signal, PidRef& pin) {
    KillRecord record = record_for(target, signal, Outcome::signalled);
    if (!pin.valid()) {
        auto pinned = PidRef::pin(calls_, target.pid);
        if (!pinned) {
            set_outcome(record, pinned.error());
            return record;
        }
        pin = std::move(pinned).value();
    }
    // The pin holds whatever process held the pid when it was made: only if it is still
    // the one that was decided on (same start time, same uids) may it be signalled.
    const PinSignal sent =
        pin.signal_if(options_.proc_root, signal, [&target](const Identity& now) { return is_decided(now, target); });
    if (sent.check == PinSignal::Check::gone)
        record.outcome = Outcome::gone;
    else if (sent.check == PinSignal::Check::other)
        record.outcome = Outcome::pid_reused;
    else
        set_outcome(record, sent.error);
    return record;
}

std::vector<PidRef> Signaller::signal_all(const std::vector<Decision>& targets, int signal, bool intermediate,
                                          std::optional<Clock::time_point> stop_at, std::vector<PidRef>* held,
                                          const std::function<bool()>& go_on) {
    const Clock::time_point until = stop_at.value_or(options_.deadline);
    std::vector<PidRef> signalled;
    report_.actions.reserve(report_.actions.size() + targets.size());
    bool late = false;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const Decision& target = targets[i];
        // A long list must not carry the signals past the deadline.
        late = late || Clock::now() >= until;
        if (late) {
            KillRecord record = record_for(target, signal, Outcome::deadline);
            record.intermediate = intermediate;
            note(record);
            continue;
        }
        if (go_on && !go_on()) break;
        PidRef made_here;
        PidRef& pin = held != nullptr && (*held)[i].valid() ? (*held)[i] : made_here;
        KillRecord record = signal_one(target, signal, pin);
        record.intermediate = intermediate;
        note(record);
        if (record.outcome == Outcome::signalled) signalled.push_back(std::move(pin));
    }
    if (late) report_.deadline_reached = true;
    return signalled;
}

void Signaller::continue_stopped(PidRef& pin, const Decision& target, bool intermediate) {
    KillRecord record = record_for(target, SIGCONT, Outcome::signalled);
    record.intermediate = intermediate;
    set_outcome(record, pin.continue_stopped());
    note(record);
}

std::optional<Stopped> Signaller::stop_unseen(pid_t pid, uid_t uid, const std::string& user,
                                              const std::function<bool(const Identity&)>& may_stop, bool& escaped) {
    // Gone already: nothing to stop, but it may have forked before it went.
    auto pinned = PidRef::pin(calls_, pid);
    if (!pinned) {
        escaped = escaped || pinned.error() == ESRCH;
        return std::nullopt;
    }
    PidRef pin = std::move(pinned).value();
    // No decision yet: its start time is what the pin shows; its uids must all be `uid`.
    const PinSignal sent = pin.signal_if(options_.proc_root, SIGSTOP, [&](const Identity& now) {
        return now.uids.all_equal() && now.uids.real == uid && may_stop(now);
    });
    if (sent.check == PinSignal::Check::gone) escaped = true;
    if (sent.check != PinSignal::Check::same) return std::nullopt;
    Decision target;
    target.pid = pid;
    target.uid = uid;
    target.user = user;
    target.start_time = sent.identity->start_time;
    target.ppid = sent.identity->ppid;
    target.pgid = sent.identity->pgid;
    target.verdict = Verdict::kill;
    target.detail = "a new process of a user being swept, stopped before it was evaluated";
    KillRecord record = record_for(target, SIGSTOP, Outcome::signalled);
    record.intermediate = true;
    set_outcome(record, sent.error);
    note(record);
    if (record.outcome != Outcome::signalled) return std::nullopt;
    escaped = escaped || pin.has_exited();
    return Stopped{std::move(target), std::move(pin)};
}

void Signaller::wait_and_release(std::vector<PidRef>& pinned, Clock::time_point until) {
    std::vector<pollfd> fds;
    fds.reserve(pinned.size());
    for (const PidRef& p : pinned) fds.push_back({p.fd(), POLLIN, 0});
    until = std::min(until, options_.deadline);
    while (!fds.empty()) {
        const int left_ms = poll_timeout_ms(until);
        if (left_ms == 0) break;
        const int rc = calls_.poll(fds.data(), fds.size(), std::min(left_ms, 1000));
        if (rc < 0 && rc != -EINTR) break;
        std::erase_if(fds, [](const pollfd& f) { return f.revents != 0; });
    }
    // What still polls unreadable has not exited; the rest has.
    std::set<int> running;
    for (const pollfd& f : fds) running.insert(f.fd);
    for (const PidRef& p : pinned)
        if (running.count(p.fd()) == 0) exited_.insert(p.pid());
    pinned.clear();
}

}  // namespace leftover

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

KillRecord Signaller::signal_one(const Decision& target, int signal, UniqueFd& pin, UniqueFd* held) {
    KillRecord record = record_for(target, signal, Outcome::signalled);
    UniqueFd opened_here;
    if (held == nullptr || !held->valid()) {
        const int opened = calls_.pidfd_open(target.pid);
        if (opened < 0) {
            set_outcome(record, -opened);
            return record;
        }
        opened_here = UniqueFd(opened);
    }
    UniqueFd& pidfd = opened_here.valid() ? opened_here : *held;
    // pidfd_open pinned whatever process held the pid then; only if it is still the one
    // that was decided on (same start time, same uids) may it be signalled.
    const auto identity = calls_.read_identity(options_.proc_root, target.pid);
    if (!identity) {
        record.outcome = Outcome::gone;
    } else if (identity->start_time != target.start_time || !identity->uids.all_equal() ||
               identity->uids.real != target.uid) {
        record.outcome = Outcome::pid_reused;
    } else {
        set_outcome(record, -calls_.pidfd_send_signal(pidfd.get(), signal));
        if (record.outcome == Outcome::signalled) pin = std::move(pidfd);
    }
    return record;
}

std::vector<Pinned> Signaller::signal_all(const std::vector<Decision>& targets, int signal, bool intermediate,
                                          std::optional<Clock::time_point> stop_at, std::vector<UniqueFd>* held) {
    const Clock::time_point until = stop_at.value_or(options_.deadline);
    std::vector<Pinned> signalled;
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
        UniqueFd pin;
        KillRecord record = signal_one(target, signal, pin, held != nullptr ? &(*held)[i] : nullptr);
        record.intermediate = intermediate;
        note(record);
        if (pin.valid()) signalled.push_back({target.pid, std::move(pin)});
    }
    if (late) report_.deadline_reached = true;
    return signalled;
}

void Signaller::signal_pinned(const UniqueFd& pin, const Decision& target, int signal, bool intermediate) {
    KillRecord record = record_for(target, signal, Outcome::signalled);
    record.intermediate = intermediate;
    set_outcome(record, -calls_.pidfd_send_signal(pin.get(), signal));
    note(record);
}

std::optional<Stopped> Signaller::stop_unseen(pid_t pid, uid_t uid, const std::string& user,
                                              const std::function<bool(const Identity&)>& may_stop, bool& escaped) {
    // Gone already: nothing to stop, but it may have forked before it went.
    const int opened = calls_.pidfd_open(pid);
    if (opened < 0) {
        escaped = escaped || opened == -ESRCH;
        return std::nullopt;
    }
    Pinned pinned{pid, UniqueFd(opened)};
    const auto identity = calls_.read_identity(options_.proc_root, pid);
    if (!identity) escaped = true;
    if (!identity || !identity->uids.all_equal() || identity->uids.real != uid || !may_stop(*identity))
        return std::nullopt;
    Decision target;
    target.pid = pid;
    target.uid = uid;
    target.user = user;
    target.start_time = identity->start_time;
    target.ppid = identity->ppid;
    target.pgid = identity->pgid;
    target.verdict = Verdict::kill;
    target.detail = "a new process of a user being swept, stopped before it was evaluated";
    KillRecord record = record_for(target, SIGSTOP, Outcome::signalled);
    record.intermediate = true;
    set_outcome(record, -calls_.pidfd_send_signal(pinned.pidfd.get(), SIGSTOP));
    note(record);
    if (record.outcome != Outcome::signalled) return std::nullopt;
    escaped = escaped || has_exited(pinned);
    return Stopped{std::move(target), std::move(pinned.pidfd)};
}

bool Signaller::has_exited(const Pinned& pinned) {
    pollfd fd{pinned.pidfd.get(), POLLIN, 0};
    return calls_.poll(&fd, 1, 0) > 0 && fd.revents != 0;
}

void Signaller::wait_and_release(std::vector<Pinned>& pinned, Clock::time_point until) {
    std::vector<pollfd> fds;
    fds.reserve(pinned.size());
    for (const Pinned& p : pinned) fds.push_back({p.pidfd.get(), POLLIN, 0});
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
    for (const Pinned& p : pinned)
        if (running.count(p.pidfd.get()) == 0) exited_.insert(p.pid);
    pinned.clear();
}

}  // namespace leftover

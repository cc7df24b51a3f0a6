// SPDX-License-Identifier: GPL-2.0-or-later
#include "kill/signaller.hpp"

#include "util/escape.hpp"
#include "util/poll_timeout.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace leftover {
namespace {

bool out_of_descriptors(int error) { return error == EMFILE || error == ENFILE; }

void set_outcome(KillRecord& record, int error) {
    record.error = error;
    record.short_of_descriptors = out_of_descriptors(error);
    if (error == 0)
        record.outcome = Outcome::signalled;
    else if (error == ESRCH)
        record.outcome = Outcome::gone;
    else if (error == EPERM)
        record.outcome = Outcome::permission_denied;
    else
        record.outcome = Outcome::failed;
}

// Why a SIGSTOP must not go to a process as read through its pin right before it; nullptr
// when it may. Stopped already (T) or held by a tracer (t): that stop is someone else's
// (Ctrl-Z, kill -STOP, a debugger), which the SIGCONT after a stop of the sweep's would
// undo should the sweep keep it; a process that does not run needs no stop to keep it
// from forking, and a kill reaches it as it is (SIGTERM with the SIGCONT that lets its
// handler run, as a shell's kill of a stopped job). /proc says only that a process is stopped, not by whom: a
// stop that lands between this read and the SIGSTOP, or while the sweep holds the process
// stopped, is not seen, and the sweep's SIGCONT undoes it.
const char* not_ours_to_stop(const Identity& now) {
    if (now.state == 'T' || now.state == 't')
        return "stopped already, by its user or a tracer: not the sweep's to stop, nor to continue but with its "
               "SIGTERM";
    return nullptr;
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

// `slot`: the target's pin (its SIGSTOP's) or, invalid, where the pin made here goes if
// the signal went.
KillRecord Signaller::signal_one(const Decision& target, int signal, PidRef& slot, const MayStop& may_stop,
                                 bool& stopped) {
    KillRecord record = record_for(target, signal, Outcome::signalled);
    PidRef made;
    if (!slot.valid()) {
        auto pinned = PidRef::pin(calls_, target.pid);
        // A stop is held through its pin until its SIGCONT: with no descriptor to spare
        // for it, the process is signalled running, as one whose parent forbids a stop.
        if (signal == SIGSTOP && (pinned ? !room_to_hold(pinned.value().fd()) : out_of_descriptors(pinned.error()))) {
            record.outcome = Outcome::not_stopped;
            record.detail = "no descriptor to spare to hold its stop: signalled running";
            record.short_of_descriptors = true;
            return record;
        }
        if (!pinned) {
            set_outcome(record, pinned.error());
            return record;
        }
        made = std::move(pinned).value();
    }
    PidRef& pin = slot.valid() ? slot : made;
    // The pin holds whatever process held the pid when it was made: only if it is still
    // the one that was decided on (same start time, same uids) may it be signalled.
    const char* not_stopping = nullptr;
    const PinSignal sent = pin.signal_if(options_.proc_root, signal, [&](const Identity& now) {
        if (!is_decided(now, target)) return false;
        if (signal == SIGSTOP) not_stopping = not_ours_to_stop(now);
        if (signal == SIGSTOP && not_stopping == nullptr && may_stop) not_stopping = may_stop(now);
        return not_stopping == nullptr;
    });
    if (sent.sent() && made.valid()) slot = std::move(made);  // nothing between the signal and here may throw
    stopped = sent.identity && (sent.identity->state == 'T' || sent.identity->state == 't');
    if (not_stopping != nullptr) {
        record.outcome = Outcome::not_stopped;
        record.detail = not_stopping;
    } else if (sent.check == PinSignal::Check::gone)
        record.outcome = Outcome::gone;
    else if (sent.check == PinSignal::Check::other)
        record.outcome = Outcome::pid_reused;
    else
        set_outcome(record, sent.error);
    return record;
}

bool Signaller::room_to_hold(int fd) const {
    return fd >= 0 && static_cast<std::uint64_t>(fd) + kSpareDescriptors < open_file_limit_;
}

std::vector<Signaller::Sent> Signaller::signal_all(const std::vector<Decision>& targets, int signal,
                                                   const std::vector<PidRef*>& pins, bool intermediate,
                                                   const Hooks& hooks) {
    open_file_limit_ = calls_.open_file_limit();
    std::vector<Sent> sent(targets.size());
    report_.actions.reserve(report_.actions.size() + targets.size());
    bool late = false;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const Decision& target = targets[i];
        // A long list must not carry the signals past the deadline.
        late = late || Clock::now() >= options_.deadline;
        if (late) {
            KillRecord record = record_for(target, signal, Outcome::deadline);
            record.intermediate = intermediate;
            note(record);
            continue;
        }
        if (hooks.go_on && !hooks.go_on()) break;
        KillRecord record = signal_one(target, signal, *pins[i], hooks.may_stop, sent[i].stopped);
        record.intermediate = intermediate;
        sent[i].outcome = record.outcome;
        note(record);
        if (record.outcome == Outcome::signalled && hooks.on_sent) hooks.on_sent(i, sent[i].stopped);
    }
    if (late) report_.deadline_reached = true;
    return sent;
}

void Signaller::continue_stopped(PidRef& pin, const Decision& target, bool intermediate) {
    KillRecord record = record_for(target, SIGCONT, Outcome::signalled);
    record.intermediate = intermediate;
    set_outcome(record, pin.continue_stopped());
    note(record);
}

bool Signaller::stop_unseen(pid_t pid, uid_t uid, const std::string& user,
                            const std::function<bool(const Identity&)>& may_stop, bool& escaped, Stopped& slot) {
    // Gone already: nothing to stop, but it may have forked before it went.
    auto pinned = PidRef::pin(calls_, pid);
    if (!pinned) {
        escaped = escaped || pinned.error() == ESRCH;
        return false;
    }
    PidRef pin = std::move(pinned).value();
    if (!room_to_hold(pin.fd())) return false;  // left running: no descriptor to spare to hold it
    // No decision yet: its start time is what the pin shows; its uids must all be `uid`.
    const PinSignal sent = pin.signal_if(options_.proc_root, SIGSTOP, [&](const Identity& now) {
        return now.uids.all_equal() && now.uids.real == uid && not_ours_to_stop(now) == nullptr && may_stop(now);
    });
    if (sent.check == PinSignal::Check::gone) escaped = true;
    if (sent.check != PinSignal::Check::same) return false;
    if (sent.sent()) slot.pin = std::move(pin);  // nothing between the stop and here may throw
    Decision& target = slot.decision;
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
    if (record.outcome != Outcome::signalled) return false;
    escaped = escaped || slot.pin.has_exited();
    return true;
}

void Signaller::watch(Watched& watched, PidRef pin, std::uint64_t start_time) {
    if (room_to_hold(pin.fd()))
        watched.pins.push_back(std::move(pin));
    else
        watched.by_proc.emplace_back(pin.pid(), start_time);
}

void Signaller::wait_and_release(Watched& watched, Clock::time_point until) {
    std::vector<pollfd> fds;
    fds.reserve(watched.pins.size());
    for (const PidRef& p : watched.pins) fds.push_back({p.fd(), POLLIN, 0});
    until = std::min(until, options_.deadline);
    const auto gone = [this](const std::pair<pid_t, std::uint64_t>& process) {
        const auto now = calls_.read_identity(options_.proc_root, process.first);
        if (now && now->start_time == process.second && now->state != 'Z') return false;
        exited_.insert(process.first);
        return true;
    };
    for (;;) {
        const auto looked = Clock::now();
        std::erase_if(watched.by_proc, gone);
        if (fds.empty() && watched.by_proc.empty()) break;
        const int left_ms = poll_timeout_ms(until);
        if (left_ms == 0) break;
        // Those watched in /proc are looked at again every 20 ms, or, when a look at them
        // all takes longer (tens of thousands), after twice that look: the wait leaves the
        // CPU to the exits it waits for.
        const auto look_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - looked).count();
        const int every_ms = static_cast<int>(std::max<long long>(20, 2 * look_ms));
        const int rc =
            calls_.poll(fds.data(), fds.size(), std::min(left_ms, watched.by_proc.empty() ? 1000 : every_ms));
        if (rc < 0 && rc != -EINTR) break;
        std::erase_if(fds, [](const pollfd& f) { return f.revents != 0; });
    }
    // What still polls unreadable has not exited; the rest has.
    std::set<int> running;
    for (const pollfd& f : fds) running.insert(f.fd);
    for (const PidRef& p : watched.pins)
        if (running.count(p.fd()) == 0) exited_.insert(p.pid());
    watched = Watched{};
}

}  // namespace leftover

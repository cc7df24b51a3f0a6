// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor's hands: pin a target (PidRef), check through the pin that it is
// still the process that was decided on, signal it, wait for pinned processes to exit.
// Every action becomes a KillRecord in the report and goes to the observer as it happens.
#pragma once

#include "kill/executor.hpp"
#include "kill/pid_ref.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace leftover {

// The one way a decision becomes the record of what was done to its process.
KillRecord record_for(const Decision& target, int signal, Outcome outcome);

// A process stopped through `pin`, as decided then. Its SIGCONT goes through the same
// pin, with no identity check (PidRef::continue_stopped says why).
struct Stopped {
    Decision decision;
    PidRef pin;
};

// The processes a round signalled, watched until they exit: each through its pin while
// the descriptor limit leaves room to hold it, else (its pin closed at once) by its start
// time in /proc. A round never holds the last descriptors: a hostile count's pins would
// leave none for the fresh look that decides the next signal.
struct Watched {
    std::vector<PidRef> pins;
    std::vector<std::pair<pid_t, std::uint64_t>> by_proc;  // pid, start time
    std::size_t size() const { return pins.size() + by_proc.size(); }
};

// Descriptors a sweep keeps free beside the pins it holds: the /proc scan's directories
// and files, a step socket, the slurmctld helper's pipes, the log.
inline constexpr std::uint64_t kSpareDescriptors = 64;

class Signaller {
public:
    using Clock = std::chrono::steady_clock;

    Signaller(const KillOptions& options, SystemCalls& calls, KillReport& report)
        : options_(options), calls_(calls), report_(report) {}

    void note(const KillRecord& record);

    // Checks each target's identity through its pin and signals it, in order, until the
    // deadline: each target left then is recorded as not sent (Outcome::deadline). The pin
    // of targets[i] is *pins[i], storage the caller owns: a valid pin there is used, an
    // invalid one is made here and put there only if the signal went. So a SIGSTOP's pin
    // sits where the caller keeps stopped processes from the moment the stop goes, and an
    // exception later in the round (no memory) cannot lose it. Returns each outcome.
    // A SIGSTOP goes only to a process not stopped already, whose pin leaves kSpareDescriptors
    // free (a stop is held through its pin), and that `may_stop`, if given, lets stop as read
    // through the pin (nullptr; else why not: Outcome::not_stopped).
    using MayStop = std::function<const char*(const Identity&)>;
    struct Sent {
        Outcome outcome = Outcome::deadline;
        bool stopped = false;  // stopped (T, t) as read through the pin right before the signal
    };
    struct Hooks {
        MayStop may_stop;
        // Asked right before each target: false ends the list there, the rest neither
        // signalled nor recorded (their outcome stays Outcome::deadline here).
        std::function<bool()> go_on;
        // Right after targets[i]'s signal went and was recorded, with whether it was
        // stopped (Sent::stopped): where its pin goes (a round's pins are let go as it goes,
        // not at its end, so that a long list needs no more descriptors than a short one).
        std::function<void(std::size_t, bool)> on_sent;
    };
    std::vector<Sent> signal_all(const std::vector<Decision>& targets, int signal, const std::vector<PidRef*>& pins,
                                 bool intermediate = false, const Hooks& hooks = {});

    // Watches a signalled process until it exits: through `pin` if the limit leaves room
    // for it beside kSpareDescriptors, else by `start_time` in /proc (the pin closed now).
    void watch(Watched& watched, PidRef pin, std::uint64_t start_time);

    // SIGCONT through the pin that stopped `target` (PidRef::continue_stopped: no new
    // identity check), recorded as for `target`.
    void continue_stopped(PidRef& pin, const Decision& target, bool intermediate);

    // Stops a process that no plan has decided on yet (a child a target forked, a pid
    // hopper's new pid) if, through its pin, all its uids are still `uid`, and makes it a
    // target in `slot` (start time from the pin); true then. The pin goes into slot.pin as
    // soon as the stop went, before anything that may throw. Not stopped unless `may_stop`
    // accepts it as read through the pin (its parent, its group). `escaped`: it exited at once.
    bool stop_unseen(pid_t pid, uid_t uid, const std::string& user,
                     const std::function<bool(const Identity&)>& may_stop, bool& escaped, Stopped& slot);

    // Waits until every watched process has exited (a pidfd polls readable then; one
    // watched in /proc is gone, another process, or a zombie), `until` or the deadline,
    // whichever comes first; then closes the pins.
    void wait_and_release(Watched& watched, Clock::time_point until);

    // The pids seen to exit (or found gone) since the last forget_exits(): those of the
    // last plan's targets that the report need not call survivors.
    const std::set<pid_t>& exited() const { return exited_; }
    void forget_exits() { exited_.clear(); }

private:
    KillRecord signal_one(const Decision& target, int signal, PidRef& slot, const MayStop& may_stop, bool& stopped);
    // A pin at `fd` leaves kSpareDescriptors free below the limit read last (signal_all).
    bool room_to_hold(int fd) const;

    const KillOptions& options_;
    SystemCalls& calls_;
    KillReport& report_;
    std::set<pid_t> exited_;
    std::uint64_t open_file_limit_ = UINT64_MAX;
};

}  // namespace leftover

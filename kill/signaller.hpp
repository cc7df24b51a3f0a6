// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor's hands: pin a target (PidRef), check through the pin that it is
// still the process that was decided on, signal it, wait for pinned processes to exit.
// Every action becomes a KillRecord in the report and goes to the observer as it happens.
#pragma once

#include "kill/executor.hpp"
#include "kill/pid_ref.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <set>
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

class Signaller {
public:
    using Clock = std::chrono::steady_clock;

    Signaller(const KillOptions& options, SystemCalls& calls, KillReport& report)
        : options_(options), calls_(calls), report_(report) {}

    void note(const KillRecord& record);

    // Pins every target, checks its identity through the pin and signals it, in order,
    // until `stop_at` (the deadline unless given): each target left then is recorded as
    // not sent (Outcome::deadline). Returns the pins of the processes that were signalled.
    // `held`, if given, runs beside `targets`: a valid pin there (its SIGSTOP's) is used
    // for the check and the signal instead of a new one, and moves into the result if the
    // signal went; one that did not stays in `held`. `go_on`, if given, is asked right
    // before each target: false ends the list there, the rest neither signalled nor recorded.
    std::vector<PidRef> signal_all(const std::vector<Decision>& targets, int signal, bool intermediate = false,
                                   std::optional<Clock::time_point> stop_at = std::nullopt,
                                   std::vector<PidRef>* held = nullptr, const std::function<bool()>& go_on = {});

    // SIGCONT through the pin that stopped `target` (PidRef::continue_stopped: no new
    // identity check), recorded as for `target`.
    void continue_stopped(PidRef& pin, const Decision& target, bool intermediate);

    // Stops a process that no plan has decided on yet (a child a target forked, a pid
    // hopper's new pid) if, through its pin, all its uids are still `uid`; returns it as a
    // target then (start time from the pin) with the pin, or nullopt. Not stopped unless
    // `may_stop` accepts it as read through the pin (its parent, its group). `escaped`: it
    // exited at once.
    std::optional<Stopped> stop_unseen(pid_t pid, uid_t uid, const std::string& user,
                                       const std::function<bool(const Identity&)>& may_stop, bool& escaped);

    // Waits until every pinned process has exited (a pidfd polls readable then; a zombie
    // counts as exited), `until` or the deadline, whichever comes first; then closes the pins.
    void wait_and_release(std::vector<PidRef>& pinned, Clock::time_point until);

    // The pids seen to exit (or found gone) since the last forget_exits(): those of the
    // last plan's targets that the report need not call survivors.
    const std::set<pid_t>& exited() const { return exited_; }
    void forget_exits() { exited_.clear(); }

private:
    KillRecord signal_one(const Decision& target, int signal, PidRef& pin);

    const KillOptions& options_;
    SystemCalls& calls_;
    KillReport& report_;
    std::set<pid_t> exited_;
};

}  // namespace leftover

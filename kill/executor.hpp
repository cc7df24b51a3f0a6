// SPDX-License-Identifier: GPL-2.0-or-later
// The kill executor: pins each target with a pidfd, checks it is still the process that
// was decided on, signals it, and repeats on fresh evaluations until nothing is left.
// Before each round of signals it stops the targets (SIGSTOP) and scans again until no
// target is left running, so a process that forks or changes its pid cannot outrun it.
#pragma once

#include "errors/result.hpp"
#include "kill/system_calls.hpp"
#include "policy/decision.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace leftover {

enum class Outcome {
    signalled,
    dry_run,            // would have been signalled
    gone,               // exited before it could be signalled (ESRCH counts as success)
    pid_reused,         // the pid now names another process: not signalled
    permission_denied,  // EPERM
    failed,             // any other error
    deadline,           // not sent: the evaluation's deadline passed first
    not_stopped,        // a SIGSTOP not sent: the process is not the sweep's to stop (detail says why)
};

struct KillRecord {
    pid_t pid = 0;
    uid_t uid = 0;
    std::string user;
    std::string comm;  // escaped for logs
    int signal = 0;
    Reason reason = Reason::stray;
    std::string detail;
    Outcome outcome = Outcome::signalled;
    int error = 0;  // errno for permission_denied / failed
    // Not signalled (failed: EMFILE, ENFILE) or not stopped (no descriptor to spare to hold
    // the stop) for want of descriptors: a front end says that of many processes once.
    bool short_of_descriptors = false;
    // A step on the way to a kill, not a kill or a release: the SIGSTOP before it, the
    // SIGCONT right after SIGTERM. Front ends log these at debug level.
    bool intermediate = false;
};

// Told about each action as it happens, so a front end logs it then and not after
// the whole run (which may wait out grace).
struct KillObserver {
    std::function<void(const KillRecord&)> on_action;
    std::function<void(std::size_t processes, std::chrono::milliseconds grace)> on_grace_wait;
};

struct KillOptions {
    std::string proc_root = "/proc";
    std::chrono::milliseconds grace{5000};  // SIGTERM -> SIGKILL; 0: SIGKILL at once
    int max_rounds = 10;                    // SIGKILL rounds on fresh evaluations
    std::chrono::milliseconds settle{500};  // how long a SIGKILL round waits for exits
    // Before each round: stop the targets, scan again, stop the new ones, at most this
    // many times. 0: no stopping (tests show with it what stopping is for).
    int stop_rounds = 16;
    // The caller: a process it started may be stopped (it never waits for stopped children).
    pid_t self = 0;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    bool dry_run = false;
    KillObserver observer;
    // After a stop round in which every target stopped and the swept users own no
    // process the plan lacks: whether the job state still is the plan's. Then the plan
    // holds and no new evaluation is made (on a node of thousands, the costly part of a
    // sweep). Unset: a new evaluation after every stop round.
    std::function<Result<bool>()> job_state_unchanged;
    // Right before each signal round, after the last look at the job state: a job or step
    // being set up on this node that the look could not show yet (its slurmstepd has no
    // step socket), said as a clause; nullopt when there is none. While there is one the
    // round waits and then decides again, its user possibly live now; still starting
    // after `starting_wait`, or with less than `replan_time` left before the deadline,
    // the round is skipped: nothing is signalled (report.job_starting says why). Asked
    // again right before each signal of the round (it must be cheap while nothing new
    // happened): one found then stops the signals there, and the rest wait for it as
    // before a round (report.paused says so). Unset: not asked.
    std::function<Result<std::optional<std::string>>()> job_starting;
    // A stepd makes its socket milliseconds after its exec: a round waits that long for
    // a starting job at most. What it waits past that is time the sweep's other rounds,
    // and its controller queries, lack.
    std::chrono::milliseconds starting_wait{1000};
    // What the fresh plan after such a wait, or after the grace, may need (a controller
    // query, bounded by the deadline): neither wait eats into it, so it cannot cut that
    // query short.
    std::chrono::milliseconds replan_time{0};
    // Right before the first stop or signal, once a look found no job on its way onto the
    // node: the sweep's turn on its node (sweep/turn.hpp). true: it came after a wait for
    // another sweep, and the run plans afresh (it judges what the other left). An error:
    // nothing is signalled (the turn did not come by the deadline). Unset: no turn.
    std::function<Result<bool>()> take_turn;
};

struct KillReport {
    Plan first_plan;                  // the decision that started the kills
    std::vector<KillRecord> actions;  // every signal sent (or not) and why
    std::vector<Decision> survivors;  // strays still there at the end
    std::optional<Error> error;       // an evaluation failed: killing stopped there
    bool deadline_reached = false;
    // A round was skipped while a job was being set up here: the clause job_starting said.
    std::optional<std::string> job_starting;
    // A job found on its way onto the node as a round's signals went out, each time: the
    // clause job_starting said. The rest of that round waited for it.
    std::vector<std::string> paused;
    int rounds = 0;
    std::size_t evaluations = 0;
    int stop_rounds = 0;  // SIGSTOP rounds, all phases together
    // Stopping did not settle before a round (stop_rounds used up): how many targets of
    // the last plan were still running when the signals went out anyway. 0: it settled.
    std::size_t left_running = 0;
};

// Produces a fresh plan from fresh job state and a fresh scan every time it is called.
using Evaluate = std::function<Result<Plan>()>;

// Always returns, by the deadline at the latest (plus one bounded evaluation), and never
// leaves a process stopped that it stopped.
KillReport execute_kills(const Evaluate& evaluate, const KillOptions& options,
                         SystemCalls& calls = real_system_calls());

}  // namespace leftover

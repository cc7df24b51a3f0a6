// SPDX-License-Identifier: GPL-2.0-or-later
// Who has work on the node, for one sweep: the step sockets (and, in the job epilog,
// slurmctld for the steps nobody could ask), or slurmctld alone with job_source
// controller; the allocation check without PrologFlags=contain; the jobs being set up.
#pragma once

#include "config/config.hpp"
#include "controller/controller.hpp"
#include "errors/error.hpp"
#include "errors/result.hpp"
#include "policy/evaluation.hpp"
#include "steps/live_work.hpp"
#include "steps/local_steps.hpp"
#include "steps/setup_records.hpp"
#include "steps/starting_work.hpp"
#include "sweep/log.hpp"
#include "sweep/sweep_request.hpp"
#include "util/file_lock.hpp"
#include "util/root_file.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::sweep {

// Whether a reader takes slurmctld's answer from another sweep of the node (a sweep's
// does), or always asks itself (a check's: `leftover check --health` wants a fresh look).
enum class AnswerSharing { shared, own };

// The job-state reader for one sweep: fresh answers every round, stale sockets logged once.
class JobStateSource {
public:
    JobStateSource(const Config& config, const SweepRequest& request, controller::Controller* controller,
                   std::chrono::steady_clock::time_point deadline, Logger& log,
                   AnswerSharing sharing = AnswerSharing::shared)
        : config_(config),
          request_(request),
          controller_(controller),
          deadline_(deadline),
          log_(log),
          sharing_(sharing) {}

    Result<LiveWork> read();

    // Without PrologFlags=contain a node of a multi-node job between steps looks empty
    // locally: before a user is swept, the controller must confirm they hold no allocation.
    // (slurmd's start says once that PrologFlags=contain makes this unnecessary.)
    AllocationCheck allocation_check();

    // With PrologFlags=contain the node shows every allocation but one being set up: slurmd
    // runs a job's Prolog before its extern step exists, and may not have forked for it yet
    // when slurmctld has it running here. What a cleanup would remove is worth that one
    // question: the users it would clean are asked about in one query, from the job epilog
    // and the command, never at a step end. Unset where allocation_check asks already.
    AllocationCheck cleanup_allocation_check();

    // At a step end Slurm may kill any descendant of the ending step while its exit hook
    // runs (proctrack/linuxproc, seen on 24.11 and 26.05): a helper started then would
    // die mid-answer. slurmctld is asked only from the job epilog, outside the step.
    bool at_step_end() const { return request_.trigger.ending_step.has_value(); }

    // A job or step being set up here that the last look at the step sockets could not
    // show (see steps/starting_work.hpp), asked before each round, right before each
    // signal and before any removal: cheap while nothing was forked since the last look.
    // slurmctld knows a job before the node does: with job_source controller there is
    // nothing to ask.
    Result<std::optional<std::string>> job_starting();

    // A slurmctld question with less than this left before the sweep's deadline is not
    // asked (a lookup error of kind deadline): it could only be cut there, and the sweep
    // would end past its deadline, waiting for the helper it started.
    static constexpr std::chrono::milliseconds shortest_question{250};

    // Where slurmctld's answer is shared with the other sweeps of this node
    // (controller/shared_answer.hpp): with job_source steps, from the job epilog and
    // `leftover sweep`, as root. With job_source controller slurmctld is the only word,
    // asked afresh; a check asks afresh too.
    bool shares_answers() const;

    // slurmctld's answers this sweep used: those it asked for, those another sweep of
    // the node had asked for moments before.
    int answers_asked() const { return answers_asked_; }
    int answers_shared() const { return answers_shared_; }

private:
    // slurmctld's jobs on this node: another sweep's answer where it may be shared, else
    // asked, unless too little time is left (shortest_question), and then shared.
    Result<LiveWork> ask_jobs_on_nodes(std::chrono::steady_clock::time_point until);

    // The answer another sweep of this node shared, when this sweep may use it.
    std::optional<LiveWork> shared_answer();
    void share_answer(const LiveWork& work, std::chrono::milliseconds asked);
    // The node's question lock (controller::question_lock_path), waited for while another
    // sweep's question is in flight, by `until` less a question's room; none when it could
    // not be had (then this sweep asks beside the other, and one warning says why when
    // the lock file is at fault). Taken::after_wait: another's question was in flight.
    FileLock::Wait wait_for_question_in_flight(std::chrono::steady_clock::time_point until);
    RootFile shared_answer_file() const;

    // The node's own step sockets; in the job epilog, slurmctld for those nobody could ask.
    Result<LiveWork> read_step_sockets(std::chrono::steady_clock::time_point until);

    // Each live and each gone step once per sweep.
    void log_answers(const steps::LocalJobState& state);

    // A step end cannot ask slurmctld (see at_step_end): the user of each unanswered
    // socket's job, where the node tells it, is live, and the others are judged; a socket
    // whose job's user cannot be told keeps everyone (a lookup error). The ending step's
    // own socket needs no user: it never counts.
    Status keep_job_users(const std::vector<steps::UnansweredStep>& unanswered, LiveWork& live);

    static Error unanswered_error(const std::vector<steps::UnansweredStep>& unanswered);

    // One slurmctld query for every step that could not be asked: a job slurmctld says
    // runs here makes its user live, as an answering stepd would; one it does not list
    // has ended, like a step whose stepd says it is ending. No answer: a lookup error.
    Status resolve_through_controller(const std::vector<steps::UnansweredStep>& unanswered, LiveWork& live,
                                      std::chrono::steady_clock::time_point until);

    // A job in its Prolog here makes its user live, as a step would (said once per sweep).
    Status add_jobs_in_prolog(LiveWork& live);

    // A job whose job prolog recorded it here (steps/setup_records.hpp) and that has no
    // step here yet makes its user live: slurmd is setting it up, between its Prolog and
    // its first slurmstepd, where nothing in /proc shows it (said once per sweep).
    Status add_jobs_being_set_up(const steps::LocalJobState& state, LiveWork& live);

    // Asks slurmctld of the records that nothing else here backs (no step, no Prolog in
    // /proc) whether it still places their jobs on this host's nodes, and keeps each verdict
    // in setups_checked_: "not placed" only from an answer asked after the record was
    // written. A record outlives its job where no epilog of the job ran after it was written
    // (slurmd restarted in the job's Prolog, and the job ran elsewhere). Asked only where
    // slurmctld may be (the job epilog, the command); unasked, no verdict.
    void check_with_slurmctld(const std::vector<const steps::SetupRecord*>& unbacked);

    // The users of `uids` that slurmctld says hold an allocation on this host's nodes.
    AllocationCheck ask_controller(std::string why);

    std::optional<std::uint32_t> ending_job() const;

    const Config& config_;
    const SweepRequest& request_;
    controller::Controller* controller_;
    std::chrono::steady_clock::time_point deadline_;
    Logger& log_;
    AnswerSharing sharing_;
    std::set<std::string> logged_;                 // sockets already described: once per sweep
    std::set<std::string> unanswered_logged_;      // unanswered sockets already named: once per sweep
    std::map<std::string, bool> resolved_logged_;  // what slurmctld said of each unanswered socket's job
    std::set<std::string> kept_logged_;            // unanswered sockets whose job's user was kept: once per sweep
    bool nodes_logged_ = false;
    std::set<pid_t> prologs_logged_;       // Prolog children already named: once per sweep
    std::set<std::string> setups_logged_;  // setup records already named ("<node>.<job>"): once per sweep
    steps::SeenSteps seen_steps_;          // by every look of this sweep, for job_starting
    steps::StartingLook starting_look_;
    std::set<pid_t> caller_;              // the caller and its ancestors, read at the first job_starting
    std::set<std::uint64_t> local_jobs_;  // every job the step sockets and Prologs showed this sweep
    int answers_asked_ = 0;
    int answers_shared_ = 0;
    bool share_failure_logged_ = false;
    bool question_lock_logged_ = false;                    // the question lock's trouble said: once per sweep
    std::optional<std::chrono::milliseconds> own_answer_;  // when this sweep's last shared question began
    // When the question of the last answer this sweep used began (boot clock): a record
    // written after it may be of a job the answer could not list yet.
    std::optional<std::chrono::milliseconds> last_answer_asked_;
    // Record-only jobs slurmctld was asked about this sweep, not asked again: their records
    // stand (placed here, or slurmctld could not be asked), or it does not place them here.
    enum class SetupCheck { stands, not_placed };
    std::map<std::uint32_t, SetupCheck> setups_checked_;
};

}  // namespace leftover::sweep

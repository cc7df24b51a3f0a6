// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/job_state_source.hpp"

#include "controller/shared_answer.hpp"
#include "procfs/proc_table.hpp"
#include "util/boot.hpp"
#include "util/file_lock.hpp"
#include "util/privileges.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace leftover::sweep {
namespace {

using Clock = std::chrono::steady_clock;

// How long a read lent away from root (util/privileges.hpp) waits for it: the lend lasts
// well under a millisecond.
constexpr auto kRootWait = std::chrono::milliseconds(200);

Clock::duration seconds(double value) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

}  // namespace

Result<LiveWork> JobStateSource::read() {
    const auto until = std::min(Clock::now() + seconds(config_.slurm_timeout), deadline_);
    if (config_.job_source == JobSource::controller) {
        if (controller_ == nullptr)
            return Error::lookup("job_source controller: no controller connection", ErrorSource::controller);
        return ask_jobs_on_nodes(until);
    }
    return read_step_sockets(until);
}

AllocationCheck JobStateSource::allocation_check() {
    if (config_.job_source == JobSource::controller || request_.node.prolog_contain) return {};
    if (at_step_end()) {
        return [this](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
            log_.info(
                fmt::format("no PrologFlags=contain: {} user(s) without a step here kept at this step end; "
                            "the job epilog asks slurmctld",
                            uids.size()));
            return uids;
        };
    }
    return ask_controller("no PrologFlags=contain: asking slurmctld whether these users hold an allocation here");
}

AllocationCheck JobStateSource::cleanup_allocation_check() {
    if (config_.job_source == JobSource::controller || !request_.node.prolog_contain || at_step_end()) return {};
    return ask_controller(
        "cleanup: asking slurmctld whether its users hold an allocation here (a job being set up shows no step yet)");
}

bool JobStateSource::shares_answers() const {
    return sharing_ == AnswerSharing::shared && config_.job_source != JobSource::controller && !at_step_end() &&
           !request_.node.spool_dir.empty() && ::geteuid() == 0;
}

Result<LiveWork> JobStateSource::ask_jobs_on_nodes(Clock::time_point until) {
    const bool sharing = shares_answers();
    if (sharing)
        if (auto shared = shared_answer()) return std::move(*shared);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    if (left < shortest_question)
        return Error::lookup(fmt::format("slurmctld not asked: {} ms left before this sweep's deadline, less than a "
                                         "question takes ({} ms)",
                                         std::max<long long>(0, left.count()), shortest_question.count()),
                             ErrorSource::deadline);
    if (!sharing) {
        const auto asked = boot_clock_now();
        auto work = controller_->jobs_on_nodes(request_.node.node_names(), ending_job(), until);
        if (work.ok()) {
            ++answers_asked_;
            last_answer_asked_ = asked;
        }
        return work;
    }
    // One question at a time per node: one that waited for another's takes its answer
    // when it may. The lock goes at the return, once this one's answer is shared.
    const FileLock::Wait question = wait_for_question_in_flight(until);
    if (question.how == FileLock::Taken::after_wait)
        if (auto shared = shared_answer()) return std::move(*shared);
    // Asked with no job left out, which each sweep that shares the answer does for itself.
    const auto asked = boot_clock_now();
    auto work = controller_->jobs_on_nodes(request_.node.node_names(), std::nullopt, until);
    LEFTOVER_TRY(work);
    ++answers_asked_;
    last_answer_asked_ = asked;
    share_answer(work.value(), asked);
    controller::leave_out(work.value(), ending_job());
    return work;
}

FileLock::Wait JobStateSource::wait_for_question_in_flight(Clock::time_point until) {
    // Room is left for this sweep's own question once the other's is done.
    auto wait = FileLock::wait_for(controller::question_lock_path(request_.node.spool_dir, request_.node.node_name),
                                   request_.node.slurmd_uid, std::min(until, deadline_) - shortest_question);
    if (!wait.ok()) {
        if (!question_lock_logged_)
            log_.warn(fmt::format("question lock: {}; slurmctld is asked beside any other sweep's question",
                                  wait.error().message));
        question_lock_logged_ = true;
        return {};
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(wait->waited);
    if (wait->how == FileLock::Taken::after_wait)
        log_.debug(fmt::format("waited {} ms for another sweep's question to slurmctld", waited.count()));
    if (wait->how == FileLock::Taken::deadline)
        log_.debug(fmt::format("another sweep's question to slurmctld still in flight after {} ms; asking beside it",
                               waited.count()));
    return std::move(wait).value();
}

RootFile JobStateSource::shared_answer_file() const {
    return {"slurmctld's shared answer",
            controller::shared_answer_path(request_.node.spool_dir, request_.node.node_name), request_.node.slurmd_uid};
}

std::optional<LiveWork> JobStateSource::shared_answer() {
    auto read = controller::read_shared_answer(shared_answer_file(), read_boot_id(request_.proc_root));
    if (!read.ok()) {
        if (!share_failure_logged_) log_.warn(fmt::format("{}; slurmctld is asked", read.error().message));
        share_failure_logged_ = true;
        return std::nullopt;
    }
    if (!read->has_value()) return std::nullopt;
    const controller::SharedAnswer& answer = **read;
    // Its own earlier answer a sweep does not take again: it asks again after grace for a
    // job that landed meanwhile.
    if (own_answer_ && answer.asked == *own_answer_) return std::nullopt;
    const auto now = boot_clock_now();
    const auto began = now - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - request_.started);
    if (const auto why = controller::why_not_shared(answer, {began, now, request_.node.node_names(), local_jobs_})) {
        log_.debug(fmt::format("slurmctld's answer of another sweep of this node not used: {}", *why));
        return std::nullopt;
    }
    ++answers_shared_;
    last_answer_asked_ = answer.asked;
    log_.info(
        fmt::format("slurmctld's answer that another sweep of this node asked for {} ms ago is used ({} job(s) "
                    "on this host's nodes; shared for {} ms after it came)",
                    (now - answer.asked).count(), answer.job_users.size(), controller::kSharedAnswerLife.count()));
    return controller::live_work_of(answer, ending_job());
}

void JobStateSource::share_answer(const LiveWork& work, std::chrono::milliseconds asked) {
    own_answer_ = asked;
    const controller::SharedAnswer answer{asked, request_.node.node_names(), local_jobs_, work.job_users,
                                          boot_clock_now()};
    const Status written =
        controller::write_shared_answer(shared_answer_file(), read_boot_id(request_.proc_root), answer);
    if (!written.ok() && !share_failure_logged_) {
        log_.warn(fmt::format("{}; the other sweeps of this node ask slurmctld themselves", written.error().message));
        share_failure_logged_ = true;
    }
}

AllocationCheck JobStateSource::ask_controller(std::string why) {
    return [this, why = std::move(why)](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
        log_.debug(why);
        if (controller_ == nullptr)
            return Error::lookup("allocation check: no controller connection", ErrorSource::controller);
        const auto until = std::min(Clock::now() + seconds(config_.slurm_timeout), deadline_);
        auto work = ask_jobs_on_nodes(until);
        LEFTOVER_TRY(work);
        std::set<uid_t> holders;
        for (const uid_t uid : uids)
            if (work->uids.count(uid) != 0) holders.insert(uid);
        return holders;
    };
}

Result<std::optional<std::string>> JobStateSource::job_starting() {
    if (config_.job_source == JobSource::controller) return std::optional<std::string>();
    // The caller's ancestry does not change during a sweep: read once, not every poll.
    if (caller_.empty()) {
        caller_.insert(request_.self);
        for (const pid_t pid : read_ancestry(request_.proc_root, request_.self)) caller_.insert(pid);
    }
    // The step sockets there are now, asking none: a stepd titled with one that no look
    // saw has just made it, and is this node's.
    const steps::StepLister list_steps = [this]() -> Result<std::set<std::string>> {
        auto listed = steps::list_local_steps(request_.node.step_sockets());
        LEFTOVER_TRY(listed);
        std::set<std::string> names;
        for (const steps::StepSocketName& name : listed.value())
            names.insert(steps::describe_step(name.job_id, name.step_id));
        return names;
    };
    return starting_look_(request_.proc_root, seen_steps_, list_steps, caller_);
}

Status JobStateSource::add_jobs_in_prolog(LiveWork& live) {
    auto prologs = steps::jobs_in_prolog(request_.proc_root);
    LEFTOVER_TRY(prologs);
    for (const steps::PrologJob& prolog : prologs.value()) {
        seen_steps_.prologs.insert(prolog.pid);
        live.uids.insert(prolog.uid);
        live.job_ids.insert(prolog.job_id);
        if (prologs_logged_.insert(prolog.pid).second)
            log_.info(fmt::format("job {} is in its Prolog here (slurmd's child pid {}): uid {} is live", prolog.job_id,
                                  prolog.pid, prolog.uid));
    }
    return Ok{};
}

Status JobStateSource::add_jobs_being_set_up(const steps::LocalJobState& state, LiveWork& live) {
    // The ending job's own record (its epilog removes it) and one of a job past its setup
    // say nothing: they are not even opened.
    const auto ending = ending_job();
    const steps::WantedJob wanted = [&](std::uint32_t job) {
        return !(ending && job == *ending) && !steps::has_step_here(job, state);
    };
    const std::string boot_id = read_boot_id(request_.proc_root);
    const auto read = [&] {
        return steps::read_setup_records(request_.node.step_sockets(), request_.node.slurmd_uid, boot_id, wanted);
    };
    // Slurm 24.11 lends an ending extern step's slurmstepd to the job's user for a moment
    // (util/privileges.hpp): a record of root's then cannot be opened.
    auto records = retried_as_root(
        read, [](const auto& result) { return result.ok(); }, std::min(Clock::now() + kRootWait, deadline_));
    LEFTOVER_TRY(records);
    const auto now = boot_clock_now();
    std::vector<std::optional<std::string>> why_not;  // each record's, in order
    std::vector<const steps::SetupRecord*> unbacked;
    for (const steps::SetupRecord& record : records.value()) {
        why_not.push_back(steps::why_not_believed(record, now));
        if (!why_not.back() && live.job_ids.count(record.job_id) == 0 && setups_checked_.count(record.job_id) == 0)
            unbacked.push_back(&record);
    }
    check_with_slurmctld(unbacked);
    for (std::size_t i = 0; i < records->size(); ++i) {
        const steps::SetupRecord& record = records.value()[i];
        const bool first = setups_logged_.insert(fmt::format("{}.{}", record.node_name, record.job_id)).second;
        const auto checked = setups_checked_.find(record.job_id);
        if (!why_not[i] && checked != setups_checked_.end() && checked->second == SetupCheck::not_placed)
            why_not[i] = fmt::format("slurmctld, asked after its job prolog began, does not place job {} on {}",
                                     record.job_id, fmt::join(request_.node.node_names(), ", "));
        if (why_not[i]) {
            // Of a job whose epilog never ran here after it was written (slurmd died or
            // restarted): a sweep that writes removes it, so that it is said once.
            const bool removes = sharing_ == AnswerSharing::shared && ::geteuid() == 0;
            const Status removed = removes ? steps::remove_setup_record(record, request_.node.slurmd_uid) : Ok{};
            if (first)
                log_.info(fmt::format("job {}'s setup record {} is not believed: {}{}", record.job_id, record.path,
                                      *why_not[i],
                                      !removes       ? ""
                                      : removed.ok() ? "; removed"
                                                     : "; not removed: " + removed.error().message));
            continue;
        }
        live.uids.insert(record.uid);
        live.job_ids.insert(record.job_id);
        if (first)
            log_.info(
                fmt::format("job {} is being set up here (its job prolog began {} ms ago; no step of it yet): "
                            "uid {} is live",
                            record.job_id, (now - record.began).count(), record.uid));
    }
    return Ok{};
}

void JobStateSource::check_with_slurmctld(const std::vector<const steps::SetupRecord*>& unbacked) {
    if (unbacked.empty() || at_step_end() || controller_ == nullptr) return;
    const auto until = std::min(Clock::now() + seconds(config_.slurm_timeout), deadline_);
    auto work = ask_jobs_on_nodes(until);
    if (!work.ok()) {
        // In doubt the records stand, for the rest of this sweep: their users stay live.
        for (const steps::SetupRecord* record : unbacked) {
            setups_checked_[record->job_id] = SetupCheck::stands;
            log_.info(
                fmt::format("job {}'s setup record {} is believed: slurmctld could not be asked whether the "
                            "job is still here: {}",
                            record->job_id, record->path, work.error().message));
        }
        return;
    }
    for (const steps::SetupRecord* record : unbacked) {
        if (work->job_ids.count(record->job_id) != 0 || work->job_users.count(record->job_id) != 0)
            setups_checked_[record->job_id] = SetupCheck::stands;
        else if (last_answer_asked_ && *last_answer_asked_ > record->began)
            setups_checked_[record->job_id] = SetupCheck::not_placed;
        // else: an answer asked before the record was written may not list its job yet.
    }
}

Result<LiveWork> JobStateSource::read_step_sockets(Clock::time_point until) {
    if (!nodes_logged_) {
        nodes_logged_ = true;
        log_.debug(fmt::format("step sockets of nodes {}", request_.node.describe_nodes()));
        if (!request_.node.other_nodes_note.empty()) log_.debug(request_.node.other_nodes_note);
    }
    // In the job epilog a socket that cannot be asked is resolved through slurmctld:
    // the local questions leave it half the time.
    const bool may_ask_controller = !at_step_end() && controller_ != nullptr;
    const auto local_until = may_ask_controller ? Clock::now() + (until - Clock::now()) / 2 : until;
    // The Prologs first: one that ends as its job's extern step starts is then in the one
    // look or the other.
    LiveWork prologs;
    LEFTOVER_TRY(add_jobs_in_prolog(prologs));
    auto state = steps::ask_local_steps(request_.node.step_sockets(), local_until);
    LEFTOVER_TRY(state);
    seen_steps_.add(state.value());
    for (const steps::UnansweredStep& step : state->unanswered)
        if (unanswered_logged_.insert(step.socket_path).second)
            log_.warn(fmt::format("slurmstepd socket {} of job {} (step {}) cannot be asked: {}", step.socket_path,
                                  step.job_id, steps::describe_step(step.job_id, step.step_id), step.error));
    log_answers(state.value());
    auto live = steps::live_work_from(state.value(), request_.trigger.ending_step,
                                      fmt::format("{} for node {}", request_.node.spool_dir, request_.node.node_name));
    LEFTOVER_TRY(live);
    if (!state->unanswered.empty()) {
        if (may_ask_controller)
            LEFTOVER_TRY(resolve_through_controller(state->unanswered, live.value(), until));
        else
            LEFTOVER_TRY(keep_job_users(state->unanswered, live.value()));
    }
    live->uids.insert(prologs.uids.begin(), prologs.uids.end());
    live->job_ids.insert(prologs.job_ids.begin(), prologs.job_ids.end());
    LEFTOVER_TRY(add_jobs_being_set_up(state.value(), live.value()));
    local_jobs_.insert(live->job_ids.begin(), live->job_ids.end());
    for (const steps::UnansweredStep& step : state->unanswered) local_jobs_.insert(step.job_id);
    return live;
}

Status JobStateSource::keep_job_users(const std::vector<steps::UnansweredStep>& unanswered, LiveWork& live) {
    std::vector<steps::UnansweredStep> untold;
    for (const steps::UnansweredStep& step : unanswered) {
        const auto& ending = request_.trigger.ending_step;
        const bool is_ending = ending && step.job_id == ending->job_id && step.step_id == ending->step_id;
        if (!is_ending && !step.job_uid) {
            untold.push_back(step);
            continue;
        }
        if (kept_logged_.insert(step.socket_path).second)
            log_.info(is_ending ? fmt::format("the ending step {}'s own socket {} cannot be asked: it does not count",
                                              steps::describe_step(step.job_id, step.step_id), step.socket_path)
                                : fmt::format("job {} of the unanswered socket {} is uid {}'s ({}): that user is "
                                              "kept, the others are judged",
                                              step.job_id, step.socket_path, *step.job_uid, step.job_uid_from));
        if (is_ending) continue;
        live.uids.insert(*step.job_uid);
        live.job_ids.insert(step.job_id);
    }
    if (untold.empty()) return Ok{};
    Error error = unanswered_error(untold);
    error.message += fmt::format(
        "; job {}'s user cannot be told here (no other step of it answered, no batch script of it in the spool "
        "dir): everyone is kept",
        untold.front().job_id);
    return error;
}

void JobStateSource::log_answers(const steps::LocalJobState& state) {
    for (const steps::LocalStep& step : state.live)
        if (logged_.insert(step.socket_path).second)
            log_.debug(fmt::format(
                "step {} ({}): uid {}, {} (state {} from a Slurm {} stepd), slurmstepd {}",
                steps::describe_step(step.job_id, step.step_id), step.socket_path, step.uid,
                steps::to_string(step.state), step.raw_state, steps::describe_protocol_version(step.stepd_version),
                step.stepd_pid ? fmt::format("pid {}", *step.stepd_pid) : std::string("not in this pid namespace")));
    for (const steps::DeadStep& dead : state.dead)
        if (logged_.insert(dead.socket_path).second)
            log_.info(fmt::format("step {} is gone: its slurmstepd does not answer on {} (stale socket)",
                                  steps::describe_step(dead.job_id, dead.step_id), dead.socket_path));
}

Error JobStateSource::unanswered_error(const std::vector<steps::UnansweredStep>& unanswered) {
    const steps::UnansweredStep& first = unanswered.front();
    return Error::lookup(
        fmt::format("slurmstepd socket {} of job {}: {}{}", first.socket_path, first.job_id, first.error,
                    unanswered.size() > 1 ? fmt::format(" (and {} more sockets unanswered)", unanswered.size() - 1)
                                          : std::string()),
        ErrorSource::step_socket);
}

Status JobStateSource::resolve_through_controller(const std::vector<steps::UnansweredStep>& unanswered, LiveWork& live,
                                                  Clock::time_point until) {
    auto work = ask_jobs_on_nodes(until);
    if (!work.ok())
        return Error::lookup(
            fmt::format("{}; asking slurmctld instead: {}", unanswered_error(unanswered).message, work.error().message),
            ErrorSource::controller);
    for (const steps::UnansweredStep& step : unanswered) {
        const auto user = work->job_users.find(step.job_id);
        const bool runs = user != work->job_users.end();
        // Said once per socket and sweep, and again only if slurmctld's answer changes.
        if (const auto [said, first] = resolved_logged_.try_emplace(step.socket_path, runs);
            first || said->second != runs) {
            said->second = runs;
            log_.info(runs ? fmt::format("job {} of the unanswered socket {} runs here, says slurmctld: uid {} "
                                         "is live",
                                         step.job_id, step.socket_path, user->second)
                           : fmt::format("job {} of the unanswered socket {} does not run here, says slurmctld",
                                         step.job_id, step.socket_path));
        }
        if (!runs) continue;
        live.uids.insert(user->second);
        live.job_ids.insert(step.job_id);
    }
    return Ok{};
}

std::optional<std::uint32_t> JobStateSource::ending_job() const {
    return request_.trigger.job_ending ? request_.trigger.job_id : std::nullopt;
}

}  // namespace leftover::sweep

// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/run_sweep.hpp"

#include "drain/drain_node.hpp"
#include "node/controller_host.hpp"
#include "policy/evaluation.hpp"
#include "procfs/proc_table.hpp"
#include "steps/starting_work.hpp"
#include "sweep/job_state_source.hpp"
#include "sweep/record_metrics.hpp"
#include "sweep/report.hpp"
#include "sweep/run_cleanup.hpp"
#include "sweep/turn.hpp"
#include "util/file_room.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <map>

namespace leftover::sweep {
namespace {

using Clock = std::chrono::steady_clock;

// Lines of one kind that say the same of many processes (a hostile count's survivors):
// this many, then one that counts the rest.
constexpr std::size_t kLinesOfAKind = 20;

Clock::duration seconds(double value) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

std::string limit_text(rlim_t limit) { return limit == RLIM_INFINITY ? "unlimited" : std::to_string(limit); }

// What the sweep did to have a descriptor for each pin, and what it could not.
void log_room(Logger& log, const FileRoom& room, std::size_t pins) {
    if (room.raised())
        log.debug(fmt::format("descriptor limit (RLIMIT_NOFILE) raised from {}/{} to {}/{} for {} processes to signal",
                              limit_text(room.before().rlim_cur), limit_text(room.before().rlim_max),
                              limit_text(room.now().rlim_cur), limit_text(room.now().rlim_max), pins));
    if (room.room() < pins)
        log.warn(
            fmt::format("room for about {} descriptors, not {}: RLIMIT_NOFILE is {}/{} and cannot be raised; "
                        "a process beyond them is signalled with no stop first, and watched in /proc",
                        room.room(), pins, limit_text(room.now().rlim_cur), limit_text(room.now().rlim_max)));
}

// What a record says that it says of many processes alike when a hostile count meets the
// sweep's limits (a line for each of 40,000 would cost the deadline and drown the log);
// nullptr for a record of its own.
const char* said_of_many(const KillRecord& record) {
    if (record.outcome == Outcome::failed && record.short_of_descriptors)
        return "processes not signalled: no descriptor to pin them (Too many open files)";
    if (record.outcome == Outcome::deadline) return "processes not signalled: the deadline passed";
    if (record.outcome == Outcome::not_stopped && record.short_of_descriptors)
        return "processes signalled with no stop first: no descriptor to spare to hold them stopped";
    return nullptr;
}

LogLevel level_of(const KillRecord& record) {
    switch (record.outcome) {
        case Outcome::signalled: return record.intermediate ? LogLevel::debug : LogLevel::info;
        case Outcome::dry_run:
        case Outcome::deadline: return LogLevel::info;
        case Outcome::gone:
        case Outcome::pid_reused:
        case Outcome::not_stopped: return LogLevel::debug;
        case Outcome::permission_denied:
        case Outcome::failed: return LogLevel::err;
    }
    return LogLevel::info;
}

// One deadline per evaluation; Slurm drains a node whose step does not end in time.
Clock::time_point evaluation_deadline(const Config& config, const SweepRequest& request) {
    return request.started + seconds(config.grace + config.slurm_timeout + 1.0);
}

// The one place the plugin's and the command's evaluations are put together.
Evaluation make_evaluation(const Config& config, const Exemptions& exemptions, const SweepRequest& request,
                           const AccountDatabase& accounts, JobStateSource& job_state,
                           bool examine_live_users = false) {
    EvaluationContext context;
    context.examine_live_users = examine_live_users;
    context.deadline = evaluation_deadline(config, request);
    context.proc_root = request.proc_root;
    context.self = request.self;
    if (request.node.slurmd_pid) {
        context.slurm_daemon_pid = request.node.slurmd_pid;
        context.never_touch = {*request.node.slurmd_pid};
    }
    context.ending_stepds = request.ending_stepds;
    // A node-wide sweep has no job user that scope job_user could narrow it to.
    context.event = Event{request.trigger.uid ? config.scope : Scope::node, request.trigger.uid};
    return Evaluation(
        exemptions, accounts, [&job_state] { return job_state.read(); }, job_state.allocation_check(), context);
}

// The evaluation looks up only the users it would kill; a report for people names the
// others too, in one more bounded lookup (a failure leaves their uids unnamed).
void name_for_display(Plan& plan, const Exemptions& exemptions, const AccountDatabase& accounts,
                      Clock::time_point deadline) {
    std::set<uid_t> unnamed;
    for (const Decision& d : plan.decisions)
        if (d.user.empty() && !exemptions.by_uid(d.uid).is_protected()) unnamed.insert(d.uid);
    if (unnamed.empty()) return;
    const AccountAnswers answers = accounts.look_up(unnamed, {}, deadline);
    for (Decision& d : plan.decisions) {
        if (!d.user.empty()) continue;
        const auto found = answers.names.find(d.uid);
        if (found != answers.names.end() && found->second.status == LookupStatus::found) d.user = found->second.name;
    }
}

// Why a sweep here must kill nothing: this host runs slurmctld (people log in
// without a job), unless sweep_on_controller_host says to sweep it all the same. A
// doubt (cannot tell) is an error, and kills nothing either.
Result<std::optional<std::string>> controller_host_stop(const Config& config, const SweepRequest& request) {
    if (config.sweep_on_controller_host) return std::optional<std::string>();
    return node::controller_host_reason(request.node, request.proc_root);
}

std::string controller_host_text(const std::string& why) {
    return fmt::format(
        "{}: a sweep on a host where slurmctld runs kills and removes nothing "
        "(sweep_on_controller_host: true sweeps it)",
        why);
}

// One run_sweep: the report it builds, and what every way out says (the summary line)
// and counts (the metrics).
class SweepRun {
public:
    SweepRun(const ConfigAndExemptions& loaded, const SweepRequest& request, controller::Controller* controller,
             const AccountDatabase& accounts, Logger& log)
        : loaded_(loaded),
          request_(request),
          controller_(controller),
          accounts_(accounts),
          log_(log),
          summary_{request.trigger.label, request.trigger.uid, {}, false, 0} {}

    KillReport run() {
        if (!loaded_.config.ok()) return stop(loaded_.config.error(), false, short_deadline());
        const Config& config = loaded_.config.value();
        log_.set_threshold(config.debuglevel);
        if (config.loaded_from.empty()) log_.info("no config file, using defaults");
        if (request_.trigger.uid && (config.slew > 0 || config.slew_max))
            log_.debug("slew/slew_max ignored: they delay periodic sweeps, never the plugin");
        summary_.dry_run = config.dry_run;
        if (!loaded_.exemptions)
            return stop(Error::lookup("exemptions not loaded", ErrorSource::users_file), config.dry_run,
                        evaluation_deadline(config, request_));
        if (!loaded_.exemptions->ok())
            return stop(loaded_.exemptions->error(), config.dry_run, evaluation_deadline(config, request_));
        auto controller_host = controller_host_stop(config, request_);
        if (!controller_host.ok()) return stop(controller_host.error(), config.dry_run, short_deadline());
        if (*controller_host) {
            log_.info(controller_host_text(**controller_host));
            return stop(std::nullopt, config.dry_run, short_deadline());
        }
        return sweep(config, loaded_.exemptions->value());
    }

private:
    // Without a valid config there is no evaluation deadline: the default query bound.
    static Clock::time_point short_deadline() { return Clock::now() + seconds(Config{}.slurm_timeout); }

    // The way out before any evaluation: the error that stops it (none on a controller
    // host), the summary, and the error counted. `until` bounds the summary's name lookup
    // and the metrics' lock: the evaluation's deadline once there is one.
    KillReport stop(std::optional<Error> error, bool dry_run, Clock::time_point until) {
        if (error) {
            log_.error(fmt::format("{}: {}; nothing killed", to_string(error->kind), error->message));
            report_.error = std::move(error);
        }
        log_summary(nullptr, until);
        if (report_.error) count_in_metrics(dry_run, until);
        return report_;
    }

    KillReport sweep(const Config& config, const Exemptions& exemptions) {
        const auto deadline = evaluation_deadline(config, request_);
        JobStateSource job_state(config, request_, controller_, deadline, log_);
        if (config.job_source == JobSource::controller && job_state.at_step_end()) {
            log_.info(fmt::format("{}: job_source controller: slurmctld is asked in the job epilog, not at a step end",
                                  request_.trigger.label));
            return report_;
        }
        Evaluation evaluation = make_evaluation(config, exemptions, request_, accounts_, job_state);
        KillOptions options = kill_options(config, deadline, evaluation, job_state);
        // Sweeps of one node take turns (sweep/turn.hpp). The first plan is made before:
        // a sweep with nothing to signal (most step ends) never waits out another's grace,
        // and a dry run takes no turn. One that would signal takes the turn right before
        // its first signal, once no job is on its way onto the node (the executor waits
        // that out first, without the turn), and holds it through the drain's record and
        // the cleanup; one that had to wait plans afresh, so that it judges only what the
        // other left.
        std::optional<Result<Plan>> planned = evaluation();
        const std::size_t kills = planned->ok() ? (*planned)->kills().size() : 0;
        std::optional<NodeTurn> turn;
        options.take_turn = [&]() -> Result<bool> {
            turn = NodeTurn::take(request_, deadline, log_);
            turn_ = turn->outcome();
            if (turn->missed()) return turn->missed_error();
            return turn_ == SweepTurn::waited;
        };
        {
            std::optional<FileRoom> room;  // a pin per target, held while the round waits
            if (!config.dry_run && kills > 0) log_room(log_, room.emplace(kills), kills);
            report_ = execute_kills(
                [&]() -> Result<Plan> {
                    if (!planned) return evaluation();
                    Result<Plan> plan = std::move(*planned);
                    planned.reset();
                    return plan;
                },
                options);
        }
        // A turn that came after another sweep and found nothing left to signal is given
        // up at once: this sweep's drain and cleanup are then those of a sweep with nothing
        // to signal, which take no turn (in a burst, one job epilog held the turn through
        // its 2 s cleanup, and four step ends waiting for it reached their deadlines).
        if (turn && report_.actions.empty()) turn->release();
        log_outcome(config, evaluation, options.stop_rounds);
        drain::DrainContext drain_context;
        drain_context.label = request_.trigger.label;
        drain_context.node_name = request_.node.node_name;
        drain_context.step_end = request_.trigger.ending_step.has_value();
        drain_context.proc_root = request_.proc_root;
        drain_context.record = {drain::survivor_record_path(request_.node.spool_dir, request_.node.node_name),
                                request_.node.slurmd_uid,
                                {}};
        drain_context.bound = std::chrono::seconds(request_.node.unkillable_step_timeout);
        const drain::DrainOutcome drain = drain::drain_on_survivors(config, drain_context, report_, controller_);
        log_drain(log_, drain);
        const auto cleanup = clean_up(config, exemptions, evaluation, job_state, deadline);
        if (turn) turn->release();  // the summary and the metrics (locked on their own) need no turn
        log_summary(&evaluation, deadline, cleanup);
        count_answers(job_state);
        count_in_metrics(config.dry_run, deadline, drain.request ? std::optional(drain.request->result) : std::nullopt);
        return report_;
    }

    KillOptions kill_options(const Config& config, Clock::time_point deadline, Evaluation& evaluation,
                             JobStateSource& job_state) {
        KillOptions options;
        options.proc_root = request_.proc_root;
        options.self = request_.self;
        options.grace = std::chrono::duration_cast<std::chrono::milliseconds>(seconds(config.grace));
        options.deadline = deadline;
        options.dry_run = config.dry_run;
        options.observer.on_action = [this](const KillRecord& record) {
            // The same of many processes: a few lines, then one count (log_outcome).
            if (const char* kind = said_of_many(record)) {
                auto& [count, level] = said_of_many_[kind];
                level = level_of(record);
                if (++count > kLinesOfAKind) return;
            }
            log_.action(level_of(record), format_action(record));
        };
        options.observer.on_grace_wait = [&log = log_](std::size_t count, std::chrono::milliseconds grace) {
            log.info(fmt::format("waiting up to {:.1f} s for {} process(es) to end after SIGTERM",
                                 std::chrono::duration<double>(grace).count(), count));
        };
        options.job_state_unchanged = [&evaluation] { return evaluation.job_state_unchanged(); };
        options.job_starting = [&job_state] { return job_state.job_starting(); };
        // The fresh plan after a wait for a starting job reads the step sockets and /proc,
        // and in a job epilog may ask slurmctld (a few hundred ms on a loaded node): a
        // round with less than this left is skipped, its strays left to the next sweep.
        options.replan_time = std::chrono::milliseconds(1000);
        return options;
    }

    // What the kills came to, beyond each action: the error, survivors, lookups, deadline.
    void log_outcome(const Config& config, const Evaluation& evaluation, int stop_rounds) {
        if (report_.error)
            log_.error(fmt::format("{}: {}; nothing {}killed", to_string(report_.error->kind), report_.error->message,
                                   report_.actions.empty() ? "" : "more "));
        for (const auto& [kind, said] : said_of_many_)
            if (said.first > kLinesOfAKind)
                log_.action(said.second, fmt::format("{} more {}", said.first - kLinesOfAKind, kind));
        if (!config.dry_run) {
            for (std::size_t i = 0; i < report_.survivors.size() && i < kLinesOfAKind; ++i)
                log_.warn(fmt::format("survived the sweep: pid={} user={} uid={}", report_.survivors[i].pid,
                                      report_.survivors[i].user, report_.survivors[i].uid));
            if (report_.survivors.size() > kLinesOfAKind)
                log_.warn(fmt::format("{} more survived the sweep", report_.survivors.size() - kLinesOfAKind));
        }
        for (const auto& [uid, why] : evaluation.failed_lookups())
            log_.warn(fmt::format("account lookup for uid {} failed: {}; its processes are kept", uid, why));
        for (const std::string& sign : report_.paused)
            log_.info(fmt::format(
                "signals paused: a job is starting on this node ({}); the rest waited for a fresh look", sign));
        if (report_.job_starting)
            log_.warn(fmt::format("not signalled: a job is starting on this node ({})", *report_.job_starting));
        else if (report_.deadline_reached)
            log_.warn("the evaluation reached its deadline and stopped where it was");
        if (report_.left_running > 0)
            log_.warn(
                fmt::format("stopping the targets gave up after {} rounds: {} process(es) still ran when the "
                            "signals went out (they fork or change their pid faster than a scan sees them)",
                            stop_rounds, report_.left_running));
    }

    // The cleanup's trouble must not cost the sweep its summary line.
    std::optional<CleanupTotals> clean_up(const Config& config, const Exemptions& exemptions, Evaluation& evaluation,
                                          JobStateSource& job_state, Clock::time_point deadline) {
        try {
            return clean_up_after_sweep(config, exemptions, request_, accounts_, evaluation, job_state, report_,
                                        deadline, log_);
        } catch (const std::exception& e) {
            log_.error(fmt::format("cleanup: stopped: {}", e.what()));
            return std::nullopt;
        }
    }

    void log_summary(const Evaluation* evaluation, Clock::time_point names_until,
                     const std::optional<CleanupTotals>& cleanup = std::nullopt) {
        name_trigger_user(evaluation, names_until);
        summary_.milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - request_.started).count();
        log_.info(format_summary(summary_, report_, cleanup));
    }

    // The job user's name for the summary: from the evaluation when it looked the user
    // up anyway, so a step end costs one account lookup per user, not two.
    void name_trigger_user(const Evaluation* evaluation, Clock::time_point deadline) {
        if (!request_.trigger.uid) return;
        const uid_t uid = *request_.trigger.uid;
        if (evaluation != nullptr)
            if (auto name = evaluation->account_name(uid)) {
                summary_.trigger_user = *name;
                return;
            }
        const auto answers = accounts_.look_up({uid}, {}, deadline);
        if (const auto found = answers.names.find(uid);
            found != answers.names.end() && found->second.status == LookupStatus::found)
            summary_.trigger_user = found->second.name;
    }

    // slurmctld's answers the job-state reader used, kept for the metrics, which are
    // counted once that reader is gone.
    void count_answers(const JobStateSource& job_state) {
        answers_asked_ = job_state.answers_asked();
        answers_shared_ = job_state.answers_shared();
    }

    // After the summary: a metrics file that cannot be written is one more log line.
    void count_in_metrics(bool dry_run, Clock::time_point until, std::optional<DrainResult> drain = std::nullopt) {
        const bool users = loaded_.metrics && loaded_.metrics->users;
        record_metrics(loaded_.metrics,
                       sample_of({trigger_of(request_.trigger), report_, dry_run, users, request_.started, drain, turn_,
                                  answers_asked_, answers_shared_}),
                       log_, until);
    }

    const ConfigAndExemptions& loaded_;
    const SweepRequest& request_;
    controller::Controller* controller_;
    const AccountDatabase& accounts_;
    Logger& log_;
    SummaryInput summary_;
    KillReport report_;
    std::optional<SweepTurn> turn_;  // how the sweep got its turn, when it took one
    int answers_asked_ = 0;          // slurmctld's answers the sweep used, as its job-state reader counted them
    int answers_shared_ = 0;
    // Records said of many processes alike (said_of_many): how many, at what level.
    std::map<std::string, std::pair<std::size_t, LogLevel>> said_of_many_;
};

}  // namespace

ConfigAndExemptions load_config_and_exemptions(const std::string& config_path, bool path_given,
                                               const std::set<uid_t>& slurm_uids) {
    ConfigAndExemptions loaded;
    loaded.config = load_config(config_path, path_given);
    if (loaded.config.ok()) loaded.exemptions = Exemptions::load(loaded.config.value(), slurm_uids);
    loaded.metrics =
        loaded.config.ok() ? metrics_settings(loaded.config.value()) : metrics_settings_despite_error(config_path);
    return loaded;
}

KillReport run_sweep(const ConfigAndExemptions& loaded, const SweepRequest& request, controller::Controller* controller,
                     const AccountDatabase& accounts, Logger& log) {
    return SweepRun(loaded, request, controller, accounts, log).run();
}

std::vector<std::string> listed_name_warnings(const Config& config, const Exemptions& exemptions,
                                              const AccountDatabase& accounts) {
    return leftover::listed_name_warnings(exemptions, accounts, Clock::now() + seconds(config.slurm_timeout));
}

Result<NodeCheck> check_node(const ConfigAndExemptions& loaded, const SweepRequest& request,
                             controller::Controller* controller, const AccountDatabase& accounts, Logger& log) {
    KillReport seen;  // what a check adds to the metrics: its plan, or its error; nothing signalled
    // The metrics lock is not waited for past the check's deadline (the default bound before the config is read).
    Clock::time_point metrics_until = Clock::now() + seconds(Config{}.slurm_timeout);
    const auto recorded = [&](Result<NodeCheck> result) {
        if (result.ok())
            seen.first_plan = result->plan;
        else
            seen.error = result.error();
        const bool users = loaded.metrics && loaded.metrics->users;
        record_metrics(
            loaded.metrics,
            sample_of({MetricsTrigger::check, seen, true, users, request.started, std::nullopt, std::nullopt}), log,
            metrics_until);
        return result;
    };
    if (!loaded.config.ok()) return recorded(loaded.config.error());
    const Config& config = loaded.config.value();
    log.set_threshold(config.debuglevel);
    if (!loaded.exemptions) return recorded(Error::lookup("exemptions not loaded", ErrorSource::users_file));
    if (!loaded.exemptions->ok()) return recorded(loaded.exemptions->error());

    // A check says what a sweep would: nothing killed on a controller host, but the
    // processes are still listed as a sweep with sweep_on_controller_host would judge them.
    auto controller_host = controller_host_stop(config, request);
    if (!controller_host.ok()) return recorded(controller_host.error());

    const auto deadline = evaluation_deadline(config, request);
    metrics_until = deadline;
    JobStateSource job_state(config, request, controller, deadline, log, AnswerSharing::own);
    // A check shows every process as it is, those of users with live work too.
    Evaluation evaluation = make_evaluation(config, loaded.exemptions->value(), request, accounts, job_state, true);
    // The users a cleanup would touch beyond the plan's targets, cleared in its one query.
    if (!config.cleanup.empty()) evaluation.ask_allocations_of(cleanup_candidates(config, request, Plan{}));
    auto plan = evaluation();
    if (!plan.ok()) return recorded(plan.error());
    name_for_display(plan.value(), loaded.exemptions->value(), accounts, deadline);
    std::optional<CleanupReport> cleanup;
    if (!*controller_host) {
        // As a sweep's cleanup: with contain, slurmctld clears its users in one query of its own.
        const std::set<uid_t>* cleared = evaluation.checks_allocations() ? &evaluation.cleared_allocations() : nullptr;
        std::optional<Result<std::set<uid_t>>> asked;
        if (cleared == nullptr && !config.cleanup.empty())
            if (const AllocationCheck check = job_state.cleanup_allocation_check()) {
                asked = cleared_by_controller(check, cleanup_candidates(config, request, plan.value()),
                                              evaluation.last_live_work());
                if (!asked->ok()) asked = std::set<uid_t>{};  // nobody cleared: nothing would go
                cleared = &asked->value();
            }
        cleanup = preview_cleanup(config, loaded.exemptions->value(), request, accounts, plan.value(),
                                  evaluation.last_live_work(), cleared, deadline);
    } else {
        log.info(controller_host_text(**controller_host));
    }
    return recorded(
        NodeCheck{std::move(plan).value(), evaluation.last_live_work(), std::move(cleanup), *controller_host});
}

}  // namespace leftover::sweep

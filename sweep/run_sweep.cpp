// SPDX-License-Identifier: GPL-2.0-or-later
#include "run_sweep.hpp"

#include "evaluation.hpp"
#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace leftover::sweep {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double value) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

LogLevel level_of(const KillRecord& record) {
    switch (record.outcome) {
        case Outcome::signalled:
        case Outcome::dry_run: return LogLevel::info;
        case Outcome::gone:
        case Outcome::pid_reused: return LogLevel::debug;
        case Outcome::permission_denied:
        case Outcome::failed: return LogLevel::err;
    }
    return LogLevel::info;
}

// The job-state reader for one sweep: fresh answers every round, stale sockets logged once.
class JobStateSource {
public:
    JobStateSource(const Config& config, const SweepRequest& request, node::Controller* controller,
                   Clock::time_point deadline, Logger& log)
        : config_(config), request_(request), controller_(controller), deadline_(deadline), log_(log) {}

    Result<LiveWork> read() {
        const auto until = std::min(Clock::now() + seconds(config_.slurm_timeout), deadline_);
        if (config_.job_source == JobSource::controller) {
            if (controller_ == nullptr) return Error::lookup("job_source controller: no controller connection");
            return controller_->jobs_on_node(request_.node.node_name, ending_job(), until);
        }
        auto state = node::read_local_steps(request_.node.spool_dir, request_.node.node_name, until);
        if (!state.ok()) return state.error();
        for (const node::LocalStep& step : state->live)
            if (logged_.insert(step.socket_path).second)
                log_.debug(fmt::format("step {} ({}): uid {}, {} (state {} from a Slurm {} stepd)",
                                       node::describe_step(step.job_id, step.step_id), step.socket_path, step.uid,
                                       node::to_string(step.state), step.raw_state,
                                       node::describe_protocol_version(step.stepd_version)));
        for (const node::DeadStep& dead : state->dead)
            if (logged_.insert(dead.socket_path).second)
                log_.info(fmt::format("step {} is gone: its slurmstepd does not answer on {} (stale socket)",
                                      node::describe_step(dead.job_id, dead.step_id), dead.socket_path));
        return node::live_work_from(state.value(), request_.trigger.ending_step,
                                    fmt::format("{} for node {}", request_.node.spool_dir, request_.node.node_name));
    }

    // Without PrologFlags=contain a node of a multi-node job between steps looks empty
    // locally: before a user is swept, the controller must confirm they hold no allocation.
    // (slurmd's start says once that PrologFlags=contain makes this unnecessary.)
    AllocationCheck allocation_check() {
        if (config_.job_source == JobSource::controller || request_.node.prolog_contain) return {};
        if (asks_no_child()) {
            return [this](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
                log_.info(
                    fmt::format("no PrologFlags=contain: {} user(s) without a step here kept at this step end; "
                                "the job epilog asks slurmctld",
                                uids.size()));
                return uids;
            };
        }
        return [this](const std::set<uid_t>& uids) -> Result<std::set<uid_t>> {
            log_.debug("no PrologFlags=contain: asking slurmctld whether these users hold an allocation here");
            if (controller_ == nullptr) return Error::lookup("allocation check: no controller connection");
            const auto until = std::min(Clock::now() + seconds(config_.slurm_timeout), deadline_);
            auto work = controller_->jobs_on_node(request_.node.node_name, ending_job(), until);
            if (!work.ok()) return work.error();
            std::set<uid_t> holders;
            for (const uid_t uid : uids)
                if (work->uids.count(uid) != 0) holders.insert(uid);
            return holders;
        };
    }

    // At a step end Slurm may kill any descendant of the ending step while its exit hook
    // runs (proctrack/linuxproc, seen on 24.11 and 26.05): a helper started then would
    // die mid-answer. slurmctld is asked only from the job epilog, outside the step.
    bool asks_no_child() const { return request_.trigger.ending_step.has_value(); }

private:
    std::optional<std::uint32_t> ending_job() const {
        return request_.trigger.job_ending ? request_.trigger.job_id : std::nullopt;
    }

    const Config& config_;
    const SweepRequest& request_;
    node::Controller* controller_;
    Clock::time_point deadline_;
    Logger& log_;
    std::set<std::string> logged_;  // sockets already described: once per sweep
};

// One deadline per evaluation; Slurm drains a node whose step does not end in time.
Clock::time_point evaluation_deadline(const Config& config, const SweepRequest& request) {
    return request.started + seconds(config.grace + config.slurm_timeout + 1.0);
}

// The one place the plugin's and the command's evaluations are put together.
Evaluation make_evaluation(const Config& config, const Exemptions& exemptions, const SweepRequest& request,
                           const AccountDatabase& accounts, JobStateSource& job_state) {
    EvaluationContext context;
    context.proc_root = request.proc_root;
    context.self = request.self;
    if (request.node.slurmd_pid) {
        context.slurm_daemon_pid = request.node.slurmd_pid;
        context.never_touch = {*request.node.slurmd_pid};
    }
    context.ending_stepds = request.ending_stepds;
    context.deadline = evaluation_deadline(config, request);
    // A node-wide sweep has no job user that scope job_user could narrow it to.
    context.event = Event{request.trigger.uid ? config.scope : Scope::node, request.trigger.uid};
    return Evaluation(
        exemptions, accounts, [&job_state] { return job_state.read(); }, job_state.allocation_check(), context);
}

}  // namespace

ConfigAndExemptions load_config_and_exemptions(const std::string& config_path, bool path_given,
                                               const std::set<uid_t>& slurm_uids) {
    ConfigAndExemptions loaded;
    loaded.config = load_config(config_path, path_given);
    if (loaded.config.ok()) loaded.exemptions = Exemptions::load(loaded.config.value(), slurm_uids);
    return loaded;
}

KillReport run_sweep(const ConfigAndExemptions& loaded, const SweepRequest& request, node::Controller* controller,
                     const AccountDatabase& accounts, Logger& log) {
    KillReport report;
    const auto elapsed_ms = [&] {
        return std::chrono::duration<double, std::milli>(Clock::now() - request.started).count();
    };
    SummaryInput summary{request.trigger.label, request.trigger.uid, {}, false, 0};
    // The job user's name for the summary: from the plan when the evaluation already
    // resolved it, so a step end costs one account lookup per user, not two.
    const auto name_trigger_user = [&](const Plan& plan) {
        if (!request.trigger.uid) return;
        for (const Decision& d : plan.decisions)
            if (d.uid == *request.trigger.uid && !d.user.empty()) {
                summary.trigger_user = d.user;
                return;
            }
        const auto lookup = accounts.name_of(*request.trigger.uid);
        if (lookup.status == AccountLookup::Status::found) summary.trigger_user = lookup.name;
    };

    if (!loaded.config.ok()) {
        report.error = loaded.config.error();
        log.error(fmt::format("{}: {}; nothing killed", to_string(report.error->kind), report.error->message));
        name_trigger_user(report.first_plan);
        summary.milliseconds = elapsed_ms();
        log.info(format_summary(summary, report));
        return report;
    }
    const Config& config = loaded.config.value();
    log.set_threshold(config.debuglevel);
    if (config.loaded_from.empty()) log.info("no config file, using defaults");
    if (request.trigger.uid && (config.slew > 0 || config.slew_max))
        log.debug("slew/slew_max ignored: they delay periodic sweeps, never the plugin");
    summary.dry_run = config.dry_run;

    if (!loaded.exemptions || !loaded.exemptions->ok()) {
        report.error = loaded.exemptions ? loaded.exemptions->error() : Error::lookup("exemptions not loaded");
        log.error(fmt::format("lookup error: {}; nothing killed", report.error->message));
        name_trigger_user(report.first_plan);
        summary.milliseconds = elapsed_ms();
        log.info(format_summary(summary, report));
        return report;
    }

    const auto deadline = evaluation_deadline(config, request);
    JobStateSource job_state(config, request, controller, deadline, log);
    if (config.job_source == JobSource::controller && job_state.asks_no_child()) {
        log.info(fmt::format("{}: job_source controller: slurmctld is asked in the job epilog, not at a step end",
                             request.trigger.label));
        return report;
    }
    Evaluation evaluation = make_evaluation(config, loaded.exemptions->value(), request, accounts, job_state);

    KillOptions options;
    options.proc_root = request.proc_root;
    options.grace = std::chrono::duration_cast<std::chrono::milliseconds>(seconds(config.grace));
    options.deadline = deadline;
    options.dry_run = config.dry_run;
    options.observer.on_action = [&log](const KillRecord& record) {
        log.action(level_of(record), format_action(record));
    };
    options.observer.on_grace_wait = [&log](std::size_t count, std::chrono::milliseconds grace) {
        log.info(fmt::format("waiting up to {:.1f} s for {} process(es) to end after SIGTERM",
                             std::chrono::duration<double>(grace).count(), count));
    };
    report = execute_kills([&] { return evaluation(); }, options);

    if (report.error)
        log.error(fmt::format("{}: {}; nothing more killed", to_string(report.error->kind), report.error->message));
    for (const Decision& survivor : report.survivors)
        if (!config.dry_run)
            log.warn(
                fmt::format("survived the sweep: pid={} user={} uid={}", survivor.pid, survivor.user, survivor.uid));
    if (report.deadline_reached) log.warn("the evaluation reached its deadline and stopped where it was");
    name_trigger_user(report.first_plan);
    summary.milliseconds = elapsed_ms();
    log.info(format_summary(summary, report));
    return report;
}

Result<NodeCheck> check_node(const ConfigAndExemptions& loaded, const SweepRequest& request,
                             node::Controller* controller, const AccountDatabase& accounts, Logger& log) {
    if (!loaded.config.ok()) return loaded.config.error();
    const Config& config = loaded.config.value();
    log.set_threshold(config.debuglevel);
    if (!loaded.exemptions) return Error::lookup("exemptions not loaded");
    if (!loaded.exemptions->ok()) return loaded.exemptions->error();

    JobStateSource job_state(config, request, controller, evaluation_deadline(config, request), log);
    Evaluation evaluation = make_evaluation(config, loaded.exemptions->value(), request, accounts, job_state);
    auto plan = evaluation();
    if (!plan.ok()) return plan.error();
    return NodeCheck{std::move(plan).value(), evaluation.last_live_work()};
}

}  // namespace leftover::sweep

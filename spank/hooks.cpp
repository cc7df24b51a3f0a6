// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/hooks.hpp"

#include "accounts/accounts_bounded.hpp"
#include "node/slurm_conf.hpp"
#include "spank/node_discovery.hpp"
#include "spank/plugin_args.hpp"
#include "spank/slurm_log.hpp"
#include "steps/setup_records.hpp"
#include "steps/stepd_protocol.hpp"
#include "sweep/run_sweep.hpp"
#include "util/boot.hpp"
#include "util/privileges.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <optional>

namespace leftover::spank {
namespace {

using sweep::Logger;

// One slurmstepd serves one step: the config task_exit loaded is used by exit.
std::optional<sweep::ConfigAndExemptions> loaded_for_step;

template <class T>
std::optional<T> item(spank_t sp, spank_item_t which) {
    T value{};
    if (spank_get_item(sp, which, &value) != ESPANK_SUCCESS) return std::nullopt;
    return value;
}

void log_unknown_args(const PluginArgs& args, Logger& log) {
    for (const auto& arg : args.unknown) log.warn(fmt::format("unknown plugstack argument '{}' ignored", arg));
}

const sweep::ConfigAndExemptions& load_once(const PluginArgs& args, const node::NodeInfo& node) {
    if (!loaded_for_step)
        loaded_for_step = retried_as_root(
            [&] {
                return sweep::load_config_and_exemptions(args.config_path, args.config_path_given, node.slurm_uids);
            },
            [](const sweep::ConfigAndExemptions& loaded) {
                return loaded.config.ok() && (!loaded.exemptions || loaded.exemptions->ok());
            },
            std::chrono::steady_clock::now() + std::chrono::seconds(1));
    return *loaded_for_step;
}

void sweep_at_end(const PluginArgs& args, sweep::Trigger trigger, std::set<pid_t> ending_stepds,
                  std::optional<pid_t> slurmd_pid, std::chrono::steady_clock::time_point started) {
    // Account lookups, each bounded by the evaluation's deadline (a hung directory
    // service costs the deadline, and its uids are kept): in the job epilog through the
    // helper process; at a step end on a worker thread of this slurmstepd, since Slurm
    // may kill any descendant of the ending step while its exit hook runs
    // (proctrack/linuxproc killed leftover-query there on 24.11 and 26.05), which would
    // keep every user a step end could sweep, also on RunInJob, where the extern step's
    // end is the job's last sweep. A thread is no process: proctrack does not see it. One
    // that hangs stays blocked until slurmstepd exits (the plugin stays mapped under
    // it: -z nodelete in spank/CMakeLists.txt).
    const bool step_end = trigger.ending_step.has_value();
    const std::unique_ptr<AccountDatabase> accounts =
        step_end ? std::make_unique<ThreadBoundedAccounts>() : make_bounded_accounts();
    SlurmLogSink sink;
    Logger log(sink);
    log_unknown_args(args, log);
    // The running slurmd too, at a step end as in the job epilog: a node slurm.conf does
    // not place on this host has a spool dir of its own, which only they tell.
    auto node = discover_node(slurmd_pid);
    if (node.ok() && trigger.job_ending && trigger.job_id) {
        // The job's setup record (on_job_prolog) says nothing once it ends, whatever this
        // sweep then finds: the node's name and spool dir are all its removal needs.
        const Status removed =
            steps::remove_setup_record(node->spool_dir, node->node_name, node->slurmd_uid, *trigger.job_id);
        if (!removed.ok()) log.warn(fmt::format("{}: {}", trigger.label, removed.error().message));
    }
    const Status found = node.ok() ? add_running_host_nodes(node.value()) : Status(node.error());
    if (!found.ok()) {
        log.error(fmt::format("{}: lookup error: {}; nothing killed", trigger.label, found.error().message));
        return;
    }
    sweep::SweepRequest request;
    request.trigger = std::move(trigger);
    request.node = node.value();
    request.self = ::getpid();
    request.ending_stepds = std::move(ending_stepds);
    request.started = started;
    // A step end never asks slurmctld (run_sweep.cpp, at_step_end): no helper path to find.
    const auto controller = step_end ? nullptr : make_controller(node.value());
    sweep::run_sweep(load_once(args, node.value()), request, controller.get(), *accounts, log);
}

// The last word on any exception: the job must not notice our trouble.
template <class Body>
void guarded(const char* hook, Body&& body) noexcept {
    try {
        body();
    } catch (const std::exception& e) {
        slurm_error("leftover: %s: internal error: %s; nothing more done", hook, e.what());
    } catch (...) {
        slurm_error("leftover: %s: internal error; nothing more done", hook);
    }
}

}  // namespace

void on_slurmd_start(spank_t, int ac, char** av) noexcept {
    guarded("slurmd start", [&] {
        const PluginArgs args = parse_plugin_args(ac, av);
        slurm_info("leftover: %s, config %s", steps::build_banner().c_str(), args.config_path.c_str());
        // A listed name without an account protects nobody: say so where operators look.
        const auto loaded = sweep::load_config_and_exemptions(args.config_path, args.config_path_given, {});
        if (loaded.exemptions && loaded.exemptions->ok())
            for (const std::string& warning : sweep::listed_name_warnings(
                     loaded.config.value(), loaded.exemptions->value(), *make_bounded_accounts()))
                slurm_info("leftover: warning: %s", warning.c_str());
        if (!node::prolog_contain())
            slurm_info(
                "leftover: PrologFlags=contain is not set: before sweeping a user, leftover asks "
                "slurmctld whether they still hold an allocation on this node; PrologFlags=contain "
                "makes this unnecessary");
    });
}

void on_task_exit(spank_t, int ac, char** av) noexcept {
    guarded("task exit", [&] {
        const PluginArgs args = parse_plugin_args(ac, av);
        // Read config and exemptions now, while the step still runs; never signal here.
        if (auto node = discover_node(); node.ok()) load_once(args, node.value());
    });
}

void on_step_exit(spank_t sp, int ac, char** av) noexcept {
    const auto started = std::chrono::steady_clock::now();
    guarded("exit", [&] {
        // Slurm 24.11 may have lent this process to the job's user for its X11 cleanup
        // (util/privileges.hpp): a config read now would fail. The lend takes well under
        // a millisecond; a second is a bound, not an expectation.
        if (!wait_for_root(started + std::chrono::seconds(1))) {
            slurm_error("leftover: exit: slurmstepd still runs as uid %u, not root, after 1 s; nothing done",
                        static_cast<unsigned>(::geteuid()));
            return;
        }
        const PluginArgs args = parse_plugin_args(ac, av);
        const auto job = item<std::uint32_t>(sp, S_JOB_ID);
        const auto step = item<std::uint32_t>(sp, S_JOB_STEPID);
        const auto uid = item<uid_t>(sp, S_JOB_UID);
        if (!job || !step || !uid) {
            slurm_error("leftover: exit: the step's job, step id or user is unknown; nothing done");
            return;
        }
        sweep::Trigger trigger;
        trigger.label = "step " + steps::describe_step(*job, *step);
        trigger.uid = *uid;
        trigger.job_id = *job;
        trigger.ending_step = steps::StepId{*job, *step};
        // This slurmstepd is the ending step's: its own children get no step protection.
        // slurmd's pid stays unknown here: slurmd double-forks slurmstepd (22.05 req.c,
        // _forkexec_slurmstepd), so our parent is init by now; and SlurmdPidFile is gone
        // while slurmd restarts, which must not stop a step end's sweep. Forked by
        // slurmd, a slurmstepd shares its pid namespace anyway.
        sweep_at_end(args, std::move(trigger), {::getpid()}, std::nullopt, started);
    });
}

void on_job_prolog(spank_t sp, int, char**) noexcept {
    // slurmd runs `slurmstepd spank prolog` before the Prolog script (prep_script_slurmd.c
    // slurmd_script). The record needs only the node's name and spool dir: slurmd's pid is
    // not asked for (a slurmstepd may run this hook, where the parent is no slurmd).
    guarded("job prolog", [&] {
        if (::geteuid() != 0) return;  // only where Slurm runs us as root on the node
        const auto job = item<std::uint32_t>(sp, S_JOB_ID);
        const auto uid = item<uid_t>(sp, S_JOB_UID);
        if (!job || !uid) {
            slurm_error("leftover: job prolog: the job id or user is unknown; no setup record written");
            return;
        }
        const auto node = discover_node();
        const steps::SetupRecord record{*job, *uid, node.ok() ? node->node_name : "", boot_clock_now()};
        const Status written =
            node.ok() ? steps::write_setup_record(node->spool_dir, node->slurmd_uid, read_boot_id("/proc"), record)
                      : Status(node.error());
        if (!written.ok()) {
            slurm_error(
                "leftover: job %u prolog: no setup record written: %s; until its first step a sweep may take "
                "uid %u for one without work here",
                *job, written.error().message.c_str(), static_cast<unsigned>(*uid));
            return;
        }
        slurm_debug("leftover: job %u prolog: recorded that job %u of uid %u is being set up on node %s", *job, *job,
                    static_cast<unsigned>(*uid), record.node_name.c_str());
    });
}

void on_job_epilog(spank_t sp, int ac, char** av) noexcept {
    const auto started = std::chrono::steady_clock::now();
    // slurmd runs `slurmstepd spank epilog` as its own child and waits for it (22.05
    // prep_script_slurmd.c, _run_spank_job_script): our parent is slurmd.
    const pid_t slurmd_pid = ::getppid();
    guarded("job epilog", [&] {
        if (::geteuid() != 0) return;  // only where Slurm runs us as root on the node
        const PluginArgs args = parse_plugin_args(ac, av);
        const auto job = item<std::uint32_t>(sp, S_JOB_ID);
        const auto uid = item<uid_t>(sp, S_JOB_UID);
        if (!job || !uid) {
            slurm_error("leftover: job epilog: the job id or user is unknown; nothing done");
            return;
        }
        sweep::Trigger trigger;
        trigger.label = fmt::format("job {} epilog", *job);
        trigger.uid = *uid;
        trigger.job_id = *job;
        trigger.job_ending = true;
        sweep_at_end(args, std::move(trigger), {}, slurmd_pid, started);
    });
}

}  // namespace leftover::spank

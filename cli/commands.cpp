// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/commands.hpp"

#include "cli/check_report.hpp"
#include "cli/config_report.hpp"
#include "cli/health.hpp"
#include "cli/slew.hpp"
#include "cli/stream_log.hpp"
#include "drain/drain_node.hpp"
#include "steps/stepd_protocol.hpp"
#include "sweep/record_metrics.hpp"
#include "sweep/run_sweep.hpp"

#include <fmt/format.h>

namespace leftover::cli {
namespace {

NodeOverrides overrides_of(const Options& options) { return {options.node, options.spool_dir}; }

sweep::SweepRequest node_wide_request(const std::string& label, const node::NodeInfo& node, const Environment& env) {
    sweep::SweepRequest request;
    request.trigger.label = label;  // no uid: a node-wide evaluation, scope node
    request.node = node;
    request.self = env.self;
    request.proc_root = env.proc_root;
    request.started = std::chrono::steady_clock::now();
    return request;
}

// "config error: ...", "lookup error: ..." or "not a Slurm node: ...".
std::string describe(const Error& error) { return fmt::format("{}: {}", to_string(error.kind), error.message); }

// The health line, after the streak and, when it fails with --drain, the drain. Doubt
// about the streak (its file unreadable or unwritable) fails the check, drains nothing.
struct HealthContext {
    const Options& options;
    Environment& env;
    const CheckResult& result;
    const node::NodeInfo* node = nullptr;  // unset: not a Slurm node, nothing to drain
    controller::Controller* controller = nullptr;
    const sweep::ConfigAndExemptions* loaded = nullptr;
};

// The streak before this check: 0 without --failures (each check stands alone).
Result<unsigned> previous_streak(const Options& options) {
    return options.failures_given ? read_streak(options.state_dir) : Result<unsigned>(0u);
}

int report_health(const HealthContext& h) {
    auto previous = previous_streak(h.options);
    const auto verdict = judge_health(format_check_health(h.result), check_exit_status(h.result),
                                      previous.ok() ? previous.value() : 0, h.options.failures);
    Status kept = previous.ok() ? Status(Ok{}) : Status(previous.error());
    if (kept.ok() && h.options.failures_given && !verdict.error)
        kept = write_streak(h.options.state_dir, verdict.streak);
    if (!kept.ok()) {
        h.env.out << fmt::format("leftover: ERROR: failure streak not kept: {}\n", kept.error().message);
        return kExitError;
    }
    h.env.out << verdict.line;
    if (!verdict.fails) return kExitClean;
    // An error (config, lookup, not a Slurm node) says nothing of strays: it never drains.
    if (h.options.drain && !verdict.error && h.node != nullptr && h.loaded->config.ok()) {
        StreamLogSink sink(h.env.err);
        sweep::Logger log(sink);
        drain_for_health({h.loaded->config.value(), h.loaded->metrics, h.controller, h.node->node_name, verdict,
                          verdict.streak == h.options.failures},
                         log);
    }
    return check_exit_status(h.result);
}

}  // namespace

int run(const Options& options, Environment& env) {
    if (options.help) {
        env.out << help_text(options.command);
        return kExitClean;
    }
    if (options.version) {
        env.out << steps::build_banner() << "\n";
        return kExitClean;
    }
    switch (*options.command) {
        case Command::check: return check_command(options, env);
        case Command::sweep: return sweep_command(options, env);
        case Command::config: return config_command(options, env);
    }
    return kExitError;
}

int check_command(const Options& options, Environment& env) {
    CheckResult result;
    result.all = options.all;
    const node::NodeInfo* found_node = nullptr;
    controller::Controller* found_controller = nullptr;
    const sweep::ConfigAndExemptions* found_config = nullptr;
    const auto emit = [&] {
        if (options.health) return report_health({options, env, result, found_node, found_controller, found_config});
        if (options.json)
            env.out << format_check_json(result);
        else
            env.out << format_check_table(result);
        if (result.error) env.err << "leftover: " << describe(*result.error) << "\n";
        return check_exit_status(result);
    };

    auto node = env.discover_node(overrides_of(options));
    if (!node.ok()) {
        result.error = node.error();
        return emit();
    }
    result.node = node->node_name;
    result.spool_dir = node->spool_dir;
    const sweep::ConfigAndExemptions loaded =
        sweep::load_config_and_exemptions(options.config_path, options.config_path_given, node->slurm_uids);
    if (loaded.config.ok()) result.config = loaded.config->loaded_from;

    StreamLogSink sink(env.err);
    sweep::Logger log(sink);
    auto controller = env.make_controller(node.value());
    found_node = &node.value();
    found_controller = controller.get();
    found_config = &loaded;
    auto check = sweep::check_node(loaded, node_wide_request("node check", node.value(), env), controller.get(),
                                   env.accounts, log);
    if (check.ok())
        result.check = std::move(check).value();
    else
        result.error = check.error();
    return emit();
}

int sweep_command(const Options& options, Environment& env) {
    StreamLogSink sink(env.err);
    sweep::Logger log(sink);
    if (!options.dry_run && !env.is_root) {
        log.error("sweep signals other users' processes and must run as root (--dry-run does not)");
        return kExitError;
    }
    auto node = env.discover_node(overrides_of(options));
    if (!node.ok()) {
        log.error(describe(node.error()));
        return kExitError;
    }
    sweep::ConfigAndExemptions loaded =
        sweep::load_config_and_exemptions(options.config_path, options.config_path_given, node->slurm_uids);
    if (loaded.config.ok()) {
        Config& config = loaded.config.value();
        if (options.dry_run) config.dry_run = true;
        log.set_threshold(config.debuglevel);
        const double wait = options.no_slew ? 0 : slew_seconds(config, env.random_unit());
        if (wait > 0) {
            // Say so: a sweep that seems to hang for a minute would surprise whoever runs it.
            log.info(fmt::format("waiting {:.1f} s (slew) before the sweep; --no-slew starts at once", wait));
            env.sleep(wait);
        }
    }
    auto controller = env.make_controller(node.value());
    // Started after the slew: the evaluation's deadline covers the sweep, not the wait.
    const KillReport report = sweep::run_sweep(loaded, node_wide_request("node sweep", node.value(), env),
                                               controller.get(), env.accounts, log);
    if (report.error) return kExitError;
    return report.survivors.empty() ? kExitClean : kExitStrays;
}

int config_command(const Options& options, Environment& env) {
    const Result<Config> config = load_config(options.config_path, options.config_path_given);
    if (!config.ok()) {
        env.err << "leftover: config error: " << config.error().message
                << "\nleftover: invalid: with this config the plugin and the command kill nothing\n";
        return kExitError;
    }
    const ConfigReport report = report_config(config.value(), options.config_path);
    env.out << report.text;
    // A listed name without an account protects nobody; usable users files only (an
    // unusable one is already the report's error).
    if (report.valid)
        if (auto exemptions = Exemptions::load(config.value(), {}); exemptions.ok())
            for (const std::string& warning :
                 sweep::listed_name_warnings(config.value(), exemptions.value(), env.accounts))
                env.out << "warning: " << warning << "\n";
    return report.valid ? kExitClean : kExitError;
}

}  // namespace leftover::cli

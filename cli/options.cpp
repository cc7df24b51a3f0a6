// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace leftover::cli {
namespace {

// Which command each flag belongs to; --help and --config belong to all.
struct Flag {
    bool takes_value;
    std::vector<Command> commands;
};

const std::map<std::string, Flag>& flags() {
    static const std::map<std::string, Flag> table = {
        {"--config", {true, {Command::check, Command::sweep, Command::config}}},
        {"--json", {false, {Command::check}}},
        {"--health", {false, {Command::check}}},
        {"--all", {false, {Command::check}}},
        {"--failures", {true, {Command::check}}},
        {"--drain", {false, {Command::check}}},
        {"--state-dir", {true, {Command::check}}},
        {"--dry-run", {false, {Command::sweep}}},
        {"--no-slew", {false, {Command::sweep}}},
        {"--node", {true, {Command::check, Command::sweep}}},
        {"--spool-dir", {true, {Command::check, Command::sweep}}},
    };
    return table;
}

std::optional<Command> command_named(const std::string& word) {
    if (word == "check") return Command::check;
    if (word == "sweep") return Command::sweep;
    if (word == "config") return Command::config;
    return std::nullopt;
}

// Whole numbers 1 to 1000: a streak longer than that is a typo, not a policy.
std::optional<unsigned> failure_count(const std::string& value) {
    unsigned n = 0;
    for (const char c : value) {
        if (c < '0' || c > '9' || n > 1000) return std::nullopt;
        n = n * 10 + static_cast<unsigned>(c - '0');
    }
    if (n < 1 || n > 1000) return std::nullopt;
    return n;
}

Status apply(Options& options, const std::string& flag, const std::string& value) {
    // Switches take no value; the others take the next argument.
    static const std::map<std::string, bool Options::*> switches = {
        {"--json", &Options::json},       {"--health", &Options::health},   {"--all", &Options::all},
        {"--dry-run", &Options::dry_run}, {"--no-slew", &Options::no_slew}, {"--drain", &Options::drain}};
    if (const auto it = switches.find(flag); it != switches.end()) {
        options.*(it->second) = true;
    } else if (flag == "--config") {
        options.config_path = value;
        options.config_path_given = true;
    } else if (flag == "--node") {
        options.node = value;
    } else if (flag == "--spool-dir") {
        options.spool_dir = value;
    } else if (flag == "--failures") {
        const auto n = failure_count(value);
        if (!n)
            return Error::config(fmt::format("check: --failures takes a whole number from 1 to 1000, not '{}'", value),
                                 ErrorSource::other);
        options.failures = *n;
        options.failures_given = true;
    } else if (flag == "--state-dir") {
        if (!value.starts_with('/'))
            return Error::config(fmt::format("check: --state-dir takes an absolute path, not '{}'", value),
                                 ErrorSource::other);
        options.state_dir = value;
        options.state_dir_given = true;
    }
    return Ok{};
}

}  // namespace

const char* to_string(Command command) {
    switch (command) {
        case Command::check: return "check";
        case Command::sweep: return "sweep";
        case Command::config: return "config";
    }
    return "?";
}

Result<Options, UsageError> parse_options(const std::vector<std::string>& args) {
    Options options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            options.help = true;
            continue;
        }
        if (arg == "--version") {
            options.version = true;
            continue;
        }
        if (!options.command) {
            options.command = command_named(arg);
            if (!options.command)
                return UsageError{arg.starts_with("-") ? fmt::format("'{}' before the command", arg)
                                                       : fmt::format("unknown command '{}'", arg)};
            continue;
        }
        const auto equals = arg.find('=');
        const std::string name = arg.substr(0, equals);
        const auto flag = flags().find(name);
        if (flag == flags().end())
            return UsageError{fmt::format("{}: unknown argument '{}'", to_string(*options.command), arg)};
        const auto& commands = flag->second.commands;
        if (std::find(commands.begin(), commands.end(), *options.command) == commands.end())
            return UsageError{
                fmt::format("{}: {} is not an option of this command", to_string(*options.command), name)};
        std::string value;
        if (flag->second.takes_value) {
            if (equals != std::string::npos)
                value = arg.substr(equals + 1);
            else if (i + 1 < args.size())
                value = args[++i];
            else
                return UsageError{fmt::format("{}: {} needs a value", to_string(*options.command), name)};
            if (value.empty())
                return UsageError{fmt::format("{}: {} needs a value", to_string(*options.command), name)};
        } else if (equals != std::string::npos) {
            return UsageError{fmt::format("{}: {} takes no value", to_string(*options.command), name)};
        }
        if (auto applied = apply(options, name, value); !applied.ok()) return UsageError{applied.error().message};
    }
    if (!options.command && !options.help && !options.version) return UsageError{"no command given"};
    if (options.health && options.json)
        return UsageError{"check: --health and --json print different things; pick one"};
    if (!options.health && (options.failures_given || options.drain || options.state_dir_given))
        return UsageError{"check: --failures, --drain and --state-dir go with --health"};
    return options;
}

std::string help_text(std::optional<Command> command) {
    constexpr const char* node_flags =
        "  --node NAME       the node's NodeName (default: what slurmd would pick from the host name)\n"
        "  --spool-dir DIR   slurmd's spool directory (default: SlurmdSpoolDir from slurm.conf, expanded)\n";
    constexpr const char* config_flag =
        "  --config PATH     the leftover config (default /etc/leftover.conf; missing there: all defaults)\n";
    if (!command)
        return "usage: leftover COMMAND [OPTIONS]\n"
               "\n"
               "Finds and kills stray processes of users with no live Slurm work on this node,\n"
               "with the same configuration, job sources and rules as the leftover.so SPANK plugin.\n"
               "\n"
               "commands:\n"
               "  check    what a node-wide sweep would kill now, and why; signals nothing\n"
               "  sweep    one node-wide sweep (for a timer, cron or an Epilog script)\n"
               "  config   validate the config and show the effective settings\n"
               "\n"
               "  --help     this text; COMMAND --help for the command's options\n"
               "  --version  the version and the Slurm release it was built for\n"
               "\n"
               "exit status: 0 clean, 1 strays found (check) or left (sweep), 2 config or lookup error\n"
               "See leftover(8) and leftover.conf(5).\n";
    switch (*command) {
        case Command::check:
            return std::string(
                       "usage: leftover check [--config PATH] [--json | --health [--failures N] [--drain]\n"
                       "                      [--state-dir DIR]] [--all] [--node NAME] [--spool-dir DIR]\n"
                       "\n"
                       "One node-wide evaluation, as the plugin makes with scope: node; nothing is signalled.\n"
                       "Prints every process of an unprotected user with its decision and reason, then one\n"
                       "line per user.\n"
                       "\n") +
                   config_flag +
                   "  --json            the same as a JSON document (see leftover(8))\n"
                   "  --health          one line for a health check (NHC, HealthCheckProgram): OK or ERROR\n"
                   "  --failures N      with --health: fail (exit 1) only at the Nth check in a row with strays;\n"
                   "                    before that print the line with the count and exit 0 (default 1); an\n"
                   "                    error fails at once (exit 2) and is not counted\n"
                   "  --drain           with --health: when it fails with strays a sweep would reap (not with\n"
                   "                    dry_run or scope job_user), drain the node through slurmctld with the\n"
                   "                    line as reason (a node drained, draining or down keeps its reason)\n"
                   "  --state-dir DIR   with --health: where the streak of failures is kept (default /run/leftover)\n"
                   "  --all             also list processes of protected owners, kernel threads and this command\n" +
                   node_flags +
                   "\nexit status: 0 no strays, 1 strays found, 2 config or lookup error, or not a Slurm node\n";
        case Command::sweep:
            return std::string(
                       "usage: leftover sweep [--config PATH] [--dry-run] [--no-slew] [--node NAME] [--spool-dir DIR]\n"
                       "\n"
                       "One node-wide evaluation and sweep: SIGTERM, grace, SIGKILL on a fresh evaluation.\n"
                       "Waits a random time between slew and slew_max first. Logs to standard error and\n"
                       "copies kills, dry-run decisions and errors to syslog (ident leftover).\n"
                       "\n") +
                   config_flag +
                   "  --dry-run         decide and log 'would kill', signal nothing (as dry_run: true)\n"
                   "  --no-slew         start at once, ignoring slew and slew_max\n" +
                   node_flags +
                   "\nexit status: 0 nothing left to kill, 1 strays left (or would be killed, with --dry-run),\n"
                   "2 config or lookup error, or not a Slurm node\n";
        case Command::config:
            return std::string(
                       "usage: leftover config [--config PATH]\n"
                       "\n"
                       "Validates the config and every protected users file it names, and prints the\n"
                       "effective settings next to their defaults. Needs no Slurm.\n"
                       "\n") +
                   config_flag + "\nexit status: 0 valid, 2 invalid (nothing would be killed with it)\n";
    }
    return {};
}

}  // namespace leftover::cli

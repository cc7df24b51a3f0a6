// SPDX-License-Identifier: GPL-2.0-or-later
// The command line of `leftover`: a plain struct, parsed without side effects so the
// tests can check every flag and every refusal.
#pragma once

#include "config/config.hpp"
#include "errors/result.hpp"

#include <optional>
#include <string>
#include <vector>

namespace leftover::cli {

enum class Command { check, sweep, config };

// The command under this name is `leftover check --health --failures 3 --drain` (main.cpp).
inline constexpr const char* kHealthProgramName = "leftover-health";

struct Options {
    std::optional<Command> command;  // unset with --help or --version alone
    bool help = false;
    bool version = false;
    std::string config_path = kDefaultConfigPath;
    bool config_path_given = false;
    bool json = false;      // check
    bool health = false;    // check: one line for a health check (NHC, HealthCheckProgram)
    unsigned failures = 1;  // check --health: fail only after this many failed checks in a row
    bool failures_given = false;
    bool drain = false;                       // check --health: drain the node when it fails
    std::string state_dir = "/run/leftover";  // check --health: where the failure streak is kept
    bool state_dir_given = false;
    bool all = false;                      // check: also processes of protected owners, kernel threads, ourselves
    bool dry_run = false;                  // sweep
    bool no_slew = false;                  // sweep
    std::optional<std::string> node;       // check, sweep: instead of slurmd's own choice
    std::optional<std::string> spool_dir;  // check, sweep: instead of SlurmdSpoolDir
};

struct UsageError {
    std::string message;
};

// argv without the program name. Each flag is accepted only by the commands it
// means something to; "--flag=value" and "--flag value" are both accepted.
Result<Options, UsageError> parse_options(const std::vector<std::string>& args);

// The --help text of one command, or of the program when `command` is unset.
std::string help_text(std::optional<Command> command);

const char* to_string(Command command);

}  // namespace leftover::cli

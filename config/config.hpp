// SPDX-License-Identifier: GPL-2.0-or-later
// The configuration: /etc/leftover.conf (JSON as the predecessor wrote it, or YAML).
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover {

enum class LogLevel { debug, info, warn, err, critical };
enum class Scope { node, job_user };
enum class JobSource { local, controller };
// What `cleanup` removes after a swept user (cleanup/ does it).
enum class CleanupKind { ipc, posix_shm, files };

inline constexpr const char* kDefaultConfigPath = "/etc/leftover.conf";

// The defaults; config/config_keys.cpp describes every key (a unit test holds the two equal).
struct Config {
    std::vector<std::string> protected_users;
    std::vector<std::string> protected_users_files;
    uid_t uid_min = 1000;
    uid_t uid_max = 60000;
    LogLevel debuglevel = LogLevel::info;
    double slew = 0;
    std::optional<double> slew_max;  // unset: equal to slew
    Scope scope = Scope::node;
    bool dry_run = false;
    bool sweep_on_controller_host = false;  // sweep where slurmctld runs too
    JobSource job_source = JobSource::local;
    double slurm_timeout = 2;
    double grace = 5;
    std::optional<std::string> metrics_file;  // unset: no metrics
    bool metrics_users = false;
    std::set<CleanupKind> cleanup;          // what to clean after a swept user
    std::vector<std::string> cleanup_dirs;  // where `files` looks
    bool drain_on_survivors = false;        // drain the node when processes outlive SIGKILL

    // Where the values came from: the file read, or empty when the default path
    // did not exist and every value is a default.
    std::string loaded_from;
};

// Reads and validates the configuration. `path_given` says whether the path was
// named explicitly: a missing explicit file is an error, a missing default file means
// all defaults. Every problem is an ErrorKind::config error naming file, key and line.
Result<Config> load_config(const std::string& path, bool path_given);

// Parses configuration text; `origin` names it in error messages.
Result<Config> parse_config(const std::string& text, const std::string& origin);

// The words the config file uses for them.
const char* to_string(LogLevel level);
const char* to_string(Scope scope);
const char* to_string(JobSource source);
const char* to_string(CleanupKind kind);

}  // namespace leftover

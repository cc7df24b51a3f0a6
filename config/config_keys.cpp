// SPDX-License-Identifier: GPL-2.0-or-later
#include "config/config_keys.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <array>
#include <type_traits>

namespace leftover {
namespace {

// In each enum's order: a word's index is its enum value.
constexpr std::array<std::string_view, 5> kLogLevelWords = {"debug", "info", "warn", "err", "critical"};
constexpr std::array<std::string_view, 2> kScopeWords = {"node", "job_user"};
constexpr std::array<std::string_view, 2> kJobSourceWords = {"local", "controller"};
constexpr std::array<std::string_view, 3> kCleanupWords = {"ipc", "posix_shm", "files"};

template <class Enum, std::size_t N>
const char* word_of(Enum value, const std::array<std::string_view, N>& words) {
    const auto index = static_cast<std::size_t>(value);
    return index < N ? words[index].data() : "?";  // each word is a literal, so data() ends in NUL
}

constexpr ConfigKey kConfigKeys[] = {
    {.name = "protected_users",
     .field = &Config::protected_users,
     .type = "list of account names",
     .default_text = "[]",
     .entries = "account names",
     .doc = "never touched; exact, literal, case-sensitive"},
    {.name = "protected_users_files",
     .field = &Config::protected_users_files,
     .type = "list of absolute paths",
     .default_text = "[]",
     .entries = "paths",
     .absolute_paths = true,
     .doc = "files of account names, one per line; blank and `#` lines ignored; whitespace around a name trimmed "
            "(e.g. an operators' `localusers.backup`)"},
    {.name = "uid_min",
     .field = &Config::uid_min,
     .type = "integer",
     .default_text = "1000",
     .doc = "every uid below it is protected; uid 0 always is"},
    {.name = "uid_max",
     .field = &Config::uid_max,
     .type = "integer",
     .default_text = "60000",
     .doc = "every uid above it is protected (`nobody`, dynamic service accounts, container sub-uids; Debian's "
            "`slurm` is 64030)"},
    {.name = "debuglevel",
     .field = &Config::debuglevel,
     .default_text = "info",
     .words = kLogLevelWords,
     .doc = "how much is logged"},
    {.name = "slew",
     .field = &Config::slew,
     .type = "seconds ≥ 0",
     .default_text = "0",
     .doc = "a periodic sweep first waits a random time between `slew` and `slew_max` (not the plugin: it logs "
            "at debug level that it ignores them)"},
    {.name = "slew_max",
     .field = &Config::slew_max,
     .type = "seconds ≥ `slew`",
     .default_text = "unset (= slew)",
     .doc = "the longest wait before a periodic sweep"},
    {.name = "scope",
     .field = &Config::scope,
     .default_text = "node",
     .words = kScopeWords,
     .doc = "`node`: every unprotected user without live work; `job_user`: only the ending job's user"},
    {.name = "dry_run",
     .field = &Config::dry_run,
     .type = "bool",
     .default_text = "false",
     .doc = "decide and log `would kill`, signal nothing"},
    {.name = "sweep_on_controller_host",
     .field = &Config::sweep_on_controller_host,
     .type = "bool",
     .default_text = "false",
     .doc = "sweep a host where slurmctld runs too (a slurmctld process, or slurm.conf's `SlurmctldHost`); "
            "without it a sweep there kills and removes nothing and logs why, as does a sweep that cannot tell"},
    {.name = "job_source",
     .field = &Config::job_source,
     .default_text = "local",
     .words = kJobSourceWords,
     .doc = "where live work comes from: the node's slurmstepd sockets, or slurmctld (asked by the job epilog "
            "and the command only: a step end with `controller` sweeps nothing); either way about every node this "
            "host runs"},
    {.name = "slurm_timeout",
     .field = &Config::slurm_timeout,
     .type = "seconds, > 0 and ≤ 60",
     .default_text = "2",
     .max = 60,
     .min_exclusive = true,
     .doc = "upper bound for one job-state query"},
    {.name = "grace",
     .field = &Config::grace,
     .type = "seconds, 0 to 30",
     .default_text = "5",
     .max = 30,
     .doc = "between SIGTERM and SIGKILL; 0 sends SIGKILL at once"},
    {.name = "metrics_file",
     .field = &Config::metrics_file,
     .type = "absolute path ending in `.prom`",
     .default_text = "unset",
     .path_suffix = ".prom",
     .doc = "after each evaluation, add what it did to this Prometheus textfile (its directory root-owned, not "
            "writable by group or others); see [Monitoring](#monitoring)"},
    {.name = "metrics_users",
     .field = &Config::metrics_users,
     .type = "bool",
     .default_text = "false",
     .doc = "also count kills per user name in the metrics file"},
    {.name = "cleanup",
     .field = &Config::cleanup,
     .type = "list of `ipc`, `posix_shm`, `files`",
     .default_text = "[]",
     .words = kCleanupWords,
     .entries = "words",
     .doc = "after a sweep, remove what the users it swept left: `ipc` SysV shared memory, semaphores and "
            "message queues; `posix_shm` files in `/dev/shm` and `/dev/mqueue`; `files` their entries in "
            "`cleanup_dirs`; see [Cleanup](#cleanup)"},
    {.name = "cleanup_dirs",
     .field = &Config::cleanup_dirs,
     .type = "list of absolute paths",
     .default_text = "[]",
     .entries = "paths",
     .absolute_paths = true,
     .doc = "the directories `files` searches (e.g. `[/tmp, /var/tmp]`); each must be root's and not a "
            "symlink, checked when it is searched"},
    {.name = "drain_on_survivors",
     .field = &Config::drain_on_survivors,
     .type = "bool",
     .default_text = "false",
     .doc = "drain this node through slurmctld when a job epilog's sweep or `leftover sweep` finds a process that "
            "leftover's SIGKILL did not end (uninterruptible sleep, a frozen cgroup) still alive, the same process "
            "and not exiting, `UnkillableStepTimeout` (slurm.conf; 60 s by default) after that SIGKILL, with a "
            "reason such as `leftover: 2 processes of bob survived SIGKILL (D)`, unless it is drained, draining or "
            "down already; see [Monitoring](#monitoring)"},
};

// Whole numbers without a fraction, others as written ("2", "0.5").
std::string seconds_text(double value) { return fmt::format("{}", value); }

}  // namespace

std::span<const ConfigKey> config_keys() { return kConfigKeys; }

const ConfigKey* find_config_key(std::string_view name) {
    for (const ConfigKey& key : kConfigKeys)
        if (key.name == name) return &key;
    return nullptr;
}

std::string value_text(const ConfigKey& key, const Config& config) {
    return std::visit(
        [&](auto member) -> std::string {
            const auto& value = config.*member;
            using Value = std::remove_cvref_t<decltype(value)>;
            if constexpr (std::is_same_v<Value, std::vector<std::string>>)
                return fmt::format("[{}]", fmt::join(value, ", "));
            else if constexpr (std::is_same_v<Value, bool>)
                return value ? "true" : "false";
            else if constexpr (std::is_same_v<Value, double>)
                return seconds_text(value);
            else if constexpr (std::is_same_v<Value, std::optional<double>>)
                return value ? seconds_text(*value) : std::string(key.default_text);
            else if constexpr (std::is_same_v<Value, std::optional<std::string>>)
                return value ? *value : std::string(key.default_text);
            else if constexpr (std::is_same_v<Value, std::set<CleanupKind>>) {
                std::vector<std::string_view> words;
                words.reserve(value.size());
                for (const CleanupKind kind : value) words.emplace_back(to_string(kind));
                return fmt::format("[{}]", fmt::join(words, ", "));
            } else if constexpr (std::is_enum_v<Value>)
                return std::string(key.words[static_cast<std::size_t>(value)]);
            else
                return std::to_string(value);  // a uid
        },
        key.field);
}

const char* to_string(LogLevel level) { return word_of(level, kLogLevelWords); }
const char* to_string(Scope scope) { return word_of(scope, kScopeWords); }
const char* to_string(JobSource source) { return word_of(source, kJobSourceWords); }
const char* to_string(CleanupKind kind) { return word_of(kind, kCleanupWords); }

}  // namespace leftover

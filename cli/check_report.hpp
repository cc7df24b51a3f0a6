// SPDX-License-Identifier: GPL-2.0-or-later
// What `leftover check` prints: the plan as an aligned table with a per-user summary,
// or the same as a JSON document (its shape is documented in leftover(8)).
#pragma once

#include "cli/exit_status.hpp"
#include "sweep/run_sweep.hpp"

#include <optional>
#include <string>
#include <vector>

namespace leftover::cli {

// JSON documents say which shape they have; bump on an incompatible change.
inline constexpr int kCheckJsonFormat = 1;
// The version of man/leftover-check.schema.json the document follows: bumped with any
// change to the schema (a new key too), so a consumer can tell which keys to expect.
inline constexpr int kCheckJsonSchemaVersion = 3;

struct CheckResult {
    std::string node;  // empty when the node is not known
    std::string spool_dir;
    std::string config;                     // the config file read; empty: all defaults (or not read)
    bool all = false;                       // --all: every process, not only those of unprotected users
    std::optional<sweep::NodeCheck> check;  // set unless error is
    std::optional<Error> error;
};

// 0 no strays (or a host where slurmctld runs: a sweep kills nothing), 1 strays found,
// 2 config or lookup error.
int check_exit_status(const CheckResult& result);

// Without --all a row is left out when its owner is protected by uid alone (root,
// system and Slurm accounts: never inspected), or it is a kernel thread, pid 1,
// slurmd, or the command and its callers. Those never hold a stray.
bool is_listed(const Decision& decision, bool all);

struct UserSummary {
    std::string user;  // empty when the account is unknown
    uid_t uid = 0;
    std::size_t processes = 0;
    std::size_t kill = 0;
    std::map<Reason, std::size_t> reasons;
};

// One entry per uid among `decisions`, ordered by user name, then uid.
std::vector<UserSummary> summarize_users(const std::vector<Decision>& decisions);

std::string format_check_table(const CheckResult& result);
std::string format_check_json(const CheckResult& result);
// One line for a health check, in the words NHC and a HealthCheckProgram wrapper pass on
// as the node's drain reason: "leftover: OK: no stray processes",
// "leftover: ERROR: 3 stray processes of 1 user", "leftover: ERROR: lookup error: ...".
std::string format_check_health(const CheckResult& result);

}  // namespace leftover::cli

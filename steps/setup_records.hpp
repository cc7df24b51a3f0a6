// SPDX-License-Identifier: GPL-2.0-or-later
// The jobs slurmd is setting up on this node, as slurmd itself says: it runs every
// plugin's job prolog (`slurmstepd spank prolog`) before the job's Prolog script, and
// leftover's writes a record of the job there (spank/hooks.cpp). The record closes the
// gap no look at /proc can: once the Prolog script has exited and before slurmd forks
// the job's extern slurmstepd (26.05 req.c _rpc_prolog: run_prolog, then
// _spawn_prolog_stepd), the job is allocated here and nothing on the node shows it.
// One file per job in its node's SlurmdSpoolDir (util/root_file.hpp), removed by the
// job's epilog; a record is believed while no step of its job is here, for at most
// kSetupRecordLife, and only of this boot.
#pragma once

#include "errors/result.hpp"
#include "steps/local_steps.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace leftover::steps {

// How long after its job prolog began a record is believed: a Prolog script runs while
// it does, and slurmd forks the extern slurmstepd the moment it ends; a record older
// than this is of a job whose epilog never ran here (slurmd died, the node was cut off).
// A Prolog that runs longer is seen in /proc as it runs (jobs_in_prolog), not after.
inline constexpr std::chrono::milliseconds kSetupRecordLife{std::chrono::minutes(5)};

struct SetupRecord {
    std::uint32_t job_id = 0;
    uid_t uid = 0;
    std::string node_name;
    std::chrono::milliseconds began{0};  // CLOCK_BOOTTIME when the job prolog wrote it
    std::string path{};                  // where read_setup_records found it
    bool operator==(const SetupRecord&) const = default;
};

// <spool_dir>/leftover-setup-<node>.<job> (the node as file_name_part).
std::string setup_record_path(const std::string& spool_dir, const std::string& node_name, std::uint32_t job_id);

// Writes the record of `record.job_id` in `spool_dir` (whose owner may be `dir_owner`
// besides root), dated by `boot_id`.
Status write_setup_record(const std::string& spool_dir, std::optional<uid_t> dir_owner, const std::string& boot_id,
                          const SetupRecord& record);

// Removes the record of `job_id`; none there is no error.
Status remove_setup_record(const std::string& spool_dir, const std::string& node_name, std::optional<uid_t> dir_owner,
                           std::uint32_t job_id);

// Removes a record read_setup_records found (one no longer believed).
Status remove_setup_record(const SetupRecord& found, std::optional<uid_t> dir_owner);

// The records of this boot in every spool dir of `where` that names one of its nodes
// (a spool dir that does not exist holds none), of the jobs `wanted` (told by the file's
// name: the others are not opened). A record that fails root_file's checks or does not
// parse is an error: who is being set up is then unknown.
using WantedJob = std::function<bool(std::uint32_t job_id)>;
Result<std::vector<SetupRecord>> read_setup_records(const StepSockets& where, std::optional<uid_t> dir_owner,
                                                    const std::string& boot_id, const WantedJob& wanted);

// Whether a step of `job_id` has a socket here (listed, whatever it answered): its job
// is past its setup, and its user is live by its step while it runs.
bool has_step_here(std::uint32_t job_id, const LocalJobState& steps);

// Why a record without a step here is not believed; nullopt when it is: older than
// kSetupRecordLife, or dated after now.
std::optional<std::string> why_not_believed(const SetupRecord& record, std::chrono::milliseconds now);

}  // namespace leftover::steps

// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld's last answer about this host's nodes, shared by the sweeps of a burst: the
// job epilogs of an array whose tasks end together each need to know who holds an
// allocation here, and one question can answer them all. One file per node in its
// SlurmdSpoolDir (util/root_file.hpp), written by the sweep that asked; one question at
// a time per node (question_lock_path): a sweep that finds another's in flight waits for
// its answer rather than asking beside it. A sweep believes an answer only if its
// question began after the sweep did, while it is young (kSharedAnswerLife after it
// came) and only if the node has shown no job since that the answer does not know (a
// job start: its Prolog, its first step), so that the answer is never carried across a
// job start the node can see.
#pragma once

#include "errors/result.hpp"
#include "steps/live_work.hpp"
#include "util/root_file.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::controller {

// How long after it came an answer may be shared. An allocation made here after its
// question began, for a user with no process of the new job yet, is what a shared answer
// can miss: for as long as the question took, plus this. A sweep's own question misses
// it for as long as the question takes, and on a loaded node one question (a helper's
// start and a job table) takes a second or more: an answer's life counted from its
// question's start shared nothing there, where a burst's sweeps need it most.
inline constexpr std::chrono::milliseconds kSharedAnswerLife{1000};

struct SharedAnswer {
    std::chrono::milliseconds asked{0};        // CLOCK_BOOTTIME when the question began
    std::vector<std::string> nodes;            // what it asked about: every node this host runs
    std::set<std::uint64_t> local_jobs;        // the jobs the node showed by then (steps, Prologs)
    std::map<std::uint64_t, uid_t> job_users;  // slurmctld's running and suspended jobs on them
    std::chrono::milliseconds answered{0};     // CLOCK_BOOTTIME when it came: its life counts from then
    bool operator==(const SharedAnswer&) const = default;
};

// leftover-question-<node>.lock in spool_dir: held by the sweep whose question to
// slurmctld about this host's nodes is in flight (util/file_lock.hpp).
std::string question_lock_path(const std::string& spool_dir, const std::string& node_name);

// leftover-answer-<node> in spool_dir (bytes of the name other than letters, digits,
// '.', '_' and '-' become '_').
std::string shared_answer_path(const std::string& spool_dir, const std::string& node_name);

// The answer in `file`, if there is one of this boot (`boot_id`). A file that fails
// root_file's checks or does not parse is an error: it is not believed.
Result<std::optional<SharedAnswer>> read_shared_answer(const RootFile& file, const std::string& boot_id);

Status write_shared_answer(const RootFile& file, const std::string& boot_id, const SharedAnswer& answer);

// What a sweep that would take a shared answer is: when it began, what it asks about,
// which jobs its node shows now (the boot clock's times, as SharedAnswer::asked).
struct SharingSweep {
    std::chrono::milliseconds began{0};
    std::chrono::milliseconds now{0};
    std::vector<std::string> nodes;
    std::set<std::uint64_t> local_jobs;
};

// Why `answer` may not answer `sweep`'s question; nullopt when it may: asked after the
// sweep began (an older one may list a job of its user's that ended before the sweep
// began, and keep strays a fresh question would not), come at most kSharedAnswerLife
// ago, about the same nodes, knowing every job the node shows now.
std::optional<std::string> why_not_shared(const SharedAnswer& answer, const SharingSweep& sweep);

// The live work the answer says, apart from `ending_job` (as jobs_on_nodes leaves it out).
steps::LiveWork live_work_of(const SharedAnswer& answer, std::optional<std::uint32_t> ending_job);

// Leaves `ending_job` out of slurmctld's answer `work` as jobs_on_nodes would have: the
// job, and its user unless another job of theirs runs there.
void leave_out(steps::LiveWork& work, std::optional<std::uint32_t> ending_job);

}  // namespace leftover::controller

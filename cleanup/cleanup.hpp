// SPDX-License-Identifier: GPL-2.0-or-later
// Node hygiene after a sweep: the SysV IPC objects, POSIX shared memory and message
// queues, and scratch files of users that have nothing left on the node. The caller
// (sweep/run_cleanup.cpp) decides which uids; this removes only what they own and
// returns what it did, one record per object. It logs nothing.
#pragma once

#include "cleanup/cleanup_calls.hpp"
#include "config/config.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leftover {

enum class ObjectKind { shm_segment, semaphore, message_queue, posix_shm, posix_mqueue, file, directory };

enum class CleanupOutcome {
    removed,
    would_remove,  // dry run
    failed,        // the removal was tried and failed: `error` says why
    changed,       // not removed: owner, inode or attachment changed since it was found
};

struct CleanupRecord {
    CleanupRecord() = default;
    CleanupRecord(ObjectKind k, std::string n, uid_t u, std::uint64_t b, CleanupOutcome o = CleanupOutcome::removed)
        : kind(k), name(std::move(n)), uid(u), bytes(b), outcome(o) {}

    ObjectKind kind = ObjectKind::file;
    std::string name;  // the IPC id, or the path (raw: escape before logging)
    uid_t uid = 0;
    std::uint64_t bytes = 0;
    CleanupOutcome outcome = CleanupOutcome::removed;
    int error = 0;       // errno for failed
    std::string detail;  // for changed: what changed
};

struct CleanupOptions {
    std::set<CleanupKind> kinds;
    std::string proc_root = "/proc";  // /proc/sysvipc, /proc/self/ns/ipc, /proc/1/ns/ipc
    std::string shm_dir = "/dev/shm";
    std::string mqueue_dir = "/dev/mqueue";  // searched only where an mqueue file system is mounted
    std::vector<std::string> dirs;           // for files: absolute, root-owned, not symlinks
    bool dry_run = false;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    int max_depth = 64;                 // directory levels below each searched directory
    std::size_t max_entries = 1000000;  // directory entries looked at in each searched directory
};

struct CleanupReport {
    std::vector<CleanupRecord> records;
    // What could not be searched or was left unsearched, each naming the place and why
    // ("/tmp/x: deeper than 64 levels, not searched"); nothing here stops the rest.
    std::vector<std::string> errors;
    bool deadline_reached = false;
};

// Removes (or in a dry run lists) what the uids own, by the rules in leftover.conf(5),
// CLEANUP. Always returns by the deadline, give or take one system call.
CleanupReport clean_up(const std::set<uid_t>& uids, const CleanupOptions& options,
                       CleanupCalls& calls = real_cleanup_calls());

// The parts clean_up runs, for the tests.
void clean_up_sysv(const std::set<uid_t>& uids, const CleanupOptions& options, CleanupCalls& calls,
                   CleanupReport& report);
// Searches `dir` (a root-owned directory, not a symlink) for what the uids own.
void clean_up_tree(const std::string& dir, ObjectKind kind, const std::set<uid_t>& uids, const CleanupOptions& options,
                   CleanupCalls& calls, CleanupReport& report);

struct CleanupTotals {
    std::size_t ipc_objects = 0;  // SysV and POSIX
    std::size_t files = 0;        // files and directories under cleanup_dirs
    std::uint64_t bytes = 0;
    std::size_t errors = 0;  // failed records and report errors
    bool dry_run = false;
};
// What was removed (or would be, in a dry run).
CleanupTotals totals_of(const CleanupReport& report, bool dry_run);

const char* to_string(ObjectKind kind);
const char* to_string(CleanupOutcome outcome);  // its enumerator's name, as check --json has it

}  // namespace leftover

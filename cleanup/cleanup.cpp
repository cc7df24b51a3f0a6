// SPDX-License-Identifier: GPL-2.0-or-later
#include "cleanup/cleanup.hpp"

namespace leftover {

CleanupReport clean_up(const std::set<uid_t>& uids, const CleanupOptions& options, CleanupCalls& calls) {
    CleanupReport report;
    if (uids.empty()) return report;
    if (options.kinds.count(CleanupKind::ipc) != 0) clean_up_sysv(uids, options, calls, report);
    if (options.kinds.count(CleanupKind::posix_shm) != 0) {
        clean_up_tree(options.shm_dir, ObjectKind::posix_shm, uids, options, calls, report);
        if (calls.is_mqueue_fs(options.mqueue_dir))
            clean_up_tree(options.mqueue_dir, ObjectKind::posix_mqueue, uids, options, calls, report);
    }
    if (options.kinds.count(CleanupKind::files) != 0)
        for (const std::string& dir : options.dirs) clean_up_tree(dir, ObjectKind::file, uids, options, calls, report);
    return report;
}

CleanupTotals totals_of(const CleanupReport& report, bool dry_run) {
    CleanupTotals totals;
    totals.dry_run = dry_run;
    totals.errors = report.errors.size();
    const CleanupOutcome done = dry_run ? CleanupOutcome::would_remove : CleanupOutcome::removed;
    for (const CleanupRecord& record : report.records) {
        if (record.outcome == CleanupOutcome::failed) ++totals.errors;
        if (record.outcome != done) continue;
        if (record.kind == ObjectKind::file || record.kind == ObjectKind::directory)
            ++totals.files;
        else
            ++totals.ipc_objects;
        totals.bytes += record.bytes;
    }
    return totals;
}

const char* to_string(ObjectKind kind) {
    switch (kind) {
        case ObjectKind::shm_segment: return "shm";
        case ObjectKind::semaphore: return "sem";
        case ObjectKind::message_queue: return "msg";
        case ObjectKind::posix_shm: return "posix_shm";
        case ObjectKind::posix_mqueue: return "mqueue";
        case ObjectKind::file: return "file";
        case ObjectKind::directory: return "dir";
    }
    return "?";
}

const char* to_string(CleanupOutcome outcome) {
    switch (outcome) {
        case CleanupOutcome::removed: return "removed";
        case CleanupOutcome::would_remove: return "would_remove";
        case CleanupOutcome::failed: return "failed";
        case CleanupOutcome::changed: return "changed";
    }
    return "?";
}

}  // namespace leftover

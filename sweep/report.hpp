// SPDX-License-Identifier: GPL-2.0-or-later
// The words a front end logs: one line per action, one summary per evaluation.
// Pure formatting; the plugin and the command decide where the lines go.
#pragma once

#include "cleanup/cleanup.hpp"
#include "kill/executor.hpp"

#include <sys/types.h>

#include <optional>
#include <string>

namespace leftover::sweep {

// "SIGTERM pid=123 user=alice uid=41001 comm='sleep' reason=stray (no live work on this node)"
// or, in a dry run, "would kill pid=123 ...". Failures say what failed.
std::string format_action(const KillRecord& record);

struct SummaryInput {
    std::string trigger;  // "job 12 step 0", "job 12 epilog", "node sweep"
    std::optional<uid_t> trigger_uid;
    std::string trigger_user;
    bool dry_run = false;
    double milliseconds = 0;
};

// "job 12 step 0 (user alice uid 41001): swept [alice]; killed 2; kept 143 (...); survivors 0; lookup errors 0; 3.1 ms"
// With `cleanup` (when the cleanup ran), "...; 3.1 ms; cleanup: removed 3 IPC objects, 2 files, 1.2 GiB".
std::string format_summary(const SummaryInput& input, const KillReport& report,
                           const std::optional<CleanupTotals>& cleanup = std::nullopt);

std::string signal_name(int signal);

// "removed shm id=32769 uid=41001 bytes=1024", "would remove file path='/tmp/x' uid=41001 bytes=3 (dry run)"
std::string format_cleanup_record(const CleanupRecord& record);
// "removed 3 IPC objects, 2 files, 1.2 GiB", or "would remove ..." in a dry run
std::string format_cleanup_totals(const CleanupTotals& totals);
// 1288490188 -> "1.2 GiB", 512 -> "512 B"
std::string format_bytes(std::uint64_t bytes);

}  // namespace leftover::sweep

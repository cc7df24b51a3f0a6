// SPDX-License-Identifier: GPL-2.0-or-later
// The metrics file: read, add one evaluation, write a temporary file in the same
// directory and rename it over the old one, all under an flock on a lock file beside
// it, so concurrent step ends on one node never lose an update. A failure here is
// reported, never acted on: it must not change what is killed nor fail a hook.
#pragma once

#include "errors/result.hpp"
#include "metrics/metrics.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>

namespace leftover {

struct MetricsFileOptions {
    bool users = false;                         // metrics_users
    uid_t directory_owner = 0;                  // root; the tests use their own uid
    std::chrono::milliseconds lock_wait{1000};  // a hung holder never holds a step end longer
    std::chrono::milliseconds lock_poll{5};     // flock has no timeout: try again this often
    // The evaluation's deadline: the lock is not waited for past it (tried once when it passed).
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct MetricsUpdate {
    // Set when the file there was not ours (corrupt, foreign, cut off): it was replaced
    // and its counters start again from this evaluation. Says what was wrong.
    std::string replaced_because;
};

// `<path>.lock`: node_exporter reads only *.prom, so it ignores the lock and the temporary file.
std::string metrics_lock_path(const std::string& path);

// Errors: the directory is not a root-owned directory nobody else can write, a directory
// above it is not root's or is writable by group or others (unless sticky), the lock
// file is not root's alone, the lock was not free within lock_wait or by the deadline,
// or I/O failed.
// Nothing is written then.
Result<MetricsUpdate> update_metrics_file(const std::string& path, const EvaluationSample& sample,
                                          const MetricsFileOptions& options = {});

}  // namespace leftover

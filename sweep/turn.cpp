// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/turn.hpp"

#include "util/escape.hpp"

#include <fmt/format.h>

namespace leftover::sweep {

std::string turn_lock_path(const std::string& spool_dir, const std::string& node_name) {
    return node_file_path(spool_dir, "leftover-sweep-", node_name, ".lock");
}

NodeTurn NodeTurn::take(const SweepRequest& request, std::chrono::steady_clock::time_point deadline, Logger& log,
                        std::chrono::milliseconds poll) {
    const auto started = std::chrono::steady_clock::now();
    const std::string path = turn_lock_path(request.node.spool_dir, request.node.node_name);
    const auto alone = [&](const std::string& why) {
        log.warn(
            fmt::format("sweep lock: {}; this sweep runs without taking turns with other sweeps of this node", why));
        return NodeTurn(std::nullopt, path, SweepTurn::alone, std::chrono::steady_clock::now() - started);
    };
    if (request.node.spool_dir.empty()) return alone("no SlurmdSpoolDir is known for this node");
    auto wait = FileLock::wait_for(path, request.node.slurmd_uid, deadline, poll);
    if (!wait.ok()) return alone(wait.error().message);
    const std::chrono::duration<double> waited = wait->waited;
    switch (wait->how) {
        case FileLock::Taken::at_once: return NodeTurn(std::move(wait->lock), path, SweepTurn::free, waited);
        case FileLock::Taken::after_wait:
            log.info(fmt::format("waited {:.1f} s for another sweep of this node (lock {}); judging what it left",
                                 waited.count(), path));
            return NodeTurn(std::move(wait->lock), path, SweepTurn::waited, waited);
        case FileLock::Taken::deadline: break;
    }
    return NodeTurn(std::nullopt, path, SweepTurn::missed, waited);
}

Error NodeTurn::missed_error() const {
    return Error::lookup(fmt::format("another sweep of this node held its turn (lock {}) until this sweep's "
                                     "deadline ({:.1f} s waited)",
                                     path_, waited_.count()),
                         ErrorSource::deadline);
}

void NodeTurn::release() {
    if (lock_) lock_->release();
}

}  // namespace leftover::sweep

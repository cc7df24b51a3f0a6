// SPDX-License-Identifier: GPL-2.0-or-later
// The command's log sink: standard error, as slurmd's log is the plugin's. Logger
// still copies kills, dry-run decisions, warnings and errors to syslog.
#pragma once

#include "sweep/log.hpp"

#include <ostream>

namespace leftover::cli {

class StreamLogSink final : public sweep::LogSink {
public:
    explicit StreamLogSink(std::ostream& out) : out_(out) {}
    // "leftover: text", "leftover: warning: text", "leftover: error: text".
    void write(LogLevel level, const std::string& text) override;

private:
    std::ostream& out_;
};

}  // namespace leftover::cli

// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/stream_log.hpp"

namespace leftover::cli {

void StreamLogSink::write(LogLevel level, const std::string& text) {
    const char* tag = "";
    if (level == LogLevel::warn)
        tag = "warning: ";
    else if (level >= LogLevel::err)
        tag = "error: ";
    // Flushed per line: a sweep that waits out grace shows what it did so far.
    out_ << "leftover: " << tag << text << std::endl;
}

}  // namespace leftover::cli

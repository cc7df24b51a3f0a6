// SPDX-License-Identifier: GPL-2.0-or-later
// Where a front end's lines go. The plugin writes into Slurm's log, the command to
// stderr; both copy kills, dry-run decisions and errors to syslog.
#pragma once

#include "config/config.hpp"
#include "drain/drain_result.hpp"

#include <string>

namespace leftover::sweep {

class LogSink {
public:
    virtual ~LogSink() = default;
    // `text` has no "leftover: " prefix; the sink adds it where it is needed.
    virtual void write(LogLevel level, const std::string& text) = 0;
};

// Filters by debuglevel and copies notable lines (and every warning or error) to syslog.
class Logger {
public:
    explicit Logger(LogSink& sink, LogLevel threshold = LogLevel::info) : sink_(sink), threshold_(threshold) {}
    void set_threshold(LogLevel threshold) { threshold_ = threshold; }

    void debug(const std::string& text) { emit(LogLevel::debug, text, false); }
    void info(const std::string& text) { emit(LogLevel::info, text, false); }
    void warn(const std::string& text) { emit(LogLevel::warn, text, true); }
    void error(const std::string& text) { emit(LogLevel::err, text, true); }
    // A kill, a would-kill, a failed signal: always in syslog too.
    void action(LogLevel level, const std::string& text) { emit(level, text, true); }

private:
    void emit(LogLevel level, const std::string& text, bool to_syslog);

    LogSink& sink_;
    LogLevel threshold_;
};

// A drain request's line: a warning when the node was drained, an error when the request
// failed, else information.
void log_drain(Logger& log, const drain::DrainReport& report);
// The drain's notes, then its request's line.
void log_drain(Logger& log, const drain::DrainOutcome& outcome);

// Sends one message to the local syslog socket with ident "leftover", facility daemon,
// without touching the process's own openlog() state (slurmstepd may use syslog itself)
// and without ever blocking.
void send_to_syslog(LogLevel level, const std::string& text);

}  // namespace leftover::sweep

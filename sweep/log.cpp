// SPDX-License-Identifier: GPL-2.0-or-later
#include "sweep/log.hpp"

#include "util/unique_fd.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace leftover::sweep {
namespace {

int syslog_priority(LogLevel level) {
    switch (level) {
        case LogLevel::debug: return LOG_DEBUG;
        case LogLevel::info: return LOG_INFO;
        case LogLevel::warn: return LOG_WARNING;
        case LogLevel::err: return LOG_ERR;
        case LogLevel::critical: return LOG_CRIT;
    }
    return LOG_INFO;
}

}  // namespace

void Logger::emit(LogLevel level, const std::string& text, bool to_syslog) {
    if (level < threshold_) return;
    sink_.write(level, text);
    if (to_syslog) send_to_syslog(level, text);
}

void log_drain(Logger& log, const drain::DrainReport& report) {
    switch (report.result) {
        case drain::DrainResult::drained: log.warn(report.text); return;
        case drain::DrainResult::kept: log.info(report.text); return;
        case drain::DrainResult::failed: log.error(report.text); return;
    }
}

void log_drain(Logger& log, const drain::DrainOutcome& outcome) {
    for (const auto& [level, text] : outcome.notes) switch (level) {
            case LogLevel::debug: log.debug(text); break;
            case LogLevel::info: log.info(text); break;
            case LogLevel::warn: log.warn(text); break;
            case LogLevel::err:
            case LogLevel::critical: log.error(text); break;
        }
    if (outcome.request) log_drain(log, *outcome.request);
}

void send_to_syslog(LogLevel level, const std::string& text) {
    const UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    constexpr char kPath[] = "/dev/log";
    static_assert(sizeof kPath <= sizeof address.sun_path);
    std::copy(std::begin(kPath), std::end(kPath), address.sun_path);
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    const std::string message = fmt::format("<{}>{:%b %e %H:%M:%S} leftover[{}]: {}",
                                            LOG_DAEMON | syslog_priority(level), local, ::getpid(), text);
    // Best effort: a missing or full syslog must never hold up a job's end.
    (void)::sendto(fd.get(), message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                   reinterpret_cast<const sockaddr*>(&address), sizeof address);
}

}  // namespace leftover::sweep

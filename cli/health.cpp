// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/health.hpp"

#include "cli/exit_status.hpp"
#include "drain/drain_node.hpp"
#include "drain/reason.hpp"
#include "sweep/record_metrics.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>

namespace leftover::cli {
namespace {

// The streak decides a drain: kept where only its owner (root, or the test's user) writes.
Status check_state_dir(const std::string& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        return Error::lookup(fmt::format("health state dir {}: {}", dir, errno_text(errno)), ErrorSource::other);
    if (!S_ISDIR(st.st_mode))
        return Error::lookup(fmt::format("health state dir {} is not a directory", dir), ErrorSource::other);
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return Error::lookup(
            fmt::format("health state dir {} must be owned by uid {} and not writable by group or others", dir,
                        ::geteuid()),
            ErrorSource::other);
    return Ok{};
}

}  // namespace

std::string streak_path(const std::string& state_dir) { return state_dir + "/health-failures"; }

Result<unsigned> read_streak(const std::string& state_dir) {
    if (::access(state_dir.c_str(), F_OK) != 0 && errno == ENOENT) return 0u;
    LEFTOVER_TRY(check_state_dir(state_dir));
    const std::string path = streak_path(state_dir);
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd.valid()) {
        if (errno == ENOENT) return 0u;
        return Error::lookup(fmt::format("cannot open {}: {}", path, errno_text(errno)), ErrorSource::other);
    }
    char buffer[16];
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) return Error::lookup(fmt::format("cannot read {}: {}", path, errno_text(errno)), ErrorSource::other);
    unsigned value = 0;
    ssize_t i = 0;
    for (; i < n && buffer[i] >= '0' && buffer[i] <= '9' && value < 100000; ++i)
        value = value * 10 + static_cast<unsigned>(buffer[i] - '0');
    if (i == 0 || i + 1 != n || buffer[i] != '\n')
        return Error::lookup(fmt::format("{} holds no count of failures", path), ErrorSource::other);
    return value;
}

Status write_streak(const std::string& state_dir, unsigned failures) {
    const std::string path = streak_path(state_dir);
    if (failures == 0) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            return Error::lookup(fmt::format("cannot remove {}: {}", path, errno_text(errno)), ErrorSource::other);
        return Ok{};
    }
    if (::mkdir(state_dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::lookup(fmt::format("cannot create {}: {}", state_dir, errno_text(errno)), ErrorSource::other);
    LEFTOVER_TRY(check_state_dir(state_dir));
    const std::string temporary = path + ".tmp";
    {
        const UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (!fd.valid())
            return Error::lookup(fmt::format("cannot write {}: {}", temporary, errno_text(errno)), ErrorSource::other);
        const std::string text = fmt::format("{}\n", failures);
        if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return Error::lookup(fmt::format("cannot write {}: {}", temporary, errno_text(errno)), ErrorSource::other);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
        return Error::lookup(fmt::format("cannot rename {} to {}: {}", temporary, path, errno_text(errno)),
                             ErrorSource::other);
    return Ok{};
}

HealthVerdict judge_health(const std::string& line, int status, unsigned previous, unsigned needed) {
    if (status == kExitClean) return {0, false, false, line};
    if (status == kExitError) return {previous, true, true, line};
    HealthVerdict verdict;
    verdict.streak = previous + 1;
    verdict.fails = verdict.streak >= needed;
    std::string text = line;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (needed > 1)
        text += verdict.fails
                    ? fmt::format(" ({} failed checks in a row)", verdict.streak)
                    : fmt::format(" ({} of {} failed checks in a row before it fails)", verdict.streak, needed);
    verdict.line = text + "\n";
    return verdict;
}

std::optional<std::string> why_not_drain(const Config& config) {
    if (config.dry_run)
        return std::string(
            "dry_run is set, so no sweep reaps these strays and a drain would last until an admin "
            "resumes the node");
    if (config.scope == Scope::job_user)
        return std::string("scope is job_user, so a stray is reaped only when a job of its own user ends here");
    return std::nullopt;
}

std::optional<drain::DrainResult> drain_for_health(const HealthDrain& health, sweep::Logger& log) {
    if (health.verdict.error || !health.verdict.fails) return std::nullopt;
    if (const auto why = why_not_drain(health.config)) {
        if (health.first) log.warn(fmt::format("health check: node {} not drained: {}", health.node_name, *why));
        return std::nullopt;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(health.config.slurm_timeout));
    std::string reason = health.verdict.line;
    if (!reason.empty() && reason.back() == '\n') reason.pop_back();
    const drain::DrainReport drained = drain::request_drain(health.controller, health.node_name,
                                                            drain::bounded_reason(reason), deadline, "health check");
    sweep::log_drain(log, drained);
    sweep::record_drain(health.metrics, drained.result, log);
    return drained.result;
}

}  // namespace leftover::cli

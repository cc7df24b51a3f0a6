// SPDX-License-Identifier: GPL-2.0-or-later
#include "metrics/metrics_file.hpp"

#include "util/errno_text.hpp"
#include "util/trusted_file.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace leftover {
namespace {

constexpr std::size_t kMaxMetricsFileSize = std::size_t{1} << 20;  // ours is a few KiB; more is not ours

Error failed(const std::string& what, int err) {
    return Error::lookup(fmt::format("{}: {}", what, errno_text(err)), ErrorSource::other);
}

// The directory, opened and checked itself: a directory, owned by the required owner,
// writable by nobody else (a user who could write there could swap our file or lock).
Result<UniqueFd> open_directory(const std::string& dir, uid_t owner) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return failed(fmt::format("metrics directory {}: cannot open", dir), errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(fmt::format("metrics directory {}: cannot stat", dir), errno);
    if (st.st_uid != owner)
        return Error::lookup(
            fmt::format("metrics directory {}: owned by uid {}; expected uid {} (root)", dir, st.st_uid, owner),
            ErrorSource::other);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return Error::lookup(
            fmt::format("metrics directory {}: mode {:04o}; it must not be writable by group or others", dir,
                        st.st_mode & 07777),
            ErrorSource::other);
    // Whoever could write a directory above could rename this one away and put their own
    // in its place, as for the config file.
    if (auto above = check_trusted_directory_chain(fd.get(), dir, owner); !above.ok())
        return Error::lookup(fmt::format("metrics directory {}: {}", dir, above.error().message), ErrorSource::other);
    return fd;
}

// The lock file, created 0600 if missing. Anyone who can open a file can flock it, so
// only its owner may: otherwise a user could hold the lock and stop every update.
Result<UniqueFd> open_lock(int dir_fd, const std::string& name, const std::string& shown, uid_t owner) {
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600));
    if (!fd.valid()) return failed(fmt::format("metrics lock {}: cannot open", shown), errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(fmt::format("metrics lock {}: cannot stat", shown), errno);
    if (!S_ISREG(st.st_mode) || st.st_uid != owner || (st.st_mode & 077) != 0)
        return Error::lookup(fmt::format("metrics lock {}: must be a regular file of uid {} that only it can open "
                                         "(found uid {}, mode {:04o})",
                                         shown, owner, st.st_uid, st.st_mode & 07777),
                             ErrorSource::other);
    return fd;
}

// Waits for the lock up to lock_wait, and never past the evaluation's deadline.
Status lock_within(int fd, const std::string& shown, const MetricsFileOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    const bool by_deadline = options.deadline - started < options.lock_wait;
    const auto until = by_deadline ? options.deadline : started + options.lock_wait;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return Ok{};
        if (errno != EWOULDBLOCK && errno != EINTR) return failed(fmt::format("metrics lock {}: flock", shown), errno);
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) {
            if (by_deadline)
                return Error::lookup(fmt::format("metrics lock {}: still held by another update at the evaluation's "
                                                 "deadline",
                                                 shown),
                                     ErrorSource::deadline);
            return Error::lookup(fmt::format("metrics lock {}: still held after {} ms by another update", shown,
                                             options.lock_wait.count()),
                                 ErrorSource::other);
        }
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(options.lock_poll, until - now));
    }
}

// The current totals, or fresh ones with why the file there was not ours.
Result<std::pair<Metrics, std::string>> read_current(int dir_fd, const std::string& name, const std::string& shown) {
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::pair{Metrics{}, std::string{}};
        if (errno == ELOOP) return std::pair{Metrics{}, std::string("it is a symbolic link")};
        return failed(fmt::format("metrics file {}: cannot open", shown), errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(fmt::format("metrics file {}: cannot stat", shown), errno);
    if (!S_ISREG(st.st_mode))
        return Error::lookup(fmt::format("metrics file {}: not a regular file; leave it to an admin", shown),
                             ErrorSource::other);
    if (static_cast<std::size_t>(st.st_size) > kMaxMetricsFileSize)
        return std::pair{Metrics{}, fmt::format("it is larger than {} bytes", kMaxMetricsFileSize)};
    std::string text;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            return failed(fmt::format("metrics file {}: cannot read", shown), errno);
        }
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMaxMetricsFileSize)
            return std::pair{Metrics{}, fmt::format("it is larger than {} bytes", kMaxMetricsFileSize)};
    }
    auto parsed = Metrics::parse(text);
    if (!parsed.ok()) return std::pair{Metrics{}, parsed.error().message};
    return std::pair{std::move(parsed).value(), std::string{}};
}

Status write_all(int fd, const std::string& text, const std::string& shown) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return failed(fmt::format("metrics file {}: cannot write", shown), errno);
        }
        done += static_cast<std::size_t>(n);
    }
    return Ok{};
}

}  // namespace

std::string metrics_lock_path(const std::string& path) { return path + ".lock"; }

Result<MetricsUpdate> update_metrics_file(const std::string& path, const EvaluationSample& sample,
                                          const MetricsFileOptions& options) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos || slash + 1 == path.size())
        return Error::config(fmt::format("metrics file {}: expected an absolute path to a file", path),
                             ErrorSource::config);
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    const std::string name = path.substr(slash + 1);
    const std::string lock_name = name + ".lock";
    const std::string temp_name = name + ".tmp";  // under the lock, one writer at a time

    auto dir_fd = open_directory(dir, options.directory_owner);
    LEFTOVER_TRY(dir_fd);
    auto lock = open_lock(dir_fd->get(), lock_name, metrics_lock_path(path), options.directory_owner);
    LEFTOVER_TRY(lock);
    LEFTOVER_TRY(lock_within(lock->get(), metrics_lock_path(path), options));

    auto current = read_current(dir_fd->get(), name, path);
    LEFTOVER_TRY(current);
    auto& [metrics, replaced_because] = current.value();
    metrics.add(sample);

    const std::string shown_temp = dir + "/" + temp_name;
    UniqueFd temp(
        ::openat(dir_fd->get(), temp_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!temp.valid()) return failed(fmt::format("metrics file {}: cannot create", shown_temp), errno);
    // node_exporter usually runs as its own user: the file must be readable, whatever the umask.
    if (::fchmod(temp.get(), 0644) != 0) return failed(fmt::format("metrics file {}: chmod", shown_temp), errno);
    LEFTOVER_TRY(write_all(temp.get(), metrics.render(options.users), shown_temp));
    if (::close(temp.release()) != 0) return failed(fmt::format("metrics file {}: close", shown_temp), errno);
    if (::renameat(dir_fd->get(), temp_name.c_str(), dir_fd->get(), name.c_str()) != 0)
        return failed(fmt::format("metrics file {}: cannot rename {} over it", path, shown_temp), errno);
    return MetricsUpdate{replaced_because};
}

}  // namespace leftover

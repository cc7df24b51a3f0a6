// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/root_file.hpp"

#include "errors/error.hpp"
#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace leftover {

Error root_file_error(const RootFile& file, const std::string& why) {
    return Error::lookup(fmt::format("{} {}: {}", file.what, file.path, why), ErrorSource::other);
}

namespace {

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<UniqueFd> open_directory(const RootFile& file) {
    UniqueFd fd(::open(directory_of(file.path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return root_file_error(file, fmt::format("cannot open its directory: {}", errno_text(errno)));
    return fd;
}

// The directory may hold the file: root's (or dir_owner's) and not writable by group or others.
Status check_directory(int dir, const RootFile& file) {
    struct stat st {};
    if (::fstat(dir, &st) != 0)
        return root_file_error(file, fmt::format("stat of its directory: {}", errno_text(errno)));
    if (st.st_uid != 0 && (!file.dir_owner || st.st_uid != *file.dir_owner))
        return root_file_error(file,
                               fmt::format("its directory is owned by uid {}, not by root or SlurmdUser", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return root_file_error(
            file, fmt::format("its directory is writable by group or others (mode {:04o})", st.st_mode & 07777));
    return Ok{};
}

Result<UniqueFd> open_trusted_dir(const RootFile& file) {
    auto dir = open_directory(file);
    LEFTOVER_TRY(dir);
    LEFTOVER_TRY(check_directory(dir->get(), file));
    return dir;
}

}  // namespace

Result<std::optional<std::string>> read_root_file(const RootFile& file, std::size_t max_size) {
    auto dir = open_directory(file);
    LEFTOVER_TRY(dir);
    const UniqueFd fd(
        ::openat(dir->get(), base_name(file.path).c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::optional<std::string>();
        return root_file_error(file, fmt::format("cannot open it: {}", errno_text(errno)));
    }
    LEFTOVER_TRY(check_directory(dir->get(), file));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return root_file_error(file, fmt::format("stat: {}", errno_text(errno)));
    if (!S_ISREG(st.st_mode)) return root_file_error(file, "not a regular file");
    if (st.st_uid != 0) return root_file_error(file, fmt::format("owned by uid {}, not by root", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return root_file_error(file, fmt::format("writable by group or others (mode {:04o})", st.st_mode & 07777));
    if (static_cast<std::size_t>(st.st_size) > max_size) return root_file_error(file, "too large");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t used = 0;
    while (used < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return root_file_error(file, fmt::format("cannot read it: {}", errno_text(errno)));
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
    }
    text.resize(used);
    return std::optional<std::string>(std::move(text));
}

Result<std::optional<std::string>> read_root_file_of_boot(const RootFile& file, std::size_t max_size,
                                                          std::string_view magic, const std::string& boot_id,
                                                          const std::string& not_ours) {
    auto text = read_root_file(file, max_size);
    LEFTOVER_TRY(text);
    if (!text->has_value()) return text;
    const std::string& whole = **text;
    const std::size_t end = whole.find('\n');
    const std::string_view first = std::string_view(whole).substr(0, end);
    if (end == std::string::npos || !first.starts_with(magic)) return root_file_error(file, not_ours);
    if (first.substr(magic.size()) != boot_id) return std::optional<std::string>();  // of an earlier boot
    return std::optional<std::string>(whole.substr(end + 1));
}

WordLines read_word_lines(const std::string& text, std::initializer_list<std::string_view> words) {
    WordLines out;
    std::size_t at = 0;
    for (const std::string_view word : words) {
        if (at >= text.size()) {
            out.values.emplace_back();
            continue;
        }
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = std::string_view(text).substr(at, end - at);
        at = end + 1;
        if (line == word)
            out.values.emplace_back(std::string());
        else if (line.starts_with(word) && line.size() > word.size() && line[word.size()] == ' ')
            out.values.emplace_back(std::string(line.substr(word.size() + 1)));
        else
            out.values.emplace_back();
    }
    out.rest = at < text.size() ? text.substr(at) : std::string();
    return out;
}

Status write_root_file(const RootFile& file, const std::string& text) {
    auto dir = open_trusted_dir(file);
    LEFTOVER_TRY(dir);
    const std::string name = base_name(file.path);
    // A temporary file of this thread's own: two sweeps that write at once (two job
    // epilogs sharing slurmctld's answer) must not write into one inode, which the first
    // rename makes the file a reader opens while the second still writes it.
    const std::string temporary = fmt::format("{}.tmp.{}", name, ::gettid());
    {
        const UniqueFd fd(::openat(dir->get(), temporary.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
        if (!fd.valid()) return root_file_error(file, fmt::format("cannot write {}: {}", temporary, errno_text(errno)));
        if (::fchmod(fd.get(), 0600) != 0 ||
            ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return root_file_error(file, fmt::format("cannot write {}: {}", temporary, errno_text(errno)));
    }
    if (::renameat(dir->get(), temporary.c_str(), dir->get(), name.c_str()) != 0)
        return root_file_error(file, fmt::format("cannot rename {} to it: {}", temporary, errno_text(errno)));
    return Ok{};
}

Status remove_root_file(const RootFile& file) {
    auto dir = open_trusted_dir(file);
    LEFTOVER_TRY(dir);
    if (::unlinkat(dir->get(), base_name(file.path).c_str(), 0) != 0 && errno != ENOENT)
        return root_file_error(file, fmt::format("cannot remove it: {}", errno_text(errno)));
    return Ok{};
}

}  // namespace leftover

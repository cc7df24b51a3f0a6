// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/survivor_record.hpp"

#include "errors/error.hpp"
#include "util/errno_text.hpp"
#include "util/escape.hpp"
#include "util/unique_fd.hpp"
#include "util/whole_number.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <ctime>
#include <sstream>

namespace leftover::drain {
namespace {

// The first line: what the file is, its format, the boot its times count from.
constexpr std::string_view kMagic = "leftover-survivors 1 ";
constexpr std::size_t kMaxRecordSize = std::size_t{1} << 20;

Error record_error(const std::string& path, const std::string& why) {
    return Error::lookup(fmt::format("survivors' record {}: {}", path, why), ErrorSource::other);
}

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<UniqueFd> open_directory(const std::string& path) {
    UniqueFd fd(::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return record_error(path, fmt::format("cannot open its directory: {}", errno_text(errno)));
    return fd;
}

// The directory may hold the record: root's (or `owner`'s) and not writable by group or others.
Status check_directory(int dir, const std::string& path, std::optional<uid_t> owner) {
    struct stat st {};
    if (::fstat(dir, &st) != 0) return record_error(path, fmt::format("stat of its directory: {}", errno_text(errno)));
    if (st.st_uid != 0 && (!owner || st.st_uid != *owner))
        return record_error(path,
                            fmt::format("its directory is owned by uid {}, not by root or SlurmdUser", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return record_error(
            path, fmt::format("its directory is writable by group or others (mode {:04o})", st.st_mode & 07777));
    return Ok{};
}

Result<UniqueFd> open_trusted_dir(const std::string& path, std::optional<uid_t> owner) {
    auto dir = open_directory(path);
    LEFTOVER_TRY(dir);
    LEFTOVER_TRY(check_directory(dir->get(), path, owner));
    return dir;
}

// A name as hex, two digits a byte: any bytes, one word, "-" when empty.
std::string hex_of(const std::string& name) {
    if (name.empty()) return "-";
    std::string out;
    for (const char c : name) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
    return out;
}

bool name_of_hex(std::string_view hex, std::string& out) {
    out.clear();
    if (hex == "-") return true;
    if (hex.size() % 2 != 0 || hex.empty()) return false;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
        if (ec != std::errc() || end != hex.data() + i + 2) return false;
        out += static_cast<char>(value);
    }
    return true;
}

}  // namespace

std::string survivor_record_path(const std::string& spool_dir, const std::string& node_name) {
    const bool slash = !spool_dir.empty() && spool_dir.back() == '/';
    return spool_dir + (slash ? "" : "/") + "leftover-survivors-" + file_name_part(node_name);
}

Result<std::vector<RecordedSurvivor>> read_survivor_record(const RecordPlace& place) {
    const std::string& path = place.path;
    auto dir = open_directory(path);
    LEFTOVER_TRY(dir);
    const UniqueFd fd(
        ::openat(dir->get(), base_name(path).c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::vector<RecordedSurvivor>();  // nothing to believe
        return record_error(path, fmt::format("cannot open it: {}", errno_text(errno)));
    }
    LEFTOVER_TRY(check_directory(dir->get(), path, place.dir_owner));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return record_error(path, fmt::format("stat: {}", errno_text(errno)));
    if (!S_ISREG(st.st_mode)) return record_error(path, "not a regular file");
    if (st.st_uid != 0) return record_error(path, fmt::format("owned by uid {}, not by root", st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return record_error(path, fmt::format("writable by group or others (mode {:04o})", st.st_mode & 07777));
    if (static_cast<std::size_t>(st.st_size) > kMaxRecordSize) return record_error(path, "too large");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t used = 0;
    while (used < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return record_error(path, fmt::format("cannot read it: {}", errno_text(errno)));
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
    }
    text.resize(used);

    std::vector<RecordedSurvivor> out;
    std::istringstream lines(text);
    std::string line;
    if (!std::getline(lines, line) || !line.starts_with(kMagic)) return record_error(path, "not leftover's record");
    if (line.substr(kMagic.size()) != place.boot_id) return out;  // of an earlier boot: nothing survived a reboot
    for (int number = 2; std::getline(lines, line); ++number) {
        std::istringstream words(line);
        std::string pid, start, uid, since, name, extra;
        RecordedSurvivor s;
        const bool five_words = (words >> pid >> start >> uid >> since >> name) && !(words >> extra);
        const auto read_pid = parse_whole<decltype(s.pid)>(pid);
        const auto read_start = parse_whole<decltype(s.start_time)>(start);
        const auto read_uid = parse_whole<decltype(s.uid)>(uid);
        const auto since_ms = parse_whole<long long>(since);
        if (!five_words || !read_pid || *read_pid <= 0 || !read_start || !read_uid || !since_ms || *since_ms < 0 ||
            !name_of_hex(name, s.user))
            return record_error(path, fmt::format("line {} does not parse", number));
        s.pid = *read_pid;
        s.start_time = *read_start;
        s.uid = *read_uid;
        s.since = std::chrono::milliseconds(*since_ms);
        out.push_back(std::move(s));
    }
    return out;
}

Status write_survivor_record(const RecordPlace& place, const std::vector<RecordedSurvivor>& survivors) {
    const std::string& path = place.path;
    auto dir = open_trusted_dir(path, place.dir_owner);
    LEFTOVER_TRY(dir);
    const std::string name = base_name(path);
    if (survivors.empty()) {
        if (::unlinkat(dir->get(), name.c_str(), 0) != 0 && errno != ENOENT)
            return record_error(path, fmt::format("cannot remove it: {}", errno_text(errno)));
        return Ok{};
    }
    std::string text = fmt::format("{}{}\n", kMagic, place.boot_id);
    for (const RecordedSurvivor& s : survivors)
        text += fmt::format("{} {} {} {} {}\n", s.pid, s.start_time, s.uid, s.since.count(), hex_of(s.user));
    const std::string temporary = name + ".tmp";
    {
        const UniqueFd fd(::openat(dir->get(), temporary.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
        if (!fd.valid()) return record_error(path, fmt::format("cannot write {}: {}", temporary, errno_text(errno)));
        if (::fchmod(fd.get(), 0600) != 0 ||
            ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return record_error(path, fmt::format("cannot write {}: {}", temporary, errno_text(errno)));
    }
    if (::renameat(dir->get(), temporary.c_str(), dir->get(), name.c_str()) != 0)
        return record_error(path, fmt::format("cannot rename {} to it: {}", temporary, errno_text(errno)));
    return Ok{};
}

std::string read_boot_id(const std::string& proc_root) {
    const UniqueFd fd(::open((proc_root + "/sys/kernel/random/boot_id").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return "-";
    char buffer[64];
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n <= 0) return "-";
    std::string id(buffer, static_cast<std::size_t>(n));
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.empty() || id.find(' ') != std::string::npos ? std::string("-") : id;
}

std::chrono::milliseconds boot_clock_now() {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::seconds(now.tv_sec) +
                                                                 std::chrono::nanoseconds(now.tv_nsec));
}

}  // namespace leftover::drain

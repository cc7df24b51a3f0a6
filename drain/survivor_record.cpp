// SPDX-License-Identifier: GPL-2.0-or-later
#include "drain/survivor_record.hpp"

#include "errors/error.hpp"
#include "util/escape.hpp"
#include "util/root_file.hpp"
#include "util/unique_fd.hpp"
#include "util/whole_number.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <ctime>
#include <sstream>

namespace leftover::drain {
namespace {

// The first line: what the file is, its format, the boot its times count from.
constexpr std::string_view kMagic = "leftover-survivors 1 ";
constexpr std::size_t kMaxRecordSize = std::size_t{1} << 20;

RootFile record_file(const RecordPlace& place) { return {"survivors' record", place.path, place.dir_owner}; }

Error record_error(const std::string& path, const std::string& why) {
    return Error::lookup(fmt::format("survivors' record {}: {}", path, why), ErrorSource::other);
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
    return node_file_path(spool_dir, "leftover-survivors-", node_name);
}

Result<std::vector<RecordedSurvivor>> read_survivor_record(const RecordPlace& place) {
    const std::string& path = place.path;
    auto read = read_root_file(record_file(place), kMaxRecordSize);
    LEFTOVER_TRY(read);
    if (!read->has_value()) return std::vector<RecordedSurvivor>();  // nothing to believe
    const std::string& text = **read;

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
    if (survivors.empty()) return remove_root_file(record_file(place));
    std::string text = fmt::format("{}{}\n", kMagic, place.boot_id);
    for (const RecordedSurvivor& s : survivors)
        text += fmt::format("{} {} {} {} {}\n", s.pid, s.start_time, s.uid, s.since.count(), hex_of(s.user));
    return write_root_file(record_file(place), text);
}

}  // namespace leftover::drain

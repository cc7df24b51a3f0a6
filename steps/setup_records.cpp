// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/setup_records.hpp"

#include "errors/error.hpp"
#include "util/errno_text.hpp"
#include "util/escape.hpp"
#include "util/root_file.hpp"
#include "util/whole_number.hpp"

#include <dirent.h>
#include <fcntl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>
#include <tuple>

namespace leftover::steps {
namespace {

constexpr std::string_view kPrefix = "leftover-setup-";
constexpr std::string_view kMagic = "leftover-setup 1 ";
constexpr std::size_t kMaxRecordSize = 4096;

// A spool dir may be a symlink (SlurmdSpoolDir=/var/spool/slurmd -> /local/...): its
// files are root_file's in the directory it names, which root_file opens without following.
std::string resolved(const std::string& dir) {
    const std::unique_ptr<char, void (*)(void*)> real(::realpath(dir.c_str(), nullptr), std::free);
    return real ? std::string(real.get()) : dir;
}

RootFile record_file(std::string path, std::optional<uid_t> dir_owner) {
    return RootFile{"job setup record", std::move(path), dir_owner};
}

// The record in `file`, nullopt when it is of another boot.
Result<std::optional<SetupRecord>> read_record(const RootFile& file, const std::string& boot_id) {
    auto text = read_root_file_of_boot(file, kMaxRecordSize, kMagic, boot_id, "not leftover's record");
    LEFTOVER_TRY(text);
    if (!text->has_value()) return std::optional<SetupRecord>();  // removed as we looked, or of another boot
    const auto lines = read_word_lines(**text, {"job", "uid", "node", "began"});
    const auto& [job_text, uid_text, node_name, began_text] =
        std::tie(lines.values[0], lines.values[1], lines.values[2], lines.values[3]);
    const auto job_id = job_text ? parse_whole<std::uint32_t>(*job_text) : std::nullopt;
    const auto user = uid_text ? parse_whole<uid_t>(*uid_text) : std::nullopt;
    const auto began_ms = began_text ? parse_whole<long long>(*began_text) : std::nullopt;
    if (!job_id || !user || !node_name || node_name->empty() || !began_ms)
        return root_file_error(file, "its lines do not parse");
    return std::optional<SetupRecord>(
        SetupRecord{*job_id, *user, *node_name, std::chrono::milliseconds(*began_ms), file.path});
}

}  // namespace

std::string setup_record_path(const std::string& spool_dir, const std::string& node_name, std::uint32_t job_id) {
    return node_file_path(resolved(spool_dir), kPrefix, node_name, fmt::format(".{}", job_id));
}

Status write_setup_record(const std::string& spool_dir, std::optional<uid_t> dir_owner, const std::string& boot_id,
                          const SetupRecord& record) {
    return write_root_file(record_file(setup_record_path(spool_dir, record.node_name, record.job_id), dir_owner),
                           fmt::format("{}{}\njob {}\nuid {}\nnode {}\nbegan {}\n", kMagic, boot_id, record.job_id,
                                       record.uid, record.node_name, record.began.count()));
}

Status remove_setup_record(const std::string& spool_dir, const std::string& node_name, std::optional<uid_t> dir_owner,
                           std::uint32_t job_id) {
    return remove_root_file(record_file(setup_record_path(spool_dir, node_name, job_id), dir_owner));
}

Status remove_setup_record(const SetupRecord& found, std::optional<uid_t> dir_owner) {
    return remove_root_file(record_file(found.path, dir_owner));
}

Result<std::vector<SetupRecord>> read_setup_records(const StepSockets& where, std::optional<uid_t> dir_owner,
                                                    const std::string& boot_id, const WantedJob& wanted) {
    std::vector<SetupRecord> records;
    for (const StepSpoolDir& spool : where.spool_dirs) {
        const std::string path = resolved(spool.path);
        const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
        if (!dir) {
            if (errno == ENOENT) continue;  // no slurmd made it: no job was set up there
            return Error::lookup(fmt::format("spool dir {}: {}", spool.path, errno_text(errno)), ErrorSource::other);
        }
        while (const dirent* entry = ::readdir(dir.get())) {
            const std::string name = entry->d_name;
            // write_root_file's temporary files end in .tmp.<tid>.
            if (!name.starts_with(kPrefix) || name.find(".tmp.") != std::string::npos) continue;
            // <prefix><node>.<job>: a name whose job does not parse is read, and judged.
            const auto job = parse_whole<std::uint32_t>(std::string_view(name).substr(name.rfind('.') + 1));
            if (job && !wanted(*job)) continue;
            auto record = read_record(record_file(fmt::format("{}/{}", path, name), dir_owner), boot_id);
            LEFTOVER_TRY(record);
            if (!record->has_value()) continue;
            const auto& nodes = where.node_names;
            if (std::find(nodes.begin(), nodes.end(), (*record)->node_name) == nodes.end()) continue;
            records.push_back(std::move(**record));
        }
    }
    std::sort(records.begin(), records.end(), [](const SetupRecord& a, const SetupRecord& b) {
        return a.job_id != b.job_id ? a.job_id < b.job_id : a.node_name < b.node_name;
    });
    return records;
}

bool has_step_here(std::uint32_t job_id, const LocalJobState& steps) {
    const auto of_job = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& step) { return step.job_id == job_id; });
    };
    return of_job(steps.live) || of_job(steps.dead) || of_job(steps.unanswered);
}

std::optional<std::string> why_not_believed(const SetupRecord& record, std::chrono::milliseconds now) {
    const auto age = now - record.began;
    if (age < std::chrono::milliseconds(0)) return fmt::format("dated {} ms after now", -age.count());
    if (age > kSetupRecordLife)
        return fmt::format("written {} s ago, more than {} s", age.count() / 1000, kSetupRecordLife.count() / 1000);
    return std::nullopt;
}

}  // namespace leftover::steps

// SPDX-License-Identifier: GPL-2.0-or-later
#include "config_report.hpp"

#include "exemptions.hpp"
#include "trusted_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <algorithm>

namespace leftover::cli {
namespace {

std::string list_text(const std::vector<std::string>& items) { return fmt::format("[{}]", fmt::join(items, ", ")); }

// Whole numbers without a fraction, others as written ("2", "0.5").
std::string seconds_text(double value) { return fmt::format("{}", value); }

std::vector<std::vector<std::string>> settings(const Config& c) {
    const Config d;
    return {
        {"protected_users", list_text(c.protected_users), list_text(d.protected_users)},
        {"protected_users_files", list_text(c.protected_users_files), list_text(d.protected_users_files)},
        {"uid_min", std::to_string(c.uid_min), std::to_string(d.uid_min)},
        {"uid_max", std::to_string(c.uid_max), std::to_string(d.uid_max)},
        {"debuglevel", to_string(c.debuglevel), to_string(d.debuglevel)},
        {"slew", seconds_text(c.slew), seconds_text(d.slew)},
        {"slew_max", c.slew_max ? seconds_text(*c.slew_max) : "unset (= slew)", "unset (= slew)"},
        {"scope", to_string(c.scope), to_string(d.scope)},
        {"dry_run", c.dry_run ? "true" : "false", d.dry_run ? "true" : "false"},
        {"job_source", to_string(c.job_source), to_string(d.job_source)},
        {"slurm_timeout", seconds_text(c.slurm_timeout), seconds_text(d.slurm_timeout)},
        {"grace", seconds_text(c.grace), seconds_text(d.grace)},
    };
}

std::string aligned(const std::vector<std::vector<std::string>>& rows) {
    std::size_t key_width = 0;
    std::size_t value_width = 0;
    for (const auto& row : rows) {
        key_width = std::max(key_width, row[0].size());
        value_width = std::max(value_width, row[1].size());
    }
    std::string out;
    for (const auto& row : rows) out += fmt::format("{:<{}}  {:<{}}  {}\n", row[0], key_width, row[1], value_width, row[2]);
    return out;
}

}  // namespace

UsersFileStatus users_file_status(const std::string& path) {
    using State = UsersFileStatus::State;
    UsersFileStatus status;
    status.path = path;
    auto text = read_trusted_file(path);
    if (!text.ok()) {
        const FileFault fault = text.error().fault;
        const bool untrusted = fault == FileFault::symlink || fault == FileFault::not_regular ||
                               fault == FileFault::bad_owner || fault == FileFault::bad_mode;
        status.state = untrusted ? State::untrusted : State::not_read;
        status.problem = text.error().message;
        return status;
    }
    auto names = parse_users_file(text.value(), path);
    if (!names.ok()) {
        status.state = State::malformed;
        status.problem = names.error().message;
        return status;
    }
    status.state = State::usable;
    status.names = names->size();
    return status;
}

ConfigReport report_config(const Config& c, const std::string& path) {
    ConfigReport report;
    report.text = c.loaded_from.empty() ? fmt::format("{}: does not exist; every setting is its default\n\n", path)
                                        : fmt::format("{}: read, trusted, valid\n\n", c.loaded_from);
    std::vector<std::vector<std::string>> rows = {{"SETTING", "VALUE", "DEFAULT"}};
    for (auto& row : settings(c)) rows.push_back(std::move(row));
    report.text += aligned(rows);

    report.valid = true;
    if (!c.protected_users_files.empty()) report.text += "\nprotected users files:\n";
    for (const std::string& file : c.protected_users_files) {
        const UsersFileStatus status = users_file_status(file);
        switch (status.state) {
            case UsersFileStatus::State::usable:
                report.text += fmt::format("  {}: read, trusted, {} name{}\n", file, status.names,
                                           status.names == 1 ? "" : "s");
                continue;
            case UsersFileStatus::State::not_read:
                report.text += fmt::format("  {}: not read: {}\n", file, status.problem);
                break;
            case UsersFileStatus::State::untrusted:
                report.text += fmt::format("  {}: not trusted: {}\n", file, status.problem);
                break;
            case UsersFileStatus::State::malformed:
                report.text += fmt::format("  {}: read, trusted, malformed: {}\n", file, status.problem);
                break;
        }
        report.valid = false;
    }
    report.text += report.valid ? "\nconfig valid\n"
                                : "\ninvalid: a protected users file cannot be used; the plugin and the command kill "
                                  "nothing until it is fixed\n";
    return report;
}

}  // namespace leftover::cli

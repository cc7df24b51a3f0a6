// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/config_report.hpp"

#include "cli/text_table.hpp"
#include "config/config_keys.hpp"
#include "policy/exemptions.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

namespace leftover::cli {
UsersFileStatus users_file_status(const std::string& path) {
    using State = UsersFileStatus::State;
    UsersFileStatus status;
    status.path = path;
    auto text = read_trusted_file(path);
    if (!text.ok()) {
        const FileFault fault = text.error().fault;
        const bool untrusted = fault == FileFault::symlink || fault == FileFault::not_regular ||
                               fault == FileFault::bad_owner || fault == FileFault::bad_mode ||
                               fault == FileFault::bad_parent;
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
    std::vector<TextRow> rows = {{"SETTING", "VALUE", "DEFAULT"}};
    for (const ConfigKey& key : config_keys())
        rows.push_back({std::string(key.name), value_text(key, c), std::string(key.default_text)});
    report.text += format_text_table(rows);

    report.valid = true;
    if (!c.protected_users_files.empty()) report.text += "\nprotected users files:\n";
    for (const std::string& file : c.protected_users_files) {
        const UsersFileStatus status = users_file_status(file);
        switch (status.state) {
            case UsersFileStatus::State::usable:
                report.text +=
                    fmt::format("  {}: read, trusted, {} name{}\n", file, status.names, status.names == 1 ? "" : "s");
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

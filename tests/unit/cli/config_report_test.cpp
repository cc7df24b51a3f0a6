// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/config_report.hpp"
#include "config/config_keys.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sstream>

using namespace leftover;
using namespace leftover::cli;
using leftover::test::TempDir;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The cells of the line that starts with `key`, split where two or more spaces align them.
std::vector<std::string> row(const std::string& text, const std::string& key) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with(key + " ")) continue;
        std::vector<std::string> cells;
        std::size_t at = 0;
        while (at < line.size()) {
            const auto gap = line.find("  ", at);
            cells.push_back(line.substr(at, gap == std::string::npos ? std::string::npos : gap - at));
            if (gap == std::string::npos) break;
            at = line.find_first_not_of(' ', gap);
        }
        return cells;
    }
    return {};
}

using Cells = std::vector<std::string>;

Config loaded(const TempDir& dir, const std::string& text) {
    auto config = load_config(dir.write("leftover.conf", text), true);
    REQUIRE(config.ok());
    return config.value();
}

}  // namespace

TEST_CASE("config report: every setting with its default, users files read and counted") {
    TempDir dir;
    const std::string users = dir.write("localusers.backup", "# operators\nje.kim\n\ns.shin\n");
    const Config config = loaded(dir, "protected_users: [alice, bob]\nprotected_users_files: [" + users +
                                          "]\nslew: 10\nslew_max: 40\ngrace: 0.5\n");
    const ConfigReport report = report_config(config, dir / "leftover.conf");
    CHECK(report.valid);
    CHECK(has(report.text, dir / "leftover.conf: read, trusted, valid"));
    CHECK(row(report.text, "SETTING") == Cells{"SETTING", "VALUE", "DEFAULT"});
    CHECK(row(report.text, "protected_users") == Cells{"protected_users", "[alice, bob]", "[]"});
    CHECK(row(report.text, "protected_users_files") == Cells{"protected_users_files", "[" + users + "]", "[]"});
    CHECK(row(report.text, "slew_max") == Cells{"slew_max", "40", "unset (= slew)"});
    CHECK(row(report.text, "grace") == Cells{"grace", "0.5", "5"});
    CHECK(row(report.text, "uid_min") == Cells{"uid_min", "1000", "1000"});
    CHECK(row(report.text, "scope") == Cells{"scope", "node", "node"});
    CHECK(has(report.text, users + ": read, trusted, 2 names"));
    CHECK(has(report.text, "config valid"));
}

TEST_CASE("config report: one row per config key, in the table's order") {
    const ConfigReport report = report_config(Config{}, "/nonexistent/leftover.conf");
    std::size_t previous = 0;
    for (const ConfigKey& key : config_keys()) {
        const std::string name(key.name);
        const std::string default_text(key.default_text);
        CHECK(row(report.text, name) == Cells{name, default_text, default_text});
        const std::size_t at = report.text.find("\n" + name + " ");
        CHECK(at > previous);
        previous = at;
    }
}

TEST_CASE("config report: a missing default file means all defaults") {
    const ConfigReport report = report_config(Config{}, "/nonexistent/leftover.conf");
    CHECK(report.valid);
    CHECK(has(report.text, "/nonexistent/leftover.conf: does not exist; every setting is its default"));
}

TEST_CASE("config report: an unusable users file makes the config invalid and says why") {
    TempDir dir;
    const std::string writable = dir.write("writable.list", "alice\n", 0664);
    const std::string foreign = dir.write("foreign.list", "alice\n", 0644, 41001);
    const std::string malformed = dir.write("malformed.list", "two names\n");
    const std::string missing = dir / "missing.list";
    const Config config =
        loaded(dir, "protected_users_files: [" + writable + ", " + foreign + ", " + malformed + ", " + missing + "]\n");
    const ConfigReport report = report_config(config, dir / "leftover.conf");
    CHECK_FALSE(report.valid);
    CHECK(has(report.text, writable + ": not trusted: " + writable + ": has mode 0664"));
    CHECK(has(report.text, foreign + ": not trusted: " + foreign + ": is owned by uid 41001"));
    CHECK(has(report.text, malformed + ": read, trusted, malformed: " + malformed + ":1: expected one account name"));
    CHECK(has(report.text, missing + ": not read: " + missing + ": does not exist"));
    CHECK(has(report.text, "kill nothing until it is fixed"));

    CHECK(users_file_status(writable).state == UsersFileStatus::State::untrusted);
    CHECK(users_file_status(missing).state == UsersFileStatus::State::not_read);
    CHECK(users_file_status(dir.path()).state == UsersFileStatus::State::untrusted);  // a directory
}

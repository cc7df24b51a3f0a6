// SPDX-License-Identifier: GPL-2.0-or-later
#include "config/config_keys.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace leftover;

namespace {

std::string source_file(const std::string& name) {
    std::ifstream in(std::string(LEFTOVER_SOURCE_DIR) + "/" + name);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The lines of `text` from the line `first` up to the next line starting with `end`.
std::vector<std::string> section(const std::string& text, const std::string& first, const std::string& end) {
    std::istringstream lines(text);
    std::vector<std::string> out;
    bool inside = false;
    for (std::string line; std::getline(lines, line);) {
        if (inside && line.starts_with(end)) break;
        if (line == first)
            inside = true;
        else if (inside)
            out.push_back(line);
    }
    return out;
}

// Whether `word` stands alone, between blanks, in `line`.
bool has_word(const std::string& line, std::string_view word) {
    std::istringstream words(line);
    for (std::string w; words >> w;)
        if (w == word) return true;
    return false;
}

// A word key's type is its words, as the README writes them: `node`, `job_user`.
std::string readme_type(const ConfigKey& key) {
    if (key.words.empty() || !key.type.empty()) return std::string(key.type);  // a list key names its words
    std::vector<std::string> words;
    for (const auto word : key.words) words.push_back(fmt::format("`{}`", word));
    return fmt::format("{}", fmt::join(words, ", "));
}

bool is_optional(const ConfigKey& key) {
    return std::holds_alternative<std::optional<double> Config::*>(key.field) ||
           std::holds_alternative<std::optional<std::string> Config::*>(key.field);
}

}  // namespace

TEST_CASE("config keys: one entry per name, each default the one Config{} has") {
    std::set<std::string_view> names;
    for (const ConfigKey& key : config_keys()) {
        CAPTURE(key.name);
        CHECK(names.insert(key.name).second);
        CHECK(find_config_key(key.name) == &key);
        CHECK(value_text(key, Config{}) == key.default_text);
    }
    CHECK(find_config_key("protected_user") == nullptr);
}

TEST_CASE("config keys: the parser reads each key's default back into the key's own field") {
    for (const ConfigKey& key : config_keys()) {
        if (is_optional(key)) continue;  // its default is "unset", not a value
        CAPTURE(key.name);
        const auto config = parse_config(fmt::format("{}: {}\n", key.name, key.default_text), "x");
        REQUIRE(config.ok());
        CHECK(value_text(key, config.value()) == key.default_text);
    }
}

TEST_CASE("config keys: a value other than the default lands in that key's field and only there") {
    const std::map<std::string_view, std::string> values = {{"protected_users", "[alice]"},
                                                            {"protected_users_files", "[/etc/x]"},
                                                            {"uid_min", "2"},
                                                            {"uid_max", "70000"},
                                                            {"debuglevel", "critical"},
                                                            {"slew", "1.5"},
                                                            {"slew_max", "7"},
                                                            {"scope", "job_user"},
                                                            {"dry_run", "true"},
                                                            {"sweep_on_controller_host", "true"},
                                                            {"job_source", "controller"},
                                                            {"slurm_timeout", "0.5"},
                                                            {"grace", "30"},
                                                            {"metrics_file", "/m/leftover.prom"},
                                                            {"metrics_users", "true"},
                                                            {"cleanup", "[ipc, files]"},
                                                            {"cleanup_dirs", "[/scratch]"},
                                                            {"drain_on_survivors", "true"}};
    REQUIRE(values.size() == config_keys().size());
    for (const ConfigKey& key : config_keys()) {
        CAPTURE(key.name);
        const std::string& value = values.at(key.name);
        const auto config = parse_config(fmt::format("{}: {}\n", key.name, value), "x");
        REQUIRE(config.ok());
        for (const ConfigKey& other : config_keys())
            CHECK(value_text(other, config.value()) == (&other == &key ? value : std::string(other.default_text)));
    }
}

TEST_CASE("config keys: an unknown key's error lists every key") {
    const auto config = parse_config("protected_user: [x]\n", "x");
    REQUIRE_FALSE(config.ok());
    const std::string& message = config.error().message;
    const std::string listed = message.substr(message.find("expected one of: ") + 17);
    std::set<std::string_view> names;
    for (const ConfigKey& key : config_keys()) names.insert(key.name);
    CHECK(listed == fmt::format("{}", fmt::join(names, ", ")));
}

TEST_CASE("config keys: every key is a row of the README's config table") {
    const std::string readme = source_file("README.md");
    for (const ConfigKey& key : config_keys()) {
        const std::string row =
            fmt::format("| `{}` | {} | `{}` | {} |\n", key.name, readme_type(key), key.default_text, key.doc);
        CAPTURE(row);
        CHECK(readme.find(row) != std::string::npos);
    }
}

TEST_CASE("config keys: every key is in leftover.conf(5) with its default and words") {
    const auto keys_section = section(source_file("man/leftover.conf.5"), ".SH KEYS", ".SH ");
    for (const ConfigKey& key : config_keys()) {
        CAPTURE(key.name);
        const auto entry = std::find_if(keys_section.begin(), keys_section.end(), [&](const std::string& line) {
            return line.starts_with(".BR ") && has_word(line, key.name) && line.find("default") != std::string::npos;
        });
        REQUIRE(entry != keys_section.end());
        CHECK(entry->substr(entry->find("default")).find(key.default_text) != std::string::npos);
        for (const auto word : key.words) CHECK(has_word(*entry, word));
    }
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "config_keys.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <set>

using namespace leftover;

namespace {

bool is_optional(const ConfigKey& key) { return std::holds_alternative<std::optional<double> Config::*>(key.field); }

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
    const std::map<std::string_view, std::string> values = {
        {"protected_users", "[alice]"}, {"protected_users_files", "[/etc/x]"}, {"uid_min", "2"},
        {"uid_max", "70000"},    {"debuglevel", "critical"}, {"slew", "1.5"},     {"slew_max", "7"},
        {"scope", "job_user"}, {"dry_run", "true"},    {"job_source", "controller"}, {"slurm_timeout", "0.5"},
        {"grace", "30"}};
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

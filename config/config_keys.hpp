// SPDX-License-Identifier: GPL-2.0-or-later
// The one table of /etc/leftover.conf's keys. The parser reads values by it,
// `leftover config` lists settings by it, and the unit tests hold Config{}, the README
// and leftover.conf(5) against it.
#pragma once

#include "config/config.hpp"

#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace leftover {

// Where a key's value goes in Config. The member's type says how the value is read:
// a list of strings, a uid, true/false, seconds (a double, or an optional one), a
// word of an enum, a set of an enum's words, or an optional file path (absolute, ending
// in `path_suffix`).
using ConfigField =
    std::variant<std::vector<std::string> Config::*, uid_t Config::*, bool Config::*, double Config::*,
                 std::optional<double> Config::*, LogLevel Config::*, Scope Config::*, JobSource Config::*,
                 std::optional<std::string> Config::*, std::set<CleanupKind> Config::*>;

struct ConfigKey {
    std::string_view name{};
    ConfigField field{};
    std::string_view type{};                    // as the README names it; empty for an enum key: its words are
    std::string_view default_text{};            // as `leftover config` shows it; an unset optional shows this too
    std::span<const std::string_view> words{};  // an enum key: its words, in the enum's order; a list key: the
                                                // words its entries must be (empty: any)
    std::string_view entries{};                 // a list key: what each entry is, plural ("account names")
    bool absolute_paths = false;                // a list key: every entry must be an absolute path
    std::string_view path_suffix{};             // a path key: how its file name must end
    double min = 0;                             // a seconds key: the allowed range
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false;
    std::string_view doc{};  // one line, the README's "meaning"
};

// Every key, in the order the README and leftover.conf(5) document them.
std::span<const ConfigKey> config_keys();

// The key named `name`, or nullptr.
const ConfigKey* find_config_key(std::string_view name);

// The value of `key` in `config` as `leftover config` shows it: "[alice, bob]", "0.5", "info".
std::string value_text(const ConfigKey& key, const Config& config);

}  // namespace leftover

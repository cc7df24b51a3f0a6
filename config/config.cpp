// SPDX-License-Identifier: GPL-2.0-or-later
#include "config/config.hpp"

#include "config/config_keys.hpp"
#include "errors/error.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>

namespace leftover {
namespace {

// Thrown only inside this file and caught in parse_config: the first problem ends parsing.
struct Invalid {
    std::string message;
};

std::string where(const std::string& origin, const YAML::Mark& mark) {
    if (mark.is_null()) return origin;
    return fmt::format("{}:{}", origin, mark.line + 1);
}

[[noreturn]] void fail(const std::string& origin, const std::string& key, const YAML::Node& node,
                       const std::string& expected) {
    std::string got;
    if (node.IsScalar())
        got = fmt::format(", got '{}'", node.Scalar());
    else if (node.IsSequence())
        got = ", got a list";
    else if (node.IsMap())
        got = ", got a mapping";
    else if (node.IsNull())
        got = ", got nothing";
    throw Invalid{fmt::format("{}: key '{}': expected {}{}", where(origin, node.Mark()), key, expected, got)};
}

// A YAML/JSON number, without yaml-cpp's leniency about trailing text.
double number(const std::string& origin, const std::string& key, const YAML::Node& node, const std::string& expected) {
    if (!node.IsScalar() || node.Tag() == "!") fail(origin, key, node, expected);
    const std::string& text = node.Scalar();
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        fail(origin, key, node, expected);
    }
    if (used != text.size() || !std::isfinite(value)) fail(origin, key, node, expected);
    return value;
}

uid_t uid_value(const std::string& origin, const std::string& key, const YAML::Node& node) {
    const std::string expected = "a whole number from 0 to 4294967294";
    const double value = number(origin, key, node, expected);
    if (value < 0 || value > 4294967294.0 || value != std::floor(value)) fail(origin, key, node, expected);
    return static_cast<uid_t>(value);
}

double seconds(const std::string& origin, const std::string& key, const YAML::Node& node, double min, double max,
               bool min_exclusive) {
    const std::string expected = max == std::numeric_limits<double>::infinity()
                                     ? fmt::format("a number of seconds {} {}", min_exclusive ? ">" : ">=", min)
                                     : fmt::format("a number of seconds from {} to {}", min, max);
    const double value = number(origin, key, node, expected);
    if (value < min || (min_exclusive && value == min) || value > max) fail(origin, key, node, expected);
    return value;
}

bool boolean(const std::string& origin, const std::string& key, const YAML::Node& node) {
    if (node.IsScalar() && node.Tag() != "!") {  // "!" marks a quoted string
        if (node.Scalar() == "true") return true;
        if (node.Scalar() == "false") return false;
    }
    fail(origin, key, node, "true or false");
}

// The index of the word the node names among `words`.
std::size_t word(const std::string& origin, const std::string& key, const YAML::Node& node,
                 std::span<const std::string_view> words) {
    std::vector<std::string_view> sorted(words.begin(), words.end());
    std::sort(sorted.begin(), sorted.end());
    const std::string expected = fmt::format("one of {}", fmt::join(sorted, " "));
    if (!node.IsScalar()) fail(origin, key, node, expected);
    const auto found = std::find(words.begin(), words.end(), node.Scalar());
    if (found == words.end()) fail(origin, key, node, expected);
    return static_cast<std::size_t>(found - words.begin());
}

std::vector<std::string> string_list(const std::string& origin, const std::string& key, const YAML::Node& node,
                                     const ConfigKey& spec) {
    const std::string what(spec.entries);
    if (!node.IsSequence()) fail(origin, key, node, "a list of " + what);
    std::vector<std::string> out;
    for (const auto& item : node) {
        if (!item.IsScalar() || item.Scalar().empty())
            fail(origin, key, item, "every entry to be a non-empty " + what.substr(0, what.size() - 1));
        out.push_back(item.Scalar());
    }
    for (std::size_t i = 0; spec.absolute_paths && i < out.size(); ++i)
        if (out[i].front() != '/') fail(origin, key, node[i], "an absolute path");
    if (!spec.words.empty()) {
        std::vector<std::string_view> sorted(spec.words.begin(), spec.words.end());
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < out.size(); ++i)
            if (std::find(spec.words.begin(), spec.words.end(), out[i]) == spec.words.end())
                fail(origin, key, node[i], fmt::format("every entry to be one of {}", fmt::join(sorted, " ")));
    }
    return out;
}

// A list of an enum's words, as the set of its values (each word's index is its value).
template <class Enum>
std::set<Enum> word_set(const std::string& origin, const std::string& key, const YAML::Node& node,
                        const ConfigKey& spec) {
    std::set<Enum> out;
    for (const std::string& entry : string_list(origin, key, node, spec)) {
        const auto found = std::find(spec.words.begin(), spec.words.end(), entry);
        out.insert(static_cast<Enum>(found - spec.words.begin()));  // string_list checked it is one
    }
    return out;
}

// An absolute path to a file whose name ends in the key's suffix (a metrics file is
// replaced when it is not ours: a suffix of its own keeps a typo from naming /etc/passwd).
std::string file_path(const std::string& origin, const std::string& key, const YAML::Node& node,
                      const ConfigKey& spec) {
    const std::string expected = fmt::format("an absolute path to a file ending in {}", spec.path_suffix);
    if (!node.IsScalar()) fail(origin, key, node, expected);
    const std::string& path = node.Scalar();
    const auto name = path.substr(path.rfind('/') + 1);
    if (!path.starts_with('/') || name.size() <= spec.path_suffix.size() || !name.ends_with(spec.path_suffix) ||
        name.starts_with('.'))
        fail(origin, key, node, expected);
    return path;
}

// Reads the node into the key's field, as the field's type says.
void read_value(Config& config, const ConfigKey& spec, const std::string& origin, const YAML::Node& node) {
    const std::string key(spec.name);
    std::visit(
        [&](auto member) {
            auto& value = config.*member;
            using Value = std::remove_cvref_t<decltype(value)>;
            if constexpr (std::is_same_v<Value, std::vector<std::string>>)
                value = string_list(origin, key, node, spec);
            else if constexpr (std::is_same_v<Value, bool>)
                value = boolean(origin, key, node);
            else if constexpr (std::is_same_v<Value, double> || std::is_same_v<Value, std::optional<double>>)
                value = seconds(origin, key, node, spec.min, spec.max, spec.min_exclusive);
            else if constexpr (std::is_enum_v<Value>)
                value = static_cast<Value>(word(origin, key, node, spec.words));
            else if constexpr (std::is_same_v<Value, std::optional<std::string>>)
                value = file_path(origin, key, node, spec);
            else if constexpr (std::is_same_v<Value, std::set<CleanupKind>>)
                value = word_set<CleanupKind>(origin, key, node, spec);
            else
                value = uid_value(origin, key, node);
        },
        spec.field);
}

std::string known_keys() {
    std::vector<std::string_view> names;
    for (const ConfigKey& key : config_keys()) names.push_back(key.name);
    std::sort(names.begin(), names.end());
    return fmt::format("{}", fmt::join(names, ", "));
}

Config parse_or_throw(const std::string& text, const std::string& origin) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw Invalid{fmt::format("{}: syntax error: {}", where(origin, e.mark), e.msg)};
    }
    Config config;
    if (root.IsNull()) return config;  // an empty file: all defaults
    if (!root.IsMap())
        throw Invalid{fmt::format("{}: expected a mapping of settings (a JSON object or YAML mapping)",
                                  where(origin, root.Mark()))};

    std::map<std::string, YAML::Mark> seen;
    for (const auto& entry : root) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string{};
        const ConfigKey* spec = find_config_key(key);
        if (spec == nullptr)
            throw Invalid{fmt::format("{}: unknown key '{}'; expected one of: {}", where(origin, entry.first.Mark()),
                                      key, known_keys())};
        if (seen.count(key) != 0)
            throw Invalid{fmt::format("{}: key '{}' appears twice", where(origin, entry.first.Mark()), key)};
        seen.emplace(key, entry.first.Mark());
        read_value(config, *spec, origin, entry.second);
    }

    if (config.slew_max && *config.slew_max < config.slew)
        throw Invalid{fmt::format("{}: key 'slew_max': expected a value >= slew ({}), got {}",
                                  where(origin, seen["slew_max"]), config.slew, *config.slew_max)};
    if (config.uid_max < config.uid_min)
        throw Invalid{fmt::format("{}: key 'uid_max': expected a value >= uid_min ({}), got {}",
                                  where(origin, seen["uid_max"]), config.uid_min, config.uid_max)};
    return config;
}

}  // namespace

Result<Config> parse_config(const std::string& text, const std::string& origin) {
    try {
        Config config = parse_or_throw(text, origin);
        config.loaded_from = origin;
        return config;
    } catch (const Invalid& invalid) {
        return Error::config(invalid.message, ErrorSource::config);
    } catch (const YAML::Exception& e) {
        return Error::config(fmt::format("{}: {}", where(origin, e.mark), e.msg), ErrorSource::config);
    }
}

Result<Config> load_config(const std::string& path, bool path_given) {
    auto text = read_trusted_file(path);
    if (!text.ok()) {
        if (text.error().fault == FileFault::missing && !path_given) return Config{};
        return Error::config(text.error().message, ErrorSource::config);
    }
    return parse_config(text.value(), path);
}

}  // namespace leftover

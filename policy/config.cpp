// SPDX-License-Identifier: GPL-2.0-or-later
#include "config.hpp"

#include "trusted_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

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
    if (node.IsScalar()) got = fmt::format(", got '{}'", node.Scalar());
    else if (node.IsSequence()) got = ", got a list";
    else if (node.IsMap()) got = ", got a mapping";
    else if (node.IsNull()) got = ", got nothing";
    throw Invalid{fmt::format("{}: key '{}': expected {}{}", where(origin, node.Mark()), key, expected, got)};
}

// A YAML/JSON number, without yaml-cpp's leniency about trailing text.
double number(const std::string& origin, const std::string& key, const YAML::Node& node,
              const std::string& expected) {
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

double seconds(const std::string& origin, const std::string& key, const YAML::Node& node, double min,
               double max, bool min_exclusive) {
    const std::string expected =
        max == std::numeric_limits<double>::infinity()
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

template <class Enum>
Enum word(const std::string& origin, const std::string& key, const YAML::Node& node,
          const std::map<std::string, Enum>& words) {
    std::string expected = "one of";
    for (const auto& [text, value] : words) expected += " " + text;
    if (!node.IsScalar()) fail(origin, key, node, expected);
    const auto found = words.find(node.Scalar());
    if (found == words.end()) fail(origin, key, node, expected);
    return found->second;
}

std::vector<std::string> string_list(const std::string& origin, const std::string& key, const YAML::Node& node,
                                     const std::string& what) {
    if (!node.IsSequence()) fail(origin, key, node, "a list of " + what);
    std::vector<std::string> out;
    for (const auto& item : node) {
        if (!item.IsScalar() || item.Scalar().empty())
            fail(origin, key, item, "every entry to be a non-empty " + what.substr(0, what.size() - 1));
        out.push_back(item.Scalar());
    }
    return out;
}

using KeyReader = std::function<void(Config&, const std::string& origin, const YAML::Node&)>;

const std::map<std::string, KeyReader>& key_readers() {
    static const std::map<std::string, KeyReader> readers = {
        {"protected_users",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.protected_users = string_list(o, "protected_users", n, "account names");
         }},
        {"protected_users_files",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.protected_users_files = string_list(o, "protected_users_files", n, "paths");
             for (std::size_t i = 0; i < c.protected_users_files.size(); ++i)
                 if (c.protected_users_files[i].front() != '/')
                     fail(o, "protected_users_files", n[i], "an absolute path");
         }},
        {"uid_min", [](Config& c, const std::string& o, const YAML::Node& n) { c.uid_min = uid_value(o, "uid_min", n); }},
        {"uid_max", [](Config& c, const std::string& o, const YAML::Node& n) { c.uid_max = uid_value(o, "uid_max", n); }},
        {"debuglevel",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.debuglevel = word<LogLevel>(o, "debuglevel", n,
                                           {{"debug", LogLevel::debug}, {"info", LogLevel::info},
                                            {"warn", LogLevel::warn}, {"err", LogLevel::err},
                                            {"critical", LogLevel::critical}});
         }},
        {"slew",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.slew = seconds(o, "slew", n, 0, std::numeric_limits<double>::infinity(), false);
         }},
        {"slew_max",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.slew_max = seconds(o, "slew_max", n, 0, std::numeric_limits<double>::infinity(), false);
         }},
        {"scope",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.scope = word<Scope>(o, "scope", n, {{"node", Scope::node}, {"job_user", Scope::job_user}});
         }},
        {"dry_run", [](Config& c, const std::string& o, const YAML::Node& n) { c.dry_run = boolean(o, "dry_run", n); }},
        {"job_source",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.job_source = word<JobSource>(o, "job_source", n,
                                            {{"local", JobSource::local}, {"controller", JobSource::controller}});
         }},
        {"slurm_timeout",
         [](Config& c, const std::string& o, const YAML::Node& n) {
             c.slurm_timeout = seconds(o, "slurm_timeout", n, 0, 60, true);
         }},
        {"grace",
         [](Config& c, const std::string& o, const YAML::Node& n) { c.grace = seconds(o, "grace", n, 0, 30, false); }},
    };
    return readers;
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
        const auto reader = key_readers().find(key);
        if (reader == key_readers().end()) {
            std::string known;
            for (const auto& [name, unused] : key_readers()) known += (known.empty() ? "" : ", ") + name;
            throw Invalid{fmt::format("{}: unknown key '{}'; expected one of: {}", where(origin, entry.first.Mark()),
                                      key, known)};
        }
        if (seen.count(key) != 0)
            throw Invalid{fmt::format("{}: key '{}' appears twice", where(origin, entry.first.Mark()), key)};
        seen.emplace(key, entry.first.Mark());
        reader->second(config, origin, entry.second);
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
        return Error::config(invalid.message);
    } catch (const YAML::Exception& e) {
        return Error::config(fmt::format("{}: {}", where(origin, e.mark), e.msg));
    }
}

Result<Config> load_config(const std::string& path, bool path_given) {
    auto text = read_trusted_file(path);
    if (!text.ok()) {
        if (text.error().fault == FileFault::missing && !path_given) return Config{};
        return Error::config(text.error().message);
    }
    return parse_config(text.value(), path);
}

const char* to_string(LogLevel level) {
    switch (level) {
        case LogLevel::debug: return "debug";
        case LogLevel::info: return "info";
        case LogLevel::warn: return "warn";
        case LogLevel::err: return "err";
        case LogLevel::critical: return "critical";
    }
    return "?";
}

const char* to_string(Scope scope) { return scope == Scope::node ? "node" : "job_user"; }

const char* to_string(JobSource source) { return source == JobSource::local ? "local" : "controller"; }

}  // namespace leftover

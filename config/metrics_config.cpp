// SPDX-License-Identifier: GPL-2.0-or-later
#include "config/metrics_config.hpp"

#include "util/trusted_file.hpp"

#include <yaml-cpp/yaml.h>

namespace leftover {

std::optional<MetricsSettings> metrics_settings(const Config& config) {
    if (!config.metrics_file) return std::nullopt;
    return MetricsSettings{*config.metrics_file, config.metrics_users};
}

std::optional<MetricsSettings> metrics_settings_despite_error(const std::string& config_path) {
    const auto text = read_trusted_file(config_path);
    if (!text.ok()) return std::nullopt;
    try {
        const YAML::Node root = YAML::Load(text.value());
        if (!root.IsMap()) return std::nullopt;
        // Only these two keys, read by the config's own parser with its own checks.
        YAML::Node metrics_only(YAML::NodeType::Map);
        for (const char* key : {"metrics_file", "metrics_users"})
            if (root[key]) metrics_only[key] = root[key];
        const auto config = parse_config(YAML::Dump(metrics_only), config_path);
        if (!config.ok()) return std::nullopt;
        return metrics_settings(config.value());
    } catch (const YAML::Exception&) {
        return std::nullopt;
    }
}

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// Where an evaluation's metrics go: from the config, and also from a config that failed
// to load, so that a config error is counted where the admin watches for it.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>

namespace leftover {

struct MetricsSettings {
    std::string file;    // metrics_file
    bool users = false;  // metrics_users
};

// Unset when the config sets no metrics_file.
std::optional<MetricsSettings> metrics_settings(const Config& config);

// For a config file that failed to load: its metrics_file and metrics_users, when the
// file is trusted (root's, as for any config), parses as a mapping and those two keys
// are valid on their own. Unset otherwise (a syntax error, an untrusted file): then
// the config error is only logged.
std::optional<MetricsSettings> metrics_settings_despite_error(const std::string& config_path);

}  // namespace leftover

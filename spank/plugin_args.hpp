// SPDX-License-Identifier: GPL-2.0-or-later
// The plugstack.conf arguments, as a plain struct with every default explicit.
#pragma once

#include "config/config.hpp"

#include <string>
#include <vector>

namespace leftover::spank {

struct PluginArgs {
    std::string config_path = kDefaultConfigPath;
    bool config_path_given = false;
    std::vector<std::string> unknown;  // logged and ignored
};

// argv as Slurm passes it: argv[0] is the first argument after the plugin path.
PluginArgs parse_plugin_args(int argc, char** argv);

}  // namespace leftover::spank

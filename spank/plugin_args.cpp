// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/plugin_args.hpp"

#include <string_view>

namespace leftover::spank {

PluginArgs parse_plugin_args(int argc, char** argv) {
    PluginArgs args;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i] ? argv[i] : "";
        constexpr std::string_view kConfig = "config=";
        if (arg.substr(0, kConfig.size()) == kConfig && arg.size() > kConfig.size()) {
            args.config_path = std::string(arg.substr(kConfig.size()));
            args.config_path_given = true;
        } else {
            args.unknown.emplace_back(arg);
        }
    }
    return args;
}

}  // namespace leftover::spank

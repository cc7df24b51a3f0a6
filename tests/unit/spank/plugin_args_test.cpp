// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/plugin_args.hpp"

#include <doctest/doctest.h>

using namespace leftover::spank;

TEST_CASE("plugstack arguments: config= is the only one, defaulting to /etc/leftover.conf") {
    const PluginArgs none = parse_plugin_args(0, nullptr);
    CHECK(none.config_path == "/etc/leftover.conf");
    CHECK_FALSE(none.config_path_given);
    CHECK(none.unknown.empty());

    char a0[] = "config=/opt/leftover/leftover.yaml", a1[] = "verbose", a2[] = "config=";
    char* argv[] = {a0, a1, a2};
    const PluginArgs args = parse_plugin_args(3, argv);
    CHECK(args.config_path == "/opt/leftover/leftover.yaml");
    CHECK(args.config_path_given);
    CHECK(args.unknown == std::vector<std::string>{"verbose", "config="});
}

// SPDX-License-Identifier: GPL-2.0-or-later
// What this build is and where its controller helper lives, for both front ends.
#pragma once

#include <string>

namespace leftover::node {

// "leftover 0.1.0 built for Slurm 22.05.8"
std::string build_banner();

// leftover-query beside `binary` (the plugin or the command in a build tree), else
// its installed path in libexec.
std::string query_helper_path(const std::string& binary);

}  // namespace leftover::node

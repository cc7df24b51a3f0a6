// SPDX-License-Identifier: GPL-2.0-or-later
// Where the controller helper, leftover-query, lives: for both front ends.
#pragma once

#include <string>

namespace leftover::controller {

// leftover-query beside `binary` (the plugin or the command in a build tree), else
// its installed path in libexec.
std::string query_helper_path(const std::string& binary);

}  // namespace leftover::controller

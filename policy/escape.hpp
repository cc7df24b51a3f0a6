// SPDX-License-Identifier: GPL-2.0-or-later
// Process names are chosen by users: escape them before they reach a log line.
#pragma once

#include <string>
#include <string_view>

namespace leftover {

// Printable ASCII stays (backslash doubled); every other byte becomes \xNN.
std::string escape_for_log(std::string_view raw);

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// Process names are chosen by users: escape them before they reach a log line.
#pragma once

#include <string>
#include <string_view>

namespace leftover {

// Printable ASCII stays (backslash doubled), but for the single quote the log puts
// names in; it and every other byte become \xNN.
std::string escape_for_log(std::string_view raw);

}  // namespace leftover

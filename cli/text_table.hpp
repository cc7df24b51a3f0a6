// SPDX-License-Identifier: GPL-2.0-or-later
// The aligned text tables `leftover check` and `leftover config` print.
#pragma once

#include <string>
#include <vector>

namespace leftover::cli {

using TextRow = std::vector<std::string>;

// Left-aligned columns two spaces apart, one line per row; the last column is not
// padded and no line ends in blanks. Widths count bytes, as a terminal does for ASCII.
std::string format_text_table(const std::vector<TextRow>& rows);

}  // namespace leftover::cli

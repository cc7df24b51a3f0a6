// SPDX-License-Identifier: GPL-2.0-or-later
// Process names are chosen by users: escape them before they reach a log line. Node
// names become part of file names: make them one safe part.
#pragma once

#include <string>
#include <string_view>

namespace leftover {

// Printable ASCII stays (backslash doubled), but for the single quote the log puts
// names in; it and every other byte become \xNN.
std::string escape_for_log(std::string_view raw);

// `name` as one part of a file name: every byte other than a letter, a digit, '.', '_'
// and '-' becomes '_' (a node's files in its spool dir: leftover-survivors-<node> ...).
std::string file_name_part(std::string_view name);

// The file of a node's in a spool dir: <spool_dir>/<prefix><node, as file_name_part>
// <suffix> ("leftover-survivors-", "n1", "" makes <spool_dir>/leftover-survivors-n1).
std::string node_file_path(const std::string& spool_dir, std::string_view prefix, std::string_view node_name,
                           std::string_view suffix = {});

}  // namespace leftover

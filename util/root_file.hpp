// SPDX-License-Identifier: GPL-2.0-or-later
// A small file leftover keeps between its runs (the survivors' record, slurmctld's
// shared answer): a regular file of root's that only root may write, in a directory
// that root (or SlurmdUser) owns and that group and others cannot write. Read whole;
// written whole to a temporary file and renamed into place, so a reader sees the old
// text or the new, never a part.
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leftover {

struct RootFile {
    std::string what;  // for the errors: "survivors' record", ...
    std::string path;
    std::optional<uid_t> dir_owner;  // who may own its directory besides root (SlurmdUser)
};

// Its text; nullopt when there is no such file. An error, "<what> <path>: <why>", when
// its directory or the file fails the checks above, it is larger than max_size, or it
// cannot be read: then it is not believed.
Result<std::optional<std::string>> read_root_file(const RootFile& file, std::size_t max_size);

// For a file whose first line is "<magic><boot id>" (what it is, its format, the boot its
// times count from): the text after that line; nullopt when there is no such file or it
// is of another boot. An error "<what> <path>: <not_ours>" when the first line is not so.
Result<std::optional<std::string>> read_root_file_of_boot(const RootFile& file, std::size_t max_size,
                                                          std::string_view magic, const std::string& boot_id,
                                                          const std::string& not_ours);

// The first lines of `text` (as read_root_file_of_boot returns it), one per word of
// `words`, each "<word> <value>" or "<word>" alone (an empty value): the values in
// order, nullopt for a line that is missing or not its word's; and the text after them.
struct WordLines {
    std::vector<std::optional<std::string>> values;
    std::string rest;
};
WordLines read_word_lines(const std::string& text, std::initializer_list<std::string_view> words);

// Replaces it with `text`, mode 0600, through <name>.tmp.<tid> (one writer's own).
Status write_root_file(const RootFile& file, const std::string& text);

// Removes it; none there is no error.
Status remove_root_file(const RootFile& file);

// The lookup error of a file that is not believed: "<what> <path>: <why>".
Error root_file_error(const RootFile& file, const std::string& why);

}  // namespace leftover

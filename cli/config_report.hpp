// SPDX-License-Identifier: GPL-2.0-or-later
// What `leftover config` prints: every setting next to its default, and for each
// protected users file whether it was read, trusted and how many names it holds.
#pragma once

#include "config/config.hpp"
#include "errors/result.hpp"

#include <string>
#include <vector>

namespace leftover::cli {

struct UsersFileStatus {
    enum class State {
        usable,     // read and trusted (a root-owned regular file nobody else can write), well formed
        not_read,   // missing, unreadable or too large
        untrusted,  // a symlink, not a regular file, not root's, or writable by group or others
        malformed,  // read and trusted, but not one account name per line
    };
    std::string path;
    State state = State::not_read;
    std::size_t names = 0;
    std::string problem;  // why it cannot be used; empty when usable
};

// Checks one file with the same reader and parser the exemptions use.
UsersFileStatus users_file_status(const std::string& path);

struct ConfigReport {
    std::string text;
    bool valid = false;  // config and every users file usable: exit 0, else 2
};

// `config` is what load_config read from `path` (loaded_from empty: the file is missing).
ConfigReport report_config(const Config& config, const std::string& path);

}  // namespace leftover::cli

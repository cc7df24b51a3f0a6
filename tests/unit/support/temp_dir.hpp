// SPDX-License-Identifier: GPL-2.0-or-later
// A temporary directory for one test, removed with everything in it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace leftover::test {

// Whether anything (a dangling symlink too) is at `path`.
inline bool path_exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

    // Writes a file owned by `owner` with `mode` and returns its path.
    std::string write(const std::string& name, const std::string& content, mode_t mode = 0644, uid_t owner = 0) const;

private:
    std::string path_;
};

}  // namespace leftover::test

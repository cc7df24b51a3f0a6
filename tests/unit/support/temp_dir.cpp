// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/temp_dir.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace leftover::test {

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "leftover-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content, mode_t mode, uid_t owner) const {
    const std::string file = *this / name;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << content;
    }
    if (::chown(file.c_str(), owner, static_cast<gid_t>(-1)) != 0) throw std::runtime_error("chown " + file);
    if (::chmod(file.c_str(), mode) != 0) throw std::runtime_error("chmod " + file);
    return file;
}

}  // namespace leftover::test

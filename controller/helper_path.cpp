// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/helper_path.hpp"

#include <filesystem>

namespace leftover::controller {

std::string query_helper_path(const std::string& binary) {
    if (!binary.empty()) {
        const auto sibling = std::filesystem::path(binary).parent_path() / "leftover-query";
        std::error_code ignored;
        if (std::filesystem::exists(sibling, ignored)) return sibling.string();
    }
    return LEFTOVER_QUERY_PATH;
}

}  // namespace leftover::controller

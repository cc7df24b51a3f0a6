// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/build_info.hpp"

#include <fmt/format.h>

#include <slurm/slurm_version.h>

#include <filesystem>

namespace leftover::node {

std::string build_banner() {
    return fmt::format("leftover {} built for Slurm {}.{:02}.{}", LEFTOVER_VERSION,
                       SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
                       SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
}

std::string query_helper_path(const std::string& binary) {
    if (!binary.empty()) {
        const auto sibling = std::filesystem::path(binary).parent_path() / "leftover-query";
        std::error_code ignored;
        if (std::filesystem::exists(sibling, ignored)) return sibling.string();
    }
    return LEFTOVER_QUERY_PATH;
}

}  // namespace leftover::node

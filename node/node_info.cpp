// SPDX-License-Identifier: GPL-2.0-or-later
#include "node_info.hpp"

#include <unistd.h>

namespace leftover::node {

std::string expand_slurmd_path(std::string pattern, const std::string& node_name, const std::string& short_host) {
    if (const auto at = pattern.find("%h"); at != std::string::npos) pattern.replace(at, 2, short_host);
    if (const auto at = pattern.find("%n"); at != std::string::npos) pattern.replace(at, 2, node_name);
    return pattern;
}

std::string short_hostname() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return {};
    std::string host = name;
    return host.substr(0, host.find('.'));
}

}  // namespace leftover::node

// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/node_info.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace leftover::node {

std::string expand_slurmd_path(std::string pattern, const std::string& node_name, const std::string& short_host) {
    if (const auto at = pattern.find("%h"); at != std::string::npos) pattern.replace(at, 2, short_host);
    if (const auto at = pattern.find("%n"); at != std::string::npos) pattern.replace(at, 2, node_name);
    return pattern;
}

steps::StepSockets NodeInfo::step_sockets() const {
    steps::StepSockets where;
    if (slurmd_uid) where.spool_owners.insert(*slurmd_uid);
    where.spool_dirs.push_back({spool_dir, true});
    where.node_names.push_back(node_name);
    for (const HostNode& other : other_nodes) {
        where.node_names.push_back(other.name);
        const auto same_dir = [&](const steps::StepSpoolDir& dir) { return dir.path == other.spool_dir; };
        const auto known = std::find_if(where.spool_dirs.begin(), where.spool_dirs.end(), same_dir);
        if (known == where.spool_dirs.end())
            where.spool_dirs.push_back({other.spool_dir, other.running});
        else
            known->must_exist = known->must_exist || other.running;
    }
    return where;
}

std::vector<std::string> NodeInfo::node_names() const {
    std::vector<std::string> names{node_name};
    for (const HostNode& other : other_nodes) names.push_back(other.name);
    return names;
}

std::string NodeInfo::describe_nodes() const {
    std::vector<std::string> parts{fmt::format("{} ({})", node_name, spool_dir)};
    for (const HostNode& other : other_nodes)
        parts.push_back(fmt::format("{} ({}{})", other.name, other.spool_dir, other.running ? ", running" : ""));
    return fmt::format("{}", fmt::join(parts, ", "));
}

void add_host_node(NodeInfo& info, HostNode node) {
    if (node.name.empty() || node.name == info.node_name) return;
    for (HostNode& known : info.other_nodes)
        if (known.name == node.name) {
            known.running = known.running || node.running;
            return;
        }
    info.other_nodes.push_back(std::move(node));
}

std::string full_hostname() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

std::string short_hostname() {
    const std::string host = full_hostname();
    return host.substr(0, host.find('.'));
}

}  // namespace leftover::node

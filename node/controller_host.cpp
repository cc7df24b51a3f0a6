// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/controller_host.hpp"

#include "errors/error.hpp"
#include "node/running_slurmd.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <string_view>

namespace leftover::node {

std::optional<std::string> slurmctld_host_naming(const std::vector<std::string>& control_machines,
                                                 const std::set<std::string>& host_names) {
    for (const std::string& entry : control_machines) {
        std::string_view rest = entry;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            const std::string name(rest.substr(0, comma));
            if (name == "localhost" || (!name.empty() && host_names.count(name) != 0)) return entry;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return std::nullopt;
}

Result<std::optional<std::string>> controller_host_reason(const NodeInfo& node, const std::string& proc_root) {
    if (node.slurmctld_host)
        return std::optional<std::string>(
            fmt::format("slurm.conf names this host as SlurmctldHost ({})", *node.slurmctld_host));
    auto running = node.slurmctlds_seen ? Result<std::vector<pid_t>>(*node.slurmctlds_seen)
                                        : running_slurmctlds(proc_root, node.slurm_uids);
    if (!running.ok())
        return Error::lookup(
            fmt::format("cannot tell whether slurmctld runs on this host: {}", running.error().message),
            ErrorSource::proc);
    if (running->empty()) return std::optional<std::string>();
    return std::optional<std::string>(
        fmt::format("slurmctld runs on this host (pid {})", fmt::join(running.value(), ", ")));
}

}  // namespace leftover::node

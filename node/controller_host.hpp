// SPDX-License-Identifier: GPL-2.0-or-later
// Whether this host is where slurmctld runs. Small clusters and workstations run
// slurmctld and slurmd on one host where people also log in without a job; a sweep
// there would end their sessions, so leftover sweeps such a host only when told to
// (sweep_on_controller_host).
#pragma once

#include "errors/result.hpp"
#include "node/node_info.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::node {

// The SlurmctldHost entry that names this host, if any: one of `host_names` (its short
// and full names, as slurmctld compares them), or "localhost", which slurmctld takes
// as its own on any host. An entry may be an external-HA list "a,b".
std::optional<std::string> slurmctld_host_naming(const std::vector<std::string>& control_machines,
                                                 const std::set<std::string>& host_names);

// Why this host counts as slurmctld's, or nullopt when it does not: slurm.conf names
// it (node.slurmctld_host), or a slurmctld owned by root or a Slurm account
// (node.slurm_uids) runs in this pid namespace under proc_root. When that cannot be
// told (/proc, or a root or Slurm process in it, cannot be read), a lookup error: a
// doubt counts as a controller host, never as a licence to kill.
Result<std::optional<std::string>> controller_host_reason(const NodeInfo& node, const std::string& proc_root);

}  // namespace leftover::node

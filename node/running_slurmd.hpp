// SPDX-License-Identifier: GPL-2.0-or-later
// The slurmd daemons running on this host, found in /proc, and the node name each was
// given with -N: a slurmd started with `-N name` runs as a node that slurm.conf need
// not place on this host (several slurmd on one host, dynamic nodes), and its live
// steps are in its own spool directory.
#pragma once

#include "util/result.hpp"

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::node {

// What slurmd's command line says about its node name (slurmd.c _process_cmdline:
// getopt_long with "bcCd:Df:F::GhL:Mn:N:svVZ" and long options that take an argument
// but --version and --systemd). The last -N wins, as in slurmd.
struct SlurmdOptions {
    std::optional<std::string> node_name;  // -N
    bool dynamic = false;                  // -Z: without -N its name is the host name
    bool dynamic_future = false;           // -F: without -N slurmctld names it
    bool operator==(const SlurmdOptions&) const = default;
};
SlurmdOptions parse_slurmd_options(const std::vector<std::string>& argv);

struct RunningSlurmd {
    pid_t pid = 0;
    SlurmdOptions options;
};

// Every process under proc_root owned by root whose executable is slurmd (also
// Debian's slurmd-wlm) and that shares the caller's pid namespace (a slurmd in
// another one is another host as far as Slurm is concerned), in pid order.
// Lookup error when /proc or such a process cannot be read (a process that exits
// meanwhile is skipped).
Result<std::vector<RunningSlurmd>> running_slurmds(const std::string& proc_root);

// Every slurmctld under proc_root in the caller's pid namespace, found as running_slurmds
// finds slurmd, owned by root or by one of `owners` (SlurmUser: slurmctld drops to it),
// in pid order. A user's own program named slurmctld is not one. Lookup error when
// /proc or such a process cannot be read: the caller must then assume one runs.
Result<std::vector<pid_t>> running_slurmctlds(const std::string& proc_root, const std::set<uid_t>& owners);

}  // namespace leftover::node

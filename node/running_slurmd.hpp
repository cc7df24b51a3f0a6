// SPDX-License-Identifier: GPL-2.0-or-later
// The slurmd daemons running on this host, found in /proc, and the node name each was
// given with -N: a slurmd started with `-N name` runs as a node that slurm.conf need
// not place on this host (several slurmd on one host, dynamic nodes), and its live
// steps are in its own spool directory.
#pragma once

#include "errors/result.hpp"
#include "node/node_info.hpp"

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

// What names a running slurmd's node when it runs without -N (slurmd.c _read_config):
// with -Z the host name, otherwise slurm.conf's pick for this host; either is unset
// where the front end cannot know it. And how its spool dir is written.
struct SlurmdNaming {
    std::optional<std::string> configured;  // slurm.conf's pick for this host
    std::optional<std::string> host_name;   // gethostname(): a -Z slurmd's name
    std::string spool_pattern;              // SlurmdSpoolDir as slurm.conf writes it
    std::string short_host;                 // for its %h
};

// The one rule for which node each running slurmd is, for the plugin and the command:
// adds each one's node to node.other_nodes as running (so its spool dir must exist),
// except node.node_name and the node of node.slurmd_pid when it runs without -N (that is
// node_name). Returns one sentence for each slurmd whose node cannot be told (-F without
// -N: slurmctld names it; no -N and no name from `naming`), naming its pid: its step
// sockets would not be found. The front end makes it an error (the command) or a note
// in the log (the plugin).
std::vector<std::string> add_running_nodes(NodeInfo& node, const std::vector<RunningSlurmd>& running,
                                           const SlurmdNaming& naming);

// slurm.conf's pick for this host, as the plugin tells it where its slurm.conf does not
// (from 23.02 on; the node table is not the job epilog's either): when no running slurmd
// runs as `node_name` by its -N (or by -Z, as `host_name`), this node's slurmd runs
// without them, as that pick, so the pick is `node_name`. nullopt otherwise.
std::optional<std::string> pick_from_running(const std::string& node_name, const std::vector<RunningSlurmd>& running,
                                             const std::optional<std::string>& host_name);

// Every slurmctld under proc_root in the caller's pid namespace, found as running_slurmds
// finds slurmd, owned by root or by one of `owners` (SlurmUser: slurmctld drops to it),
// in pid order. A user's own program named slurmctld is not one. Lookup error when
// /proc or such a process cannot be read: the caller must then assume one runs.
Result<std::vector<pid_t>> running_slurmctlds(const std::string& proc_root, const std::set<uid_t>& owners);

// Both in one pass of /proc: what a sweep needs at every step end (running_slurmds for
// the other nodes of this host, running_slurmctlds for controller_host_reason).
struct RunningDaemons {
    std::vector<RunningSlurmd> slurmds;
    std::vector<pid_t> slurmctlds;
};
Result<RunningDaemons> running_daemons(const std::string& proc_root, const std::set<uid_t>& slurmctld_owners);

}  // namespace leftover::node

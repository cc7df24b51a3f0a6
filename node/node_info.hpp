// SPDX-License-Identifier: GPL-2.0-or-later
// Which node's job state to read: what this node's slurmd really uses.
#pragma once

#include "steps/local_steps.hpp"

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::node {

// Another node this host runs besides NodeInfo::node_name (several slurmd on one host:
// slurm.conf's NodeName lines for this host, a running `slurmd -N`).
struct HostNode {
    std::string name;
    std::string spool_dir;  // SlurmdSpoolDir expanded for it
    bool running = false;   // a slurmd was seen running as it (so its spool dir exists)
    bool operator==(const HostNode&) const = default;
};

struct NodeInfo {
    std::string spool_dir;            // SlurmdSpoolDir with %n/%h expanded
    std::string node_name;            // slurmd's own node name (slurmd -N)
    std::set<uid_t> slurm_uids;       // SlurmUser, SlurmdUser
    std::optional<uid_t> slurmd_uid;  // SlurmdUser: may own the spool dirs, as root may
    bool prolog_contain = false;      // PrologFlags=contain: every allocation has an extern step here
    std::string slurm_conf;           // the slurm.conf path, for helpers that ask slurmctld
    std::string slurmd_pid_file;      // SlurmdPidFile with %n/%h expanded
    // UnkillableStepTimeout, seconds: how long Slurm waits for a step's processes to die
    // after SIGKILL before it drains the node; the drain waits as long for leftover's.
    unsigned unkillable_step_timeout = 60;
    // The running slurmd, when the front end knows it: the caller must share its pid
    // namespace, and it is never signalled. The command reads it from slurmd_pid_file;
    // the plugin knows it only in the job epilog (spank/hooks.cpp says why).
    std::optional<pid_t> slurmd_pid;
    // Every other node of this host: their steps are live work here too.
    std::vector<HostNode> other_nodes;
    // Set when what the front end could learn about other nodes is incomplete (no node
    // table in this process): said once in the log, never a reason to fail.
    std::string other_nodes_note;
    // The SlurmctldHost entry of slurm.conf that names this host, when the process's
    // slurm.conf has them (slurmstepd's has none from 23.02 on: then only a running
    // slurmctld tells, controller_host.hpp).
    std::optional<std::string> slurmctld_host;
    // The slurmctlds running on this host, when the front end's look for the running
    // slurmd saw them in the same pass of /proc (running_daemons); unset: not looked.
    std::optional<std::vector<pid_t>> slurmctlds_seen;

    // Every node's spool dir (node_name's first, which must exist) and every name.
    steps::StepSockets step_sockets() const;
    // node_name, then every other node of this host: what slurmctld is asked about.
    std::vector<std::string> node_names() const;
    // "n1 (/var/spool/slurmd/n1), n2 (...)": for log lines.
    std::string describe_nodes() const;
};

// Adds `node` to info.other_nodes unless it is info.node_name or already there
// (a name seen running upgrades an entry learned from slurm.conf).
void add_host_node(NodeInfo& info, HostNode node);

// A path of slurmd's (SlurmdSpoolDir, SlurmdPidFile) as slurmd expands it
// (slurm_conf_expand_slurmd_path): the first %h becomes the short host name, then the
// first %n the node name.
std::string expand_slurmd_path(std::string pattern, const std::string& node_name, const std::string& short_host);

// gethostname() up to the first dot, as slurmd's gethostname_short(); empty on failure.
std::string short_hostname();
// gethostname() whole; empty on failure.
std::string full_hostname();

}  // namespace leftover::node

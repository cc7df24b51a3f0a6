// SPDX-License-Identifier: GPL-2.0-or-later
// Which node's job state to read: what this node's slurmd really uses.
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>

namespace leftover::node {

struct NodeInfo {
    std::string spool_dir;        // SlurmdSpoolDir with %n/%h expanded
    std::string node_name;        // slurmd's own node name (slurmd -N)
    std::set<uid_t> slurm_uids;   // SlurmUser, SlurmdUser
    bool prolog_contain = false;  // PrologFlags=contain: every allocation has an extern step here
    std::string slurm_conf;       // the slurm.conf path, for helpers that ask slurmctld
    std::string slurmd_pid_file;  // SlurmdPidFile with %n/%h expanded
    // The running slurmd, when the front end knows it: the caller must share its pid
    // namespace, and it is never signalled. The command reads it from slurmd_pid_file;
    // the plugin knows it only in the job epilog (spank/hooks.cpp says why).
    std::optional<pid_t> slurmd_pid;
};

// A path of slurmd's (SlurmdSpoolDir, SlurmdPidFile) as slurmd expands it
// (slurm_conf_expand_slurmd_path): the first %h becomes the short host name, then the
// first %n the node name.
std::string expand_slurmd_path(std::string pattern, const std::string& node_name, const std::string& short_host);

// gethostname() up to the first dot, as slurmd's gethostname_short(); empty on failure.
std::string short_hostname();

}  // namespace leftover::node

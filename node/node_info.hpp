// SPDX-License-Identifier: GPL-2.0-or-later
// Which node's job state to read: what this node's slurmd really uses.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

namespace leftover::node {

struct NodeInfo {
    std::string spool_dir;        // SlurmdSpoolDir with %n/%h expanded
    std::string node_name;        // slurmd's own node name (slurmd -N)
    std::set<uid_t> slurm_uids;   // SlurmUser, SlurmdUser
    bool prolog_contain = false;  // PrologFlags=contain: every allocation has an extern step here
    std::string slurm_conf;       // the slurm.conf path, for helpers that ask slurmctld
};

// SlurmdSpoolDir as slurmd expands it: the first %h becomes the short host name, then
// the first %n the node name.
std::string expand_spool_dir(std::string pattern, const std::string& node_name, const std::string& short_host);

// gethostname() up to the first dot, as slurmd's gethostname_short(); empty on failure.
std::string short_hostname();

}  // namespace leftover::node

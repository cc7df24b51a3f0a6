// SPDX-License-Identifier: GPL-2.0-or-later
// What Slurm's own configuration (the process's `slurm_conf`) says about this node.
// Compiled with Slurm's headers but linking no libslurm: the symbol resolves in the
// process, to libslurmfull inside slurmstepd and to libslurm in the command.
#pragma once

#include "node/node_info.hpp"

#include <string>

namespace leftover::node {

// SlurmdSpoolDir and SlurmdPidFile (expanded as slurmd does), Slurm's accounts,
// PrologFlags=contain and the slurm.conf path, for `node_name`. Requires a loaded
// slurm_conf; an empty spool dir or pid file means Slurm did not say.
NodeInfo node_info_from_slurm_conf(const std::string& node_name);

// Adds to node.other_nodes every NodeName that slurm.conf puts on this host (by its
// NodeHostname or NodeAddr, host_nodes.hpp), its spool dir expanded for it. False when
// this process has no NodeName lines to read: slurmstepd's copy of slurm.conf may
// lack them (the job epilog's from 23.02 on).
bool add_configured_host_nodes(NodeInfo& node);

// SlurmdSpoolDir as slurm.conf gives it (with %n and %h unexpanded); empty when unset.
std::string slurmd_spool_pattern();

// PrologFlags=contain: every allocation shows up locally as an extern step.
bool prolog_contain();

}  // namespace leftover::node

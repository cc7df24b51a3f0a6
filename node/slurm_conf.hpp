// SPDX-License-Identifier: GPL-2.0-or-later
// What Slurm's own configuration (the process's `slurm_conf`) says about this node.
// Compiled with Slurm's headers but linking no libslurm: the symbol resolves in the
// process, to libslurmfull inside slurmstepd and to libslurm in the command.
#pragma once

#include "node_info.hpp"

#include <string>

namespace leftover::node {

// SlurmdSpoolDir and SlurmdPidFile (expanded as slurmd does), Slurm's accounts,
// PrologFlags=contain and the slurm.conf path, for `node_name`. Requires a loaded
// slurm_conf; an empty spool dir or pid file means Slurm did not say.
NodeInfo node_info_from_slurm_conf(const std::string& node_name);

// PrologFlags=contain: every allocation shows up locally as an extern step.
bool prolog_contain();

}  // namespace leftover::node

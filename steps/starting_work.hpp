// SPDX-License-Identifier: GPL-2.0-or-later
// Work being set up on this node that the step sockets cannot show yet: slurmd forks,
// then execs slurmstepd, which loads its plugins and only then listens on its step
// socket. A user's next job is in that window for some milliseconds; a sweep that
// signals then would take the user for one without work.
#pragma once

#include "errors/result.hpp"
#include "steps/local_steps.hpp"

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <set>
#include <string>

namespace leftover::steps {

// What this sweep's looks at the step sockets have seen, for work_being_set_up: a stepd
// seen once is past its setup, whatever a later look finds (an ending stepd removes its
// socket, then waits up to 3 s for its open connections before it exits).
struct SeenSteps {
    std::set<pid_t> stepds;           // stepd pids that answered in any look
    std::set<std::string> steps;      // "J.S" of every step socket any look listed (answering or not)
    std::size_t unplaced_stepds = 0;  // of the last look: answers that named no stepd pid of this namespace
    void add(const LocalJobState& look);
};

// The first sign, in pid order, that a job or step is being set up under proc_root, said
// as a clause ("slurmstepd pid N has no step socket yet"); nullopt when there is none.
// A sign is a root process that is
//  - a slurmstepd none of `seen.stepds` and whose parent is no slurmstepd (a stepd's own
//    child is its step's task on the way to exec), unless it runs `slurmstepd spank
//    epilog` (a job ending) or its title names a step of `seen.steps` (slurmstepd sets
//    "slurmstepd: [J.S]" before it creates its socket, so a step whose socket was seen
//    is past its setup: an ending stepd); and only when it is this node's: a slurmd
//    still feeds it its launch (slurmd's _forkexec_slurmstepd puts one pipe on the
//    stepd's stdin and another on its stdout and holds their other ends from the exec
//    until the stepd has made its socket: close_slurmd_conn), or its title names a step
//    of `listed_steps` (its socket is in this node's spool dirs, made since the last look).
//    Another cluster's stepd, or another node's whose spool dir is not read, is neither
//    once set up: it never answers here, and must not hold every sweep while it runs; or
//  - a slurmd whose parent is a slurmd: a fork on its way to exec slurmstepd or a
//    prolog, unless its command line says it runs an epilog (26.05 rewrites it).
// Only a daemon of the caller's pid namespace counts (another one is another host's).
// Either started within the last two minutes (by <proc_root>/uptime): one without a socket
// for longer is stuck, not starting, and must not hold every sweep to its deadline.
// `not_doubt`: the caller and its ancestors (a job epilog runs inside such a fork).
// `seen.unplaced_stepds`: that many other slurmstepds are those of sockets whose stepd's
// pid the last look could not learn (in another pid namespace; an unanswered socket's
// stepd is placed by its title).
// A process that exits meanwhile is skipped; one that cannot be read is a lookup error.
// `listed_steps`: the steps whose sockets this node's spool dirs hold at the call, "J.S" as
// describe_step writes them (list_local_steps).
Result<std::optional<std::string>> work_being_set_up(const std::string& proc_root, const SeenSteps& seen,
                                                     const std::set<std::string>& listed_steps,
                                                     const std::set<pid_t>& not_doubt);

}  // namespace leftover::steps

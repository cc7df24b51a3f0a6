// SPDX-License-Identifier: GPL-2.0-or-later
// Work being set up on this node that the step sockets cannot show yet: slurmd forks,
// then execs slurmstepd, which loads its plugins and only then listens on its step
// socket. A user's next job is in that window for some milliseconds; a sweep that
// signals then would take the user for one without work. Before that, slurmd may run
// the job's Prolog (with PrologFlags=contain, before the extern step exists): seconds in
// which the job is running at slurmctld and allocated here, and no socket shows it.
#pragma once

#include "errors/result.hpp"
#include "steps/local_steps.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::steps {

// What this sweep's looks at the step sockets have seen, for work_being_set_up: a stepd
// that answered once is past its setup, whatever a later look finds (an ending stepd
// removes its socket, then waits up to 3 s for its open connections before it exits).
// A socket that did not answer says less: an ending stepd's listener is closed, but a
// starting one's socket exists a moment before it listens (req.c _create_socket binds,
// then listens), and its step's title is set before either.
struct SeenSteps {
    std::set<pid_t> stepds;           // stepd pids that answered in any look
    std::set<std::string> steps;      // "J.S" of every step whose socket answered in any look
    std::size_t unplaced_stepds = 0;  // of the last look: answers that named no stepd pid of this namespace
    std::set<pid_t> prologs;          // slurmd's Prolog children a look found (their users live then)
    std::set<std::string> silent;     // "J.S" of every listed socket that did not answer (refused, gone, unasked)
    void add(const LocalJobState& look);
};

// A job in its Prolog on this node: slurmd runs the Prolog (and the spank prolog) in a
// child of its own before the job's slurmstepd exists.
struct PrologJob {
    pid_t pid = 0;  // slurmd's child that runs it
    std::uint32_t job_id = 0;
    uid_t uid = 0;  // the job's user
    bool operator==(const PrologJob&) const = default;
};

// Every job whose Prolog runs under proc_root, in pid order: a root process whose parent
// is a slurmd daemon (root, running the slurmd binary, its own parent no slurmd) of the
// caller's pid namespace, with the environment slurmd gives a Prolog:
// SLURM_SCRIPT_CONTEXT=prolog_slurmd, the job in SLURM_JOB_ID and SLURM_JOB_UID
// (prep_script_slurmd.c _build_env; run_command forks, then execs the script, from 24.11
// through slurmd's own binary as its launcher: the same child, the same environment).
// No user can make one: it is root's and slurmd's child, and slurmd sets those variables
// after the job's own SPANK ones, each of which it prefixes with SPANK_. An Epilog's
// child says epilog_slurmd. A process that exits meanwhile is skipped, and so is one whose
// environment the kernel refuses to the caller (EACCES, EPERM: a process that is not
// dumpable, as for a moment of its exec; work_being_set_up counts it as a sign); a Prolog
// whose job or uid does not read, or a /proc that cannot be read, is a lookup error.
Result<std::vector<PrologJob>> jobs_in_prolog(const std::string& proc_root);

// The first sign, in pid order, that a job or step is being set up under proc_root, said
// as a clause ("slurmstepd pid N has no step socket yet"); nullopt when there is none.
// A sign is a root process that is
//  - a slurmstepd none of `seen.stepds` and whose parent is no slurmstepd (a stepd's own
//    child is its step's task on the way to exec), unless it runs `slurmstepd spank
//    epilog` (a job ending) or its title names a step of `seen.steps` (slurmstepd sets
//    "slurmstepd: [J.S]" before it creates its socket, so a step whose socket answered
//    is past its setup: an ending stepd); and only when it is this node's: a slurmd
//    still feeds it its launch (slurmd's _forkexec_slurmstepd puts one pipe on the
//    stepd's stdin and another on its stdout and holds their other ends from the exec
//    until the stepd has made its socket and listens: close_slurmd_conn), or, asked
//    after that, its title names a step that `list_steps` lists and that is none of
//    `seen.silent` (its socket is in this node's spool dirs, made since the last look;
//    listed after the pipes were found closed, so a socket made as they closed is
//    listed; one whose socket refused while no slurmd fed it is an ending stepd).
//    Another cluster's stepd, or another node's whose spool dir is not read, is neither
//    once set up: it never answers here, and must not hold every sweep while it runs; or
//  - a slurmd whose parent is a slurmd: a fork on its way to exec slurmstepd or a
//    prolog, unless its command line says it runs an epilog (26.05 rewrites it), or
//  - a slurmd whose parent is none, that holds a pipe an older such slurmd holds:
//    _forkexec_slurmstepd's grandchild, orphaned when its parent (which called setsid)
//    exits, until it execs slurmstepd; the slurmd daemon holds the other ends of its
//    pipes. Without this it would pass for a slurmd daemon, and its exec makes no new
//    id for StartingLook to see; or
//  - slurmd's child running a Prolog (as jobs_in_prolog) none of `seen.prologs`: its
//    user was not live in the last look. One some look found is no sign, whatever it
//    runs (a script, 24.11's launcher, `slurmstepd spank prolog`); or slurmd's child
//    whose environment the kernel refuses to the caller, started within the last two
//    minutes: it may be a Prolog, and whose, nobody can tell.
// Only a daemon of the caller's pid namespace counts (another one is another host's).
// Either started within the last two minutes (by <proc_root>/uptime): one without a socket
// for longer is stuck, not starting, and must not hold every sweep to its deadline.
// `not_doubt`: the caller and its ancestors (a job epilog runs inside such a fork).
// `seen.unplaced_stepds`: that many other slurmstepds are those of sockets whose stepd's
// pid the last look could not learn (in another pid namespace; an unanswered socket's
// stepd is placed by its title).
// A process that exits meanwhile is skipped; one that cannot be read is a lookup error.
// `list_steps`: the steps whose sockets this node's spool dirs hold when it is called,
// "J.S" as describe_step writes them (list_local_steps); called at most once.
using StepLister = std::function<Result<std::set<std::string>>()>;
Result<std::optional<std::string>> work_being_set_up(const std::string& proc_root, const SeenSteps& seen,
                                                     const StepLister& list_steps, const std::set<pid_t>& not_doubt);

// work_being_set_up for one sweep, asked before each round of signals and again right
// before each signal of it. A look lists /proc; and nothing begins its setup between two
// looks but by a fork (slurmd forks for each slurmstepd, Prolog and spank prolog). So
// while the pid namespace has given out no id since a look that found nothing, or only
// ids of processes that are not root's or gone already, that answer stands: one read of
// <proc_root>/sys/kernel/ns_last_pid (the caller's namespace) and one stat per new id.
// Unreadable, wrapped around, or more than a few thousand new ids: a look. So is every
// question while a look's answer named no stepd of this namespace (`seen.unplaced_stepds`):
// a slurmstepd that stood for it may set its title, and become a sign, without a fork.
// A stepd that is this node's is fed by slurmd from its fork until its socket exists (as
// slurmd's fork, its orphaned grandchild, the exec), so it was a sign to the look that
// found nothing, or had no title yet and stood for nothing. A fork caught
// in flight as an id is read (its id given out, the process not in /proc yet: some
// microseconds, before it runs) is met by the look that the next root id brings.
class StartingLook {
public:
    Result<std::optional<std::string>> operator()(const std::string& proc_root, const SeenSteps& seen,
                                                  const StepLister& list_steps, const std::set<pid_t>& not_doubt);

private:
    std::optional<pid_t> clear_since_;  // the last id given out when a look that found nothing began
};

}  // namespace leftover::steps

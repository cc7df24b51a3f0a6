// SPDX-License-Identifier: GPL-2.0-or-later
// Real processes for tests: started as a given uid, observed through /proc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace leftover::test {

// Makes this test process a child subreaper, so double-forked daemons it starts are
// reparented to it and can be reaped (containers may have a pid 1 that never reaps).
void become_subreaper();

// fork + drop to uid/gid (real, effective, saved; no supplementary groups) + execvp.
pid_t spawn_as(uid_t uid, const std::vector<std::string>& argv);

// fork + drop to uid/gid (as spawn_as) + run `body` in the child without exec (it is
// _exit(0)ed should it return): for processes a command line cannot make, such as
// one that made itself non-dumpable. Returns once the child runs as uid.
pid_t spawn_forked_as(uid_t uid, const std::function<void()>& body);

// The state letter of /proc/<pid>/stat ('S', 'D', 'T', 't', 'Z' ...); 0 once gone.
char state_of(pid_t pid);

// Polls until the process is in `state`; false at the deadline.
bool wait_state(pid_t pid, char state, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Running: /proc/<pid> exists and is not a zombie. Reaps zombie children of ours.
bool is_running(pid_t pid);

// Polls until the process runs (is not stopped, state T, and has no SIGSTOP pending that
// would stop it once it runs); false at the deadline or once it is gone. SIGCONT wakes a
// stopped process, which may show T for a moment after.
bool wait_not_stopped(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Polls until the process is no longer running; false at the deadline.
bool wait_gone(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Polls until /proc/<pid> is owned by `uid`: a process that switched to it shows as
// root's until it execs. False at the deadline.
bool wait_owner(pid_t pid, uid_t uid, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Polls until `path` holds a pid (written by a test process); 0 at the deadline.
pid_t wait_pid_file(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// All running processes whose real uid is `uid`.
std::vector<pid_t> processes_of(uid_t uid);

// SIGKILLs every process of `uid` and reaps what it can: test cleanup.
void kill_all_of(uid_t uid);

}  // namespace leftover::test

namespace leftover::test {

// Like spawn_as, with real, effective and saved uids set separately (a setuid program).
pid_t spawn_with_uids(uid_t real, uid_t effective, uid_t saved, const std::vector<std::string>& argv);

}  // namespace leftover::test

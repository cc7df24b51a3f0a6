// SPDX-License-Identifier: GPL-2.0-or-later
// For the cleanup's guard: which processes hold a user as any of their uids. The scan
// (proc_table.hpp) reads the uids of unprotected owners only, and a setuid-root program
// a user runs (uids U/0/0/0) has a /proc entry of root's: it would look like none of hers.
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace leftover {

// Every running process under `proc_root` whose real, effective, saved or filesystem uid
// is one of `uids`, by that uid (a process under each uid it holds), in pid order.
// Zombies hold nothing. Every status file is read, whoever owns the entry; a process
// gone meanwhile is skipped. Anything else that cannot be read, and the deadline, is a lookup error:
// the caller then must not take "no process" for an answer. The caller has checked the
// view of `proc_root` (hidepid, pid namespace) with a scan just before.
Result<std::map<uid_t, std::vector<pid_t>>> processes_holding(
    const std::string& proc_root, const std::set<uid_t>& uids,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a helper program with a hard deadline: spawned with posix_spawn (safe from a
// multithreaded slurmstepd), killed and reaped when the deadline comes. Nothing outlives
// the call.
#pragma once

#include "errors/result.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace leftover {

struct ChildOutput {
    std::string out;
    std::string err;
    int exit_code = -1;  // -1 when killed by a signal
};

// What the child said on stderr, without trailing blanks; "no message" when it said nothing.
std::string error_text(const ChildOutput& output);

// `argv[0]` is an absolute path; `env` is the child's whole environment. Within 100 ms of
// `deadline` nothing is started (an error of source deadline), and a child still running
// then is killed: its kill and reap, on a loaded node, fit in what is left.
Result<ChildOutput> run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                std::chrono::steady_clock::time_point deadline);

}  // namespace leftover

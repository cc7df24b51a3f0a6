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

// `argv[0]` is an absolute path; `env` is the child's whole environment. Past `deadline`
// nothing is started (an error of source deadline); a child still running at it is killed.
Result<ChildOutput> run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                std::chrono::steady_clock::time_point deadline);

}  // namespace leftover

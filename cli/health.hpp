// SPDX-License-Identifier: GPL-2.0-or-later
// `check --health --failures N [--drain]`: a failed check counts towards a streak kept in
// a file (state dir, /run/leftover by default: gone at reboot, like the strays it counted);
// a passed check clears it. Only the Nth failure in a row fails the health check, and
// with --drain drains the node with the health line as reason.
#pragma once

#include "errors/result.hpp"

#include <string>

namespace leftover::cli {

// The file under `state_dir` that holds the streak.
std::string streak_path(const std::string& state_dir);

// The failures in a row so far: 0 without a file. A file that is not one number, or a
// state dir that is not root's directory, is an error (the streak is then unknown).
Result<unsigned> read_streak(const std::string& state_dir);

// Writes the streak (0 removes the file), creating the state dir (0755) when missing.
Status write_streak(const std::string& state_dir, unsigned failures);

// What one check means for the streak and the health check.
struct HealthVerdict {
    unsigned streak = 0;  // after this check
    bool fails = false;   // the health check fails now (and --drain drains)
    std::string line;     // the line to print, with the streak when it matters
};

// `line`: format_check_health's line (with its newline); `status`: the check's exit status;
// `previous`: the streak before; `needed`: --failures.
HealthVerdict judge_health(const std::string& line, int status, unsigned previous, unsigned needed);

}  // namespace leftover::cli

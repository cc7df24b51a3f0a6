// SPDX-License-Identifier: GPL-2.0-or-later
// The command's exit statuses, the same for every command (see leftover(8)).
#pragma once

namespace leftover::cli {

inline constexpr int kExitClean = 0;   // nothing to kill, or nothing left
inline constexpr int kExitStrays = 1;  // strays found (check) or left (sweep)
inline constexpr int kExitError = 2;   // config or lookup error, not a Slurm node, bad usage

}  // namespace leftover::cli

// SPDX-License-Identifier: GPL-2.0-or-later
// The reason a drained node shows (drain_on_survivors, check --health --drain): one line
// an admin can act on, bounded, that no user name can forge.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace leftover::drain {

// slurmctld sets no length on a node's reason (22.05 to 26.05 pack and keep it whole);
// slurmdbd keeps it in a tinytext column (255 bytes); `sinfo -R` shows 20 characters by
// default and `scontrol show node` one line: a reason stays short, the count and the
// user first.
inline constexpr std::size_t kMaxDrainReason = 128;

// One process that outlived SIGKILL, as /proc showed it after the sweep.
struct Survivor {
    uid_t uid = 0;
    std::string user;  // empty when unknown: "uid N" is shown
    char state = '?';  // from stat: D (uninterruptible), T, ...
};

// "leftover: 2 processes of bob survived SIGKILL (D)": users by count, most first; in a
// name only letters, digits and . _ - @ $ stay, every other byte is \xNN (a name must not
// read as a second user, a key=value pair or scontrol's " [user@time]"); at most
// kMaxDrainReason bytes, users that do not fit summed up as "+N more".
std::string survivors_reason(const std::vector<Survivor>& survivors);

// Any text as a reason: one line, escaped, cut to kMaxDrainReason ("..." at the end).
std::string bounded_reason(std::string_view text);

}  // namespace leftover::drain

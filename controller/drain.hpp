// SPDX-License-Identifier: GPL-2.0-or-later
// Taking this node out of service through slurmctld (drain_on_survivors, check --health
// --drain): the reason text, the rule that keeps an earlier reason, and the helper's
// answer. The request itself goes through leftover-query (query_controller.cpp), bounded.
#pragma once

#include "errors/result.hpp"

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace leftover::controller {

// slurmctld sets no length on a node's reason (22.05 to 26.05 pack and keep it whole);
// slurmdbd keeps it in a tinytext column (255 bytes); `sinfo -R` shows 20 characters by
// default and `scontrol show node` one line: a reason stays short, the count and the
// user first.
inline constexpr std::size_t kMaxDrainReason = 128;

// What slurmctld says of the node before any drain. A node already drained or draining,
// down or failing keeps its reason: an admin's, or ours from an earlier job end. So a
// node is drained once per state change (until resumed), not once per job end.
struct SeenNodeState {
    bool down = false;
    bool drain = false;  // DRAINING or DRAINED
    bool fail = false;
};
inline bool keeps_its_reason(const SeenNodeState& state) { return state.down || state.drain || state.fail; }

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

// What leftover-query's drain mode answered.
struct DrainAnswer {
    bool drained = false;  // false: the node kept its state and reason
    std::string state;     // when kept: its state, e.g. IDLE+DRAIN
    std::string reason;    // when kept: its reason (may be empty)
};

// "drained\nend\n" or "kept <STATE> <reason>\nend\n"; anything else is an error.
Result<DrainAnswer> parse_drain_output(const std::string& text);

}  // namespace leftover::controller

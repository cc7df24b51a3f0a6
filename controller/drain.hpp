// SPDX-License-Identifier: GPL-2.0-or-later
// Taking this node out of service through slurmctld (drain_on_survivors, check --health
// --drain): the rule that keeps an earlier reason, and the helper's answer. The request
// itself goes through leftover-query (query_controller.cpp), bounded; when to drain and
// the reason text are drain/'s.
#pragma once

#include "errors/result.hpp"

#include <string>

namespace leftover::controller {

// What slurmctld says of the node before any drain. A node already drained or draining,
// down or failing keeps its reason: an admin's, or ours from an earlier job end. So a
// node is drained once per state change (until resumed), not once per job end.
struct SeenNodeState {
    bool down = false;
    bool drain = false;  // DRAINING or DRAINED
    bool fail = false;
};
inline bool keeps_its_reason(const SeenNodeState& state) { return state.down || state.drain || state.fail; }

// What leftover-query's drain mode answered.
struct DrainAnswer {
    bool drained = false;  // false: the node kept its state and reason
    std::string state;     // when kept: its state, e.g. IDLE+DRAIN
    std::string reason;    // when kept: its reason (may be empty)
};

// "drained\nend\n" or "kept <STATE> <reason>\nend\n"; anything else is an error.
Result<DrainAnswer> parse_drain_output(const std::string& text);

}  // namespace leftover::controller

// SPDX-License-Identifier: GPL-2.0-or-later
// The one conversion from a deadline to poll()'s int milliseconds.
#pragma once

#include <chrono>
#include <climits>

namespace leftover {

// The time from `now` until `deadline`, rounded up so that a poll never returns
// before the deadline and then spins on a zero timeout; 0 once the deadline passed;
// INT_MAX at most (poll takes an int).
inline int poll_timeout_ms(std::chrono::steady_clock::time_point deadline,
                           std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) {
    if (deadline <= now) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

}  // namespace leftover

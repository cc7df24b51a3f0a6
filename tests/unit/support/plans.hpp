// SPDX-License-Identifier: GPL-2.0-or-later
// One process's decision in a plan, for tests that check a few pids of a whole plan.
#pragma once

#include "decision.hpp"

#include <doctest/doctest.h>

namespace leftover::test {

// The plan's decision for `pid`; fails the test when the plan has none.
inline const Decision& decision_of(const Plan& plan, pid_t pid) {
    for (const Decision& d : plan.decisions)
        if (d.pid == pid) return d;
    FAIL("no decision for pid ", pid);
    static const Decision none;
    return none;
}

// The reason the plan gives for `pid`.
inline Reason reason_of(const Plan& plan, pid_t pid) { return decision_of(plan, pid).reason; }

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
// One process's decision in a plan, for tests that check a few pids of a whole plan.
#pragma once

#include "decision.hpp"

#include <doctest/doctest.h>

namespace leftover::test {

// The reason the plan gives for `pid`; fails the test when the plan has no decision for it.
inline Reason reason_of(const Plan& plan, pid_t pid) {
    for (const Decision& d : plan.decisions)
        if (d.pid == pid) return d.reason;
    FAIL("no decision for pid ", pid);
    return Reason::stray;
}

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
// Decisions for tests: one made by hand, or one process's in a plan.
#pragma once

#include "policy/decision.hpp"

#include <doctest/doctest.h>

namespace leftover::test {

// A decision with just what most tests look at.
inline Decision decision_for(pid_t pid, uid_t uid, Verdict verdict, Reason reason) {
    Decision d;
    d.pid = pid;
    d.uid = uid;
    d.verdict = verdict;
    d.reason = reason;
    return d;
}

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

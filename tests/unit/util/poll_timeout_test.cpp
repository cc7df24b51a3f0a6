// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/poll_timeout.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <climits>

using leftover::poll_timeout_ms;
using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;

TEST_CASE("poll timeout: time left until the deadline, rounded up, never negative, never past an int") {
    const TimePoint now = std::chrono::steady_clock::now();
    CHECK(poll_timeout_ms(now - 5s, now) == 0);
    CHECK(poll_timeout_ms(TimePoint::min(), now) == 0);
    CHECK(poll_timeout_ms(now, now) == 0);
    CHECK(poll_timeout_ms(now + 1ns, now) == 1);  // not 0: that would spin until the deadline
    CHECK(poll_timeout_ms(now + 999us, now) == 1);
    CHECK(poll_timeout_ms(now + 1ms, now) == 1);
    CHECK(poll_timeout_ms(now + 1001us, now) == 2);
    CHECK(poll_timeout_ms(now + 2500ms, now) == 2500);
    CHECK(poll_timeout_ms(now + std::chrono::milliseconds(INT_MAX), now) == INT_MAX);
    CHECK(poll_timeout_ms(now + std::chrono::milliseconds(INT_MAX) + 1ms, now) == INT_MAX);
    CHECK(poll_timeout_ms(now + std::chrono::hours(24 * 365 * 100), now) == INT_MAX);
    CHECK(poll_timeout_ms(TimePoint::max(), now) == INT_MAX);  // no deadline at all
    CHECK(poll_timeout_ms(TimePoint::max()) == INT_MAX);
    CHECK(poll_timeout_ms(now - 1ms) == 0);
}

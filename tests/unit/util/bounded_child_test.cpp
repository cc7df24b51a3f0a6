// SPDX-License-Identifier: GPL-2.0-or-later
// run_bounded: a helper program run with a hard deadline, its output and exit code.
#include "util/bounded_child.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace std::chrono_literals;

TEST_CASE("bounded child: output and exit code come back") {
    auto out = run_bounded({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {"PATH=/bin:/usr/bin"},
                           std::chrono::steady_clock::now() + 10s);
    REQUIRE(out.ok());
    CHECK(out->out == "out\n");
    CHECK(out->err == "err\n");
    CHECK(out->exit_code == 3);
}

TEST_CASE("bounded child: a child that does not finish is killed at the deadline") {
    const auto started = std::chrono::steady_clock::now();
    auto out = run_bounded({"/bin/sleep", "30"}, {}, started + 300ms);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().message.find("did not finish before the deadline") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - started < 10s);  // hang detector only
}

TEST_CASE("bounded child: a program that cannot run is a lookup error") {
    auto out = run_bounded({"/nonexistent/leftover-query"}, {}, std::chrono::steady_clock::now() + 5s);
    CHECK_FALSE(out.ok());
}

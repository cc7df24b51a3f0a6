// SPDX-License-Identifier: GPL-2.0-or-later
// run_bounded: a helper program run with a hard deadline, its output and exit code.
#include "errors/error.hpp"
#include "support/temp_dir.hpp"
#include "util/bounded_child.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace std::chrono_literals;
using leftover::test::TempDir;

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

TEST_CASE("bounded child: past its deadline, or within 100 ms of it, nothing is started") {
    TempDir dir;
    const std::string mark = dir / "started";
    for (const auto deadline : {std::chrono::steady_clock::now() - 1ms, std::chrono::steady_clock::now() + 90ms}) {
        auto out = run_bounded({"/bin/sh", "-c", "touch " + mark}, {"PATH=/bin:/usr/bin"}, deadline);
        REQUIRE_FALSE(out.ok());
        CHECK(out.error().message == "/bin/sh not started: less than 100 ms were left before the deadline");
        CHECK(out.error().source == ErrorSource::deadline);
    }
    CHECK_FALSE(test::path_exists(mark));
    // The same with time left does start it: the mark is what a start leaves.
    REQUIRE(
        run_bounded({"/bin/sh", "-c", "touch " + mark}, {"PATH=/bin:/usr/bin"}, std::chrono::steady_clock::now() + 10s)
            .ok());
    CHECK(test::path_exists(mark));
}

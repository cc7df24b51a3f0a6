// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/text_table.hpp"

#include <doctest/doctest.h>

using namespace leftover::cli;

TEST_CASE("text table: left-aligned columns two spaces apart, the last one unpadded") {
    CHECK(
        format_text_table({{"KEY", "VALUE", "DEFAULT"}, {"uid_min", "1000", "1000"}, {"scope", "job_user", "node"}}) ==
        "KEY      VALUE     DEFAULT\n"
        "uid_min  1000      1000\n"
        "scope    job_user  node\n");
}

TEST_CASE("text table: no line ends in blanks, also when its last cells are empty or it is short") {
    CHECK(format_text_table({{"USER", "REASON", "DETAIL"}, {"bob", "has_live_job", ""}, {"al"}}) ==
          "USER  REASON        DETAIL\n"
          "bob   has_live_job\n"
          "al\n");
    CHECK(format_text_table({}).empty());
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/boot.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace std::chrono_literals;

TEST_CASE("boot: the boot id and the boot clock") {
    CHECK(read_boot_id("/proc").size() == 36);
    CHECK(read_boot_id("/nonexistent") == "-");
    const auto before = boot_clock_now();
    CHECK(before > 0ms);
    CHECK(boot_clock_now() >= before);
}

// SPDX-License-Identifier: GPL-2.0-or-later
// Which boot this is and the time since it began: what a file kept between runs (the
// survivors' record, slurmctld's shared answer) is dated by, so that nothing of another
// boot is believed.
#pragma once

#include <chrono>
#include <string>

namespace leftover {

// /proc/sys/kernel/random/boot_id below `proc_root`, without its newline; "-" when it
// cannot be read.
std::string read_boot_id(const std::string& proc_root);

// Now on CLOCK_BOOTTIME, which counts the time suspended too.
std::chrono::milliseconds boot_clock_now();

}  // namespace leftover

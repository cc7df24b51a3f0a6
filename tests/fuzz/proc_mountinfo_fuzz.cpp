// SPDX-License-Identifier: GPL-2.0-or-later
// /proc/self/mountinfo, read for /proc's fstype and options (hidepid=, subset=pid):
// octal escapes and missing fields never read past a line.
#include "fuzz_check.hpp"
#include "procfs/proc_read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = leftover::fuzz::as_text(data, size);
    const auto mount = leftover::find_mount(text, "/proc");
    if (mount) FUZZ_CHECK(mount->fstype.size() <= text.size() && mount->super_options.size() <= text.size());
    return 0;
}

// SPDX-License-Identifier: GPL-2.0-or-later
// /proc/<pid>/stat, whose comm the process chooses. Raw mode (first byte even): any text
// either parses to a pid and a comm found between its first '(' and last ')', or not at
// all. Comm mode (first byte odd): the rest is a comm inside a well-formed line, and
// whatever it holds (")", " Z 1", newlines, non-UTF-8) the fields after it read right.
#include "fuzz_check.hpp"
#include "procfs/proc_read.hpp"

#include <string>

namespace {

using leftover::parse_stat;

void raw(std::string_view text) {
    const auto stat = parse_stat(text);
    if (!stat) return;
    FUZZ_CHECK(stat->pid > 0);
    FUZZ_CHECK(stat->ppid >= 0);
    // comm runs from the first '(' to the last ')', and the state follows that ')'.
    const auto open = text.find('('), close = text.rfind(')');
    FUZZ_CHECK(open != std::string_view::npos && close != std::string_view::npos && close + 2 < text.size());
    FUZZ_CHECK(stat->comm == text.substr(open + 1, close - open - 1));
    FUZZ_CHECK(text[close + 1] == ' ' && text[close + 2] == stat->state);
    (void)stat->kernel_thread();
}

void with_comm(std::string_view comm) {
    const std::string line = "4242 (" + std::string(comm) +
                             ") S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1234 56 "
                             "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    const auto stat = parse_stat(line);
    FUZZ_CHECK(stat.has_value());
    FUZZ_CHECK(stat->pid == 4242);
    FUZZ_CHECK(stat->comm == comm);
    FUZZ_CHECK(stat->state == 'S');
    FUZZ_CHECK(stat->ppid == 17);
    FUZZ_CHECK(stat->flags == 4194560);
    FUZZ_CHECK(stat->start_time == 987654);
    FUZZ_CHECK(!stat->kernel_thread());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto text = leftover::fuzz::as_text(data + 1, size - 1);
    if ((data[0] & 1) == 0)
        raw(text);
    else
        with_comm(text.substr(0, 64));  // the kernel's is at most 15 bytes
    return 0;
}

// SPDX-License-Identifier: GPL-2.0-or-later
// /proc/<pid>/status and the values the scan and the view checks read from it (Uid, Gid,
// Groups, CapEff). Raw mode (first byte even): any text; a value found is a piece of one
// line, and parsed ids are what the value says. Name mode (first byte odd): the rest is a
// comm on the Name: line, escaped as the kernel does ('\n' as "\n"), and it cannot change
// the Uid: line that follows.
#include "fuzz_check.hpp"
#include "procfs/proc_read.hpp"

#include <string>

namespace {

using namespace leftover;

void raw(std::string_view text) {
    for (const std::string_view key : {"Uid", "Gid", "Groups", "CapEff", "Name"}) {
        const auto value = status_value(text, key);
        if (!value) continue;
        FUZZ_CHECK(value->empty() ||
                   (value->data() >= text.data() && value->data() + value->size() <= text.data() + text.size()));
        FUZZ_CHECK(value->find('\n') == std::string_view::npos);
        const auto ids = parse_ids(*value);
        const auto uids = parse_uids(*value);
        FUZZ_CHECK(!uids || (ids && ids->size() == 4 && (*ids)[0] == uids->real && (*ids)[1] == uids->effective &&
                             (*ids)[2] == uids->saved && (*ids)[3] == uids->filesystem));
        (void)parse_hex(*value);
    }
}

void with_name(std::string_view comm) {
    std::string escaped;
    for (const char c : comm) escaped += c == '\n' ? std::string_view("\\n") : std::string_view(&c, 1);
    const std::string status = "Name:\t" + escaped +
                               "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t17\n"
                               "Uid:\t41001\t41002\t41003\t41004\nGid:\t100\t100\t100\t100\nGroups:\t100 27 \n";
    const auto uids = parse_uids(status_value(status, "Uid").value_or(""));
    FUZZ_CHECK(uids.has_value());
    FUZZ_CHECK(uids->real == 41001 && uids->effective == 41002 && uids->saved == 41003 && uids->filesystem == 41004);
    const auto groups = parse_ids(status_value(status, "Groups").value_or("x"));
    FUZZ_CHECK(groups && groups->size() == 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto text = leftover::fuzz::as_text(data + 1, size - 1);
    if ((data[0] & 1) == 0)
        raw(text);
    else
        with_name(text.substr(0, 64));
    return 0;
}

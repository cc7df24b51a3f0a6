// SPDX-License-Identifier: GPL-2.0-or-later
// A protected users file: every name parse_users_file returns is one non-empty account
// name without blanks, or the whole file is a lookup error naming the file and line.
#include "fuzz_check.hpp"
#include "policy/exemptions.hpp"

#include <string>

namespace {

// The lines that name an account, counted independently of the parser: not blank, not '#'.
std::size_t name_lines(std::string_view text) {
    std::size_t count = 0;
    for (;;) {
        const auto end = text.find('\n');
        const auto line = text.substr(0, end);
        const auto first = line.find_first_not_of(" \t\r\v\f");
        if (first != std::string_view::npos && line[first] != '#') ++count;
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string origin = "/etc/slurm/localusers.backup";
    const std::string text(leftover::fuzz::as_text(data, size));
    const auto names = leftover::parse_users_file(text, origin);
    if (names.ok()) {
        FUZZ_CHECK(names->size() == name_lines(text));
        for (const std::string& name : names.value()) {
            FUZZ_CHECK(!name.empty() && name.front() != '#');
            FUZZ_CHECK(name.find_first_of(" \t\r\v\f\n") == std::string::npos);
            FUZZ_CHECK(text.find(name) != std::string::npos);
        }
    } else {
        FUZZ_CHECK(names.error().kind == leftover::ErrorKind::lookup);
        FUZZ_CHECK(names.error().message.starts_with(origin + ":"));
    }
    return 0;
}

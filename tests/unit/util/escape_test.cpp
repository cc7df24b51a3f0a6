// SPDX-License-Identifier: GPL-2.0-or-later
// Process names in log lines: whatever bytes a user puts in comm, one readable line.
#include "util/escape.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;

TEST_CASE("escape for log: printable ASCII stays as it is, but for the single quote") {
    CHECK(escape_for_log("sleep") == "sleep");
    CHECK(escape_for_log(" !\"#$%&()*+,-./09:;<=>?@AZ[]^_`az{|}~") == " !\"#$%&()*+,-./09:;<=>?@AZ[]^_`az{|}~");
    CHECK(escape_for_log("").empty());
}

TEST_CASE("escape for log: a backslash is doubled, so an escape in a name cannot pass for ours") {
    CHECK(escape_for_log("a\\b") == "a\\\\b");
    CHECK(escape_for_log("\\x0a") == "\\\\x0a");  // the text, not a newline
    CHECK(escape_for_log("\n") == "\\x0a");       // a newline
}

TEST_CASE("escape for log: control bytes, DEL, NUL and bytes above 0x7f become two hex digits") {
    CHECK(escape_for_log(std::string("a\0b", 3)) == "a\\x00b");
    CHECK(escape_for_log("\t\r\x1b[31mred") == "\\x09\\x0d\\x1b[31mred");
    CHECK(escape_for_log("\x7f") == "\\x7f");
    CHECK(escape_for_log("\xc3\xa9t\xc3\xa9") == "\\xc3\\xa9t\\xc3\\xa9");  // UTF-8 too: bytes, not characters
    CHECK(escape_for_log("\xff") == "\\xff");
}

TEST_CASE("escape for log: every byte value comes out printable, one byte per character or escape") {
    for (int value = 0; value < 256; ++value) {
        CAPTURE(value);
        const std::string escaped = escape_for_log(std::string(1, static_cast<char>(value)));
        const bool plain = value >= 0x20 && value < 0x7f && value != '\\' && value != '\'';
        CHECK(escaped.size() == (plain ? 1u : value == '\\' ? 2u : 4u));
        for (const char c : escaped) CHECK((c >= 0x20 && c < 0x7f));
    }
}

TEST_CASE("escape for log: a single quote cannot end the quoted name and forge fields after it") {
    CHECK(escape_for_log("sleep' reason=protected (x") == "sleep\\x27 reason=protected (x");
    CHECK(escape_for_log("'") == "\\x27");
}

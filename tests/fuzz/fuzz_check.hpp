// SPDX-License-Identifier: GPL-2.0-or-later
// What every fuzz target shares: the input as text, and a check that turns a broken
// promise of the parser into a crash libFuzzer reports (and keeps the input of).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace leftover::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void broken(const char* what, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
    std::abort();
}

}  // namespace leftover::fuzz

#define FUZZ_CHECK(condition) \
    ((condition) ? static_cast<void>(0) : ::leftover::fuzz::broken(#condition, __FILE__, __LINE__))

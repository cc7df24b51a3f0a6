// SPDX-License-Identifier: GPL-2.0-or-later
// A number that is the whole of a text, as the kernel and Slurm write ids and counters:
// no blank, no base prefix, nothing before or after it, within T's range (std::from_chars
// alone takes a number at the start of a text and ignores the rest). An unsigned T takes
// no sign.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace leftover {

template <class T>
std::optional<T> parse_whole(std::string_view text, int base = 10) {
    T value{};
    if (text.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace leftover

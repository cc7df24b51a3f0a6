// SPDX-License-Identifier: GPL-2.0-or-later
// A log sink for tests: keeps every line a Logger lets through, with its level.
#pragma once

#include "sweep/log.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace leftover::test {

class RecordingSink final : public sweep::LogSink {
public:
    std::vector<std::pair<LogLevel, std::string>> lines;

    // A line containing this (when set) is not kept but thrown, as a failing sink would.
    std::string throw_on;

    void write(LogLevel level, const std::string& text) override {
        if (!throw_on.empty() && text.find(throw_on) != std::string::npos) throw std::runtime_error("sink failed");
        lines.emplace_back(level, text);
    }

    // Every line's text, each ending in a newline.
    std::string text() const {
        std::string all;
        for (const auto& line : lines) all += line.second + "\n";
        return all;
    }
    // How many lines contain `part`.
    std::size_t count(const std::string& part) const {
        std::size_t n = 0;
        for (const auto& line : lines) n += line.second.find(part) != std::string::npos ? 1 : 0;
        return n;
    }
    // The level of the first line that contains `part`; nullopt when none does.
    std::optional<LogLevel> level_of(const std::string& part) const {
        for (const auto& line : lines)
            if (line.second.find(part) != std::string::npos) return line.first;
        return std::nullopt;
    }
};

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/drain.hpp"

#include <fmt/format.h>

#include <optional>
#include <sstream>

namespace leftover::controller {

Result<DrainAnswer> parse_drain_output(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::optional<DrainAnswer> answer;
    while (std::getline(lines, line)) {
        if (line == "end") {
            if (!answer) break;
            return *answer;
        }
        if (answer)
            return Error::lookup(fmt::format("leftover-query drain: unexpected output line '{}'", line),
                                 ErrorSource::controller);
        if (line == "drained") {
            answer = DrainAnswer{true, {}, {}};
        } else if (line.starts_with("kept ")) {
            const std::string rest = line.substr(5);
            const auto space = rest.find(' ');
            answer =
                DrainAnswer{false, rest.substr(0, space), space == std::string::npos ? "" : rest.substr(space + 1)};
            if (answer->state.empty())
                return Error::lookup(fmt::format("leftover-query drain: unexpected output line '{}'", line),
                                     ErrorSource::controller);
        } else {
            return Error::lookup(fmt::format("leftover-query drain: unexpected output line '{}'", line),
                                 ErrorSource::controller);
        }
    }
    return Error::lookup("leftover-query drain: incomplete answer (no end line)", ErrorSource::controller);
}

}  // namespace leftover::controller

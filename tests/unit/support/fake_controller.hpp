// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld for tests: a fixed answer (or error) about the node, and a count of the calls.
#pragma once

#include "controller.hpp"

#include <optional>

namespace leftover::test {

class FakeController final : public node::Controller {
public:
    LiveWork live;
    std::optional<Error> error;
    int calls = 0;
    Result<LiveWork> jobs_on_node(const std::string&, std::optional<std::uint32_t>,
                                  std::chrono::steady_clock::time_point) override {
        ++calls;
        if (error) return *error;
        return live;
    }
};

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld for tests: a fixed answer (or error) about the node, and a count of the calls.
#pragma once

#include "node/controller.hpp"

#include <optional>
#include <string>
#include <vector>

namespace leftover::test {

class FakeController final : public node::Controller {
public:
    LiveWork live;
    std::optional<Error> error;
    int calls = 0;
    std::vector<std::string> last_nodes;  // what the last call asked about
    Result<LiveWork> jobs_on_nodes(const std::vector<std::string>& nodes, std::optional<std::uint32_t>,
                                   std::chrono::steady_clock::time_point) override {
        ++calls;
        last_nodes = nodes;
        if (error) return *error;
        return live;
    }
};

}  // namespace leftover::test

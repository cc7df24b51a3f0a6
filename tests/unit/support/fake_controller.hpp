// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld for tests: a fixed answer (or error) about the node, and a count of the calls.
#pragma once

#include "controller/controller.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace leftover::test {

class FakeController final : public controller::Controller {
public:
    steps::LiveWork live;
    std::optional<Error> error;
    int calls = 0;
    std::vector<std::string> last_nodes;  // what the last call asked about
    std::function<void()> during;         // run inside each call, before it answers: a slow slurmctld
    Result<steps::LiveWork> jobs_on_nodes(const std::vector<std::string>& nodes, std::optional<std::uint32_t>,
                                          std::chrono::steady_clock::time_point) override {
        ++calls;
        last_nodes = nodes;
        if (during) during();
        if (error) return *error;
        // As the helper answers: every user with a job (one of the fake's own where the
        // test named the user alone), so that an answer shared through the spool dir
        // (controller/shared_answer.hpp) says what this one does.
        steps::LiveWork answer = live;
        std::uint64_t job = kFakeJobs;
        for (const uid_t uid : answer.uids) {
            const bool has_job = std::any_of(answer.job_users.begin(), answer.job_users.end(),
                                             [uid](const auto& entry) { return entry.second == uid; });
            if (has_job) continue;
            answer.job_users[++job] = uid;
        }
        return answer;
    }
    static constexpr std::uint64_t kFakeJobs = 900000;  // the fake's own job ids start above it

    // slurmctld's view of the node for drains: drained once, then it keeps its reason.
    bool node_drained = false;
    std::string node_reason;
    std::optional<Error> drain_error;
    std::vector<std::string> drain_reasons;  // every reason a drain was asked with
    Result<controller::DrainAnswer> drain_node(const std::string&, const std::string& reason,
                                               std::chrono::steady_clock::time_point) override {
        drain_reasons.push_back(reason);
        if (drain_error) return *drain_error;
        if (node_drained) return controller::DrainAnswer{false, "IDLE+DRAIN", node_reason};
        node_drained = true;
        node_reason = reason;
        return controller::DrainAnswer{true, {}, {}};
    }
};

}  // namespace leftover::test

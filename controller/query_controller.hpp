// SPDX-License-Identifier: GPL-2.0-or-later
// The controller, asked through the leftover-query helper program (which links libslurm),
// so every question is bounded by the deadline however slurmctld behaves.
#pragma once

#include "controller/controller.hpp"

#include <string>
#include <vector>

namespace leftover::controller {

class QueryController final : public Controller {
public:
    // `helper`: absolute path of leftover-query; `slurm_conf`: the slurm.conf slurmd uses.
    QueryController(std::string helper, std::string slurm_conf)
        : helper_(std::move(helper)), slurm_conf_(std::move(slurm_conf)) {}

    Result<steps::LiveWork> jobs_on_nodes(const std::vector<std::string>& nodes,
                                          std::optional<std::uint32_t> ending_job,
                                          std::chrono::steady_clock::time_point deadline) override;
    Result<DrainAnswer> drain_node(const std::string& node, const std::string& reason,
                                   std::chrono::steady_clock::time_point deadline) override;

private:
    // leftover-query with `args`, as root, by `deadline`: its output, or why not.
    Result<std::string> ask(const std::vector<std::string>& args, std::chrono::steady_clock::time_point deadline);

    std::string helper_;
    std::string slurm_conf_;
};

}  // namespace leftover::controller

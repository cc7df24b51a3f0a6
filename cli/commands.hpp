// SPDX-License-Identifier: GPL-2.0-or-later
// The three commands, each a function from options and an environment to an exit
// status. main() builds the real environment; the tests build one on a fake /proc.
#pragma once

#include "accounts/accounts.hpp"
#include "cli/exit_status.hpp"
#include "cli/node_discovery.hpp"
#include "cli/options.hpp"
#include "controller/controller.hpp"

#include <sys/types.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace leftover::cli {

struct Environment {
    NodeDiscovery discover_node;
    std::function<std::unique_ptr<controller::Controller>(const node::NodeInfo&)> make_controller;
    const AccountDatabase& accounts;
    std::ostream& out;  // the table, the JSON document, the config report
    std::ostream& err;  // log lines and errors
    std::string proc_root = "/proc";
    pid_t self = 0;
    bool is_root = false;
    std::function<void(double seconds)> sleep;
    std::function<double()> random_unit;  // in [0, 1), for slew
};

// Runs what the options ask for; returns the exit status (0, 1 or 2, see leftover(8)).
int run(const Options& options, Environment& env);

int check_command(const Options& options, Environment& env);
int sweep_command(const Options& options, Environment& env);
int config_command(const Options& options, Environment& env);

}  // namespace leftover::cli

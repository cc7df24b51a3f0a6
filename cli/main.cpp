// SPDX-License-Identifier: GPL-2.0-or-later
// leftover: the command. Everything but wiring lives in commands.cpp and its helpers.
#include "cli/commands.hpp"
#include "controller/helper_protocol.hpp"
#include "controller/query_accounts.hpp"
#include "controller/query_controller.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

int main(int argc, char** argv) {
    using namespace leftover;
    std::vector<std::string> args(argv + 1, argv + argc);
    // slurmd runs HealthCheckProgram without arguments: under this name (a link to
    // leftover) the command is the health check that fails at the third failure in a row
    // and drains; arguments given add to it (--failures 5, --state-dir DIR).
    if (argc > 0 && std::filesystem::path(argv[0]).filename() == cli::kHealthProgramName)
        args.insert(args.begin(), {"check", "--health", "--failures", "3", "--drain"});
    const auto options = cli::parse_options(args);
    if (!options.ok()) {
        std::cerr << "leftover: " << options.error().message << "\nleftover: 'leftover --help' lists the commands\n";
        return cli::kExitError;
    }
    try {
        std::error_code ignored;
        const std::string self_exe = std::filesystem::read_symlink("/proc/self/exe", ignored).string();
        // Bounded: a hung directory service costs the evaluation's deadline, not a hang.
        const controller::QueryAccounts accounts(controller::query_helper_path(self_exe));
        std::random_device seed;
        std::mt19937_64 random(seed());
        cli::Environment env{
            .discover_node = cli::discover_slurm_node,
            .make_controller = [&self_exe](const node::NodeInfo& node) -> std::unique_ptr<controller::Controller> {
                return std::make_unique<controller::QueryController>(controller::query_helper_path(self_exe),
                                                                     node.slurm_conf);
            },
            .accounts = accounts,
            .out = std::cout,
            .err = std::cerr,
            .proc_root = "/proc",
            .self = ::getpid(),
            .is_root = ::geteuid() == 0,
            .sleep = [](double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); },
            .random_unit = [&random] { return std::uniform_real_distribution<double>(0.0, 1.0)(random); },
        };
        const int status = cli::run(options.value(), env);
        std::cout.flush();
        return std::cout.good() ? status : cli::kExitError;
    } catch (const std::exception& e) {
        std::cerr << "leftover: internal error: " << e.what() << "; nothing more done\n";
        return cli::kExitError;
    }
}

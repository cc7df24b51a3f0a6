// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/options.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace leftover;
using namespace leftover::cli;

namespace {

Options parsed(const std::vector<std::string>& args) {
    auto options = parse_options(args);
    REQUIRE_MESSAGE(options.ok(), (options.ok() ? "" : options.error().message));
    return options.value();
}

std::string refusal(const std::vector<std::string>& args) {
    auto options = parse_options(args);
    REQUIRE_FALSE(options.ok());
    return options.error().message;
}

}  // namespace

TEST_CASE("options: each command with its flags, in both spellings") {
    const Options check = parsed({"check", "--config", "/x.conf", "--json", "--all", "--node=n1", "--spool-dir", "/s"});
    CHECK(check.command == Command::check);
    CHECK(check.config_path == "/x.conf");
    CHECK(check.config_path_given);
    CHECK(check.json);
    CHECK(check.all);
    CHECK(check.node == "n1");
    CHECK(check.spool_dir == "/s");

    const Options sweep = parsed({"sweep", "--dry-run", "--no-slew", "--config=/y.conf"});
    CHECK(sweep.command == Command::sweep);
    CHECK(sweep.dry_run);
    CHECK(sweep.no_slew);
    CHECK(sweep.config_path == "/y.conf");

    const Options config = parsed({"config"});
    CHECK(config.command == Command::config);
    CHECK(config.config_path == kDefaultConfigPath);
    CHECK_FALSE(config.config_path_given);
}

TEST_CASE("options: --help and --version alone or after a command") {
    CHECK(parsed({"--help"}).help);
    CHECK_FALSE(parsed({"--help"}).command.has_value());
    CHECK(parsed({"--version"}).version);
    const Options help = parsed({"sweep", "--help"});
    CHECK(help.help);
    CHECK(help.command == Command::sweep);
    CHECK(help_text(Command::sweep).find("--no-slew") != std::string::npos);
    CHECK(help_text(Command::check).find("--json") != std::string::npos);
    CHECK(help_text(std::nullopt).find("check") != std::string::npos);
}

TEST_CASE("options: what is refused, and why") {
    CHECK(refusal({}) == "no command given");
    CHECK(refusal({"purge"}) == "unknown command 'purge'");
    CHECK(refusal({"--json", "check"}) == "'--json' before the command");
    CHECK(refusal({"check", "--dry-run"}) == "check: --dry-run is not an option of this command");
    CHECK(refusal({"config", "--node", "n1"}) == "config: --node is not an option of this command");
    CHECK(refusal({"sweep", "--json"}) == "sweep: --json is not an option of this command");
    CHECK(refusal({"check", "--config"}) == "check: --config needs a value");
    CHECK(refusal({"check", "--config="}) == "check: --config needs a value");
    CHECK(refusal({"check", "--json=yes"}) == "check: --json takes no value");
    CHECK(refusal({"check", "extra"}) == "check: unknown argument 'extra'");
}

TEST_CASE("options: check --health, for check alone and not with --json") {
    CHECK(parsed({"check", "--health"}).health);
    CHECK_FALSE(parsed({"check"}).health);
    CHECK(refusal({"sweep", "--health"}) == "sweep: --health is not an option of this command");
    CHECK(refusal({"check", "--health", "--json"}) == "check: --health and --json print different things; pick one");
    CHECK(help_text(Command::check).find("--health") != std::string::npos);
}

TEST_CASE("options: check --health --failures N --drain --state-dir, only with --health, N from 1 to 1000") {
    const Options health = parsed({"check", "--health", "--failures", "3", "--drain", "--state-dir=/tmp/s"});
    CHECK(health.failures == 3);
    CHECK(health.failures_given);
    CHECK(health.drain);
    CHECK(health.state_dir == "/tmp/s");
    CHECK(parsed({"check", "--health"}).state_dir == "/run/leftover");
    CHECK(parsed({"check", "--health"}).failures == 1);
    CHECK(refusal({"check", "--drain"}) == "check: --failures, --drain and --state-dir go with --health");
    CHECK(refusal({"check", "--json", "--failures", "2"}) ==
          "check: --failures, --drain and --state-dir go with --health");
    CHECK(refusal({"sweep", "--drain"}) == "sweep: --drain is not an option of this command");
    for (const char* bad : {"0", "1001", "-1", "3x", "2.5"})
        CHECK(refusal({"check", "--health", "--failures", bad}) ==
              fmt::format("check: --failures takes a whole number from 1 to 1000, not '{}'", bad));
    CHECK(refusal({"check", "--health", "--state-dir", "run"}) ==
          "check: --state-dir takes an absolute path, not 'run'");
}

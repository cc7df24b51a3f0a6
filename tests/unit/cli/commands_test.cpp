// SPDX-License-Identifier: GPL-2.0-or-later
// The commands on a fake /proc (and, for one real sweep, on real processes): exit
// statuses, what they print, and that they decide what the plugin decides.
#include "cli/commands.hpp"
#include "metrics/metrics.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_proc.hpp"
#include "support/processes.hpp"
#include "support/recording_sink.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_sweep.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <slurm/slurm_version.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

using namespace leftover;
using namespace leftover::cli;
using namespace leftover::test;

namespace {

constexpr uid_t kAlice = 41001;      // lo_alice: no live work, her process is a stray
constexpr uid_t kBob = 41002;        // lo_bob: slurmctld says he has a job here
constexpr uid_t kProtected = 41005;  // alice: listed in protected_users
constexpr uid_t kSystem = 900;       // below uid_min: never even inspected

// Hands the command a controller that forwards to the node's, so tests can count calls.
class Forward final : public controller::Controller {
public:
    explicit Forward(controller::Controller& target) : target_(target) {}
    Result<LiveWork> jobs_on_nodes(const std::vector<std::string>& nodes, std::optional<std::uint32_t> job,
                                   std::chrono::steady_clock::time_point deadline) override {
        return target_.jobs_on_nodes(nodes, job, deadline);
    }
    Result<controller::DrainAnswer> drain_node(const std::string& node, const std::string& reason,
                                               std::chrono::steady_clock::time_point deadline) override {
        return target_.drain_node(node, reason, deadline);
    }

private:
    controller::Controller& target_;
};

FakeProcess user_process(pid_t pid, uid_t uid, std::string comm = "sleep") {
    return {.pid = pid,
            .uids = {uid, uid, uid, uid},
            .comm = std::move(comm),
            .start_time = 1000u + pid,
            .gids = {uid, uid, uid, uid}};
}

// One node: a fake /proc with slurmd, a stray, a protected user's process, a process of
// a user with a job, and a system account's; an empty spool directory (no local steps,
// no PrologFlags=contain, so slurmctld is asked before anyone is killed).
struct Node {
    static constexpr pid_t kSlurmd = 90;
    FakeProc proc;
    TempDir dir;
    FakeAccounts accounts;
    FakeController controller;
    std::ostringstream out;
    std::ostringstream err;
    std::vector<double> slept;
    std::optional<Error> discovery_error;
    std::optional<pid_t> slurmd_pid = kSlurmd;  // what discovery found in slurmd's pid file
    bool is_root = true;

    Node() {
        ::mkdir((dir / "spool").c_str(), 0755);
        proc.add_process({.pid = kSlurmd,
                          .uids = {},
                          .comm = "slurmd",
                          .start_time = 40,
                          .exe = "/usr/sbin/slurmd",
                          .gids = {0, 0, 0, 0}});
        proc.set_pid_ns(kSlurmd, "pid:[4026531836]");
        accounts.names = {{kAlice, "lo_alice"}, {kBob, "lo_bob"}, {kProtected, "alice"}, {kSystem, "daemonish"}};
        proc.add_process(user_process(200, kAlice));
        proc.add_process(user_process(201, kProtected));
        proc.add_process(user_process(202, kBob));
        proc.add_process(user_process(203, kSystem));
        controller.live.uids = {kBob};
        controller.live.job_ids = {7};
        config("protected_users: [alice]\ngrace: 0\n");
    }

    std::string config(const std::string& text) { return dir.write("leftover.conf", text); }

    node::NodeInfo info() const {
        node::NodeInfo node;
        node.node_name = "n1";
        node.spool_dir = dir / "spool";
        node.slurm_uids = {64030};
        node.slurmd_pid = slurmd_pid;
        return node;
    }

    int run(std::vector<std::string> args, bool with_config = true) {
        if (with_config && args.size() > 0 && !args[0].starts_with("-")) {
            args.emplace_back("--config");
            args.push_back(dir / "leftover.conf");
        }
        auto options = parse_options(args);
        REQUIRE(options.ok());
        out.str({});
        err.str({});
        Environment env{
            .discover_node = [this](const NodeOverrides&) -> Result<node::NodeInfo> {
                if (discovery_error) return *discovery_error;
                return info();
            },
            .make_controller = [this](const node::NodeInfo&) -> std::unique_ptr<controller::Controller> {
                return std::make_unique<Forward>(controller);
            },
            .accounts = accounts,
            .out = out,
            .err = err,
            .proc_root = proc.root(),
            .self = FakeProc::caller_pid,
            .is_root = is_root,
            .sleep = [this](double seconds) { slept.push_back(seconds); },
            .random_unit = [] { return 0.5; },
        };
        return cli::run(options.value(), env);
    }

    // pid -> "kill stray" / "keep protected" ... from `check --json`.
    std::map<pid_t, std::string> check_decisions() {
        REQUIRE(run({"check", "--json", "--all"}) != kExitError);
        std::map<pid_t, std::string> out_decisions;
        for (const auto& p : YAML::Load(out.str())["processes"])
            out_decisions[p["pid"].as<pid_t>()] = p["decision"].as<std::string>() + " " + p["reason"].as<std::string>();
        return out_decisions;
    }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The pids of every "would kill pid=N ..." line.
std::set<pid_t> would_kill_pids(const std::string& log) {
    std::set<pid_t> pids;
    const std::string marker = "would kill pid=";
    for (auto at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1))
        pids.insert(std::stoi(log.substr(at + marker.size())));
    return pids;
}

}  // namespace

TEST_CASE("check: a stray, a protected user and a user with a job, exit 1") {
    Node node;
    CHECK(node.run({"check"}) == kExitStrays);
    const std::string table = node.out.str();
    CHECK(has(table, "alice     41005  201  sleep  keep      protected     protected: listed in protected_users\n"));
    CHECK(has(table, "lo_alice  41001  200  sleep  kill      stray         no live work on this node\n"));
    CHECK(has(table, "lo_bob    41002  202  sleep  keep      has_live_job\n"));
    CHECK_FALSE(has(table, "daemonish"));  // below uid_min: not listed without --all
    CHECK(has(table, "1 stray process of 1 user (lo_alice): a sweep now would kill it"));
    CHECK(node.controller.calls == 1);  // once, for the users it would have killed
    CHECK(node.err.str().empty());
}

TEST_CASE("check --json: the same decisions as a document") {
    Node node;
    CHECK(node.run({"check", "--json"}) == kExitStrays);
    const YAML::Node doc = YAML::Load(node.out.str());
    CHECK(doc["status"].as<std::string>() == "strays");
    CHECK(doc["node"].as<std::string>() == "n1");
    CHECK(doc["config"].as<std::string>() == node.dir / "leftover.conf");
    REQUIRE(doc["processes"].size() == 3);
    CHECK(doc["processes"][1]["pid"].as<pid_t>() == 200);
    CHECK(doc["processes"][1]["decision"].as<std::string>() == "kill");
    CHECK(doc["live_work"]["uids"][0].as<uid_t>() == kBob);
}

TEST_CASE("check: exit 0 when nothing would be killed") {
    Node node;
    node.config("protected_users: [alice, lo_alice]\n");
    CHECK(node.run({"check"}) == kExitClean);
    CHECK(has(node.out.str(), "lo_alice  41001  200  sleep  keep      protected"));
    CHECK(has(node.out.str(), "no strays: a sweep now would kill nothing"));
}

TEST_CASE("check is node-wide even with scope: job_user (there is no job user)") {
    Node node;
    node.config("protected_users: [alice]\nscope: job_user\n");
    CHECK(node.run({"check"}) == kExitStrays);
    CHECK(has(node.out.str(), "lo_alice  41001  200  sleep  kill      stray"));
}

TEST_CASE("check: config and lookup errors exit 2 and kill nothing") {
    Node node;
    SUBCASE("an unknown key") {
        node.config("protected_user: [alice]\n");
        CHECK(node.run({"check"}) == kExitError);
        CHECK(has(node.err.str(),
                  "leftover: config error: " + node.dir / "leftover.conf" + ":1: unknown key 'protected_user'"));
        CHECK(node.out.str().empty());
    }
    SUBCASE("an untrusted config file") {
        ::chmod((node.dir / "leftover.conf").c_str(), 0666);
        CHECK(node.run({"check", "--json"}) == kExitError);
        const YAML::Node doc = YAML::Load(node.out.str());
        CHECK(doc["error"]["kind"].as<std::string>() == "config");
        CHECK(has(doc["error"]["message"].as<std::string>(), "must not be writable by group or others"));
    }
    SUBCASE("a missing protected users file") {
        node.config("protected_users_files: [" + node.dir / "absent.list" + "]\n");
        CHECK(node.run({"check"}) == kExitError);
        CHECK(has(node.err.str(),
                  "leftover: lookup error: protected users file " + node.dir / "absent.list" + ": does not exist"));
    }
    SUBCASE("slurmctld does not answer") {
        node.controller.error =
            Error::lookup("asking slurmctld: did not finish before the deadline", ErrorSource::controller);
        CHECK(node.run({"check", "--json"}) == kExitError);
        CHECK(YAML::Load(node.out.str())["error"]["message"].as<std::string>() ==
              "asking slurmctld: did not finish before the deadline");
    }
    SUBCASE("not a Slurm node: said plainly") {
        node.discovery_error = Error::not_a_slurm_node("no slurm.conf", ErrorSource::other);
        CHECK(node.run({"check"}) == kExitError);
        CHECK(node.err.str() == "leftover: not a Slurm node: no slurm.conf\n");
        CHECK(node.run({"sweep", "--no-slew"}) == kExitError);
        CHECK(node.err.str() == "leftover: error: not a Slurm node: no slurm.conf\n");
        CHECK(node.run({"check", "--json"}) == kExitError);
        CHECK(YAML::Load(node.out.str())["error"]["kind"].as<std::string>() == "lookup");
        CHECK(YAML::Load(node.out.str())["error"]["message"].as<std::string>() == "not a Slurm node: no slurm.conf");
    }
}

TEST_CASE("check and sweep: slurmd is never touched, and must share the command's pid namespace") {
    Node node;
    CHECK(node.check_decisions().at(Node::kSlurmd) == "keep never_touch");
    CHECK(node.run({"check", "--json"}) == kExitStrays);
    for (const auto& p : YAML::Load(node.out.str())["processes"]) CHECK(p["pid"].as<pid_t>() != Node::kSlurmd);

    SUBCASE("slurmd in another pid namespace") {
        node.proc.set_pid_ns(Node::kSlurmd, "pid:[4026532000]");
        CHECK(node.run({"check"}) == kExitError);
        CHECK(has(node.err.str(),
                  "leftover: lookup error: the caller runs in pid namespace pid:[4026531836] but "
                  "Slurm daemon pid 90 in pid:[4026532000]"));
        CHECK(node.run({"sweep", "--no-slew"}) == kExitError);
        CHECK(has(node.err.str(), "leftover: error: lookup error: the caller runs in pid namespace"));
        CHECK(has(node.err.str(), "leftover: node sweep: swept []; killed 0;"));
    }
    SUBCASE("a stale pid file: its pid now runs something else") {
        node.slurmd_pid = 200;
        CHECK(node.run({"check"}) == kExitError);
        CHECK(has(node.err.str(), "pid 200 in " + node.proc.root() + " runs /usr/bin/sleep, not slurmd or slurmstepd"));
    }
}

TEST_CASE("commands: check, sweep --dry-run and the plugin's epilog sweep decide the same") {
    Node node;
    node.proc.add_process(user_process(204, kAlice, "helper"));
    node.proc.add_process(user_process(205, kBob, "daemon"));
    const auto checked = node.check_decisions();

    CHECK(node.run({"sweep", "--dry-run", "--no-slew"}) == kExitStrays);
    const std::set<pid_t> swept = would_kill_pids(node.err.str());

    // The plugin, as on_job_epilog runs it for a job of lo_bob's, with dry_run.
    node.config("protected_users: [alice]\ngrace: 0\ndry_run: true\n");
    sweep::SweepRequest request;
    request.trigger.label = "job 7 epilog";
    request.trigger.uid = kBob;
    request.trigger.job_id = 7;
    request.trigger.job_ending = true;
    request.node = node.info();
    request.self = FakeProc::caller_pid;
    request.proc_root = node.proc.root();
    const auto prepared = sweep::load_config_and_exemptions(node.dir / "leftover.conf", true, request.node.slurm_uids);
    RecordingSink plugin_lines;
    sweep::Logger log(plugin_lines);
    const KillReport plugin = sweep::run_sweep(prepared, request, &node.controller, node.accounts, log);
    REQUIRE_FALSE(plugin.error);

    std::map<pid_t, std::string> plugin_decisions;
    for (const Decision& d : plugin.first_plan.decisions)
        plugin_decisions[d.pid] = std::string(to_string(d.verdict)) + " " + to_string(d.reason);
    CHECK(checked == plugin_decisions);
    CHECK(checked.at(200) == "kill stray");
    CHECK(checked.at(204) == "kill stray");
    CHECK(checked.at(205) == "keep has_live_job");
    CHECK(checked.at(201) == "keep protected");
    CHECK(swept == std::set<pid_t>{200, 204});
    CHECK(would_kill_pids(plugin_lines.text()) == swept);
}

TEST_CASE("sweep: slew waits a random time between slew and slew_max, and says so") {
    Node node;
    node.config("protected_users: [alice]\nslew: 10\nslew_max: 40\n");
    node.is_root = false;  // --dry-run needs no root
    CHECK(node.run({"sweep", "--dry-run"}) == kExitStrays);
    CHECK(node.slept == std::vector<double>{25.0});
    CHECK(has(node.err.str(), "leftover: waiting 25.0 s (slew) before the sweep; --no-slew starts at once\n"));
    CHECK(has(node.err.str(), "leftover: node sweep: dry run: swept [lo_alice]; would kill 1;"));
    CHECK_FALSE(has(node.err.str(), "slew/slew_max ignored"));

    node.slept.clear();
    CHECK(node.run({"sweep", "--dry-run", "--no-slew"}) == kExitStrays);
    CHECK(node.slept.empty());
}

TEST_CASE("sweep: refuses to run unprivileged, and exits 2 on a config error") {
    Node node;
    node.is_root = false;
    CHECK(node.run({"sweep", "--no-slew"}) == kExitError);
    CHECK(has(node.err.str(), "must run as root"));
    node.is_root = true;
    node.config("grace: 31\n");
    CHECK(node.run({"sweep", "--no-slew"}) == kExitError);
    CHECK(has(node.err.str(), "leftover: error: config error: " + node.dir / "leftover.conf" + ":1: key 'grace'"));
    CHECK(has(node.err.str(), "leftover: node sweep: swept []; killed 0;"));
}

TEST_CASE("sweep: a real stray is killed and the sweep exits 0") {
    // A uid of this test's own and an account database that knows only it: every other
    // process on the machine is an unknown uid, so protected.
    constexpr uid_t kStray = 41201;
    become_subreaper();
    kill_all_of(kStray);
    Node node;
    node.slurmd_pid.reset();  // the real /proc of a build machine has no slurmd
    node.accounts.names = {{kStray, "cli.stray"}};
    node.controller.live = {};
    node.config("grace: 2\n");
    const pid_t stray = spawn_as(kStray, {"sleep", "600"});
    REQUIRE(is_running(stray));

    auto options = parse_options({"sweep", "--no-slew", "--config", node.dir / "leftover.conf"});
    REQUIRE(options.ok());
    Environment env{
        .discover_node = [&](const NodeOverrides&) -> Result<node::NodeInfo> { return node.info(); },
        .make_controller = [&](const node::NodeInfo&) -> std::unique_ptr<controller::Controller> {
            return std::make_unique<Forward>(node.controller);
        },
        .accounts = node.accounts,
        .out = node.out,
        .err = node.err,
        .proc_root = "/proc",
        .self = ::getpid(),
        .is_root = true,
        .sleep = [](double) {},
        .random_unit = [] { return 0.0; },
    };
    const int status = cli::run(options.value(), env);
    INFO(node.err.str());
    CHECK(wait_gone(stray));
    kill_all_of(kStray);
    CHECK(status == kExitClean);
    CHECK(has(node.err.str(),
              fmt::format("leftover: SIGTERM pid={} user=cli.stray uid={} comm='sleep' reason=stray", stray, kStray)));
    CHECK(has(node.err.str(), "leftover: node sweep: swept [cli.stray]; killed 1;"));
}

TEST_CASE("config command: valid, invalid and untrusted files") {
    Node node;
    CHECK(node.run({"config"}) == kExitClean);
    CHECK(has(node.out.str(), "protected_users           [alice]"));
    CHECK(has(node.out.str(), "config valid"));

    node.config("{\"grace\": \"five\"}\n");
    CHECK(node.run({"config"}) == kExitError);
    CHECK(has(node.err.str(), "leftover: config error: " + node.dir / "leftover.conf" + ":1: key 'grace': expected"));

    node.config("{}\n");
    ::chmod((node.dir / "leftover.conf").c_str(), 0620);
    CHECK(node.run({"config"}) == kExitError);
    CHECK(has(node.err.str(), "has mode 0620; it must not be writable by group or others"));

    CHECK(node.run({"config", "--config", node.dir / "absent.conf"}, false) == kExitError);  // named: must exist
    CHECK(has(node.err.str(), "absent.conf: does not exist"));
}

TEST_CASE("fault catalogue: leftover config names each listed name that has no account") {
    Node node;
    node.accounts.aliases = {{"alice.alias", kProtected}};
    const auto users = node.dir.write("localusers", "lo_bob\nlo_bbo\n");
    node.config(fmt::format("protected_users: [alice, alcie, alice.alias]\nprotected_users_files: [{}]\n", users));
    CHECK(node.run({"config"}) == kExitClean);  // a warning, not an error: the others still count
    CHECK(has(node.out.str(), "warning: protected user 'alcie' (listed in protected_users) has no account"));
    CHECK(has(node.out.str(), fmt::format("warning: protected user 'lo_bbo' (listed in {}) has no account", users)));
    CHECK_FALSE(has(node.out.str(), "'alice'"));
    CHECK_FALSE(has(node.out.str(), "'alice.alias'"));
    CHECK_FALSE(has(node.out.str(), "'lo_bob'"));
}

TEST_CASE("commands: --help and --version exit 0 without looking at the node") {
    Node node;
    node.discovery_error = Error::not_a_slurm_node("must not be asked", ErrorSource::other);
    CHECK(node.run({"--version"}, false) == kExitClean);
    CHECK(node.out.str().starts_with(fmt::format("leftover 0.1.0 built for Slurm {}.{:02}.",
                                                 SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
                                                 SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER))));
    CHECK(node.run({"check", "--help"}, false) == kExitClean);
    CHECK(node.out.str().starts_with("usage: leftover check"));
}

TEST_CASE("check --health: exit 0 and OK when clean, 1 with strays, 2 on a broken config, one line each") {
    Node node;
    CHECK(node.run({"check", "--health"}) == kExitStrays);
    CHECK(node.out.str() == "leftover: ERROR: 1 stray process of 1 user\n");
    node.config("protected_users: [alice, lo_alice]\n");
    CHECK(node.run({"check", "--health"}) == kExitClean);
    CHECK(node.out.str() == "leftover: OK: no stray processes\n");
    node.config("protected_user: [alice]\n");
    CHECK(node.run({"check", "--health"}) == kExitError);
    CHECK(node.out.str().starts_with("leftover: ERROR: config error: " + node.dir / "leftover.conf" +
                                     ":1: unknown key 'protected_user'"));
    const std::string line = node.out.str();
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    node.controller.error =
        Error::lookup("asking slurmctld: did not finish before the deadline", ErrorSource::controller);
    node.config("protected_users: [alice]\n");
    CHECK(node.run({"check", "--health"}) == kExitError);
    CHECK(node.out.str() == "leftover: ERROR: lookup error: asking slurmctld: did not finish before the deadline\n");
}

TEST_CASE("check: each check is counted in the metrics file as a check, with its strays") {
    Node node;
    node.config(fmt::format("protected_users: [alice]\nmetrics_file: {}\n", node.dir / "leftover.prom"));
    CHECK(node.run({"check", "--health"}) == kExitStrays);
    std::ifstream in(node.dir / "leftover.prom");
    std::stringstream text;
    text << in.rdbuf();
    const auto metrics = Metrics::parse(text.str());
    REQUIRE(metrics.ok());
    CHECK(metrics->value("leftover_evaluations_total", "check") == 1);
    CHECK(metrics->value("leftover_last_strays_found") == 1);
    CHECK(metrics->value("leftover_processes_killed_total", "SIGTERM") == 0);
}

TEST_CASE("check --health --failures 3 --drain: two failures keep the node up, the third drains it") {
    Node node;
    node.config(fmt::format("protected_users: [alice]\nmetrics_file: {}\n", node.dir / "leftover.prom"));
    const std::vector<std::string> args = {"check",   "--health",    "--failures",      "3",
                                           "--drain", "--state-dir", node.dir / "state"};
    CHECK(node.run(args) == kExitClean);
    CHECK(node.out.str() ==
          "leftover: ERROR: 1 stray process of 1 user (1 of 3 failed checks in a row before it fails)\n");
    CHECK(node.run(args) == kExitClean);
    CHECK(has(node.out.str(), "(2 of 3 failed checks in a row before it fails)"));
    CHECK(node.controller.drain_reasons.empty());
    CHECK(node.run(args) == kExitStrays);
    CHECK(node.out.str() == "leftover: ERROR: 1 stray process of 1 user (3 failed checks in a row)\n");
    REQUIRE(node.controller.drain_reasons.size() == 1);
    CHECK(node.controller.drain_reasons[0] == "leftover: ERROR: 1 stray process of 1 user (3 failed checks in a row)");
    CHECK(has(node.err.str(), "health check: node n1 drained: leftover: ERROR: 1 stray process"));
    // The fourth failure asks again; the node, drained already, keeps the first reason.
    CHECK(node.run(args) == kExitStrays);
    CHECK(node.controller.node_reason == node.controller.drain_reasons[0]);
    std::ifstream in(node.dir / "leftover.prom");
    std::stringstream text;
    text << in.rdbuf();
    const auto metrics = Metrics::parse(text.str());
    REQUIRE(metrics.ok());
    CHECK(metrics->value("leftover_node_drains_total", "drained") == 1);
    CHECK(metrics->value("leftover_node_drains_total", "kept") == 1);
    CHECK(metrics->value("leftover_evaluations_total", "check") == 4);
}

TEST_CASE("check --health --failures: a passed check clears the streak") {
    Node node;
    const std::vector<std::string> args = {"check",   "--health",    "--failures",      "2",
                                           "--drain", "--state-dir", node.dir / "state"};
    CHECK(node.run(args) == kExitClean);
    CHECK(has(node.out.str(), "(1 of 2 failed checks in a row before it fails)"));
    node.config("protected_users: [alice, lo_alice]\n");
    CHECK(node.run(args) == kExitClean);
    CHECK(node.out.str() == "leftover: OK: no stray processes\n");
    CHECK(::access((node.dir / "state/health-failures").c_str(), F_OK) != 0);
    node.config("protected_users: [alice]\n");
    CHECK(node.run(args) == kExitClean);
    CHECK(has(node.out.str(), "(1 of 2 failed checks in a row before it fails)"));
    CHECK(node.controller.drain_reasons.empty());
}

TEST_CASE("check --health --failures: a streak that cannot be kept fails the check and drains nothing") {
    Node node;
    const std::string state = node.dir.write("state", "not a directory\n");
    CHECK(node.run({"check", "--health", "--failures", "1", "--drain", "--state-dir", state}) == kExitError);
    CHECK(has(node.out.str(), "leftover: ERROR: failure streak not kept: "));
    CHECK(node.controller.drain_reasons.empty());
}

// The shipped config says dry_run: true and ships leftover-health for HealthCheckProgram:
// a stray that nothing will reap must not drain the node, nor one that scope job_user
// leaves until its own user's job ends here.
TEST_CASE("fault catalogue: check --health --drain under dry_run fails the check, drains nothing, says so once") {
    Node node;
    node.config("protected_users: [alice]\ndry_run: true\n");
    const std::vector<std::string> args = {"check",   "--health",    "--failures",      "2",
                                           "--drain", "--state-dir", node.dir / "state"};
    CHECK(node.run(args) == kExitClean);
    CHECK(node.run(args) == kExitStrays);
    CHECK(node.out.str() == "leftover: ERROR: 1 stray process of 1 user (2 failed checks in a row)\n");
    const std::string note =
        "health check: node n1 not drained: dry_run is set, so no sweep reaps these strays and a drain would "
        "last until an admin resumes the node\n";
    CHECK(has(node.err.str(), note));
    CHECK(node.run(args) == kExitStrays);
    CHECK_FALSE(has(node.err.str(), "not drained"));  // once per streak
    CHECK(node.controller.drain_reasons.empty());
}

TEST_CASE("fault catalogue: check --health --drain with scope job_user fails the check and drains nothing") {
    Node node;
    node.config("protected_users: [alice]\nscope: job_user\n");
    CHECK(node.run({"check", "--health", "--drain"}) == kExitStrays);
    CHECK(node.out.str() == "leftover: ERROR: 1 stray process of 1 user\n");
    CHECK(has(node.err.str(),
              "health check: node n1 not drained: scope is job_user, so a stray is reaped only when a "
              "job of its own user ends here"));
    CHECK(node.controller.drain_reasons.empty());
}

TEST_CASE("fault catalogue: check --health --drain never drains on an error, reports it and exits 2 at once") {
    Node node;
    node.controller.error =
        Error::lookup("asking slurmctld: did not finish before the deadline", ErrorSource::controller);
    const std::vector<std::string> args = {"check",   "--health",    "--failures",      "3",
                                           "--drain", "--state-dir", node.dir / "state"};
    CHECK(node.run(args) == kExitError);
    CHECK(node.out.str() == "leftover: ERROR: lookup error: asking slurmctld: did not finish before the deadline\n");
    CHECK(::access((node.dir / "state/health-failures").c_str(), F_OK) != 0);  // not a failure of the node
    CHECK(node.run({"check", "--health", "--failures", "1", "--drain", "--state-dir", node.dir / "state"}) ==
          kExitError);
    CHECK(node.run({"check", "--health", "--drain"}) == kExitError);
    CHECK(node.controller.drain_reasons.empty());
    // A streak of strays goes on across an error: neither counted nor cleared by it.
    node.controller.error.reset();
    CHECK(node.run(args) == kExitClean);
    node.controller.error = Error::lookup("asking slurmctld: refused", ErrorSource::controller);
    CHECK(node.run(args) == kExitError);
    node.controller.error.reset();
    CHECK(node.run(args) == kExitClean);
    CHECK(has(node.out.str(), "(2 of 3 failed checks in a row before it fails)"));
}

TEST_CASE("check --health --drain: without --failures the first failure drains, a clean node is left alone") {
    Node node;
    CHECK(node.run({"check", "--health", "--drain"}) == kExitStrays);
    CHECK(node.controller.drain_reasons == std::vector<std::string>{"leftover: ERROR: 1 stray process of 1 user"});
    node.controller.node_drained = false;
    node.config("protected_users: [alice, lo_alice]\n");
    CHECK(node.run({"check", "--health", "--drain"}) == kExitClean);
    CHECK(node.controller.drain_reasons.size() == 1);
}

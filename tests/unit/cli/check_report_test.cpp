// SPDX-License-Identifier: GPL-2.0-or-later
#include "check_report.hpp"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

using namespace leftover;
using namespace leftover::cli;

namespace {

Decision decision(pid_t pid, uid_t uid, std::string user, std::string comm, Verdict verdict, Reason reason,
                  std::string detail = {}) {
    Decision d;
    d.pid = pid;
    d.uid = uid;
    d.user = std::move(user);
    d.comm = std::move(comm);
    d.verdict = verdict;
    d.reason = reason;
    d.detail = std::move(detail);
    return d;
}

CheckResult sample(bool all = false) {
    CheckResult result;
    result.node = "n1";
    result.spool_dir = "/var/spool/slurmd";
    result.all = all;
    sweep::NodeCheck check;
    check.plan.decisions = {
        decision(1, 0, "root", "systemd", Verdict::keep, Reason::init),
        decision(50, 0, "", "sshd", Verdict::keep, Reason::protected_owner, "protected: root"),
        decision(300, 41001, "lo_alice", "sleep", Verdict::kill, Reason::stray, "no live work on this node"),
        decision(120, 41001, "lo_alice", "odd\n\"name", Verdict::kill, Reason::stray, "no live work on this node"),
        decision(200, 41005, "alice", "sleep", Verdict::keep, Reason::protected_account,
                 "protected: listed in protected_users"),
        decision(210, 41002, "lo_bob", "sleep", Verdict::keep, Reason::has_live_job),
    };
    check.live.uids = {41002};
    check.live.job_ids = {7};
    result.check = check;
    return result;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("check table: rows by user and pid, aligned, names escaped, then one line per user") {
    const std::string table = format_check_table(sample());
    CHECK(table ==
          "USER      UID    PID  COMM          DECISION  REASON        DETAIL\n"
          "alice     41005  200  sleep         keep      protected     protected: listed in protected_users\n"
          "lo_alice  41001  120  odd\\x0a\"name  kill      stray         no live work on this node\n"
          "lo_alice  41001  300  sleep         kill      stray         no live work on this node\n"
          "lo_bob    41002  210  sleep         keep      has_live_job\n"
          "\n"
          "USER      UID    PROCESSES  KILL  KEEP  REASONS\n"
          "alice     41005  1          0     1     protected 1\n"
          "lo_alice  41001  2          2     0     stray 2\n"
          "lo_bob    41002  1          0     1     has_live_job 1\n"
          "\n"
          "live work on this node: users lo_bob (41002); jobs 7\n"
          "2 stray processes of 1 user (lo_alice): a sweep now would kill them; 6 processes in all, 2 of protected "
          "owners, kernel threads and this command not listed (--all lists them)\n");
    CHECK(check_exit_status(sample()) == kExitStrays);
}

TEST_CASE("check table: --all lists every process") {
    const std::string table = format_check_table(sample(true));
    CHECK(has(table, "root      0      1    systemd"));
    CHECK(has(table, "uid 0     0      50   sshd          keep      protected_owner  protected: root"));
    CHECK_FALSE(has(table, "not listed"));
}

TEST_CASE("check table: a clean node, and an error") {
    CheckResult clean = sample();
    clean.check->plan.decisions.resize(2);
    CHECK(check_exit_status(clean) == kExitClean);
    CHECK(has(format_check_table(clean), "no processes of unprotected users\n"));
    CHECK(has(format_check_table(clean), "no strays: a sweep now would kill nothing; 2 processes in all"));

    CheckResult failed;
    failed.error = Error::lookup("slurmstepd socket x: timed out");
    CHECK(check_exit_status(failed) == kExitError);
    CHECK(format_check_table(failed).empty());
}

TEST_CASE("check JSON: the documented shape, parsed back") {
    const YAML::Node doc = YAML::Load(format_check_json(sample()));
    CHECK(doc["format"].as<int>() == kCheckJsonFormat);
    CHECK(doc["command"].as<std::string>() == "check");
    CHECK(doc["node"].as<std::string>() == "n1");
    CHECK(doc["spool_dir"].as<std::string>() == "/var/spool/slurmd");
    CHECK(doc["config"].IsNull());
    CHECK(doc["status"].as<std::string>() == "strays");
    CHECK(doc["exit_status"].as<int>() == 1);
    CHECK(doc["error"].IsNull());
    CHECK(doc["live_work"]["uids"][0].as<uid_t>() == 41002);
    CHECK(doc["live_work"]["jobs"][0].as<int>() == 7);
    REQUIRE(doc["processes"].size() == 4);
    const YAML::Node odd = doc["processes"][1];
    CHECK(odd["pid"].as<int>() == 120);
    CHECK(odd["uid"].as<uid_t>() == 41001);
    CHECK(odd["user"].as<std::string>() == "lo_alice");
    CHECK(odd["comm"].as<std::string>() == "odd\\x0a\"name");
    CHECK(odd["decision"].as<std::string>() == "kill");
    CHECK(odd["reason"].as<std::string>() == "stray");
    CHECK(odd["detail"].as<std::string>() == "no live work on this node");
    CHECK(doc["processes"][3]["detail"].IsNull());
    REQUIRE(doc["users"].size() == 3);
    CHECK(doc["users"][1]["user"].as<std::string>() == "lo_alice");
    CHECK(doc["users"][1]["processes"].as<int>() == 2);
    CHECK(doc["users"][1]["kill"].as<int>() == 2);
    CHECK(doc["users"][1]["keep"].as<int>() == 0);
    CHECK(doc["users"][1]["reasons"]["stray"].as<int>() == 2);
    CHECK(doc["totals"]["processes"].as<int>() == 6);
    CHECK(doc["totals"]["kill"].as<int>() == 2);
    CHECK(doc["totals"]["keep"].as<int>() == 4);
    CHECK(doc["totals"]["not_listed"].as<int>() == 2);
}

TEST_CASE("check JSON: an error keeps every key") {
    CheckResult failed;
    failed.error = Error::config("/etc/leftover.conf:3: unknown key 'grace_period'");
    const YAML::Node doc = YAML::Load(format_check_json(failed));
    CHECK(doc["status"].as<std::string>() == "error");
    CHECK(doc["exit_status"].as<int>() == 2);
    CHECK(doc["error"]["kind"].as<std::string>() == "config");
    CHECK(doc["error"]["message"].as<std::string>() == "/etc/leftover.conf:3: unknown key 'grace_period'");
    CHECK(doc["node"].IsNull());
    CHECK(doc["live_work"].IsNull());
    CHECK(doc["processes"].IsSequence());
    CHECK(doc["processes"].size() == 0);
    CHECK(doc["users"].size() == 0);
    CHECK(doc["totals"].IsNull());
}

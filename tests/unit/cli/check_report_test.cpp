// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/check_report.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>

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
    failed.error = Error::lookup("slurmstepd socket x: timed out", ErrorSource::step_socket);
    CHECK(check_exit_status(failed) == kExitError);
    CHECK(format_check_table(failed).empty());
}

TEST_CASE("check JSON: the documented shape, parsed back") {
    const auto doc = nlohmann::json::parse(format_check_json(sample()));
    CHECK(doc["format"] == kCheckJsonFormat);
    CHECK(doc["command"] == "check");
    CHECK(doc["node"] == "n1");
    CHECK(doc["spool_dir"] == "/var/spool/slurmd");
    CHECK(doc["config"].is_null());
    CHECK(doc["status"] == "strays");
    CHECK(doc["exit_status"] == 1);
    CHECK(doc["error"].is_null());
    CHECK(doc["live_work"]["uids"] == nlohmann::json::array({41002}));
    CHECK(doc["live_work"]["jobs"] == nlohmann::json::array({7}));
    REQUIRE(doc["processes"].size() == 4);
    const auto& odd = doc["processes"][1];
    CHECK(odd["pid"] == 120);
    CHECK(odd["uid"] == 41001);
    CHECK(odd["user"] == "lo_alice");
    CHECK(odd["comm"] == "odd\\x0a\"name");
    CHECK(odd["decision"] == "kill");
    CHECK(odd["reason"] == "stray");
    CHECK(odd["detail"] == "no live work on this node");
    CHECK(doc["processes"][3]["detail"].is_null());
    REQUIRE(doc["users"].size() == 3);
    const auto& alice = doc["users"][1];
    CHECK(alice["user"] == "lo_alice");
    CHECK(alice["uid"] == 41001);
    CHECK(alice["processes"] == 2);
    CHECK(alice["kill"] == 2);
    CHECK(alice["keep"] == 0);
    CHECK(alice["reasons"] == nlohmann::json{{"stray", 2}});
    CHECK(doc["totals"] == nlohmann::json{{"processes", 6}, {"kill", 2}, {"keep", 4}, {"not_listed", 2}});
}

TEST_CASE("check JSON: keys in the documented order, two-space indentation, a final newline") {
    CheckResult failed;
    failed.error = Error::config("/etc/leftover.conf:3: unknown key 'grace_period'", ErrorSource::config);
    CHECK(format_check_json(failed) ==
          "{\n"
          "  \"format\": 1,\n"
          "  \"schema_version\": 3,\n"
          "  \"command\": \"check\",\n"
          "  \"node\": null,\n"
          "  \"spool_dir\": null,\n"
          "  \"config\": null,\n"
          "  \"status\": \"error\",\n"
          "  \"exit_status\": 2,\n"
          "  \"error\": {\n"
          "    \"kind\": \"config\",\n"
          "    \"message\": \"/etc/leftover.conf:3: unknown key 'grace_period'\"\n"
          "  },\n"
          "  \"live_work\": null,\n"
          "  \"processes\": [],\n"
          "  \"users\": [],\n"
          "  \"totals\": null,\n"
          "  \"cleanup\": null,\n"
          "  \"controller_host\": null\n"
          "}\n");
}

TEST_CASE("check JSON: an error keeps every key") {
    CheckResult failed;
    failed.error = Error::lookup("slurmstepd socket x: timed out", ErrorSource::step_socket);
    const auto doc = nlohmann::json::parse(format_check_json(failed));
    CHECK(doc["status"] == "error");
    CHECK(doc["exit_status"] == 2);
    CHECK(doc["error"]["kind"] == "lookup");
    CHECK(doc["error"]["message"] == "slurmstepd socket x: timed out");
    CHECK(doc["node"].is_null());
    CHECK(doc["live_work"].is_null());
    CHECK(doc["processes"] == nlohmann::json::array());
    CHECK(doc["users"] == nlohmann::json::array());
    CHECK(doc["totals"].is_null());
}

TEST_CASE("check JSON: any byte string stays valid JSON, bytes that are not UTF-8 become U+FFFD") {
    const std::string fffd = "\xef\xbf\xbd";
    CheckResult result = sample();
    result.config = "/etc/caf\xc3\xa9.conf";  // valid UTF-8 passes
    auto& decisions = result.check->plan.decisions;
    decisions[2].user = std::string("nul\0bell\x07", 9);  // control characters are escaped
    decisions[2].detail = "line\nnext\ttab \"quoted\" back\\slash";
    decisions[3].user = "bad\xff\xc3";                  // a stray byte, a truncated sequence
    decisions[3].detail = "\xc0\xaf and \xed\xa0\x80";  // an overlong '/', a surrogate
    decisions[3].comm = "\xff";                         // comm is escaped as in the log
    const std::string text = format_check_json(result);
    nlohmann::json doc;
    REQUIRE_NOTHROW(doc = nlohmann::json::parse(text));  // strict: throws on invalid UTF-8
    CHECK(doc["config"] == "/etc/caf\xc3\xa9.conf");
    const auto& processes = doc["processes"];
    const auto with_pid = [&](int pid) {
        for (const auto& p : processes)
            if (p["pid"] == pid) return p;
        FAIL("no process ", pid);
        return nlohmann::json{};
    };
    CHECK(with_pid(300)["user"] == std::string("nul\0bell\x07", 9));
    CHECK(with_pid(300)["detail"] == "line\nnext\ttab \"quoted\" back\\slash");
    CHECK(with_pid(120)["user"] == "bad" + fffd + fffd);
    CHECK(with_pid(120)["detail"] == fffd + fffd + " and " + fffd + fffd + fffd);
    CHECK(with_pid(120)["comm"] == "\\xff");
}

TEST_CASE("check health: one line, OK on a clean node, ERROR with the count or the error") {
    CHECK(format_check_health(sample()) == "leftover: ERROR: 2 stray processes of 1 user\n");
    CheckResult clean = sample();
    clean.check->plan.decisions.resize(1);  // pid 1, kept
    CHECK(format_check_health(clean) == "leftover: OK: no stray processes\n");
    CheckResult failed;
    failed.error = Error::lookup("slurmstepd socket x:\ntimed out", ErrorSource::step_socket);
    CHECK(format_check_health(failed) == "leftover: ERROR: lookup error: slurmstepd socket x: timed out\n");
    failed.error = Error::config("/etc/leftover.conf:3: unknown key 'grace_period'", ErrorSource::config);
    CHECK(format_check_health(failed) ==
          "leftover: ERROR: config error: /etc/leftover.conf:3: unknown key 'grace_period'\n");
}

TEST_CASE("check JSON: the schema in man/ requires exactly the document's keys, in its order") {
    std::ifstream in(std::string(LEFTOVER_SOURCE_DIR) + "/man/leftover-check.schema.json");
    REQUIRE(in);
    const auto schema = nlohmann::json::parse(in);
    const auto doc = nlohmann::ordered_json::parse(format_check_json(sample()));
    std::vector<std::string> keys;
    for (const auto& [key, value] : doc.items()) keys.push_back(key);
    CHECK(schema["required"].get<std::vector<std::string>>() == keys);
    CHECK(schema["properties"]["schema_version"]["const"] == kCheckJsonSchemaVersion);
    CHECK(schema["properties"]["format"]["const"] == kCheckJsonFormat);
}

TEST_CASE("check JSON: cleanup is null when off, else the totals, one object per entry and the errors") {
    CHECK(nlohmann::json::parse(format_check_json(sample()))["cleanup"].is_null());
    CheckResult result = sample();
    CleanupReport cleanup;
    cleanup.records.emplace_back(ObjectKind::shm_segment, "7", 41001, 4096, CleanupOutcome::would_remove);
    cleanup.records.emplace_back(ObjectKind::file, "/tmp/a\nb\xff", 41001, 5, CleanupOutcome::would_remove);
    cleanup.records.emplace_back(ObjectKind::directory, "/tmp/d", 41001, 0, CleanupOutcome::changed);
    cleanup.records.back().detail = "no longer empty";
    cleanup.errors.push_back("/tmp/m: another mount, not crossed");
    result.check->cleanup = cleanup;
    const auto doc = nlohmann::json::parse(format_check_json(result));
    const auto& c = doc["cleanup"];
    CHECK(c["ipc_objects"] == 1);
    CHECK(c["files"] == 1);
    CHECK(c["bytes"] == 4101);
    REQUIRE(c["objects"].size() == 3);
    CHECK(c["objects"][0] == nlohmann::json{{"kind", "shm"},
                                            {"name", "7"},
                                            {"uid", 41001},
                                            {"bytes", 4096},
                                            {"outcome", "would_remove"},
                                            {"detail", nullptr}});
    CHECK(c["objects"][1]["kind"] == "file");
    CHECK(c["objects"][1]["name"] == "/tmp/a\\x0ab\\xff");
    CHECK(c["objects"][2]["outcome"] == "changed");
    CHECK(c["objects"][2]["detail"] == "no longer empty");
    CHECK(c["errors"] == nlohmann::json::array({"/tmp/m: another mount, not crossed"}));
}

TEST_CASE("check report: where slurmctld runs a sweep kills nothing there, so clean, and the reason is said") {
    CheckResult result = sample();  // two strays of lo_alice
    REQUIRE(check_exit_status(result) == kExitStrays);
    CHECK(nlohmann::json::parse(format_check_json(result))["controller_host"].is_null());
    result.check->controller_host = "slurmctld runs on this host (pid 812)";
    CHECK(check_exit_status(result) == kExitClean);
    const auto doc = nlohmann::json::parse(format_check_json(result));
    CHECK(doc["status"] == "clean");
    CHECK(doc["exit_status"] == 0);
    CHECK(doc["controller_host"] == "slurmctld runs on this host (pid 812)");
    CHECK(doc["totals"]["kill"] == 2);  // what a sweep with sweep_on_controller_host: true would do
    CHECK(format_check_health(result) ==
          "leftover: OK: slurmctld runs on this host (pid 812): a sweep here kills nothing\n");
    const std::string table = format_check_table(result);
    CHECK(table.find("slurmctld runs on this host (pid 812): a sweep here kills and removes nothing "
                     "(sweep_on_controller_host: false); with it true a sweep now would kill 2 processes") !=
          std::string::npos);
    CHECK(table.find("a sweep now would kill them") == std::string::npos);
}

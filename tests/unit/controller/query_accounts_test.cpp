// SPDX-License-Identifier: GPL-2.0-or-later
// Account lookups through leftover-query: the real helper's answers, a broken or hung
// helper's (every question failed, by the deadline), and an evaluation that keeps the
// uids it could not look up.
#include "controller/helper_protocol.hpp"
#include "controller/query_accounts.hpp"
#include "policy/evaluation.hpp"
#include "support/fake_proc.hpp"
#include "support/plans.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using namespace leftover::controller;
using namespace std::chrono_literals;
using leftover::test::FakeProc;
using leftover::test::TempDir;

namespace {

constexpr uid_t kNoAccount = 3999999999u;  // far above any uid a site hands out

}  // namespace

TEST_CASE("account answers: every question answered, names with blanks kept whole") {
    const std::set<uid_t> uids = {0, 41001, 41002};
    const std::set<std::string> names = {"root", "no such", "flaky"};
    auto answers = parse_accounts_output(
        "uid 0 found root\nuid 41001 none\nuid 41002 failed 110\n"
        "name found 0 root\nname none no such\nname failed 5 flaky\nend\n",
        uids, names);
    REQUIRE(answers.ok());
    CHECK(answers->names.at(0).name == "root");
    CHECK(answers->names.at(41001).status == LookupStatus::no_account);
    CHECK(answers->names.at(41002).error == 110);
    CHECK(answers->uids.at("root").uid == 0);
    CHECK(answers->uids.at("no such").status == LookupStatus::no_account);
    CHECK(answers->uids.at("flaky").status == LookupStatus::failed);
}

TEST_CASE("account answers: missing, extra or garbled answers are an error") {
    CHECK_FALSE(parse_accounts_output("uid 0 found root\n", {0}, {}).ok());                   // no end
    CHECK_FALSE(parse_accounts_output("end\n", {0}, {}).ok());                                // unanswered
    CHECK_FALSE(parse_accounts_output("uid 0 found root\nuid 1 none\nend\n", {0}, {}).ok());  // not asked
    CHECK_FALSE(parse_accounts_output("uid 0 found\nend\n", {0}, {}).ok());
    CHECK_FALSE(parse_accounts_output("uid x none\nend\n", {0}, {}).ok());
    CHECK_FALSE(parse_accounts_output("name found root\nend\n", {}, {"root"}).ok());
}

TEST_CASE("account lookups: the real helper resolves uids and names, and tells no account from a failure") {
    QueryAccounts accounts(LEFTOVER_QUERY_BINARY);
    const auto answers =
        accounts.look_up({0, kNoAccount}, {"root", "lo-no-such-user"}, std::chrono::steady_clock::now() + 20s);
    REQUIRE(answers.names.count(0) == 1);
    CHECK(answers.names.at(0).status == LookupStatus::found);
    CHECK(answers.names.at(0).name == "root");
    CHECK(answers.names.at(kNoAccount).status == LookupStatus::no_account);
    CHECK(answers.uids.at("root").status == LookupStatus::found);
    CHECK(answers.uids.at("root").uid == 0);
    CHECK(answers.uids.at("lo-no-such-user").status == LookupStatus::no_account);
}

TEST_CASE("account lookups: an untrusted or failing helper fails every question") {
    TempDir dir;
    const auto writable = dir.write("leftover-query", "#!/bin/sh\necho end\n", 0777);
    auto answers = QueryAccounts(writable).look_up({41001}, {"alice"}, std::chrono::steady_clock::now() + 5s);
    CHECK(answers.names.at(41001).status == LookupStatus::failed);
    CHECK(answers.names.at(41001).failure.find("writable by group or others") != std::string::npos);
    CHECK(answers.uids.at("alice").status == LookupStatus::failed);

    const auto failing = dir.write("failing-query", "#!/bin/sh\necho 'nss: broken' >&2\nexit 2\n", 0755);
    answers = QueryAccounts(failing).look_up({41001}, {}, std::chrono::steady_clock::now() + 5s);
    CHECK(answers.names.at(41001).status == LookupStatus::failed);
    CHECK(answers.names.at(41001).failure.find("nss: broken") != std::string::npos);
}

TEST_CASE("fault catalogue: a hung account lookup keeps the uid unknown, the evaluation returns by its deadline") {
    TempDir dir;
    // A directory service that never answers: the helper sleeps until it is killed.
    const auto hung = dir.write("leftover-query", "#!/bin/sh\nexec sleep 1000\n", 0755);
    const QueryAccounts accounts(hung);
    FakeProc fake;
    constexpr uid_t kUser = 41701;
    fake.add_process({.pid = 700, .uids = {kUser, kUser, kUser, kUser}, .gids = {kUser, kUser, kUser, kUser}});
    auto exemptions = Exemptions::load(Config{}, {});
    REQUIRE(exemptions.ok());
    EvaluationContext context;
    context.proc_root = fake.root();
    context.self = FakeProc::caller_pid;
    const auto started = std::chrono::steady_clock::now();
    context.deadline = started + 500ms;
    Evaluation evaluation(
        exemptions.value(), accounts, [] { return Result<LiveWork>(LiveWork{}); }, {}, context);
    auto plan = evaluation();
    CHECK(std::chrono::steady_clock::now() - started < 10s);  // hang detector only
    REQUIRE(plan.ok());
    for (const Decision& d : plan->decisions) {
        if (d.pid != 700) continue;
        CHECK(d.verdict == Verdict::keep);
        CHECK(d.reason == Reason::protected_account);
        CHECK(d.detail.find("unknown uid") != std::string::npos);
        CHECK(d.detail.find("did not finish before the deadline") != std::string::npos);
    }
    CHECK(evaluation.failed_lookups().count(kUser) == 1);
}

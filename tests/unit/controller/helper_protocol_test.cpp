// SPDX-License-Identifier: GPL-2.0-or-later
// What the helper writes is what its clients read: each answer line, written as
// leftover-query writes it, parses back to the same answer.
#include "controller/helper_protocol.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;
using leftover::controller::accounts_arguments;
using leftover::controller::job_line;
using leftover::controller::jobs_arguments;
using leftover::controller::kEndLine;
using leftover::controller::name_answer_line;
using leftover::controller::parse_accounts_output;
using leftover::controller::parse_jobs_output;
using leftover::controller::uid_answer_line;

TEST_CASE("helper protocol: the jobs answer the helper writes reads back as the same jobs and users") {
    const auto live = parse_jobs_output(job_line(7, 41001) + job_line(4294967040u, 41002) + kEndLine);
    REQUIRE(live.ok());
    CHECK(live->job_users == std::map<std::uint64_t, uid_t>{{7, 41001}, {4294967040u, 41002}});
    CHECK(live->uids == std::set<uid_t>{41001, 41002});
    CHECK(jobs_arguments({"n1", "n2"}, 12) ==
          std::vector<std::string>{"--node", "n1", "--node", "n2", "--exclude-job", "12"});
}

TEST_CASE("helper protocol: every account answer the helper writes reads back as the same answer") {
    const std::string text = uid_answer_line(0, {LookupStatus::found, "root", 0, {}}) +
                             uid_answer_line(41001, {LookupStatus::no_account, {}, 0, {}}) +
                             uid_answer_line(41002, {LookupStatus::failed, {}, 5, {}}) +
                             name_answer_line("je.kim", {LookupStatus::found, 41003, 0, {}}) +
                             name_answer_line("s shin", {LookupStatus::no_account, 0, 0, {}}) +
                             name_answer_line("x", {LookupStatus::failed, 0, 110, {}}) + kEndLine;
    const auto answers = parse_accounts_output(text, {0, 41001, 41002}, {"je.kim", "s shin", "x"});
    REQUIRE(answers.ok());
    CHECK(answers->names.at(0).status == LookupStatus::found);
    CHECK(answers->names.at(0).name == "root");
    CHECK(answers->names.at(41001).status == LookupStatus::no_account);
    CHECK(answers->names.at(41002).status == LookupStatus::failed);
    CHECK(answers->names.at(41002).error == 5);
    CHECK(answers->uids.at("je.kim").status == LookupStatus::found);
    CHECK(answers->uids.at("je.kim").uid == 41003);
    CHECK(answers->uids.at("s shin").status == LookupStatus::no_account);  // a name with a blank, whole
    CHECK(answers->uids.at("x").status == LookupStatus::failed);
    CHECK(answers->uids.at("x").error == 110);
    // A name with a newline is never asked: it has no account.
    CHECK(accounts_arguments({}, {"a\nb", "c"}) == std::vector<std::string>{"accounts", "--name", "c"});
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The system account database (getpwuid_r, getpwnam_r), as leftover-query and a step end use it.
#include "accounts/accounts.hpp"

#include <doctest/doctest.h>

using namespace leftover;

TEST_CASE("accounts: the system account database resolves root") {
    const auto lookup = SystemAccounts::name_of(0);
    CHECK(lookup.status == LookupStatus::found);
    CHECK(lookup.name == "root");
    const auto answers = SystemAccounts().look_up({0}, {"root"}, std::chrono::steady_clock::now());
    CHECK(answers.names.at(0).name == "root");
    CHECK(answers.uids.at("root").status == LookupStatus::found);
    CHECK(answers.uids.at("root").uid == 0);
}

TEST_CASE("accounts: a uid without an account is no_account, not a failed lookup") {
    constexpr uid_t kNoAccount = 3999999999u;  // far above any uid a site hands out
    const auto lookup = SystemAccounts::name_of(kNoAccount);
    CHECK(lookup.status == LookupStatus::no_account);
    CHECK(lookup.name.empty());
    CHECK(lookup.error == 0);
}

TEST_CASE("accounts: a name without an account is no_account, not a failed lookup") {
    const auto lookup = SystemAccounts::uid_of("lo-no-such-user");
    CHECK(lookup.status == LookupStatus::no_account);
    CHECK(lookup.error == 0);
}

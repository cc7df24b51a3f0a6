// SPDX-License-Identifier: GPL-2.0-or-later
// The system account database (getpwuid_r), as the plugin and the command use it.
#include "accounts.hpp"

#include <doctest/doctest.h>

using namespace leftover;

TEST_CASE("accounts: the system account database resolves root") {
    SystemAccounts accounts;
    const auto lookup = accounts.name_of(0);
    CHECK(lookup.status == AccountLookup::Status::found);
    CHECK(lookup.name == "root");
}

TEST_CASE("accounts: a uid without an account is no_account, not a failed lookup") {
    constexpr uid_t kNoAccount = 3999999999u;  // far above any uid a site hands out
    const auto lookup = SystemAccounts().name_of(kNoAccount);
    CHECK(lookup.status == AccountLookup::Status::no_account);
    CHECK(lookup.name.empty());
    CHECK(lookup.error == 0);
}

// SPDX-License-Identifier: GPL-2.0-or-later
// An account database for tests: fixed names, and uids whose lookup fails.
#pragma once

#include "accounts.hpp"

#include <cerrno>
#include <map>
#include <set>
#include <string>

namespace leftover::test {

class FakeAccounts final : public AccountDatabase {
public:
    std::map<uid_t, std::string> names;
    std::set<uid_t> failing;  // lookup fails as if the directory service were down

    AccountLookup name_of(uid_t uid) const override {
        if (failing.count(uid) != 0) return {AccountLookup::Status::failed, {}, EHOSTUNREACH};
        const auto found = names.find(uid);
        if (found == names.end()) return {AccountLookup::Status::no_account, {}, 0};
        return {AccountLookup::Status::found, found->second, 0};
    }
};

}  // namespace leftover::test

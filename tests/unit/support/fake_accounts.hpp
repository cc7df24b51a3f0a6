// SPDX-License-Identifier: GPL-2.0-or-later
// An account database for tests: fixed names, aliases, and lookups that fail.
#pragma once

#include "accounts/accounts.hpp"
#include "policy/exemptions.hpp"

#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace leftover::test {

class FakeAccounts final : public AccountDatabase {
public:
    std::map<uid_t, std::string> names;    // uid -> its first passwd name
    std::set<uid_t> failing;               // lookup fails as if the directory service were down
    std::map<std::string, uid_t> aliases;  // further passwd entries: name -> uid (not what the uid resolves to)
    std::set<std::string> failing_names;
    // Every call's questions, in order.
    mutable std::vector<std::pair<std::set<uid_t>, std::set<std::string>>> asked;

    AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& listed,
                           std::chrono::steady_clock::time_point) const override {
        asked.emplace_back(uids, listed);
        AccountAnswers answers;
        for (const uid_t uid : uids) answers.names.emplace(uid, name_of(uid));
        for (const std::string& name : listed) answers.uids.emplace(name, uid_of(name));
        return answers;
    }

    AccountLookup name_of(uid_t uid) const {
        if (failing.count(uid) != 0) return {LookupStatus::failed, {}, EHOSTUNREACH, {}};
        const auto found = names.find(uid);
        if (found == names.end()) return {LookupStatus::no_account, {}, 0, {}};
        return {LookupStatus::found, found->second, 0, {}};
    }

    UidLookup uid_of(const std::string& name) const {
        if (failing_names.count(name) != 0) return {LookupStatus::failed, 0, EHOSTUNREACH, {}};
        if (const auto alias = aliases.find(name); alias != aliases.end())
            return {LookupStatus::found, alias->second, 0, {}};
        for (const auto& [uid, first] : names)
            if (first == name) return {LookupStatus::found, uid, 0, {}};
        return {LookupStatus::no_account, 0, 0, {}};
    }
};

// The full rule for one uid, asked of `accounts` as an evaluation asks it.
inline Exemption classify(const Exemptions& exemptions, uid_t uid, const AccountDatabase& accounts) {
    return exemptions.classify(
        uid, accounts.look_up({uid}, exemptions.listed_names(), std::chrono::steady_clock::time_point::max()));
}

}  // namespace leftover::test

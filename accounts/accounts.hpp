// SPDX-License-Identifier: GPL-2.0-or-later
// The system's account database (passwd via NSS, so LDAP/sssd accounts count),
// behind a narrow interface: the evaluation asks it once per round, only about what
// it needs, with a deadline; tests make lookups fail or hang.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

namespace leftover {

enum class LookupStatus { found, no_account, failed };

// uid -> its account name (the first passwd entry with that uid).
struct AccountLookup {
    LookupStatus status = LookupStatus::failed;
    std::string name;     // when found
    int error = 0;        // errno when failed, if there is one
    std::string failure;  // when failed without an errno (a timeout, a broken helper)
};

// account name -> its uid.
struct UidLookup {
    LookupStatus status = LookupStatus::failed;
    uid_t uid = 0;  // when found
    int error = 0;
    std::string failure;
};

// Why a failed lookup failed, for logs: "Connection timed out", "leftover-query ...".
std::string failure_text(int error, const std::string& failure);

struct AccountAnswers {
    std::map<uid_t, AccountLookup> names;   // per uid asked
    std::map<std::string, UidLookup> uids;  // per name asked
};

class AccountDatabase {
public:
    virtual ~AccountDatabase() = default;
    // Answers every uid and name asked. One that cannot be answered by `deadline`, or
    // whose lookup fails, is `failed`: never a guess.
    virtual AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                                   std::chrono::steady_clock::time_point deadline) const = 0;
};

// getpwuid_r and getpwnam_r in this process. Not bounded by the deadline: a hung
// directory service holds the caller (the bounded lookups run these in a helper process,
// controller/query_accounts.hpp, or on a worker thread, accounts_bounded.hpp).
class SystemAccounts final : public AccountDatabase {
public:
    AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                           std::chrono::steady_clock::time_point deadline) const override;

    static AccountLookup name_of(uid_t uid);
    static UidLookup uid_of(const std::string& name);
};

}  // namespace leftover

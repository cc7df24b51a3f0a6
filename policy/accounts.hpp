// SPDX-License-Identifier: GPL-2.0-or-later
// The system's account database (passwd via NSS, so LDAP/sssd accounts count),
// behind a narrow interface so tests can make lookups fail.
#pragma once

#include <sys/types.h>

#include <string>

namespace leftover {

struct AccountLookup {
    enum class Status { found, no_account, failed };
    Status status = Status::failed;
    std::string name;  // when found
    int error = 0;     // errno when failed
};

class AccountDatabase {
public:
    virtual ~AccountDatabase() = default;
    virtual AccountLookup name_of(uid_t uid) const = 0;
};

// getpwuid_r.
class SystemAccounts final : public AccountDatabase {
public:
    AccountLookup name_of(uid_t uid) const override;
};

}  // namespace leftover

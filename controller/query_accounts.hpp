// SPDX-License-Identifier: GPL-2.0-or-later
// Account lookups through the leftover-query helper (`leftover-query accounts`), so a
// directory service that hangs costs the evaluation's deadline and no more: the helper
// is killed then, and every uid and name it did not answer is a failed lookup.
#pragma once

#include "accounts/accounts.hpp"
#include "errors/result.hpp"

#include <string>
#include <vector>

namespace leftover::controller {

class QueryAccounts final : public AccountDatabase {
public:
    // `helper`: absolute path of leftover-query.
    explicit QueryAccounts(std::string helper) : helper_(std::move(helper)) {}

    AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                           std::chrono::steady_clock::time_point deadline) const override;

private:
    std::string helper_;
};

}  // namespace leftover::controller

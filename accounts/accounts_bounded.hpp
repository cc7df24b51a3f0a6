// SPDX-License-Identifier: GPL-2.0-or-later
// Account lookups bounded by the caller's deadline without a child process, for a step
// end: Slurm may kill the ending step's descendants while its exit hook runs
// (proctrack/linuxproc killed leftover-query there on 24.11 and 26.05), but a thread of
// slurmstepd is no process of its own. getpwuid_r/getpwnam_r run on a worker thread; the
// caller waits for it until its deadline, and whatever is unanswered then is a failed
// lookup. A worker that hangs is left behind, detached and owning its data; while it
// hangs, no other is started in this process and every lookup fails at once, so a hung
// directory service never piles up threads in slurmstepd.
#pragma once

#include "accounts/accounts.hpp"

#include <functional>

namespace leftover {

// The two lookups a worker makes, one question at a time (tests make them hang).
struct AccountLookupCalls {
    std::function<AccountLookup(uid_t)> name_of = &SystemAccounts::name_of;
    std::function<UidLookup(const std::string&)> uid_of = &SystemAccounts::uid_of;
};

class ThreadBoundedAccounts final : public AccountDatabase {
public:
    explicit ThreadBoundedAccounts(AccountLookupCalls calls = {}) : calls_(std::move(calls)) {}

    AccountAnswers look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                           std::chrono::steady_clock::time_point deadline) const override;

    // Whether this process's worker still runs (one that hangs, or one finishing): tests
    // wait for it to end before the next lookup.
    static bool worker_running();

private:
    AccountLookupCalls calls_;
};

}  // namespace leftover

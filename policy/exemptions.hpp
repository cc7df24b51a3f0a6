// SPDX-License-Identifier: GPL-2.0-or-later
// Who is never touched, and why. Matching goes from the process to the name: a uid is
// turned into its account name and that name is compared exactly with the protected names.
#pragma once

#include "accounts.hpp"
#include "config.hpp"
#include "result.hpp"

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace leftover {

enum class Protection {
    none,
    root,
    below_uid_min,
    above_uid_max,
    slurm_account,
    protected_users,       // listed in the config's protected_users
    protected_users_file,  // listed in a protected_users_files file (detail names it)
    unknown_uid,           // no account, or the lookup failed: never kill on doubt
};

struct Exemption {
    Protection protection = Protection::none;
    std::string account;  // the account name when known
    std::string detail;   // the file that lists it, or why the lookup failed

    bool is_protected() const { return protection != Protection::none; }
    std::string describe() const;  // e.g. "protected: listed in /etc/slurm/localusers.backup"
};

class Exemptions {
public:
    // Reads every protected_users_files entry. Any file that is missing, unreadable,
    // not trusted or malformed is a lookup error naming the file: no evaluation may
    // kill without the full list.
    static Result<Exemptions> load(const Config& config, std::set<uid_t> slurm_account_uids);

    // Protection that follows from the uid alone: root, the uid range, Slurm's accounts.
    Exemption by_uid(uid_t uid) const;
    // The full rule, looking the account name up when the uid alone does not decide.
    Exemption classify(uid_t uid, const AccountDatabase& accounts) const;

private:
    uid_t uid_min_ = 1000;
    uid_t uid_max_ = 60000;
    std::set<uid_t> slurm_uids_;
    std::map<std::string, std::string> names_;  // account name -> where it is listed
};

// Parses one protected users file: one name per line, blank and '#' lines ignored,
// whitespace around a name trimmed. `origin` names the file in errors.
Result<std::vector<std::string>> parse_users_file(const std::string& text, const std::string& origin);

// Caches classify() per uid for the length of one evaluation.
class ExemptionCache {
public:
    ExemptionCache(const Exemptions& exemptions, const AccountDatabase& accounts)
        : exemptions_(exemptions), accounts_(accounts) {}
    const Exemption& get(uid_t uid);

private:
    const Exemptions& exemptions_;
    const AccountDatabase& accounts_;
    std::map<uid_t, Exemption> cache_;
};

}  // namespace leftover

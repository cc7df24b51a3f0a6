// SPDX-License-Identifier: GPL-2.0-or-later
// Who is never touched, and why. Matching goes from the process to the name: a uid is
// turned into its account name and that name is compared exactly with the protected
// names; and every listed name is turned into its uid, so a second passwd entry of a
// uid (an alias) protects that uid too.
#pragma once

#include "accounts/accounts.hpp"
#include "config/config.hpp"
#include "errors/result.hpp"

#include <sys/types.h>

#include <chrono>
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
    std::string account;    // the account name when known
    std::string detail;     // the file that lists it, or why the lookup failed
    std::string listed_as;  // the listed name that protects it, when not `account` (an alias)

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
    // The full rule, from the account database's answers about this uid and about every
    // listed name (a uid or name missing from the answers counts as a failed lookup).
    Exemption classify(uid_t uid, const AccountAnswers& answers) const;

    // Every listed name, and where it is listed ("protected_users" or the file's path).
    const std::map<std::string, std::string>& listed() const { return names_; }
    std::set<std::string> listed_names() const;

private:
    uid_t uid_min_ = 1000;
    uid_t uid_max_ = 60000;
    std::set<uid_t> slurm_uids_;
    std::map<std::string, std::string> names_;  // account name -> where it is listed
};

// Parses one protected users file: one name per line, blank and '#' lines ignored,
// whitespace around a name trimmed. `origin` names the file in errors.
Result<std::vector<std::string>> parse_users_file(const std::string& text, const std::string& origin);

// "protected user 'x' (listed in ...)": how logs name a listed name.
std::string describe_listed(const std::string& name, const std::string& where);

// One warning per listed name that protects nobody because no account has it, or whose
// lookup failed (then it protects nothing until the lookup works: evaluations kill nothing).
std::vector<std::string> listed_name_warnings(const Exemptions& exemptions, const AccountDatabase& accounts,
                                              std::chrono::steady_clock::time_point deadline);

}  // namespace leftover

// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/exemptions.hpp"

#include "errors/error.hpp"
#include "util/errno_text.hpp"
#include "util/escape.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>

namespace leftover {
namespace {

constexpr const char* kBlank = " \t\r\v\f";

std::string trimmed(const std::string& line) {
    const auto first = line.find_first_not_of(kBlank);
    if (first == std::string::npos) return {};
    const auto last = line.find_last_not_of(kBlank);
    return line.substr(first, last - first + 1);
}

}  // namespace

Result<std::vector<std::string>> parse_users_file(const std::string& text, const std::string& origin) {
    std::vector<std::string> names;
    std::size_t line_number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto end = text.find('\n', start);
        const std::string line =
            trimmed(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        ++line_number;
        if (!line.empty() && line.front() != '#') {
            // A name with blanks inside cannot be an account; guessing what was meant
            // could drop a protection, so the whole file is refused.
            if (line.find_first_of(kBlank) != std::string::npos)
                return Error::lookup(
                    fmt::format("{}:{}: expected one account name per line, got '{}'", origin, line_number, line),
                    ErrorSource::users_file);
            names.push_back(line);
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return names;
}

Result<Exemptions> Exemptions::load(const Config& config, std::set<uid_t> slurm_account_uids) {
    Exemptions exemptions;
    exemptions.uid_min_ = config.uid_min;
    exemptions.uid_max_ = config.uid_max;
    exemptions.slurm_uids_ = std::move(slurm_account_uids);
    for (const auto& name : config.protected_users) exemptions.names_.emplace(name, "protected_users");
    for (const auto& path : config.protected_users_files) {
        auto text = read_trusted_file(path);
        if (!text.ok()) return Error::lookup("protected users file " + text.error().message, ErrorSource::users_file);
        auto names = parse_users_file(text.value(), path);
        LEFTOVER_TRY(names);
        for (const auto& name : names.value()) exemptions.names_.emplace(name, path);
    }
    return exemptions;
}

std::set<std::string> Exemptions::listed_names() const {
    std::set<std::string> out;
    for (const auto& [name, where] : names_) out.insert(name);
    return out;
}

Exemption Exemptions::by_uid(uid_t uid) const {
    if (uid == 0) return {Protection::root, "root", {}, {}};
    if (uid < uid_min_) return {Protection::below_uid_min, {}, fmt::format("uid_min {}", uid_min_), {}};
    if (uid > uid_max_) return {Protection::above_uid_max, {}, fmt::format("uid_max {}", uid_max_), {}};
    if (slurm_uids_.count(uid) != 0) return {Protection::slurm_account, {}, {}, {}};
    return {};
}

Exemption Exemptions::classify(uid_t uid, const AccountAnswers& answers) const {
    Exemption exemption = by_uid(uid);
    if (exemption.is_protected()) return exemption;

    const auto asked = answers.names.find(uid);
    const AccountLookup lookup = asked != answers.names.end()
                                     ? asked->second
                                     : AccountLookup{LookupStatus::failed, {}, 0, "this uid was not looked up"};
    const std::string account = lookup.status == LookupStatus::found ? lookup.name : std::string();
    const auto protected_as = [&](const std::string& name, const std::string& where) {
        Exemption e{Protection::protected_users, account, {}, name == account ? std::string() : name};
        if (where != "protected_users") {
            e.protection = Protection::protected_users_file;
            e.detail = where;
        }
        return e;
    };

    // Exact, literal, case-sensitive: a std::map lookup compares whole strings.
    if (const auto listed = names_.find(account); !account.empty() && listed != names_.end())
        return protected_as(listed->first, listed->second);
    // A listed name whose uid is this one (an alias), or whose uid is unknown: either
    // could be this uid's protection.
    for (const auto& [name, where] : names_) {
        const auto resolved = answers.uids.find(name);
        if (resolved == answers.uids.end())
            return {Protection::unknown_uid,
                    account,
                    fmt::format("{} was not looked up", describe_listed(name, where)),
                    {}};
        const UidLookup& by_name = resolved->second;
        if (by_name.status == LookupStatus::found && by_name.uid == uid) return protected_as(name, where);
        if (by_name.status == LookupStatus::failed)
            return {Protection::unknown_uid,
                    account,
                    fmt::format("the uid of {} is unknown: {}", describe_listed(name, where),
                                failure_text(by_name.error, by_name.failure)),
                    {}};
    }
    switch (lookup.status) {
        case LookupStatus::no_account: return {Protection::unknown_uid, {}, "no account has this uid", {}};
        case LookupStatus::failed:
            return {Protection::unknown_uid,
                    {},
                    fmt::format("account lookup failed: {}", failure_text(lookup.error, lookup.failure)),
                    {}};
        case LookupStatus::found: break;
    }
    return {Protection::none, account, {}, {}};
}

std::string Exemption::describe() const {
    const std::string as = listed_as.empty() ? std::string() : " as " + listed_as;
    switch (protection) {
        case Protection::none: return "not protected";
        case Protection::root: return "protected: root";
        case Protection::below_uid_min: return fmt::format("protected: uid below {}", detail);
        case Protection::above_uid_max: return fmt::format("protected: uid above {}", detail);
        case Protection::slurm_account: return "protected: Slurm's own account";
        case Protection::protected_users: return "protected: listed in protected_users" + as;
        case Protection::protected_users_file: return fmt::format("protected: listed in {}{}", detail, as);
        case Protection::unknown_uid: return fmt::format("protected: unknown uid ({})", detail);
    }
    return "?";
}

std::string describe_listed(const std::string& name, const std::string& where) {
    return fmt::format("protected user '{}' (listed in {})", escape_for_log(name), where);
}

std::vector<std::string> listed_name_warnings(const Exemptions& exemptions, const AccountDatabase& accounts,
                                              std::chrono::steady_clock::time_point deadline) {
    std::vector<std::string> warnings;
    if (exemptions.listed().empty()) return warnings;
    const AccountAnswers answers = accounts.look_up({}, exemptions.listed_names(), deadline);
    for (const auto& [name, where] : exemptions.listed()) {
        const auto found = answers.uids.find(name);
        if (found != answers.uids.end() && found->second.status == LookupStatus::found) continue;
        if (found != answers.uids.end() && found->second.status == LookupStatus::no_account)
            warnings.push_back(describe_listed(name, where) + " has no account: it protects nobody");
        else
            warnings.push_back(fmt::format(
                "{}: account lookup failed: {}; while it fails, evaluations kill nothing", describe_listed(name, where),
                found == answers.uids.end() ? "no answer" : failure_text(found->second.error, found->second.failure)));
    }
    return warnings;
}

}  // namespace leftover

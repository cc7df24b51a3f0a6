// SPDX-License-Identifier: GPL-2.0-or-later
#include "exemptions.hpp"

#include "errno_text.hpp"
#include "trusted_file.hpp"

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
                    fmt::format("{}:{}: expected one account name per line, got '{}'", origin, line_number, line));
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
        if (!text.ok()) return Error::lookup("protected users file " + text.error().message);
        auto names = parse_users_file(text.value(), path);
        if (!names.ok()) return names.error();
        for (const auto& name : names.value()) exemptions.names_.emplace(name, path);
    }
    return exemptions;
}

Exemption Exemptions::by_uid(uid_t uid) const {
    if (uid == 0) return {Protection::root, "root", {}};
    if (uid < uid_min_) return {Protection::below_uid_min, {}, fmt::format("uid_min {}", uid_min_)};
    if (uid > uid_max_) return {Protection::above_uid_max, {}, fmt::format("uid_max {}", uid_max_)};
    if (slurm_uids_.count(uid) != 0) return {Protection::slurm_account, {}, {}};
    return {};
}

Exemption Exemptions::classify(uid_t uid, const AccountDatabase& accounts) const {
    Exemption exemption = by_uid(uid);
    if (exemption.is_protected()) return exemption;

    const AccountLookup lookup = accounts.name_of(uid);
    switch (lookup.status) {
        case AccountLookup::Status::no_account: return {Protection::unknown_uid, {}, "no account has this uid"};
        case AccountLookup::Status::failed:
            return {Protection::unknown_uid, {}, fmt::format("account lookup failed: {}", errno_text(lookup.error))};
        case AccountLookup::Status::found: break;
    }
    // Exact, literal, case-sensitive: a std::map lookup compares whole strings.
    const auto listed = names_.find(lookup.name);
    if (listed == names_.end()) return {Protection::none, lookup.name, {}};
    if (listed->second == "protected_users") return {Protection::protected_users, lookup.name, {}};
    return {Protection::protected_users_file, lookup.name, listed->second};
}

std::string Exemption::describe() const {
    switch (protection) {
        case Protection::none: return "not protected";
        case Protection::root: return "protected: root";
        case Protection::below_uid_min: return fmt::format("protected: uid below {}", detail);
        case Protection::above_uid_max: return fmt::format("protected: uid above {}", detail);
        case Protection::slurm_account: return "protected: Slurm's own account";
        case Protection::protected_users: return "protected: listed in protected_users";
        case Protection::protected_users_file: return fmt::format("protected: listed in {}", detail);
        case Protection::unknown_uid: return fmt::format("protected: unknown uid ({})", detail);
    }
    return "?";
}

const Exemption& ExemptionCache::get(uid_t uid) {
    auto found = cache_.find(uid);
    if (found == cache_.end()) found = cache_.emplace(uid, exemptions_.classify(uid, accounts_)).first;
    return found->second;
}

}  // namespace leftover

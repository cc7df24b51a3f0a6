// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/query_accounts.hpp"

#include "util/bounded_child.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

namespace leftover::controller {
namespace {

// A name that holds a newline cannot be a passwd name (and could not be answered on one
// line): it has no account, and is never sent.
bool askable(const std::string& name) { return name.find('\n') == std::string::npos; }

template <class Number>
bool parse_number(std::string_view text, Number& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

// "word rest..." -> word, and text becomes rest.
std::string_view next_field(std::string_view& text) {
    const auto space = text.find(' ');
    const std::string_view field = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    return field;
}

// "found <value> <name>" / "none <name>" / "failed <errno> <name>" for a name;
// "<uid> found <name>" / "<uid> none" / "<uid> failed <errno>" for a uid.
bool parse_uid_line(std::string_view rest, AccountAnswers& answers) {
    uid_t uid = 0;
    if (!parse_number(next_field(rest), uid)) return false;
    const std::string_view status = next_field(rest);
    AccountLookup lookup;
    if (status == "found" && !rest.empty()) {
        lookup = {LookupStatus::found, std::string(rest), 0, {}};
    } else if (status == "none" && rest.empty()) {
        lookup = {LookupStatus::no_account, {}, 0, {}};
    } else if (status == "failed" && parse_number(rest, lookup.error)) {
        lookup.status = LookupStatus::failed;
    } else {
        return false;
    }
    return answers.names.emplace(uid, std::move(lookup)).second;
}

bool parse_name_line(std::string_view rest, AccountAnswers& answers) {
    const std::string_view status = next_field(rest);
    UidLookup lookup;
    if (status == "found") {
        if (!parse_number(next_field(rest), lookup.uid)) return false;
        lookup.status = LookupStatus::found;
    } else if (status == "failed") {
        if (!parse_number(next_field(rest), lookup.error)) return false;
        lookup.status = LookupStatus::failed;
    } else if (status == "none") {
        lookup.status = LookupStatus::no_account;
    } else {
        return false;
    }
    return answers.uids.emplace(std::string(rest), lookup).second;
}

AccountAnswers all_failed(const std::set<uid_t>& uids, const std::set<std::string>& names, const std::string& why) {
    AccountAnswers answers;
    for (const uid_t uid : uids) answers.names.emplace(uid, AccountLookup{LookupStatus::failed, {}, 0, why});
    for (const std::string& name : names) answers.uids.emplace(name, UidLookup{LookupStatus::failed, 0, 0, why});
    return answers;
}

}  // namespace

std::vector<std::string> accounts_arguments(const std::set<uid_t>& uids, const std::set<std::string>& names) {
    std::vector<std::string> args = {"accounts"};
    for (const uid_t uid : uids) {
        args.emplace_back("--uid");
        args.push_back(std::to_string(uid));
    }
    for (const std::string& name : names) {
        if (!askable(name)) continue;
        args.emplace_back("--name");
        args.push_back(name);
    }
    return args;
}

Result<AccountAnswers> parse_accounts_output(const std::string& text, const std::set<uid_t>& uids,
                                             const std::set<std::string>& names) {
    AccountAnswers answers;
    std::istringstream lines(text);
    std::string line;
    bool ended = false;
    while (!ended && std::getline(lines, line)) {
        std::string_view rest = line;
        const std::string_view kind = next_field(rest);
        const bool ok = kind == "end"    ? (ended = rest.empty())
                        : kind == "uid"  ? parse_uid_line(rest, answers)
                        : kind == "name" ? parse_name_line(rest, answers)
                                         : false;
        if (!ok)
            return Error::lookup(fmt::format("leftover-query accounts: unexpected output line '{}'", line),
                                 ErrorSource::account_lookup);
    }
    if (!ended)
        return Error::lookup("leftover-query accounts: incomplete answer (no end line)", ErrorSource::account_lookup);
    for (const uid_t uid : uids)
        if (answers.names.count(uid) == 0)
            return Error::lookup(fmt::format("leftover-query accounts: no answer for uid {}", uid),
                                 ErrorSource::account_lookup);
    for (const std::string& name : names) {
        if (!askable(name)) {
            answers.uids[name] = UidLookup{LookupStatus::no_account, 0, 0, {}};
            continue;
        }
        if (answers.uids.count(name) == 0)
            return Error::lookup(fmt::format("leftover-query accounts: no answer for name '{}'", name),
                                 ErrorSource::account_lookup);
    }
    if (answers.names.size() != uids.size() || answers.uids.size() != names.size())
        return Error::lookup("leftover-query accounts: answers to questions that were not asked",
                             ErrorSource::account_lookup);
    return answers;
}

AccountAnswers QueryAccounts::look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                                      std::chrono::steady_clock::time_point deadline) const {
    if (uids.empty() && names.empty()) return {};
    // We run it as root: it must be as trustworthy as our config.
    if (auto trusted = check_trusted_file(helper_); !trusted.ok())
        return all_failed(uids, names, fmt::format("account lookup helper {}", trusted.error().message));
    std::vector<std::string> argv = {helper_};
    for (std::string& arg : accounts_arguments(uids, names)) argv.push_back(std::move(arg));
    auto output = run_bounded(argv, {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, deadline);
    if (!output.ok()) return all_failed(uids, names, "account lookup: " + output.error().message);
    if (output->exit_code != 0)
        return all_failed(uids, names,
                          fmt::format("account lookup through {} failed (exit {}): {}", helper_, output->exit_code,
                                      error_text(*output)));
    auto answers = parse_accounts_output(output->out, uids, names);
    if (!answers.ok()) return all_failed(uids, names, answers.error().message);
    return std::move(answers).value();
}

}  // namespace leftover::controller

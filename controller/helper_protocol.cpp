// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/helper_protocol.hpp"

#include "errors/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
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

const char* status_word(LookupStatus status) {
    switch (status) {
        case LookupStatus::found: return "found";
        case LookupStatus::no_account: return "none";
        case LookupStatus::failed: return "failed";
    }
    return "failed";
}

}  // namespace

std::string query_helper_path(const std::string& binary) {
    if (!binary.empty()) {
        const auto sibling = std::filesystem::path(binary).parent_path() / "leftover-query";
        std::error_code ignored;
        if (std::filesystem::exists(sibling, ignored)) return sibling.string();
    }
    return LEFTOVER_QUERY_PATH;
}

std::vector<std::string> jobs_arguments(const std::vector<std::string>& nodes,
                                        std::optional<std::uint32_t> ending_job) {
    std::vector<std::string> args;
    for (const std::string& node : nodes) {
        args.emplace_back("--node");
        args.push_back(node);
    }
    if (ending_job) {
        args.emplace_back("--exclude-job");
        args.push_back(std::to_string(*ending_job));
    }
    return args;
}

std::string job_line(std::uint32_t job_id, uid_t uid) { return fmt::format("job {} uid {}\n", job_id, uid); }

Result<steps::LiveWork> parse_jobs_output(const std::string& text) {
    steps::LiveWork live;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line == "end") return live;
        std::istringstream fields(line);
        std::string job_word, uid_word;
        std::uint64_t job = 0;
        uid_t uid = 0;
        if (!(fields >> job_word >> job >> uid_word >> uid) || job_word != "job" || uid_word != "uid")
            return Error::lookup(fmt::format("leftover-query: unexpected output line '{}'", line),
                                 ErrorSource::controller);
        live.uids.insert(uid);
        live.job_ids.insert(job);
        live.job_users[job] = uid;
    }
    return Error::lookup("leftover-query: incomplete answer (no end line)", ErrorSource::controller);
}

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

std::string uid_answer_line(uid_t uid, const AccountLookup& lookup) {
    std::string line = fmt::format("uid {} {}", uid, status_word(lookup.status));
    if (lookup.status == LookupStatus::found) line += " " + lookup.name;
    if (lookup.status == LookupStatus::failed) line += fmt::format(" {}", lookup.error);
    return line + "\n";
}

std::string name_answer_line(const std::string& name, const UidLookup& lookup) {
    std::string line = fmt::format("name {}", status_word(lookup.status));
    if (lookup.status == LookupStatus::found) line += fmt::format(" {}", lookup.uid);
    if (lookup.status == LookupStatus::failed) line += fmt::format(" {}", lookup.error);
    return line + " " + name + "\n";
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

std::vector<std::string> drain_arguments(const std::string& node, const std::string& reason) {
    return {"drain", "--node", node, "--reason", reason};
}

}  // namespace leftover::controller

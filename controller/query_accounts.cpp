// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/query_accounts.hpp"

#include "controller/helper_protocol.hpp"
#include "util/bounded_child.hpp"
#include "util/trusted_file.hpp"

#include <fmt/format.h>

namespace leftover::controller {
namespace {
AccountAnswers all_failed(const std::set<uid_t>& uids, const std::set<std::string>& names, const std::string& why) {
    AccountAnswers answers;
    for (const uid_t uid : uids) answers.names.emplace(uid, AccountLookup{LookupStatus::failed, {}, 0, why});
    for (const std::string& name : names) answers.uids.emplace(name, UidLookup{LookupStatus::failed, 0, 0, why});
    return answers;
}

}  // namespace

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

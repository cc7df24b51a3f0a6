// SPDX-License-Identifier: GPL-2.0-or-later
// leftover-query, both sides of it: where the helper lives, the command line each
// question gives it, the lines it answers with and how they are read back. The helper
// (query/leftover_query.cpp) writes its answers with the line functions here, and the
// clients (query_controller.cpp, query_accounts.cpp) parse them here, so the format has
// one home. Every answer ends with an "end" line; anything but complete, well-formed
// output is an error. The drain's answer: drain.hpp.
//
//   leftover-query --node NAME [--node NAME]... [--exclude-job ID]
//       "job <id> uid <uid>" per running or suspended job on any of the nodes
//   leftover-query accounts [--uid UID]... [--name NAME]...
//       "uid <uid> found <name>" / "uid <uid> none" / "uid <uid> failed <errno>",
//       "name found <uid> <name>" / "name none <name>" / "name failed <errno> <name>"
//   leftover-query drain --node NAME --reason TEXT
//       "drained" / "kept <STATE> <reason>"
#pragma once

#include "accounts/accounts.hpp"
#include "errors/result.hpp"
#include "steps/live_work.hpp"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leftover::controller {

// leftover-query beside `binary` (the plugin or the command in a build tree), else
// its installed path in libexec.
std::string query_helper_path(const std::string& binary);

// The last line of every answer.
inline constexpr const char* kEndLine = "end\n";

// Which jobs run on these nodes (but the ending one).
std::vector<std::string> jobs_arguments(const std::vector<std::string>& nodes, std::optional<std::uint32_t> ending_job);
std::string job_line(std::uint32_t job_id, uid_t uid);
Result<steps::LiveWork> parse_jobs_output(const std::string& text);

// Account lookups: a name that holds a newline is never sent (it has no account).
std::vector<std::string> accounts_arguments(const std::set<uid_t>& uids, const std::set<std::string>& names);
std::string uid_answer_line(uid_t uid, const AccountLookup& lookup);
std::string name_answer_line(const std::string& name, const UidLookup& lookup);
// Every question asked must be answered, and nothing else.
Result<AccountAnswers> parse_accounts_output(const std::string& text, const std::set<uid_t>& uids,
                                             const std::set<std::string>& names);

// Drain `node` with `reason` unless it keeps its own (drain.hpp).
std::vector<std::string> drain_arguments(const std::string& node, const std::string& reason);

}  // namespace leftover::controller

// SPDX-License-Identifier: GPL-2.0-or-later
#include "check_report.hpp"

#include "escape.hpp"
#include "json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <algorithm>
#include <map>
#include <set>

namespace leftover::cli {
namespace {

std::vector<Decision> listed_rows(const CheckResult& result) {
    std::vector<Decision> rows;
    for (const Decision& d : result.check->plan.decisions)
        if (is_listed(d, result.all)) rows.push_back(d);
    std::stable_sort(rows.begin(), rows.end(), [](const Decision& a, const Decision& b) {
        return std::tie(a.user, a.uid, a.pid) < std::tie(b.user, b.uid, b.pid);
    });
    return rows;
}

std::string user_or_uid(const std::string& user, uid_t uid) {
    return user.empty() ? fmt::format("uid {}", uid) : user;
}

std::string reasons_text(const std::map<Reason, std::size_t>& reasons) {
    std::string text;
    for (const auto& [reason, count] : reasons)
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", to_string(reason), count);
    return text;
}

// Left-aligned columns two spaces apart; the last column is not padded.
std::string aligned(const std::vector<std::vector<std::string>>& table) {
    std::vector<std::size_t> widths;
    for (const auto& row : table)
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (widths.size() <= i) widths.push_back(0);
            widths[i] = std::max(widths[i], row[i].size());
        }
    std::string out;
    for (const auto& row : table) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i)
            line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

// "users lo_bob (41002); jobs 12, 13" from live work, naming users the plan knows.
std::string live_work_text(const sweep::NodeCheck& check) {
    std::map<uid_t, std::string> names;
    for (const Decision& d : check.plan.decisions)
        if (!d.user.empty()) names.emplace(d.uid, d.user);
    std::vector<std::string> users;
    for (const uid_t uid : check.live.uids) {
        const auto name = names.find(uid);
        users.push_back(name == names.end() ? fmt::format("uid {}", uid) : fmt::format("{} ({})", name->second, uid));
    }
    if (users.empty()) return "no user has live work on this node";
    return fmt::format("live work on this node: users {}; jobs {}", fmt::join(users, ", "),
                       check.live.job_ids.empty() ? "none (confirmed by slurmctld)"
                                                  : fmt::format("{}", fmt::join(check.live.job_ids, ", ")));
}

void write_error(JsonWriter& json, const std::optional<Error>& error) {
    json.key("error");
    if (!error) {
        json.null();
        return;
    }
    json.begin_object();
    // The schema has two kinds; not being on a Slurm node is a lookup error that says so.
    json.key("kind").value(error->kind == ErrorKind::config ? "config" : "lookup");
    json.key("message").value(error->kind == ErrorKind::not_a_slurm_node ? fmt::format("{}: {}", to_string(error->kind),
                                                                                       error->message)
                                                                         : error->message);
    json.end_object();
}

void write_text_or_null(JsonWriter& json, const char* key, const std::string& text) {
    json.key(key);
    if (text.empty()) json.null();
    else json.value(text);
}

}  // namespace

int check_exit_status(const CheckResult& result) {
    if (result.error || !result.check) return kExitError;
    return result.check->plan.kills().empty() ? kExitClean : kExitStrays;
}

bool is_listed(const Decision& decision, bool all) {
    if (all) return true;
    switch (decision.reason) {
        case Reason::init:
        case Reason::self:
        case Reason::caller_ancestor:
        case Reason::kernel_thread:
        case Reason::protected_owner: return false;
        default: return true;
    }
}

std::vector<UserSummary> summarize_users(const std::vector<Decision>& decisions) {
    std::map<uid_t, UserSummary> by_uid;
    for (const Decision& d : decisions) {
        UserSummary& summary = by_uid[d.uid];
        summary.uid = d.uid;
        if (summary.user.empty()) summary.user = d.user;
        ++summary.processes;
        if (d.verdict == Verdict::kill) ++summary.kill;
        ++summary.reasons[d.reason];
    }
    std::vector<UserSummary> out;
    for (auto& [uid, summary] : by_uid) out.push_back(std::move(summary));
    std::stable_sort(out.begin(), out.end(), [](const UserSummary& a, const UserSummary& b) {
        return std::tie(a.user, a.uid) < std::tie(b.user, b.uid);
    });
    return out;
}

std::string format_check_table(const CheckResult& result) {
    if (!result.check) return {};
    const sweep::NodeCheck& check = *result.check;
    const auto rows = listed_rows(result);
    std::string out;
    if (rows.empty()) {
        out += "no processes of unprotected users\n";
    } else {
        std::vector<std::vector<std::string>> table = {{"USER", "UID", "PID", "COMM", "DECISION", "REASON", "DETAIL"}};
        for (const Decision& d : rows)
            table.push_back({user_or_uid(d.user, d.uid), std::to_string(d.uid), std::to_string(d.pid),
                             escape_for_log(d.comm), to_string(d.verdict), to_string(d.reason), d.detail});
        out += aligned(table);
        out += "\n";
        std::vector<std::vector<std::string>> users = {{"USER", "UID", "PROCESSES", "KILL", "KEEP", "REASONS"}};
        for (const UserSummary& u : summarize_users(rows))
            users.push_back({user_or_uid(u.user, u.uid), std::to_string(u.uid), std::to_string(u.processes),
                             std::to_string(u.kill), std::to_string(u.processes - u.kill), reasons_text(u.reasons)});
        out += aligned(users);
    }
    out += "\n" + live_work_text(check) + "\n";

    const auto kills = check.plan.kills();
    std::set<std::string> stray_users;
    for (const Decision& d : kills) stray_users.insert(user_or_uid(d.user, d.uid));
    const std::size_t hidden = check.plan.decisions.size() - rows.size();
    if (kills.empty()) out += "no strays: a sweep now would kill nothing";
    else
        out += fmt::format("{} stray process{} of {} user{} ({}): a sweep now would kill {}", kills.size(),
                           kills.size() == 1 ? "" : "es", stray_users.size(), stray_users.size() == 1 ? "" : "s",
                           fmt::join(stray_users, ", "), kills.size() == 1 ? "it" : "them");
    out += fmt::format("; {} processes in all", check.plan.decisions.size());
    if (hidden > 0) out += fmt::format(", {} of protected owners, kernel threads and this command not listed (--all lists them)", hidden);
    return out + "\n";
}

std::string format_check_json(const CheckResult& result) {
    JsonWriter json;
    json.begin_object();
    json.key("format").value(kCheckJsonFormat);
    json.key("command").value("check");
    write_text_or_null(json, "node", result.node);
    write_text_or_null(json, "spool_dir", result.spool_dir);
    write_text_or_null(json, "config", result.config);
    const int status = check_exit_status(result);
    json.key("status").value(status == kExitClean ? "clean" : status == kExitStrays ? "strays" : "error");
    json.key("exit_status").value(status);
    write_error(json, result.error);
    if (result.check) {
        const sweep::NodeCheck& check = *result.check;
        const auto rows = listed_rows(result);
        json.key("live_work").begin_object();
        json.key("uids").begin_array();
        for (const uid_t uid : check.live.uids) json.value(static_cast<std::uint64_t>(uid));
        json.end_array();
        json.key("jobs").begin_array();
        for (const std::uint64_t job : check.live.job_ids) json.value(job);
        json.end_array();
        json.end_object();

        json.key("processes").begin_array();
        for (const Decision& d : rows) {
            json.begin_object();
            json.key("pid").value(static_cast<std::int64_t>(d.pid));
            json.key("uid").value(static_cast<std::uint64_t>(d.uid));
            write_text_or_null(json, "user", d.user);
            json.key("comm").value(escape_for_log(d.comm));
            json.key("decision").value(to_string(d.verdict));
            json.key("reason").value(to_string(d.reason));
            write_text_or_null(json, "detail", d.detail);
            json.end_object();
        }
        json.end_array();

        json.key("users").begin_array();
        for (const UserSummary& u : summarize_users(rows)) {
            json.begin_object();
            write_text_or_null(json, "user", u.user);
            json.key("uid").value(static_cast<std::uint64_t>(u.uid));
            json.key("processes").value(static_cast<std::uint64_t>(u.processes));
            json.key("kill").value(static_cast<std::uint64_t>(u.kill));
            json.key("keep").value(static_cast<std::uint64_t>(u.processes - u.kill));
            json.key("reasons").begin_object();
            for (const auto& [reason, count] : u.reasons) json.key(to_string(reason)).value(static_cast<std::uint64_t>(count));
            json.end_object();
            json.end_object();
        }
        json.end_array();

        json.key("totals").begin_object();
        const auto kills = check.plan.kills().size();
        json.key("processes").value(static_cast<std::uint64_t>(check.plan.decisions.size()));
        json.key("kill").value(static_cast<std::uint64_t>(kills));
        json.key("keep").value(static_cast<std::uint64_t>(check.plan.decisions.size() - kills));
        json.key("not_listed").value(static_cast<std::uint64_t>(check.plan.decisions.size() - rows.size()));
        json.end_object();
    } else {
        // Same keys on an error, so a consumer never has to test for their presence.
        json.key("live_work").null();
        json.key("processes").begin_array().end_array();
        json.key("users").begin_array().end_array();
        json.key("totals").null();
    }
    json.end_object();
    return json.str();
}

}  // namespace leftover::cli

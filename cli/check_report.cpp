// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/check_report.hpp"

#include "cli/text_table.hpp"
#include "sweep/report.hpp"
#include "util/errno_text.hpp"
#include "util/escape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace leftover::cli {
namespace {

// Keeps keys in the order leftover(8) documents them.
using Json = nlohmann::ordered_json;

std::vector<Decision> listed_rows(const CheckResult& result) {
    std::vector<Decision> rows;
    for (const Decision& d : result.check->plan.decisions)
        if (is_listed(d, result.all)) rows.push_back(d);
    std::stable_sort(rows.begin(), rows.end(), [](const Decision& a, const Decision& b) {
        return std::tie(a.user, a.uid, a.pid) < std::tie(b.user, b.uid, b.pid);
    });
    return rows;
}

std::string user_or_uid(const std::string& user, uid_t uid) { return user.empty() ? fmt::format("uid {}", uid) : user; }

std::string reasons_text(const std::map<Reason, std::size_t>& reasons) {
    std::string text;
    for (const auto& [reason, count] : reasons)
        text += fmt::format("{}{} {}", text.empty() ? "" : ", ", to_string(reason), count);
    return text;
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

Json error_json(const std::optional<Error>& error) {
    if (!error) return nullptr;
    // The schema has two kinds; not being on a Slurm node is a lookup error that says so.
    const bool not_a_node = error->kind == ErrorKind::not_a_slurm_node;
    return {{"kind", error->kind == ErrorKind::config ? "config" : "lookup"},
            {"message", not_a_node ? fmt::format("{}: {}", to_string(error->kind), error->message) : error->message}};
}

Json text_or_null(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

Json process_json(const Decision& d) {
    return {{"pid", d.pid},
            {"uid", d.uid},
            {"user", text_or_null(d.user)},
            {"comm", escape_for_log(d.comm)},
            {"decision", to_string(d.verdict)},
            {"reason", to_string(d.reason)},
            {"detail", text_or_null(d.detail)}};
}

Json user_json(const UserSummary& u) {
    Json reasons = Json::object();
    for (const auto& [reason, count] : u.reasons) reasons[to_string(reason)] = count;
    return {{"user", text_or_null(u.user)}, {"uid", u.uid},
            {"processes", u.processes},     {"kill", u.kill},
            {"keep", u.processes - u.kill}, {"reasons", std::move(reasons)}};
}

// What a sweep now would remove; null when cleanup is off or the guard lets nothing go.
Json cleanup_json(const std::optional<CleanupReport>& cleanup) {
    if (!cleanup) return nullptr;
    const CleanupTotals totals = totals_of(*cleanup, true);
    Json objects = Json::array();
    for (const CleanupRecord& r : cleanup->records)
        objects.push_back(
            {{"kind", to_string(r.kind)},
             {"name", escape_for_log(r.name)},
             {"uid", r.uid},
             {"bytes", r.bytes},
             {"outcome", to_string(r.outcome)},
             {"detail", r.outcome == CleanupOutcome::failed ? Json(errno_text(r.error)) : text_or_null(r.detail)}});
    return {{"ipc_objects", totals.ipc_objects},
            {"files", totals.files},
            {"bytes", totals.bytes},
            {"objects", std::move(objects)},
            {"errors", cleanup->errors}};
}

}  // namespace

int check_exit_status(const CheckResult& result) {
    if (result.error || !result.check) return kExitError;
    if (result.check->controller_host) return kExitClean;  // a sweep here kills nothing
    return result.check->plan.kills().empty() ? kExitClean : kExitStrays;
}

bool is_listed(const Decision& decision, bool all) { return all || reason_word(decision.reason).listed_by_check; }

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
    out.reserve(by_uid.size());
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
        std::vector<TextRow> table = {{"USER", "UID", "PID", "COMM", "DECISION", "REASON", "DETAIL"}};
        for (const Decision& d : rows)
            table.push_back({user_or_uid(d.user, d.uid), std::to_string(d.uid), std::to_string(d.pid),
                             escape_for_log(d.comm), to_string(d.verdict), to_string(d.reason), d.detail});
        out += format_text_table(table);
        out += "\n";
        std::vector<TextRow> users = {{"USER", "UID", "PROCESSES", "KILL", "KEEP", "REASONS"}};
        for (const UserSummary& u : summarize_users(rows))
            users.push_back({user_or_uid(u.user, u.uid), std::to_string(u.uid), std::to_string(u.processes),
                             std::to_string(u.kill), std::to_string(u.processes - u.kill), reasons_text(u.reasons)});
        out += format_text_table(users);
    }
    out += "\n" + live_work_text(check) + "\n";

    const auto kills = check.plan.kills();
    std::set<std::string> stray_users;
    for (const Decision& d : kills) stray_users.insert(user_or_uid(d.user, d.uid));
    const std::size_t hidden = check.plan.decisions.size() - rows.size();
    if (check.controller_host)
        out += fmt::format(
            "{}: a sweep here kills and removes nothing (sweep_on_controller_host: false); with it "
            "true a sweep now would kill {} process{}",
            *check.controller_host, kills.size(), kills.size() == 1 ? "" : "es");
    else if (kills.empty())
        out += "no strays: a sweep now would kill nothing";
    else
        out += fmt::format("{} stray process{} of {} user{} ({}): a sweep now would kill {}", kills.size(),
                           kills.size() == 1 ? "" : "es", stray_users.size(), stray_users.size() == 1 ? "" : "s",
                           fmt::join(stray_users, ", "), kills.size() == 1 ? "it" : "them");
    out += fmt::format("; {} processes in all", check.plan.decisions.size());
    if (hidden > 0)
        out += fmt::format(", {} of protected owners, kernel threads and this command not listed (--all lists them)",
                           hidden);
    out += "\n";
    if (check.cleanup) {
        // What the swept users left; a check never removes it.
        out += fmt::format("cleanup: a sweep now {}\n", sweep::format_cleanup_totals(totals_of(*check.cleanup, true)));
        for (const CleanupRecord& record : check.cleanup->records)
            out += "  " + sweep::format_cleanup_record(record) + "\n";
        for (const std::string& error : check.cleanup->errors) out += "  " + error + "\n";
    }
    return out;
}

std::string format_check_json(const CheckResult& result) {
    const int status = check_exit_status(result);
    Json doc = {{"format", kCheckJsonFormat},
                {"schema_version", kCheckJsonSchemaVersion},
                {"command", "check"},
                {"node", text_or_null(result.node)},
                {"spool_dir", text_or_null(result.spool_dir)},
                {"config", text_or_null(result.config)},
                {"status", status == kExitClean    ? "clean"
                           : status == kExitStrays ? "strays"
                                                   : "error"},
                {"exit_status", status},
                {"error", error_json(result.error)},
                // Every key also on an error, so a consumer never has to test for its presence.
                {"live_work", nullptr},
                {"processes", Json::array()},
                {"users", Json::array()},
                {"totals", nullptr},
                {"cleanup", nullptr},
                {"controller_host", nullptr}};
    if (result.check) {
        const sweep::NodeCheck& check = *result.check;
        const auto rows = listed_rows(result);
        doc["live_work"] = {{"uids", check.live.uids}, {"jobs", check.live.job_ids}};
        for (const Decision& d : rows) doc["processes"].push_back(process_json(d));
        for (const UserSummary& u : summarize_users(rows)) doc["users"].push_back(user_json(u));
        const std::size_t processes = check.plan.decisions.size();
        const std::size_t kills = check.plan.kills().size();
        doc["totals"] = {{"processes", processes},
                         {"kill", kills},
                         {"keep", processes - kills},
                         {"not_listed", processes - rows.size()}};
        doc["cleanup"] = cleanup_json(check.cleanup);
        if (check.controller_host) doc["controller_host"] = *check.controller_host;
    }
    // Names and paths are bytes, not always UTF-8: an invalid sequence becomes U+FFFD,
    // so the document stays valid JSON.
    return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string format_check_health(const CheckResult& result) {
    if (result.error || !result.check) {
        std::string why = result.error ? fmt::format("{}: {}", to_string(result.error->kind), result.error->message)
                                       : std::string("no evaluation");
        std::replace(why.begin(), why.end(), '\n', ' ');  // one line, whatever the message
        return fmt::format("leftover: ERROR: {}\n", why);
    }
    if (result.check->controller_host)
        return fmt::format("leftover: OK: {}: a sweep here kills nothing\n", *result.check->controller_host);
    const auto kills = result.check->plan.kills();
    if (kills.empty()) return "leftover: OK: no stray processes\n";
    std::set<uid_t> users;
    for (const Decision& d : kills) users.insert(d.uid);
    return fmt::format("leftover: ERROR: {} stray process{} of {} user{}\n", kills.size(),
                       kills.size() == 1 ? "" : "es", users.size(), users.size() == 1 ? "" : "s");
}

}  // namespace leftover::cli

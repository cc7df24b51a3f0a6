// SPDX-License-Identifier: GPL-2.0-or-later
#include "controller/shared_answer.hpp"

#include "controller/helper_protocol.hpp"
#include "errors/error.hpp"
#include "util/escape.hpp"
#include "util/whole_number.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt 11 moved it here)

#include <algorithm>
#include <sstream>
#include <tuple>

namespace leftover::controller {
namespace {

// The first line: what the file is, its format, the boot its times count from. Format 2
// says when the answer came; format 1 (leftover before its answers' life counted from
// then) did not, and a sweep that finds one asks slurmctld itself.
constexpr std::string_view kMagic = "leftover-answer 2 ";
constexpr std::size_t kMaxAnswerSize = std::size_t{4} << 20;

// A value's items, split at spaces.
std::vector<std::string> items_of(const std::string& value) {
    std::istringstream words(value);
    std::vector<std::string> items;
    for (std::string item; words >> item;) items.push_back(item);
    return items;
}

}  // namespace

std::string shared_answer_path(const std::string& spool_dir, const std::string& node_name) {
    return node_file_path(spool_dir, "leftover-answer-", node_name);
}

std::string question_lock_path(const std::string& spool_dir, const std::string& node_name) {
    return node_file_path(spool_dir, "leftover-question-", node_name, ".lock");
}

Result<std::optional<SharedAnswer>> read_shared_answer(const RootFile& file, const std::string& boot_id) {
    auto read = read_root_file_of_boot(file, kMaxAnswerSize, kMagic, boot_id, "not leftover's answer in format 2");
    LEFTOVER_TRY(read);
    if (!read->has_value()) return std::optional<SharedAnswer>();  // none, or of an earlier boot
    auto lines = read_word_lines(**read, {"asked", "nodes", "local", "answered"});
    const auto& [asked, nodes, local, answered] =
        std::tie(lines.values[0], lines.values[1], lines.values[2], lines.values[3]);
    const auto asked_ms = asked ? parse_whole<long long>(*asked) : std::nullopt;
    const auto answered_ms = answered ? parse_whole<long long>(*answered) : std::nullopt;
    if (!asked_ms || !nodes || items_of(*nodes).empty() || !local || !answered_ms)
        return root_file_error(file, "its first lines do not parse");
    SharedAnswer answer;
    answer.asked = std::chrono::milliseconds(*asked_ms);
    answer.answered = std::chrono::milliseconds(*answered_ms);
    if (answer.answered < answer.asked) return root_file_error(file, "it was answered before it was asked");
    answer.nodes = items_of(*nodes);
    for (const std::string& job : items_of(*local)) {
        const auto id = parse_whole<std::uint64_t>(job);
        if (!id) return root_file_error(file, fmt::format("local job '{}' is not a number", job));
        answer.local_jobs.insert(*id);
    }
    auto jobs = parse_jobs_output(lines.rest);
    if (!jobs.ok()) return root_file_error(file, jobs.error().message);
    answer.job_users = std::move(jobs->job_users);
    return std::optional<SharedAnswer>(std::move(answer));
}

Status write_shared_answer(const RootFile& file, const std::string& boot_id, const SharedAnswer& answer) {
    std::string text =
        fmt::format("{}{}\nasked {}\nnodes {}\nlocal {}\nanswered {}\n", kMagic, boot_id, answer.asked.count(),
                    fmt::join(answer.nodes, " "), fmt::join(answer.local_jobs, " "), answer.answered.count());
    for (const auto& [job, uid] : answer.job_users) text += job_line(static_cast<std::uint32_t>(job), uid);
    text += kEndLine;
    return write_root_file(file, text);
}

std::optional<std::string> why_not_shared(const SharedAnswer& answer, const SharingSweep& sweep) {
    const auto age = sweep.now - answer.answered;
    if (age < std::chrono::milliseconds(0) || age > kSharedAnswerLife)
        return fmt::format("came {} ms ago, not within {} ms", age.count(), kSharedAnswerLife.count());
    // The sweep's start is read on another clock and turned into this one's whole ms: a
    // question asked as it began may read a ms or two before it.
    constexpr std::chrono::milliseconds clocks_apart{2};
    if (answer.asked + clocks_apart < sweep.began)
        return fmt::format("asked {} ms before this sweep began", (sweep.began - answer.asked).count());
    if (answer.nodes != sweep.nodes)
        return fmt::format("about nodes {}, not {}", fmt::join(answer.nodes, ","), fmt::join(sweep.nodes, ","));
    for (const std::uint64_t job : sweep.local_jobs)
        if (answer.local_jobs.count(job) == 0 && answer.job_users.count(job) == 0)
            return fmt::format("job {} showed here since (a job start the answer does not know)", job);
    return std::nullopt;
}

steps::LiveWork live_work_of(const SharedAnswer& answer, std::optional<std::uint32_t> ending_job) {
    steps::LiveWork live;
    for (const auto& [job, uid] : answer.job_users) {
        live.uids.insert(uid);
        live.job_ids.insert(job);
    }
    live.job_users = answer.job_users;
    leave_out(live, ending_job);
    return live;
}

void leave_out(steps::LiveWork& work, std::optional<std::uint32_t> ending_job) {
    if (!ending_job) return;
    const auto ending = work.job_users.find(*ending_job);
    if (ending == work.job_users.end()) return;
    const uid_t user = ending->second;
    work.job_users.erase(ending);
    work.job_ids.erase(*ending_job);
    if (std::none_of(work.job_users.begin(), work.job_users.end(),
                     [user](const auto& job) { return job.second == user; }))
        work.uids.erase(user);
}

}  // namespace leftover::controller

// SPDX-License-Identifier: GPL-2.0-or-later
#include "steps/live_work.hpp"

#include "errors/error.hpp"

#include <fmt/format.h>

namespace leftover::steps {

std::string describe_step(std::uint32_t job_id, std::uint32_t step_id) {
    switch (step_id) {
        case 0xfffffffbu: return fmt::format("{}.batch", job_id);
        case 0xfffffffcu: return fmt::format("{}.extern", job_id);
        case 0xfffffffau: return fmt::format("{}.interactive", job_id);
        default: return fmt::format("{}.{}", job_id, step_id);
    }
}

Result<LiveWork> live_work_from(const LocalJobState& state, const std::optional<StepId>& ending_step,
                                const std::string& where) {
    LiveWork live;
    bool ending_step_seen = false;
    for (const LocalStep& step : state.live) {
        if (ending_step && step.job_id == ending_step->job_id && step.step_id == ending_step->step_id) {
            ending_step_seen = true;
            continue;
        }
        // Ending steps do not count. A CANCELLED one does: a job that traps the TERM of
        // `scancel --signal=TERM` still runs; the job's epilog reaps what it leaves.
        if (step.state == StepdState::ending) continue;
        live.uids.insert(step.uid);
        live.job_ids.insert(step.job_id);
        if (step.sluid) live.job_sluids.insert(sluid_name(*step.sluid));
        if (step.stepd_pid) live.stepd_pids.insert(*step.stepd_pid);
    }
    // Its socket held busy (its listen backlog full): listed under its name in the spool
    // dir, which proves the dir and node name right as well as an answer does.
    for (const UnansweredStep& step : state.unanswered)
        if (ending_step && step.job_id == ending_step->job_id && step.step_id == ending_step->step_id)
            ending_step_seen = true;
    if (ending_step && !ending_step_seen)
        return Error::lookup(fmt::format("the ending step {} has no socket in {}; the spool dir or "
                                         "node name is not the one this slurmd uses",
                                         describe_step(ending_step->job_id, ending_step->step_id), where),
                             ErrorSource::step_socket);
    return live;
}

}  // namespace leftover::steps

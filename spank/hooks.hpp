// SPDX-License-Identifier: GPL-2.0-or-later
// What each hook does, with every exception caught before it can reach Slurm.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace leftover::spank {

void on_slurmd_start(spank_t sp, int ac, char** av) noexcept;
void on_task_exit(spank_t sp, int ac, char** av) noexcept;
void on_step_exit(spank_t sp, int ac, char** av) noexcept;
void on_job_prolog(spank_t sp, int ac, char** av) noexcept;
void on_job_epilog(spank_t sp, int ac, char** av) noexcept;

}  // namespace leftover::spank

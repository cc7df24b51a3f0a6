// SPDX-License-Identifier: GPL-2.0-or-later
// leftover.so: the SPANK entry points. Each hook works out its context and forwards;
// nothing here decides anything, and nothing here lets an exception reach Slurm.
extern "C" {
#include <slurm/spank.h>
}

#include "spank/hooks.hpp"

#define LEFTOVER_EXPORT __attribute__((visibility("default")))

// SPANK_PLUGIN's const globals get internal linkage in C++: declare them extern "C"
// first so Slurm's loader finds them.
extern "C" {
LEFTOVER_EXPORT extern const char plugin_name[];
LEFTOVER_EXPORT extern const char plugin_type[];
LEFTOVER_EXPORT extern const unsigned int plugin_version;
LEFTOVER_EXPORT extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(leftover, 1)

LEFTOVER_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
    if (spank_context() == S_CTX_SLURMD) leftover::spank::on_slurmd_start(sp, ac, av);
    return ESPANK_SUCCESS;
}

LEFTOVER_EXPORT int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
    if (spank_context() == S_CTX_REMOTE) leftover::spank::on_task_exit(sp, ac, av);
    return ESPANK_SUCCESS;
}

LEFTOVER_EXPORT int slurm_spank_exit(spank_t sp, int ac, char** av) {
    if (spank_context() == S_CTX_REMOTE) leftover::spank::on_step_exit(sp, ac, av);
    return ESPANK_SUCCESS;
}

// Must always succeed: a failing job prolog or epilog drains the node.
LEFTOVER_EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    leftover::spank::on_job_prolog(sp, ac, av);
    return ESPANK_SUCCESS;
}

LEFTOVER_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
    leftover::spank::on_job_epilog(sp, ac, av);
    return ESPANK_SUCCESS;
}
}

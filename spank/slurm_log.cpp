// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/slurm_log.hpp"

extern "C" {
#include <slurm/spank.h>
}

namespace leftover::spank {

void SlurmLogSink::write(LogLevel level, const std::string& text) {
    // Our debuglevel has already filtered; slurm_info keeps what it let through visible
    // at the usual SlurmdDebug=info.
    switch (level) {
        case LogLevel::debug: slurm_info("leftover: debug: %s", text.c_str()); break;
        case LogLevel::info: slurm_info("leftover: %s", text.c_str()); break;
        case LogLevel::warn: slurm_info("leftover: warning: %s", text.c_str()); break;
        case LogLevel::err:
        case LogLevel::critical: slurm_error("leftover: %s", text.c_str()); break;
    }
}

}  // namespace leftover::spank

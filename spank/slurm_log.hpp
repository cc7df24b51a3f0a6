// SPDX-License-Identifier: GPL-2.0-or-later
// Lines into Slurm's own log (slurmd's log file, with the step's prefix).
#pragma once

#include "sweep/log.hpp"

namespace leftover::spank {

class SlurmLogSink final : public sweep::LogSink {
public:
    void write(LogLevel level, const std::string& text) override;
};

}  // namespace leftover::spank

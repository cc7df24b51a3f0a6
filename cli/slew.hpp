// SPDX-License-Identifier: GPL-2.0-or-later
// The predecessor's slew: a periodic sweep waits a random time first, so the nodes
// of a cluster started by the same timer do not all sweep (and ask slurmctld) at once.
#pragma once

#include "config/config.hpp"

namespace leftover::cli {

// Seconds to wait: uniform between slew and slew_max (slew_max unset: exactly slew).
// `unit` is a random number in [0, 1).
double slew_seconds(const Config& config, double unit);

}  // namespace leftover::cli

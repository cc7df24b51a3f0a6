// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/slew.hpp"

namespace leftover::cli {

double slew_seconds(const Config& config, double unit) {
    const double high = config.slew_max.value_or(config.slew);
    return config.slew + (high - config.slew) * unit;
}

}  // namespace leftover::cli

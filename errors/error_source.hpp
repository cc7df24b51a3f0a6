// SPDX-License-Identifier: GPL-2.0-or-later
// What could not be learned, in leftover's words: the values of util's ErrorSource. Set
// where an error is made (the library that makes it knows what failed); the metrics
// label each lookup error by it (metrics/metrics.hpp). Every folder but util may include
// this; util declares the type and knows none of these words.
#pragma once

#include "util/result.hpp"

namespace leftover {

enum class ErrorSource : unsigned char {
    other,           // nothing named: util's own errors, the command's usage errors
    config,          // the config file is invalid or untrusted
    users_file,      // a protected users file is missing, untrusted or malformed
    step_socket,     // a slurmstepd did not answer, the spool dir could not be read
    controller,      // slurmctld could not be asked (job_source controller, allocation check)
    account_lookup,  // an account lookup failed
    deadline,        // the evaluation reached its deadline
    proc,            // /proc could not be read, or is not slurmd's pid namespace
};
// util's errors are value-initialised: that must be `other`.
static_assert(ErrorSource{} == ErrorSource::other);

}  // namespace leftover

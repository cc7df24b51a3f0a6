// SPDX-License-Identifier: GPL-2.0-or-later
// An error: what kind it is, what it says, and what could not be learned (the config, a
// step socket, /proc...). The source is named where the error is made (the code that
// makes it knows what failed); the metrics label each lookup error by it
// (metrics/metrics.hpp). The bottom of the tree: every folder may include this.
#pragma once

#include <string>
#include <utility>

namespace leftover {

enum class ErrorKind {
    config,            // the configuration is invalid or untrusted
    lookup,            // something needed to decide could not be learned: never kill on it
    not_a_slurm_node,  // the command runs where no slurmd's state can be read
};

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

struct Error {
    ErrorKind kind;
    std::string message;  // names the file, key or source and what was expected
    ErrorSource source;

    static Error config(std::string msg, ErrorSource source = {}) {
        return {ErrorKind::config, std::move(msg), source};
    }
    static Error lookup(std::string msg, ErrorSource source = {}) {
        return {ErrorKind::lookup, std::move(msg), source};
    }
    static Error not_a_slurm_node(std::string msg) { return {ErrorKind::not_a_slurm_node, std::move(msg), {}}; }
};

inline const char* to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::config: return "config error";
        case ErrorKind::lookup: return "lookup error";
        case ErrorKind::not_a_slurm_node: return "not a Slurm node";
    }
    return "error";
}

}  // namespace leftover

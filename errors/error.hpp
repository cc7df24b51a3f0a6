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
    other,           // none of these: util's own errors, the command's usage errors and health state,
                     // which node this is (slurm.conf, slurmd's pid file), the metrics file
    config,          // the config file is invalid or untrusted
    users_file,      // a protected users file is missing, untrusted or malformed
    step_socket,     // a slurmstepd did not answer, the spool dir could not be read
    controller,      // slurmctld could not be asked (job_source controller, allocation check, drain)
    account_lookup,  // an account lookup failed
    deadline,        // the evaluation reached its deadline
    proc,            // /proc could not be read, or is not slurmd's pid namespace
};

// Made by its kind's factory, with its source always named: Error::lookup("...", ErrorSource::proc).
// No default source: whoever makes an error says what was being read when it failed;
// util's own errors say `other`, and a caller that knows what util was reading for it says so in
// the error it makes of them.
struct Error {
    ErrorKind kind;
    std::string message;  // names the file, key or source and what was expected
    ErrorSource source;

    Error(ErrorKind error_kind, std::string text, ErrorSource from)
        : kind(error_kind), message(std::move(text)), source(from) {}

    static Error config(std::string msg, ErrorSource source) { return {ErrorKind::config, std::move(msg), source}; }
    static Error lookup(std::string msg, ErrorSource source) { return {ErrorKind::lookup, std::move(msg), source}; }
    static Error not_a_slurm_node(std::string msg, ErrorSource source) {
        return {ErrorKind::not_a_slurm_node, std::move(msg), source};
    }
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

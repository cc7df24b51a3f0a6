// SPDX-License-Identifier: GPL-2.0-or-later
// Expected-style results: the library reports what went wrong as a value,
// and only the edges (plugin, command) turn it into log lines or exit codes.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace leftover {

enum class ErrorKind {
    config,            // the configuration is invalid or untrusted
    lookup,            // something needed to decide could not be learned: never kill on it
    not_a_slurm_node,  // the command runs where no slurmd's state can be read
};

// Where a lookup error came from, where the kind alone does not tell (for the metrics).
enum class ErrorCause {
    other,
    deadline,        // the evaluation's deadline passed
    account_lookup,  // an account database lookup failed
};

struct Error {
    ErrorKind kind;
    std::string message;  // names the file, key or source and what was expected
    ErrorCause cause = ErrorCause::other;

    static Error config(std::string msg) { return {ErrorKind::config, std::move(msg)}; }
    static Error lookup(std::string msg, ErrorCause cause = ErrorCause::other) {
        return {ErrorKind::lookup, std::move(msg), cause};
    }
    static Error not_a_slurm_node(std::string msg) { return {ErrorKind::not_a_slurm_node, std::move(msg)}; }
};

inline const char* to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::config: return "config error";
        case ErrorKind::lookup: return "lookup error";
        case ErrorKind::not_a_slurm_node: return "not a Slurm node";
    }
    return "error";
}

template <class T, class E = Error>
class Result {
public:
    Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor): implicit by design
    Result(E error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor): implicit by design

    bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<T>(state_); }
    const T& value() const& { return std::get<T>(state_); }
    T&& value() && { return std::get<T>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const E& error() const { return std::get<E>(state_); }

private:
    std::variant<T, E> state_;
};

// For operations that return nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace leftover

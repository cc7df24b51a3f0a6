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

// What could not be learned (the config, a step socket, /proc...), named where the error
// is made: the metrics count an error by it. Its values are leftover's own words, so
// util declares the type only and errors/error_source.hpp defines them; util's own
// errors keep the value-initialised one, `other`, and a caller that knows what it was
// reading says so in the error it makes of them.
enum class ErrorSource : unsigned char;

struct Error {
    ErrorKind kind;
    std::string message;  // names the file, key or source and what was expected
    ErrorSource source{};

    static Error config(std::string msg, ErrorSource source = {}) {
        return {ErrorKind::config, std::move(msg), source};
    }
    static Error lookup(std::string msg, ErrorSource source = {}) {
        return {ErrorKind::lookup, std::move(msg), source};
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

// LEFTOVER_TRY(result): when `result` (a Result or Status, evaluated once) holds an
// error, returns that error, unchanged, from the enclosing function. Only for passing an
// error on as it is: one that needs context or is mapped is returned by hand. The
// temporary's name is unique (__COUNTER__), so `result` may name any variable.
#define LEFTOVER_TRY(...) LEFTOVER_TRY_AS_(LEFTOVER_TRY_JOIN_(leftover_try_, __COUNTER__), __VA_ARGS__)
#define LEFTOVER_TRY_JOIN_(a, b) LEFTOVER_TRY_JOIN2_(a, b)
#define LEFTOVER_TRY_JOIN2_(a, b) a##b
#define LEFTOVER_TRY_AS_(name, ...)          \
    do {                                     \
        auto&& name = (__VA_ARGS__);         \
        if (!name.ok()) return name.error(); \
    } while (false)

}  // namespace leftover

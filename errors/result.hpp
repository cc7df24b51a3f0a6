// SPDX-License-Identifier: GPL-2.0-or-later
// Expected-style results: the library reports what went wrong as a value,
// and only the edges (plugin, command) turn it into log lines or exit codes.
#pragma once

#include "errors/error.hpp"

#include <utility>
#include <variant>

namespace leftover {

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

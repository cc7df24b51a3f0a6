// SPDX-License-Identifier: GPL-2.0-or-later
#include "accounts/accounts_bounded.hpp"

#include <pthread.h>

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace leftover {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTimedOut = "account lookup timed out (no answer by the evaluation's deadline)";
constexpr const char* kBusy = "account lookup not started: an earlier one in this process is still unanswered";
constexpr const char* kBroken = "account lookup ended without an answer (an exception in its thread)";

// This process's one worker: taken by look_up, given back by the worker once it has
// answered everything. A worker that hangs keeps it, and every later lookup fails.
std::atomic<bool> worker_taken{false};

// What a worker and its caller share. The worker owns it as much as the caller, so a
// caller that stopped waiting leaves it nothing that dangles.
struct Exchange {
    std::mutex mutex;
    std::condition_variable finished;
    AccountAnswers answers;  // filled one answer at a time: a timeout keeps what came
    bool done = false;
};

void answer_all(Exchange& exchange, const AccountLookupCalls& calls, const std::set<uid_t>& uids,
                const std::set<std::string>& names) {
    try {
        for (const uid_t uid : uids) {
            AccountLookup lookup = calls.name_of(uid);
            const std::lock_guard lock(exchange.mutex);
            exchange.answers.names.emplace(uid, std::move(lookup));
        }
        for (const std::string& name : names) {
            UidLookup lookup = calls.uid_of(name);
            const std::lock_guard lock(exchange.mutex);
            exchange.answers.uids.emplace(name, std::move(lookup));
        }
    } catch (...) {
        // What is unanswered fails; an exception must not end slurmstepd (std::terminate).
    }
    {
        const std::lock_guard lock(exchange.mutex);
        // Given back before the caller can see `done`: its next lookup finds it free.
        worker_taken.store(false);
        exchange.done = true;
    }
    exchange.finished.notify_all();
}

// Starts `body` on a detached thread that takes no signals: those sent to slurmstepd
// stay with the threads that handle them.
template <class Body>
void start_detached(Body&& body) {
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    try {
        std::thread(std::forward<Body>(body)).detach();
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

// `answers` with every question it lacks failed, saying why.
AccountAnswers completed(AccountAnswers answers, const std::set<uid_t>& uids, const std::set<std::string>& names,
                         const std::string& why) {
    for (const uid_t uid : uids) answers.names.emplace(uid, AccountLookup{LookupStatus::failed, {}, 0, why});
    for (const std::string& name : names) answers.uids.emplace(name, UidLookup{LookupStatus::failed, 0, 0, why});
    return answers;
}

}  // namespace

AccountAnswers ThreadBoundedAccounts::look_up(const std::set<uid_t>& uids, const std::set<std::string>& names,
                                              Clock::time_point deadline) const {
    if (uids.empty() && names.empty()) return {};
    if (Clock::now() >= deadline) return completed({}, uids, names, kTimedOut);
    const auto exchange = std::make_shared<Exchange>();  // before the slot: nothing may throw between
    bool free = false;
    if (!worker_taken.compare_exchange_strong(free, true)) return completed({}, uids, names, kBusy);
    try {
        // Copies of the questions and the calls: the worker may outlive this call.
        start_detached([exchange, calls = calls_, uids, names] { answer_all(*exchange, calls, uids, names); });
    } catch (const std::exception& e) {
        worker_taken.store(false);
        return completed({}, uids, names, fmt::format("account lookup thread not started: {}", e.what()));
    }
    std::unique_lock lock(exchange->mutex);
    const auto done = [&exchange] { return exchange->done; };
    if (deadline == Clock::time_point::max())
        exchange->finished.wait(lock, done);
    else
        exchange->finished.wait_until(lock, deadline, done);
    return completed(exchange->answers, uids, names, exchange->done ? kBroken : kTimedOut);
}

bool ThreadBoundedAccounts::worker_running() { return worker_taken.load(); }

}  // namespace leftover

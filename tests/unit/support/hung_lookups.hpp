// SPDX-License-Identifier: GPL-2.0-or-later
// A directory service that hangs, for the thread-bounded account lookups: each lookup
// blocks until the test releases it (at its end, so the worker can finish and free this
// process's worker slot) or for 20 s at most, so a database that waits for it unbounded
// fails the test's hang detector instead of hanging the suite.
#pragma once

#include "accounts/accounts_bounded.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace leftover::test {

class HungLookups {
public:
    // Once released, a uid resolves to `name`, a name has no account.
    explicit HungLookups(std::string name = "hung.user") : gate_(std::make_shared<Gate>()) {
        gate_->name = std::move(name);
    }
    ~HungLookups() {
        release();
        // The worker answers now; the next test's lookups need this process's slot.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (ThreadBoundedAccounts::worker_running() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        CHECK_FALSE(ThreadBoundedAccounts::worker_running());
    }
    HungLookups(const HungLookups&) = delete;
    HungLookups& operator=(const HungLookups&) = delete;

    // The calls hold the gate: a worker left behind owns it as much as the test does.
    AccountLookupCalls calls() const {
        const std::shared_ptr<Gate> gate = gate_;
        return {[gate](uid_t) {
                    gate->wait();
                    return AccountLookup{LookupStatus::found, gate->name, 0, {}};
                },
                [gate](const std::string&) {
                    gate->wait();
                    return UidLookup{LookupStatus::no_account, 0, 0, {}};
                }};
    }
    // How many lookups have begun.
    int started() const {
        std::lock_guard lock(gate_->mutex);
        return gate_->started;
    }
    void release() {
        {
            std::lock_guard lock(gate_->mutex);
            gate_->released = true;
        }
        gate_->changed.notify_all();
    }

private:
    struct Gate {
        std::mutex mutex;
        std::condition_variable changed;
        bool released = false;
        int started = 0;
        std::string name;
        void wait() {
            std::unique_lock lock(mutex);
            ++started;
            changed.wait_for(lock, std::chrono::seconds(20), [this] { return released; });
        }
    };
    std::shared_ptr<Gate> gate_;
};

}  // namespace leftover::test

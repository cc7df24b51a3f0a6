// SPDX-License-Identifier: GPL-2.0-or-later
// A thread that drops this test process's privileges to a test uid and takes them back,
// as Slurm 24.11's X11 cleanup thread does to slurmstepd (util/privileges.hpp). glibc
// applies a seteuid to every thread of the process: the test's own thread is lent too.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace leftover::test {

// A thread that lends this process's root away to user_, in the order of Slurm's
// drop_privileges, and takes it back (reclaim_privileges) `after` give_back().
class RootLentAway {
public:
    explicit RootLentAway(uid_t user, std::chrono::milliseconds after = std::chrono::milliseconds(0))
        : user_(user), thread_([this, after] {
              CHECK(::setegid(user_) == 0);
              CHECK(::seteuid(user_) == 0);
              lent_ = true;
              while (!give_back_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              std::this_thread::sleep_for(after);
              CHECK(::seteuid(0) == 0);
              CHECK(::setegid(0) == 0);
          }) {
        while (!lent_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~RootLentAway() {
        give_back();
        thread_.join();
    }
    RootLentAway(const RootLentAway&) = delete;
    RootLentAway& operator=(const RootLentAway&) = delete;

    void give_back() { give_back_ = true; }

private:
    uid_t user_;
    std::atomic<bool> lent_{false};
    std::atomic<bool> give_back_{false};
    std::thread thread_;
};

}  // namespace leftover::test

// SPDX-License-Identifier: GPL-2.0-or-later
// Account lookups on a worker thread, bounded by the caller's deadline: what a step end
// uses, where no helper process may run. Lookups hang through support/hung_lookups.hpp.
#include "accounts/accounts_bounded.hpp"
#include "support/hung_lookups.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uid_t kHungUser = 41702;

bool says(const std::string& failure, const std::string& part) { return failure.find(part) != std::string::npos; }

std::size_t threads_of_this_process() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

}  // namespace

TEST_CASE("fault catalogue: a hung account lookup fails by the deadline, and what was answered stays") {
    HungLookups hung;
    AccountLookupCalls calls = hung.calls();
    // root answers at once, the user hangs: the worker asks in order, uid 0 first.
    calls.name_of = [hang = calls.name_of](uid_t uid) { return uid == 0 ? SystemAccounts::name_of(0) : hang(uid); };
    const ThreadBoundedAccounts accounts(calls);

    const auto started = Clock::now();
    const AccountAnswers answers = accounts.look_up({0, kHungUser}, {"lo_listed"}, started + 300ms);
    CHECK(Clock::now() - started < 10s);  // hang detector only: the lookup hangs for 20 s
    CHECK(hung.started() == 1);

    REQUIRE(answers.names.size() == 2);
    CHECK(answers.names.at(0).status == LookupStatus::found);
    CHECK(answers.names.at(0).name == "root");
    const AccountLookup& user = answers.names.at(kHungUser);
    CHECK(user.status == LookupStatus::failed);
    CHECK(says(failure_text(user.error, user.failure), "account lookup timed out"));
    REQUIRE(answers.uids.count("lo_listed") == 1);
    const UidLookup& listed = answers.uids.at("lo_listed");
    CHECK(listed.status == LookupStatus::failed);
    CHECK(says(failure_text(listed.error, listed.failure), "account lookup timed out"));
}

TEST_CASE("fault catalogue: while a hung lookup holds its thread, the next lookup fails at once and starts none") {
    HungLookups hung;
    const AccountAnswers first = ThreadBoundedAccounts(hung.calls()).look_up({kHungUser}, {}, Clock::now() + 300ms);
    CHECK(first.names.at(kHungUser).status == LookupStatus::failed);
    CHECK(ThreadBoundedAccounts::worker_running());

    // A database that would answer at once, and counts what it is asked.
    const auto asked = std::make_shared<std::atomic<int>>(0);
    const AccountLookupCalls counting{[asked](uid_t uid) {
                                          ++*asked;
                                          return SystemAccounts::name_of(uid);
                                      },
                                      [asked](const std::string& name) {
                                          ++*asked;
                                          return SystemAccounts::uid_of(name);
                                      }};
    const std::size_t threads_before = threads_of_this_process();
    const auto started = Clock::now();
    // Far from its deadline: only a lookup that waits for nothing returns in time.
    const AccountAnswers second = ThreadBoundedAccounts(counting).look_up({0}, {"root"}, started + 60s);
    CHECK(Clock::now() - started < 10s);  // hang detector only
    CHECK(*asked == 0);
    CHECK(threads_of_this_process() == threads_before);
    CHECK(hung.started() == 1);

    const AccountLookup& root = second.names.at(0);
    CHECK(root.status == LookupStatus::failed);
    CHECK(says(failure_text(root.error, root.failure), "an earlier one in this process is still unanswered"));
    CHECK(second.uids.at("root").status == LookupStatus::failed);
}

TEST_CASE("fault catalogue: a lookup in time answers as the system database does, also a slow one") {
    constexpr uid_t kNoAccount = 3999999999u;  // far above any uid a site hands out
    const std::set<uid_t> uids = {0, kNoAccount};
    const std::set<std::string> names = {"root", "lo-no-such-user"};
    const auto expect_system_answers = [&](const AccountAnswers& answers) {
        REQUIRE(answers.names.size() == 2);
        CHECK(answers.names.at(0).status == LookupStatus::found);
        CHECK(answers.names.at(0).name == "root");
        CHECK(answers.names.at(kNoAccount).status == LookupStatus::no_account);
        REQUIRE(answers.uids.size() == 2);
        CHECK(answers.uids.at("root").status == LookupStatus::found);
        CHECK(answers.uids.at("root").uid == 0);
        CHECK(answers.uids.at("lo-no-such-user").status == LookupStatus::no_account);
    };
    expect_system_answers(SystemAccounts().look_up(uids, names, Clock::now() + 30s));
    // Back to back: a worker that answered has given its slot back.
    const ThreadBoundedAccounts system;
    expect_system_answers(system.look_up(uids, names, Clock::now() + 30s));
    expect_system_answers(system.look_up(uids, names, Clock::now() + 30s));

    // A slow directory service that answers well before the deadline.
    const ThreadBoundedAccounts slow(AccountLookupCalls{[](uid_t uid) {
                                                            std::this_thread::sleep_for(100ms);
                                                            return SystemAccounts::name_of(uid);
                                                        },
                                                        [](const std::string& name) {
                                                            std::this_thread::sleep_for(100ms);
                                                            return SystemAccounts::uid_of(name);
                                                        }});
    expect_system_answers(slow.look_up(uids, names, Clock::now() + 30s));
    CHECK_FALSE(ThreadBoundedAccounts::worker_running());
    CHECK(system.look_up({}, {}, Clock::now()).names.empty());
}

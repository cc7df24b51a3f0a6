// SPDX-License-Identifier: GPL-2.0-or-later
#include "policy/decision.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

using namespace leftover;

namespace {

// The parent chain as the scan links it, nearest first.
void set_ancestors(Process& p, const std::vector<pid_t>& pids) {
    p.parent_chain.reset();
    for (auto it = pids.rbegin(); it != pids.rend(); ++it)
        p.parent_chain = std::make_shared<const AncestorLink>(AncestorLink{*it, p.parent_chain});
}

constexpr uid_t kAlice = 41001, kBob = 41002, kOperator = 41003;

Process user_process(pid_t pid, uid_t uid, pid_t ppid = 1) {
    Process p;
    p.pid = pid;
    p.ppid = ppid;
    p.owner = uid;
    p.detailed = true;
    p.uids = {uid, uid, uid, uid};
    p.comm = "sleep";
    p.state = 'S';
    p.start_time = 1000u + static_cast<unsigned>(pid);
    return p;
}

Process root_process(pid_t pid) {
    Process p;
    p.pid = pid;
    p.owner = 0;
    p.comm = "daemon";
    return p;
}

struct Fixture {
    ProcessTable table;
    std::map<uid_t, Exemption> exemptions = {
        {0, {Protection::root, "root", {}, {}}},
        {kAlice, {Protection::none, "alice", {}, {}}},
        {kBob, {Protection::none, "bob", {}, {}}},
        {kOperator, {Protection::protected_users_file, "je.kim", "/etc/slurm/localusers.backup", {}}},
    };
    LiveWork live;
    Event event;
    pid_t self = 500;
    std::set<pid_t> caller_ancestors;
    std::set<pid_t> never_touch;
    std::set<pid_t> ending_stepds;

    void add(Process p) {
        table.processes.push_back(std::move(p));
        std::sort(table.processes.begin(), table.processes.end(),
                  [](const Process& a, const Process& b) { return a.pid < b.pid; });
    }
    Plan plan() const {
        return decide({table, exemptions, live, event, self, caller_ancestors, never_touch, ending_stepds});
    }
    Decision decision(pid_t pid) const {
        for (const Decision& d : plan().decisions)
            if (d.pid == pid) return d;
        FAIL("no decision for pid ", pid);
        return {};
    }
};

void check(const Decision& d, Verdict verdict, Reason reason) {
    CAPTURE(d.pid);
    CHECK(to_string(d.verdict) == std::string(to_string(verdict)));
    CHECK(to_string(d.reason) == std::string(to_string(reason)));
}

}  // namespace

TEST_CASE("decision: a user with no live work is a stray, every process gets one decision") {
    Fixture f;
    f.add(root_process(1));
    f.add(root_process(300));
    f.add(user_process(1200, kAlice));
    const Plan plan = f.plan();
    CHECK(plan.decisions.size() == 3);
    check(f.decision(1200), Verdict::kill, Reason::stray);
    CHECK(f.decision(1200).user == "alice");
    check(f.decision(300), Verdict::keep, Reason::protected_owner);
    CHECK(f.decision(300).detail == "protected: root");
    CHECK(plan.kill_uids() == std::set<uid_t>{kAlice});
}

TEST_CASE("decision: a user with live work keeps every process") {
    Fixture f;
    f.live.uids = {kAlice};
    f.add(user_process(1200, kAlice));
    check(f.decision(1200), Verdict::keep, Reason::has_live_job);
}

TEST_CASE("decision: protected accounts are kept with the exemption as the reason") {
    Fixture f;
    f.add(user_process(1300, kOperator));
    const auto d = f.decision(1300);
    check(d, Verdict::keep, Reason::protected_account);
    CHECK(d.detail == "protected: listed in /etc/slurm/localusers.backup");
}

TEST_CASE("decision: a uid nobody classified is kept (never kill on doubt)") {
    Fixture f;
    f.add(user_process(1400, 45000));
    check(f.decision(1400), Verdict::keep, Reason::protected_account);
}

TEST_CASE("decision: mixed uids are kept and reported") {
    Fixture f;
    for (const Uids uids :
         {Uids{kAlice, 0, kAlice, kAlice}, Uids{0, kAlice, kAlice, kAlice}, Uids{kAlice, kAlice, 0, kAlice},
          Uids{kAlice, kAlice, kAlice, 0}, Uids{kAlice, kBob, kAlice, kAlice}}) {
        Fixture one;
        Process p = user_process(1500, kAlice);
        p.uids = uids;
        one.add(p);
        check(one.decision(1500), Verdict::keep, Reason::mixed_uids);
    }
}

TEST_CASE("decision: kernel threads and zombies are never candidates") {
    Fixture f;
    Process kthread = user_process(1600, kAlice);
    kthread.kernel_thread = true;
    Process zombie = user_process(1601, kAlice);
    zombie.state = 'Z';
    f.add(kthread);
    f.add(zombie);
    check(f.decision(1600), Verdict::keep, Reason::kernel_thread);
    check(f.decision(1601), Verdict::keep, Reason::zombie);
}

TEST_CASE("decision: pid 1, the caller, its ancestors and named pids are never candidates") {
    Fixture f;
    f.self = 1702;
    f.caller_ancestors = {1701};
    f.never_touch = {1703};
    f.add(user_process(1, kAlice, 0));
    f.add(user_process(1701, kAlice));
    f.add(user_process(1702, kAlice, 1701));
    f.add(user_process(1703, kAlice));
    check(f.decision(1), Verdict::keep, Reason::init);
    check(f.decision(1701), Verdict::keep, Reason::caller_ancestor);
    check(f.decision(1702), Verdict::keep, Reason::self);
    check(f.decision(1703), Verdict::keep, Reason::never_touch);
}

TEST_CASE("decision: a descendant of a live slurmstepd is kept, of the ending one it is not") {
    Fixture f;
    Process in_live = user_process(1800, kAlice, 900);
    in_live.stepd_ancestor = 900;
    set_ancestors(in_live, {900, 1});
    Process in_ending = user_process(1801, kAlice, 901);
    in_ending.stepd_ancestor = 901;
    set_ancestors(in_ending, {901, 1});
    f.ending_stepds = {901};
    f.add(in_live);
    f.add(in_ending);
    check(f.decision(1800), Verdict::keep, Reason::inside_live_step);
    CHECK(f.decision(1800).detail == "slurmstepd 900");
    check(f.decision(1801), Verdict::kill, Reason::stray);
}

TEST_CASE("fault catalogue: a descendant of a stepd pid from live work is kept whatever its binary is called") {
    Fixture f;
    // 900's exe is not recognised (stepd_ancestor unset); its step socket named it.
    Process task = user_process(1810, kAlice, 1811);
    set_ancestors(task, {1811, 900, 1});
    Process outside = user_process(1812, kAlice, 1);
    set_ancestors(outside, {1});
    Process in_ending = user_process(1813, kAlice, 901);
    set_ancestors(in_ending, {901, 1});
    f.live.stepd_pids = {900};
    f.add(task);
    f.add(outside);
    f.add(in_ending);
    check(f.decision(1810), Verdict::keep, Reason::inside_live_step);
    CHECK(f.decision(1810).detail == "slurmstepd 900");
    check(f.decision(1812), Verdict::kill, Reason::stray);
    check(f.decision(1813), Verdict::kill, Reason::stray);

    // The ending step's stepd protects nothing, even when a socket names it.
    f.live.stepd_pids = {900, 901};
    f.ending_stepds = {901};
    check(f.decision(1813), Verdict::kill, Reason::stray);
    check(f.decision(1810), Verdict::keep, Reason::inside_live_step);
}

TEST_CASE("decision: a process in the cgroup of a job with a live step is kept") {
    Fixture f;
    f.live.job_ids = {77};
    f.live.job_sluids = {"sEKNKTV3WPV500"};
    Process in_live = user_process(1900, kAlice);
    in_live.job_cgroup = "job_77";
    Process in_gone = user_process(1901, kAlice);
    in_gone.job_cgroup = "job_76";
    Process in_live_sluid = user_process(1902, kAlice);  // 26.05: named by the job's SLUID
    in_live_sluid.job_cgroup = "sEKNKTV3WPV500";
    Process in_gone_sluid = user_process(1903, kAlice);
    in_gone_sluid.job_cgroup = "sEKNKTV3WPV501";
    for (const Process& p : {in_live, in_gone, in_live_sluid, in_gone_sluid}) f.add(p);
    check(f.decision(1900), Verdict::keep, Reason::live_job_cgroup);
    CHECK(f.decision(1900).detail == "job 77");
    check(f.decision(1901), Verdict::kill, Reason::stray);
    check(f.decision(1902), Verdict::keep, Reason::live_job_cgroup);
    CHECK(f.decision(1902).detail == "job sEKNKTV3WPV500");
    check(f.decision(1903), Verdict::kill, Reason::stray);
}

TEST_CASE("decision: scope job_user sweeps only the job's user") {
    Fixture f;
    f.event = {Scope::job_user, kAlice};
    f.add(user_process(2000, kAlice));
    f.add(user_process(2001, kBob));
    check(f.decision(2000), Verdict::kill, Reason::stray);
    check(f.decision(2001), Verdict::keep, Reason::out_of_scope);

    f.event = {Scope::node, kAlice};
    check(f.decision(2001), Verdict::kill, Reason::stray);
}

TEST_CASE("decision: the plan is deterministic") {
    Fixture f;
    f.live.uids = {kBob};
    for (pid_t pid = 3000; pid < 3050; ++pid) f.add(user_process(pid, pid % 2 ? kAlice : kBob));
    const Plan a = f.plan(), b = f.plan();
    REQUIRE(a.decisions.size() == b.decisions.size());
    for (std::size_t i = 0; i < a.decisions.size(); ++i) {
        CHECK(a.decisions[i].pid == b.decisions[i].pid);
        CHECK(a.decisions[i].verdict == b.decisions[i].verdict);
        CHECK(a.decisions[i].reason == b.decisions[i].reason);
    }
    CHECK(a.kills().size() == 25);
    CHECK(a.count_by_reason().at(Reason::has_live_job) == 25);
}

TEST_CASE("reasons: each has one word, and check's JSON schema and leftover(8) know every word") {
    std::set<std::string_view> words;
    std::set<Reason> reasons;
    for (const ReasonWord& entry : kReasonWords) {
        words.insert(entry.word);
        reasons.insert(entry.reason);
        CHECK(to_string(entry.reason) == entry.word);
    }
    CHECK(words.size() == kReasonWords.size());
    CHECK(reasons.size() == kReasonWords.size());
    CHECK(reasons.count(Reason::stray) == 1);  // the enum's last value: every value is in the table
    CHECK(static_cast<std::size_t>(Reason::stray) + 1 == kReasonWords.size());

    const auto read = [](const char* name) {
        std::ifstream in(std::string(LEFTOVER_SOURCE_DIR) + "/" + name);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string schema = read("man/leftover-check.schema.json");
    const std::string man = read("man/leftover.8");
    const std::string decisions = man.substr(man.find(".SH DECISIONS"));
    for (const std::string_view word : words) {
        CAPTURE(word);
        CHECK(schema.find(fmt::format("\"{}\"", word)) != std::string::npos);
        const bool in_man = decisions.find(fmt::format(".B {}\n", word)) != std::string::npos ||
                            decisions.find(fmt::format(".BR {} ", word)) != std::string::npos ||
                            decisions.find(fmt::format(".B {} ", word)) != std::string::npos;
        CHECK(in_man);
    }
}

// SPDX-License-Identifier: GPL-2.0-or-later
// A job in its Prolog: slurmd runs the Prolog in a child of its own before the job's
// slurmstepd exists (with PrologFlags=contain, for the whole Prolog, often seconds), so no
// step socket shows the job. On fake /proc trees of a node whose slurmd is pid 50.
#include "steps/starting_work.hpp"
#include "support/fake_proc.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::steps;
using namespace leftover::test;

namespace {

constexpr uid_t kUser = 41851;

// No step socket in the spool dirs.
const StepLister no_sockets = []() -> Result<std::set<std::string>> { return std::set<std::string>{}; };

// The environment slurmd 22.05 gives a Prolog (prep_script_slurmd.c _build_env), as
// /proc/<pid>/environ shows it.
std::string prolog_environ(std::uint32_t job, uid_t uid, const std::string& context = "prolog_slurmd") {
    return nul_separated({"SPANK_X=1", "SLURMD_NODENAME=n1", "SLURM_JOB_ID=" + std::to_string(job),
                          "SLURM_JOB_UID=" + std::to_string(uid), "SLURM_JOB_USER=p.user",
                          "SLURM_JOBID=" + std::to_string(job), "SLURM_SCRIPT_CONTEXT=" + context});
}

// slurmd 50 and the caller (100, the fake's own) running the job epilog; a Prolog is added
// by each test.
struct PrologNode {
    FakeProc proc;
    PrologNode() { add(50, 1, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"}); }
    void add(pid_t pid, pid_t ppid, const std::string& exe, const std::vector<std::string>& argv, uid_t uid = 0,
             const std::string& environ = "") {
        proc.add_process({.pid = pid, .ppid = ppid, .uids = {uid, uid, uid, uid}, .comm = "x", .exe = exe});
        proc.write_file(std::to_string(pid) + "/cmdline", nul_separated(argv));
        proc.write_file(std::to_string(pid) + "/environ", environ);
        proc.set_pid_ns(pid, "pid:[4026531836]");
    }
    // slurmd's child 70 running the Prolog script of job 8.
    void add_prolog(const std::string& environ = prolog_environ(8, kUser)) {
        add(70, 50, "/usr/bin/bash", {"/bin/sh", "/etc/slurm/prolog.sh"}, 0, environ);
    }
    std::optional<std::string> starting(const SeenSteps& seen = {}) {
        auto found = work_being_set_up(proc.root(), seen, no_sockets, {100, 1});
        REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
        return found.value();
    }
};

}  // namespace

TEST_CASE("fault catalogue: a Prolog that no look of the sweep has seen is a job starting") {
    PrologNode node;
    CHECK(node.starting() == std::nullopt);
    node.add_prolog();
    CHECK(node.starting() == "slurmd's child pid 70 runs the Prolog of job 8 for uid 41851");
}

TEST_CASE("starting work: an Epilog, a health check and a user's process with a Prolog's environment are no doubt") {
    PrologNode node;
    // slurmd's child running the Epilog of another job.
    node.add_prolog(prolog_environ(8, kUser, "epilog_slurmd"));
    // slurmd's HealthCheckProgram: no job.
    node.add(71, 50, "/usr/sbin/nhc", {"/usr/sbin/nhc"}, 0, nul_separated({"PATH=/usr/bin"}));
    // A user who copies a Prolog's environment: not root's, and not slurmd's child.
    node.add(400, 1, "/usr/bin/bash", {"bash"}, kUser, prolog_environ(9, kUser));
    CHECK(node.starting() == std::nullopt);
}

TEST_CASE("fault catalogue: slurmd's child running a Prolog names its job and user, seen once it is no doubt") {
    PrologNode node;
    node.add_prolog();
    auto jobs = jobs_in_prolog(node.proc.root());
    REQUIRE_MESSAGE(jobs.ok(), (jobs.ok() ? "" : jobs.error().message));
    CHECK(jobs.value() == std::vector<PrologJob>{{70, 8, kUser}});
    // A look that found it made its user live: no job starting then.
    SeenSteps seen;
    seen.prologs = {70};
    CHECK(node.starting(seen) == std::nullopt);
    // 24.11's launcher (the slurmd binary run again with the Prolog's environment), and a
    // spank prolog, are the same child of slurmd.
    node.proc.remove("70");
    node.add(72, 50, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "slurm_script_launcher", "/etc/slurm/prolog.sh"}, 0,
             prolog_environ(9, kUser));
    node.add(73, 50, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd", "spank", "prolog"}, 0, prolog_environ(10, 0));
    jobs = jobs_in_prolog(node.proc.root());
    REQUIRE(jobs.ok());
    CHECK(jobs.value() == std::vector<PrologJob>{{72, 9, kUser}, {73, 10, 0}});
    seen.prologs = {72, 73};
    CHECK(node.starting(seen) == std::nullopt);
}

TEST_CASE("starting work: only a Prolog child of a slurmd daemon of this pid namespace counts") {
    PrologNode node;
    // Its slurmd's fork (on its way to exec), another namespace's, a user's, a reparented one.
    node.add(60, 50, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"});
    node.add(74, 60, "/usr/bin/bash", {"/bin/sh", "/etc/slurm/prolog.sh"}, 0, prolog_environ(11, kUser));
    node.add(75, 50, "/usr/bin/bash", {"/bin/sh", "/etc/slurm/prolog.sh"}, 0, prolog_environ(12, kUser));
    node.proc.set_pid_ns(75, "pid:[4026532999]");
    node.add(76, 50, "/usr/bin/bash", {"/bin/sh"}, kUser, prolog_environ(13, kUser));
    node.add(77, 1, "/usr/bin/bash", {"/bin/sh", "/etc/slurm/prolog.sh"}, 0, prolog_environ(14, kUser));
    auto jobs = jobs_in_prolog(node.proc.root());
    REQUIRE_MESSAGE(jobs.ok(), (jobs.ok() ? "" : jobs.error().message));
    CHECK(jobs.value().empty());
}

TEST_CASE("starting work: a Prolog whose job or uid does not read is a lookup error naming it") {
    PrologNode node;
    node.add_prolog(nul_separated({"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_ID=8", "SLURM_JOB_UID=x"}));
    const auto jobs = jobs_in_prolog(node.proc.root());
    REQUIRE_FALSE(jobs.ok());
    CHECK(jobs.error().kind == ErrorKind::lookup);
    CHECK(jobs.error().message.find("slurmd's child pid 70 runs a Prolog") != std::string::npos);
}

namespace {

// Runs `body` in a child that has lost CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (root
// then reads only what its mode lets it, as the kernel lets a reader without
// CAP_SYS_PTRACE read the environ of a process that is not dumpable: not at all); what
// `body` returns comes back as text, or "no capset" if the drop failed.
std::string without_dac_override(const std::function<std::string()>& body) {
    int out[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(out[0]);
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2]{};
        std::string text = "no capset";
        if (::syscall(SYS_capget, &header, data) == 0) {
            for (const int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH})
                data[cap / 32].effective &= ~(1U << (cap % 32));
            if (::syscall(SYS_capset, &header, data) == 0) text = body();
        }
        (void)!::write(out[1], text.data(), text.size());
        ::_exit(0);
    }
    ::close(out[1]);
    std::string text;
    char chunk[256];
    for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    return text;
}

}  // namespace

TEST_CASE("fault catalogue: slurmd's child whose environment is refused is a doubt while young, not a lookup error") {
    // Seen in the 24.11 root: "cannot read /proc/717/environ: Permission denied" (slurmd's
    // child for job 35's Prolog) made a step end a lookup error that killed nothing.
    PrologNode node;
    node.add_prolog();
    REQUIRE(::chmod(node.proc.path("70/environ").c_str(), 0) == 0);
    const std::string seen = without_dac_override([&] {
        auto jobs = jobs_in_prolog(node.proc.root());
        auto found = work_being_set_up(node.proc.root(), SeenSteps{}, no_sockets, {100, 1});
        if (!jobs.ok()) return "jobs_in_prolog: " + jobs.error().message;
        if (!found.ok()) return "work_being_set_up: " + found.error().message;
        return fmt::format("{} job(s) in a Prolog; {}", jobs->size(), found->value_or("no sign"));
    });
    CHECK(seen ==
          "0 job(s) in a Prolog; slurmd's child pid 70 may run a Prolog (its environment cannot be read: "
          "Permission denied)");
    // Once a look has seen it (it was live then), or when it is old, it is no sign.
    SeenSteps seen_it;
    seen_it.prologs = {70};
    const std::string later = without_dac_override([&] {
        auto found = work_being_set_up(node.proc.root(), seen_it, no_sockets, {100, 1});
        return found.ok() ? found->value_or("no sign") : found.error().message;
    });
    CHECK(later == "no sign");
}

TEST_CASE("starting work: a look that found nothing stands while the pid namespace gives out no root process's id") {
    PrologNode node;
    std::filesystem::create_directories(node.proc.path("sys/kernel"));
    node.proc.write_file("sys/kernel/ns_last_pid", "100\n");
    StartingLook look;
    const SeenSteps seen;
    // The sockets of the stepds below are in the spool dir (made since the last look).
    const StepLister listed = []() -> Result<std::set<std::string>> {
        return std::set<std::string>{"9.0", "9.1", "9.batch"};
    };
    const auto ask = [&] {
        auto found = look(node.proc.root(), seen, listed, {100, 1});
        REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().message));
        return found.value();
    };
    CHECK(ask() == std::nullopt);
    // A slurmstepd under an id given out before that look (the fake tree lets it appear
    // late): no id since, so the answer stands without a look.
    node.add(90, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [9.0]"});
    CHECK(ask() == std::nullopt);
    // Ids of a user's process and of one gone already: still no look.
    node.add(101, 1, "/usr/bin/sleep", {"sleep"}, kUser);
    node.proc.write_file("sys/kernel/ns_last_pid", "102\n");
    CHECK(ask() == std::nullopt);
    // A root process's id: a look, which finds the job on its way.
    node.add(103, 50, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"});
    node.proc.write_file("sys/kernel/ns_last_pid", "103\n");
    CHECK(ask() == "slurmstepd pid 90 has no step socket yet");
    // While one is found every question is a look.
    node.proc.remove("90");
    node.proc.remove("103");
    CHECK(ask() == std::nullopt);
    // While a step socket goes unanswered, every question is a look: the stepd that stood
    // for it may take a title that makes it a sign, with no fork.
    CHECK(ask() == std::nullopt);
    node.add(92, 1, "/usr/sbin/slurmstepd", {"/usr/sbin/slurmstepd"});
    SeenSteps unanswered;
    unanswered.unplaced_stepds = 1;
    const auto ask_unanswered = [&] {
        auto found = look(node.proc.root(), unanswered, listed, {100, 1});
        REQUIRE(found.ok());
        return found.value();
    };
    CHECK(ask_unanswered() == std::nullopt);
    node.proc.write_file("92/cmdline", nul_separated({"slurmstepd: [9.batch]"}));
    CHECK(ask_unanswered() == "slurmstepd pid 92 has no step socket yet");
    node.proc.remove("92");
    // No counter to read: every question a look.
    node.proc.remove("sys");
    node.add(91, 1, "/usr/sbin/slurmstepd", {"slurmstepd: [9.1]"});
    CHECK(ask() == "slurmstepd pid 91 has no step socket yet");
}

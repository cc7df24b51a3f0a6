// SPDX-License-Identifier: GPL-2.0-or-later
// The cleanup while the user's next job is being set up on the node (sweep/run_cleanup.cpp
// in the sweep pipeline): with PrologFlags=contain slurmd runs the Prolog before the job's
// extern slurmstepd exists, so for the whole Prolog no step socket shows the job while
// slurmctld already has it running here. Files of test uids 41852-41855 in a root-owned
// temp directory given as cleanup_dirs; the job epilog of job 7.
#include "support/pipeline.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_cleanup.hpp"
#include "sweep/run_sweep.hpp"

#include <sys/stat.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace leftover;
using namespace leftover::test;

namespace {

// A pipeline (PrologFlags=contain) whose config cleans `files` in a temp dir holding one
// file of the pipeline's uid.
struct JobSetupPipeline : Pipeline {
    TempDir scratch;
    std::string users_file;
    explicit JobSetupPipeline(uid_t u) : Pipeline(u) { users_file = scratch.write("scratch.dat", "1234", 0644, u); }
    std::string config(const std::string& more = "") const {
        return fmt::format("grace: 1\ncleanup: [files]\ncleanup_dirs: [{}]\n{}", scratch.path(), more);
    }
};

// A node whose slurmd (pid 50) runs the Prolog of job 8 of `uid` in its child 70, as
// slurmd 22.05 does: fork, exec of the script, the job in the environment it is given.
struct NodeWithProlog : FakeProc {
    explicit NodeWithProlog(uid_t uid) {
        add(50, 1, "/usr/sbin/slurmd", {"/usr/sbin/slurmd", "-D"}, "");
        add(70, 50, "/usr/bin/bash", {"/bin/sh", "/etc/slurm/prolog.sh"},
            nul_separated({"SLURM_JOB_ID=8", "SLURM_JOB_UID=" + std::to_string(uid), "SLURM_JOB_USER=rs.user",
                           "SLURM_SCRIPT_CONTEXT=prolog_slurmd"}));
    }
    void add(pid_t pid, pid_t ppid, const std::string& exe, const std::vector<std::string>& argv,
             const std::string& environ) {
        add_process({.pid = pid, .ppid = ppid, .uids = {0, 0, 0, 0}, .comm = "x", .exe = exe, .gids = {0, 0, 0, 0}});
        write_file(std::to_string(pid) + "/cmdline", nul_separated(argv));
        write_file(std::to_string(pid) + "/environ", environ);
        set_pid_ns(pid, "pid:[4026531836]");
    }
};

}  // namespace

TEST_CASE("fault catalogue: the user of a job in its Prolog here keeps her files and her processes") {
    JobSetupPipeline pipeline(41852);
    NodeWithProlog node(41852);
    pipeline.use(node);
    SUBCASE("the job epilog of her previous job removes nothing of hers, and says why") {
        pipeline.run(pipeline.config());
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: removed") == 0);
        CHECK(pipeline.sink.count("job 8 is in its Prolog here (slurmd's child pid 70): uid 41852 is live") == 1);
    }
    SUBCASE("without the Prolog her files go") {
        node.remove("70");
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
    }
    SUBCASE("a process of hers is kept as a live job's") {
        node.add_process({.pid = 200, .uids = {41852, 41852, 41852, 41852}, .gids = {41852, 41852, 41852, 41852}});
        // A check signals nothing: the fake pid is no process of the test's.
        auto check = sweep::check_node(pipeline.load(pipeline.config()), pipeline.request, &pipeline.controller,
                                       pipeline.accounts, pipeline.log);
        REQUIRE(check.ok());
        const Decision* decision = nullptr;
        for (const Decision& d : check->plan.decisions)
            if (d.pid == 200) decision = &d;
        REQUIRE(decision != nullptr);
        CHECK(decision->verdict == Verdict::keep);
        CHECK(decision->reason == Reason::has_live_job);
        CHECK(check->live.uids.count(41852) == 1);
    }
}

TEST_CASE("fault catalogue: a job being set up on the node stops the cleanup, also when no round signalled") {
    JobSetupPipeline pipeline(41853);
    FakeProc node;
    // A slurmstepd with no step socket yet, its launch still fed by this node's slurmd
    // (a pipe on its stdin that slurmd holds): whose job it is, nobody can tell.
    node.add_process({.pid = 50,
                      .ppid = 1,
                      .uids = {0, 0, 0, 0},
                      .comm = "slurmd",
                      .exe = "/usr/sbin/slurmd",
                      .gids = {0, 0, 0, 0}});
    node.write_file("50/cmdline", nul_separated({"/usr/sbin/slurmd", "-D"}));
    node.add_process(
        {.pid = 300, .uids = {0, 0, 0, 0}, .comm = "slurmstepd", .exe = "/usr/sbin/slurmstepd", .gids = {0, 0, 0, 0}});
    node.write_file("300/cmdline", nul_separated({"/usr/sbin/slurmstepd"}));
    for (const pid_t pid : {50, 300}) {
        node.set_pid_ns(pid, "pid:[4026531836]");
        std::filesystem::create_directories(node.path(fmt::format("{}/fd", pid)));
    }
    node.symlink("pipe:[7000]", "300/fd/0");
    node.symlink("pipe:[7000]", "50/fd/12");
    pipeline.use(node);
    pipeline.run(pipeline.config());
    CHECK(path_exists(pipeline.users_file));
    CHECK(pipeline.sink.count(
              "cleanup: nothing removed: a job is starting on this node (slurmstepd pid 300 has no step socket yet)") ==
          1);
}

TEST_CASE("fault catalogue: with contain the job epilog's cleanup asks slurmctld once, and nothing without cleanup") {
    // Her next job is in its Prolog here (slurmd's child not seen, or not yet forked):
    // slurmctld has it running on the node.
    JobSetupPipeline pipeline(41854);
    REQUIRE(pipeline.request.node.prolog_contain);
    SUBCASE("slurmctld says she holds an allocation here: her files stay") {
        pipeline.controller.live.uids = {41854};
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls == 1);
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: removed") == 0);
    }
    SUBCASE("slurmctld cannot be asked: nothing removed") {
        pipeline.controller.error = Error::lookup("squeue: timed out", ErrorSource::controller);
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls == 1);
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: nothing removed: lookup error: squeue: timed out") == 1);
    }
    SUBCASE("slurmctld clears her: her files go after that one query") {
        pipeline.run(pipeline.config());
        CHECK(pipeline.controller.calls == 1);
        CHECK_FALSE(path_exists(pipeline.users_file));
    }
    SUBCASE("cleanup off: slurmctld is not asked") {
        pipeline.run(fmt::format("grace: 1\ncleanup_dirs: [{}]\n", pipeline.scratch.path()));
        CHECK(pipeline.controller.calls == 0);
        CHECK(path_exists(pipeline.users_file));
    }
}

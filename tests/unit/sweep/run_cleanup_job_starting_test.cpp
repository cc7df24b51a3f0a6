// SPDX-License-Identifier: GPL-2.0-or-later
// The cleanup while the user's next job is being set up on the node (sweep/run_cleanup.cpp
// in the sweep pipeline): with PrologFlags=contain slurmd runs the Prolog before the job's
// extern slurmstepd exists, so for the whole Prolog no step socket shows the job while
// slurmctld already has it running here. Files of test uids 41852-41855 in a root-owned
// temp directory given as cleanup_dirs; the job epilog of job 7.
#include "steps/setup_records.hpp"
#include "support/pipeline.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_cleanup.hpp"
#include "sweep/run_sweep.hpp"
#include "util/boot.hpp"

#include <sys/stat.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

// Whether a check (which signals nothing: the fake pid is no process of the test's) keeps
// `pid` as a process of a user with a live job.
bool kept_as_live_job(JobSetupPipeline& pipeline, pid_t pid) {
    auto check = sweep::check_node(pipeline.load(pipeline.config()), pipeline.request, &pipeline.controller,
                                   pipeline.accounts, pipeline.log);
    REQUIRE(check.ok());
    for (const Decision& d : check->plan.decisions)
        if (d.pid == pid) return d.verdict == Verdict::keep && d.reason == Reason::has_live_job;
    FAIL("no decision on pid ", pid);
    return false;
}

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
        CHECK(kept_as_live_job(pipeline, 200));
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

namespace {

// The record job 8's job prolog wrote on node n1, `ago` before now.
void record_setup(const JobSetupPipeline& pipeline, uid_t uid, std::chrono::milliseconds ago, std::uint32_t job = 8) {
    REQUIRE(steps::write_setup_record(pipeline.request.node.spool_dir, std::nullopt,
                                      read_boot_id(pipeline.request.proc_root),
                                      {job, uid, "n1", boot_clock_now() - ago})
                .ok());
}

}  // namespace

TEST_CASE("fault catalogue: between her next job's Prolog and its first slurmstepd, its setup record keeps her files") {
    // The 26.05 soak's finding: the Prolog had exited, the extern slurmstepd was not forked
    // yet, and a sweep of her previous job removed the files the Prolog had just made.
    JobSetupPipeline pipeline(41871);
    FakeProc node;  // nothing in /proc shows the job
    pipeline.use(node);
    SUBCASE("believed: nothing of hers goes, and the log says whose job keeps her") {
        record_setup(pipeline, 41871, std::chrono::seconds(2));
        pipeline.controller.live.job_ids = {8};  // slurmctld has job 8 here
        pipeline.run(pipeline.config());
        CHECK(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("cleanup: removed") == 0);
        CHECK(pipeline.sink.count("job 8 is being set up here (its job prolog began ") == 1);
        CHECK(pipeline.sink.count("; no step of it yet): uid 41871 is live") == 1);
    }
    SUBCASE("a record of a job slurmctld no longer places here is not believed, and is removed") {
        // slurmd restarted in job 8's Prolog, and job 8 ran elsewhere: no epilog of it
        // here came after the record.
        record_setup(pipeline, 41871, std::chrono::seconds(2));
        pipeline.controller.live.job_ids = {9};
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
        const std::string record = pipeline.request.node.spool_dir + "/leftover-setup-n1.8";
        CHECK(pipeline.sink.count("job 8's setup record " + record +
                                  " is not believed: slurmctld, asked after its job prolog began, does not place "
                                  "job 8 on n1; removed") == 1);
        CHECK_FALSE(path_exists(record));
        CHECK(pipeline.sink.count("is being set up here") == 0);
    }
    SUBCASE("slurmctld cannot be asked: the record stands, and her files with it") {
        record_setup(pipeline, 41871, std::chrono::seconds(2));
        pipeline.controller.error = Error::lookup("squeue: timed out", ErrorSource::controller);
        pipeline.run(pipeline.config());
        CHECK(path_exists(pipeline.users_file));
        CHECK(path_exists(pipeline.request.node.spool_dir + "/leftover-setup-n1.8"));
        CHECK(pipeline.sink.count("is believed: slurmctld could not be asked whether the job is still here: "
                                  "squeue: timed out") == 1);
    }
    SUBCASE("without the record her files go") {
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
    }
    SUBCASE("a record older than its life is not believed, and says so") {
        record_setup(pipeline, 41871, steps::kSetupRecordLife + std::chrono::seconds(5));
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
        const std::string record = pipeline.request.node.spool_dir + "/leftover-setup-n1.8";
        CHECK(pipeline.sink.count("job 8's setup record " + record + " is not believed: written ") == 1);
        CHECK(pipeline.sink.count("; removed") == 1);
        CHECK_FALSE(path_exists(record));
    }
    SUBCASE("the ending job's own record keeps nobody") {
        record_setup(pipeline, 41871, std::chrono::seconds(2), 7);
        pipeline.run(pipeline.config());
        CHECK_FALSE(path_exists(pipeline.users_file));
        CHECK(pipeline.sink.count("is being set up here") == 0);
    }
}

TEST_CASE("fault catalogue: a process of a user whose job is being set up is kept as a live job's") {
    JobSetupPipeline pipeline(41872);
    OneStray node(41872);
    pipeline.use(node);
    record_setup(pipeline, 41872, std::chrono::milliseconds(30));
    pipeline.controller.live.job_ids = {8};
    CHECK(kept_as_live_job(pipeline, 200));
}

TEST_CASE("fault catalogue: a setup record that does not parse keeps everyone and names its file") {
    JobSetupPipeline pipeline(41873);
    FakeProc node;
    pipeline.use(node);
    const std::string broken = pipeline.request.node.spool_dir + "/leftover-setup-n1.8";
    {
        std::ofstream out(broken);
        out << "not a record\n";
    }
    ::chmod(broken.c_str(), 0600);
    pipeline.run(pipeline.config());
    CHECK(path_exists(pipeline.users_file));
    CHECK(pipeline.sink.count(broken + ": not leftover's record") >= 1);
}

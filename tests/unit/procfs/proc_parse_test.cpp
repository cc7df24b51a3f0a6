// SPDX-License-Identifier: GPL-2.0-or-later
// The parsers of /proc files (proc_parse.cpp) on text alone: cgroup files and mountinfo.
#include "procfs/proc_read.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;

TEST_CASE("proc cgroup: Slurm v1 and v2 job layouts are recognised, with any CgroupSlice (25.11+)") {
    CHECK(slurm_job_cgroup("4:memory:/slurm/uid_1000/job_7/step_0/task_1\n") == "job_7");
    CHECK(slurm_job_cgroup("4:memory:/slurm/uid_1000/job_7\n") == "job_7");
    CHECK(slurm_job_cgroup("3:cpuset,cpu:/slurm_node17/uid_5/job_8/step_extern\n") == "job_8");
    CHECK(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/job_9/step_batch/slurm\n") == "job_9");
    CHECK(slurm_job_cgroup("0::/system.slice/node3_slurmstepd.scope/job_10/step_0/user/task_0") == "job_10");
    CHECK(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/job_4294967295/step_0\n") == "job_4294967295");
    // Only root creates top-level slices; 25.11's CgroupSlice picks which one.
    CHECK(slurm_job_cgroup("0::/slurm.slice/slurmstepd.scope/job_11/step_0\n") == "job_11");
    // 26.05 without CgroupJobIdPaths=yes: the directory is the job's SLUID.
    CHECK(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0\n") == "sEKNKTV3WPV500");
    CHECK_FALSE(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/sEKNKTV3WPV50/step_0\n"));   // 12 digits
    CHECK_FALSE(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/sEKNKTV3WPV50U/step_0\n"));  // U: not base32
    CHECK_FALSE(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/SEKNKTV3WPV500/step_0\n"));
    CHECK_FALSE(slurm_job_cgroup("0::/.slice/slurmstepd.scope/job_11/step_0\n"));
    // The user owns v1 step_ and v2 task_ cgroups: a job_ they create below is not the job.
    CHECK(slurm_job_cgroup("4:memory:/slurm/uid_1000/job_7/step_0/job_99\n") == "job_7");
    CHECK(slurm_job_cgroup("0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0/job_1\n") == "job_9");
}

TEST_CASE("proc cgroup: look-alike job_ paths a user could create are rejected") {
    const std::vector<std::string> rejected = {
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/job_7\n",
        "0::/user.slice/user-1000.slice/user@1000.service/system.slice/slurmstepd.scope/job_7\n",
        "0::/user.slice/user-1000.slice/session-3.scope/slurm/uid_1000/job_7\n",
        "0::/../../system.slice/slurmstepd.scope/job_7\n",  // outside our cgroup namespace
        "0::/system.slice/slurmstepd.scope/slurmd\n",
        "0::/system.slice/evil.scope/job_7\n",
        "0::/system.slice/_slurmstepd.scope/job_7\n",
        "0::/system.slice/slurmstepd.scope.d/job_7\n",
        "0::/system.slice/slurmstepd.scope/step_0/job_7\n",
        "0::/system.slice/slurmstepd.scope/job_7x/step_0\n",
        "0::/system.slice/slurmstepd.scope/job_\n",
        "0::/system.slice/slurmstepd.scope/job_-7\n",
        "0::/system.slice/slurmstepd.scope/job_007\n",
        "0::/system.slice/slurmstepd.scope/job_4294967296\n",
        "0::/slurm/uid_1000/job_7\n",                       // v1 layout on the v2 line
        "4:memory:/system.slice/slurmstepd.scope/job_7\n",  // v2 layout on a v1 line
        "4:memory:/user/slurm/uid_1000/job_7\n",
        "4:memory:/slurmx/uid_1000/job_7\n",
        "4:memory:/slurm_/uid_1000/job_7\n",
        "4:memory:/slurm/uid_/job_7\n",
        "4:memory:/slurm/job_7\n",
        "4:memory:slurm/uid_1000/job_7\n",
        "garbage\n",
        "",
    };
    for (const auto& text : rejected) {
        CAPTURE(text);
        CHECK_FALSE(slurm_job_cgroup(text).has_value());
    }
}

TEST_CASE("proc mountinfo: the lookup takes the mount on top, unescaping its path") {
    const std::string text =
        "22 1 0:21 / /proc rw - proc proc rw\n"
        "30 22 0:40 / /proc rw shared:5 master:2 - tmpfs none rw\n"
        "31 1 0:41 / /srv/my\\040proc rw - proc proc rw,hidepid=2\n"
        "32 1 0:42 / /srv/my rw - proc proc rw\n";
    const auto top = find_mount(text, "/proc");
    REQUIRE(top.has_value());
    CHECK(top->fstype == "tmpfs");  // mounted over the proc one
    const auto spaced = find_mount(text, "/srv/my proc");
    REQUIRE(spaced.has_value());
    CHECK(spaced->fstype == "proc");
    CHECK(spaced->super_options == "rw,hidepid=2");
    CHECK_FALSE(find_mount(text, "/srv").has_value());
    CHECK_FALSE(find_mount("garbage\n\n", "/proc").has_value());
}

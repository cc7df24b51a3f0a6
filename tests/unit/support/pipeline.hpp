// SPDX-License-Identifier: GPL-2.0-or-later
// One node as run_sweep sees it, for the sweep pipeline's tests.
#pragma once

#include "metrics/metrics.hpp"
#include "support/fake_accounts.hpp"
#include "support/fake_controller.hpp"
#include "support/fake_proc.hpp"
#include "support/processes.hpp"
#include "support/recording_sink.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_sweep.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace leftover::test {

// One node as run_sweep sees it: an empty spool directory (PrologFlags=contain, so
// slurmctld is not asked unless a test says otherwise), slurmctld, accounts that know
// only `uid` (as rs.user), and the log. Ends every process of `uid`.
struct Pipeline {
    uid_t uid;
    TempDir dir;
    FakeAccounts accounts;
    FakeController controller;
    RecordingSink sink;
    sweep::Logger log{sink};
    sweep::SweepRequest request;

    explicit Pipeline(uid_t u) : uid(u) {
        become_subreaper();
        REQUIRE(::mkdir((dir / "spool").c_str(), 0755) == 0);
        accounts.names[uid] = "rs.user";
        request.trigger.label = "job 7 epilog";
        request.trigger.uid = uid;
        request.trigger.job_id = 7;
        request.trigger.job_ending = true;
        request.node.node_name = "n1";
        request.node.spool_dir = dir / "spool";
        request.node.slurm_uids = {64030};
        request.node.prolog_contain = true;
        request.self = ::getpid();
    }
    ~Pipeline() { kill_all_of(uid); }
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Decides on `fake` instead of the real /proc.
    void use(const FakeProc& fake) {
        request.proc_root = fake.root();
        request.self = FakeProc::caller_pid;
    }

    sweep::ConfigAndExemptions load(const std::string& config) {
        return sweep::load_config_and_exemptions(dir.write("leftover.conf", config), true, request.node.slurm_uids);
    }
    KillReport run(const std::string& config, controller::Controller* via = nullptr) {
        return sweep::run_sweep(load(config), request, via ? via : &controller, accounts, log);
    }
    std::string summary() const {
        REQUIRE_FALSE(sink.lines.empty());
        CHECK(sink.lines.back().first == LogLevel::info);
        return sink.lines.back().second;
    }
};

// A fake /proc with one process of `uid`, pid 200.
struct OneStray : FakeProc {
    explicit OneStray(uid_t uid) {
        add_process({.pid = 200, .uids = {uid, uid, uid, uid}, .gids = {uid, uid, uid, uid}});
    }
};

// The metrics file a sweep wrote, parsed (a test fails on a file that does not parse).
inline Metrics metrics_in(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    const auto metrics = Metrics::parse(text.str());
    REQUIRE(metrics.ok());
    return metrics.value();
}

}  // namespace leftover::test

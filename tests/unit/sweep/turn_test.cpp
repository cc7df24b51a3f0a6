// SPDX-License-Identifier: GPL-2.0-or-later
// Sweeps of one node take turns (sweep/turn.hpp): two run_sweep calls on one spool dir,
// each on a thread of its own as two slurmstepds or a job epilog and `leftover sweep`
// would run them, against real strays of each test's own uids (4134x). Every line each
// sweep logs goes into one timeline with the time it was written, so that the tests can
// tell whose signals went out when.
#include "support/pipeline.hpp"
#include "support/processes.hpp"
#include "support/sweeper.hpp"
#include "support/temp_dir.hpp"
#include "sweep/run_sweep.hpp"
#include "sweep/turn.hpp"
#include "util/file_lock.hpp"

#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace leftover;
using namespace leftover::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Every line of every sweep, with the sweep's name and the time it was written.
struct Timeline {
    struct Line {
        std::string sweep;
        Clock::time_point at;
        LogLevel level;
        std::string text;
    };
    std::mutex mutex;
    std::vector<Line> lines;

    std::vector<Line> of(const std::string& sweep, const std::string& part = "") {
        const std::lock_guard hold(mutex);
        std::vector<Line> out;
        for (const Line& line : lines)
            if (line.sweep == sweep && line.text.find(part) != std::string::npos) out.push_back(line);
        return out;
    }
    // The lines of `sweep` that say a signal went out.
    std::vector<Line> signals_of(const std::string& sweep) {
        std::vector<Line> out;
        for (const Line& line : of(sweep))
            for (const char* name : {"SIGSTOP ", "SIGCONT ", "SIGTERM ", "SIGKILL "})
                if (line.text.starts_with(name)) out.push_back(line);
        return out;
    }
    // Polls until `sweep` logged a line containing `part`; false after 20 s.
    bool wait_for(const std::string& sweep, const std::string& part) {
        for (const auto until = Clock::now() + 20s; Clock::now() < until; std::this_thread::sleep_for(10ms))
            if (!of(sweep, part).empty()) return true;
        return false;
    }
    std::string text() {
        const std::lock_guard hold(mutex);
        std::string all;
        for (const Line& line : lines) all += line.sweep + ": " + line.text + "\n";
        return all;
    }
};

// Told of each line as the sweep writes it, on the sweep's own thread.
using LineHook = std::function<void(const std::string&)>;

class TimelineSink final : public sweep::LogSink {
public:
    TimelineSink(Timeline& timeline, std::string sweep, LineHook hook)
        : timeline_(timeline), sweep_(std::move(sweep)), hook_(std::move(hook)) {}
    void write(LogLevel level, const std::string& text) override {
        if (hook_) hook_(text);
        const std::lock_guard hold(timeline_.mutex);
        timeline_.lines.push_back({sweep_, Clock::now(), level, text});
    }

private:
    Timeline& timeline_;
    std::string sweep_;
    LineHook hook_;
};

// run_sweep as the pipeline's, with its lines in the timeline as `name`; the sweep's
// deadline counts from now.
KillReport run_into(Pipeline& pipeline, const std::string& config, Timeline& timeline, const std::string& name,
                    LineHook hook = {}) {
    TimelineSink sink(timeline, name, std::move(hook));
    sweep::Logger log(sink);
    pipeline.request.started = Clock::now();
    return sweep::run_sweep(pipeline.load(config), pipeline.request, &pipeline.controller, pipeline.accounts, log);
}

// What two sweeps of one node after one user's stray that ignores SIGTERM did.
struct Crossfire {
    pid_t stubborn = 0;
    KillReport first;
    KillReport second;
};

// The soak's crossfire, two job epilogs of one user's jobs ending together on a node,
// both after the same stray that ignores SIGTERM: the second sweep begins once the first
// has sent its SIGTERM. `hook` is told of each of the second's lines.
Crossfire two_sweeps(Pipeline& first, Pipeline& second, uid_t uid, const std::string& config, Timeline& timeline,
                     LineHook hook = {}) {
    second.request.node.spool_dir = first.request.node.spool_dir;  // one node
    const SharedDir shared;
    Crossfire out;
    out.stubborn = spawn_stubborn(uid, shared);
    std::thread first_sweep([&] { out.first = run_into(first, config, timeline, "first"); });
    const bool signalled = timeline.wait_for("first", "SIGTERM pid=");
    if (signalled) out.second = run_into(second, config, timeline, "second", std::move(hook));
    first_sweep.join();
    REQUIRE(signalled);
    return out;
}

}  // namespace

TEST_CASE("fault catalogue: two sweeps of one node signal in turns and never at once") {
    // Each sweep has a stray of its own to kill (each knows only its own user's account;
    // the other's is an unknown uid, kept), so without turns the second would signal
    // while the first waits out its grace.
    Pipeline first(41340);
    Pipeline second(41341);
    second.request.node.spool_dir = first.request.node.spool_dir;  // one node
    const SharedDir shared;
    const pid_t stubborn = spawn_stubborn(41340, shared);  // makes the first wait out grace
    const pid_t plain = spawn_as(41341, {"sleep", "600"});
    Timeline timeline;
    KillReport first_report;
    std::thread first_sweep(
        [&] { first_report = run_into(first, "grace: 1\ndebuglevel: debug\n", timeline, "first"); });
    REQUIRE(timeline.wait_for("first", "SIGTERM pid="));
    const KillReport second_report = run_into(second, "grace: 1\ndebuglevel: debug\n", timeline, "second");
    first_sweep.join();
    INFO(timeline.text());

    CHECK(wait_gone(stubborn));
    CHECK(wait_gone(plain));
    CHECK(action_for(first_report, stubborn, SIGKILL) != nullptr);
    CHECK(action_for(second_report, plain, SIGTERM) != nullptr);
    CHECK(timeline.of("second", "waited ").size() == 1);
    CHECK(timeline.of("first", "waited ").empty());
    const auto first_signals = timeline.signals_of("first");
    const auto second_signals = timeline.signals_of("second");
    REQUIRE_FALSE(first_signals.empty());
    REQUIRE_FALSE(second_signals.empty());
    // Every signal of the second went out after the last of the first.
    CHECK(second_signals.front().at > first_signals.back().at);
    // Neither signalled the other's stray.
    CHECK(action_for(first_report, plain, SIGSTOP) == nullptr);
    CHECK(action_for(second_report, stubborn, SIGSTOP) == nullptr);
}

TEST_CASE("sweep turns: a sweep that waited for another finds the work done and signals nothing") {
    Pipeline first(41342);
    Pipeline second(41342);
    const std::string metrics = first.dir / "leftover.prom";
    const std::string config = fmt::format("grace: 1\ndebuglevel: debug\nmetrics_file: {}\n", metrics);
    Timeline timeline;
    const Crossfire sweeps = two_sweeps(first, second, 41342, config, timeline);
    INFO(timeline.text());

    CHECK(wait_gone(sweeps.stubborn));
    CHECK(action_for(sweeps.first, sweeps.stubborn, SIGKILL) != nullptr);
    CHECK_FALSE(sweeps.second.error);
    CHECK(sweeps.second.actions.empty());  // not a SIGSTOP, not a SIGCONT
    CHECK(sweeps.second.first_plan.kills().empty());
    CHECK(sweeps.second.survivors.empty());
    CHECK(timeline.of("second", "waited ").size() == 1);
    CHECK(timeline.signals_of("second").empty());
    const auto summary = timeline.of("second", "job 7 epilog (user rs.user uid 41342): swept []; killed 0; ");
    CHECK(summary.size() == 1);
    const Metrics counted = metrics_in(metrics);
    CHECK(counted.value("leftover_sweep_turns_total", "free") == 1);
    CHECK(counted.value("leftover_sweep_turns_total", "waited") == 1);
    CHECK(counted.value("leftover_lookup_errors_total", "deadline") == 0);
}

TEST_CASE("sweep turns: a turn that came after another sweep and found nothing left is given up before the cleanup") {
    // A burst's job epilog whose turn came once another sweep had done the work held it
    // through its own slow cleanup, and the step ends waiting for it reached their deadlines.
    Pipeline first(41347);
    Pipeline second(41347);
    const TempDir scratch;
    const std::string users_file = scratch.write("scratch.dat", "1234", 0644, 41347);
    const std::string config =
        fmt::format("grace: 1\ndebuglevel: debug\ncleanup: [files]\ncleanup_dirs: [{}]\n", scratch.path());
    const std::string lock_path = sweep::turn_lock_path(first.request.node.spool_dir, "n1");
    // The second sweep's cleanup asks slurmctld whether its users hold an allocation
    // (contain, a job epilog), or takes the first's answer: whether the node's turn is
    // free as it says so.
    std::optional<FileLock::Taken> probed;
    bool turn_came = false;
    const LineHook probe_in_cleanup = [&](const std::string& line) {
        if (line.starts_with("waited ")) turn_came = true;
        if (!turn_came || probed || line.find("slurmctld") == std::string::npos) return;
        auto probe = FileLock::open(lock_path);
        REQUIRE(probe.ok());
        probed = probe->take(Clock::now()).value();
    };
    Timeline timeline;
    const Crossfire sweeps = two_sweeps(first, second, 41347, config, timeline, probe_in_cleanup);
    INFO(timeline.text());

    CHECK(wait_gone(sweeps.stubborn));
    CHECK(action_for(sweeps.first, sweeps.stubborn, SIGKILL) != nullptr);
    CHECK(timeline.of("second", "waited ").size() == 1);
    CHECK(sweeps.second.actions.empty());
    REQUIRE(probed.has_value());  // the second sweep's cleanup ran, and asked or took an answer
    CHECK(*probed == FileLock::Taken::at_once);
    CHECK_FALSE(path_exists(users_file));  // the first sweep's cleanup removed it
}

TEST_CASE("sweep turns: a sweep whose deadline passes while another holds the turn kills nothing and says why") {
    Pipeline pipeline(41343);
    const std::string lock_path = sweep::turn_lock_path(pipeline.request.node.spool_dir, "n1");
    CHECK(lock_path == pipeline.dir / "spool/leftover-sweep-n1.lock");
    auto held = FileLock::open(lock_path);
    REQUIRE(held.ok());
    REQUIRE(held->take(Clock::now()).value() == FileLock::Taken::at_once);  // a sweep that never ends
    const pid_t stray = spawn_as(41343, {"sleep", "600"});
    const std::string metrics = pipeline.dir / "leftover.prom";
    // grace 0 and slurm_timeout 0.3: the deadline is 1.3 s away.
    const KillReport report = pipeline.run(fmt::format("grace: 0\nslurm_timeout: 0.3\nmetrics_file: {}\n", metrics));
    INFO(pipeline.sink.text());

    REQUIRE(report.error);
    CHECK(report.error->source == ErrorSource::deadline);
    CHECK(report.actions.empty());
    CHECK(report.evaluations == 1);  // its first plan, and no other: no kill started from it
    CHECK(is_running(stray));
    const std::string says =
        "lookup error: another sweep of this node held its turn (lock " + lock_path + ") until this sweep's deadline (";
    CHECK(pipeline.sink.level_of(says) == LogLevel::err);
    CHECK(pipeline.sink.count(" s waited); nothing killed") == 1);
    const std::string summary = pipeline.summary();
    CHECK(summary.starts_with("job 7 epilog (user rs.user uid 41343): swept []; killed 0; "));
    CHECK(summary.find("; lookup errors 1; ") != std::string::npos);
    const Metrics counted = metrics_in(metrics);
    CHECK(counted.value("leftover_sweep_turns_total", "missed") == 1);
    CHECK(counted.value("leftover_lookup_errors_total", "deadline") == 1);

    held->release();  // its turn over, the next sweep takes it at once and kills
    const KillReport next = pipeline.run("grace: 0\n");
    CHECK_FALSE(next.error);
    CHECK(wait_gone(stray));
    CHECK(pipeline.sink.count("waited ") == 0);
}

TEST_CASE("sweep turns: a sweep lock that cannot be used leaves the sweep to run alone with a warning") {
    Pipeline pipeline(41344);
    const std::string lock_path = sweep::turn_lock_path(pipeline.request.node.spool_dir, "n1");
    const std::string metrics = pipeline.dir / "leftover.prom";
    std::string says;
    std::string link_target;  // what the symbolic link names: it must be left as it was
    SUBCASE("a symbolic link where the lock should be") {
        const std::string target = link_target = pipeline.dir.write("target", "keep\n", 0600);
        REQUIRE(::symlink(target.c_str(), lock_path.c_str()) == 0);
        says = "sweep lock: lock file " + lock_path + ": is a symbolic link; ";
    }
    SUBCASE("a lock file another user could hold") {
        pipeline.dir.write("spool/leftover-sweep-n1.lock", "", 0666);
        says = "sweep lock: lock file " + lock_path + ": must be a file of uid 0 that only it can open";
    }
    const pid_t stray = spawn_as(41344, {"sleep", "600"});
    const KillReport report = pipeline.run(fmt::format("grace: 0\nmetrics_file: {}\n", metrics));
    INFO(pipeline.sink.text());

    CHECK(pipeline.sink.count(says) == 1);
    CHECK(pipeline.sink.level_of(says) == LogLevel::warn);
    CHECK(pipeline.sink.count("this sweep runs without taking turns with other sweeps of this node") == 1);
    CHECK(metrics_in(metrics).value("leftover_sweep_turns_total", "alone") == 1);
    CHECK_FALSE(report.error);
    CHECK(action_for(report, stray, SIGKILL) != nullptr);
    CHECK(wait_gone(stray));
    if (!link_target.empty()) {
        std::ifstream target(link_target);
        REQUIRE(target);
        CHECK(std::string(std::istreambuf_iterator<char>(target), {}) == "keep\n");
    }
}

TEST_CASE("sweep turns: a dry run takes no turn and does not wait for a sweep in progress") {
    Pipeline pipeline(41345);
    auto held = FileLock::open(sweep::turn_lock_path(pipeline.request.node.spool_dir, "n1"));
    REQUIRE(held.ok());
    REQUIRE(held->take(Clock::now()).value() == FileLock::Taken::at_once);  // held for the whole test
    const pid_t stray = spawn_as(41345, {"sleep", "600"});
    const KillReport report = pipeline.run("dry_run: true\n");
    INFO(pipeline.sink.text());
    CHECK_FALSE(report.error);  // a dry run that waited for this lock would miss its turn
    CHECK(pipeline.sink.count(fmt::format("would kill pid={} ", stray)) == 1);
    CHECK(pipeline.sink.count("sweep lock") == 0);
    CHECK(pipeline.sink.count("waited ") == 0);
    CHECK(is_running(stray));
}

TEST_CASE("sweep turns: a sweep with nothing to signal does not wait for a sweep in progress") {
    // Most step ends: another user's stray being swept must not hold them for its grace.
    Pipeline pipeline(41346);
    auto held = FileLock::open(sweep::turn_lock_path(pipeline.request.node.spool_dir, "n1"));
    REQUIRE(held.ok());
    REQUIRE(held->take(Clock::now()).value() == FileLock::Taken::at_once);  // held for the whole test
    const std::string metrics = pipeline.dir / "leftover.prom";
    const KillReport report = pipeline.run(fmt::format("grace: 0\nmetrics_file: {}\n", metrics));
    INFO(pipeline.sink.text());
    CHECK_FALSE(report.error);  // one that waited for this lock would miss its turn
    CHECK(report.first_plan.kills().empty());
    CHECK(pipeline.sink.count("sweep lock") == 0);
    CHECK(pipeline.sink.count("waited ") == 0);
    const Metrics counted = metrics_in(metrics);
    for (const char* turn : {"free", "waited", "missed", "alone"})
        CHECK(counted.value("leftover_sweep_turns_total", turn) == 0);
}

TEST_CASE("sweep turns: a node without a known spool dir sweeps alone and says so") {
    RecordingSink sink;
    sweep::Logger log(sink);
    sweep::SweepRequest request;
    request.node.node_name = "n1";
    sweep::NodeTurn turn = sweep::NodeTurn::take(request, Clock::now() + 1s, log);
    CHECK(turn.outcome() == SweepTurn::alone);
    CHECK_FALSE(turn.missed());
    CHECK(sink.level_of("sweep lock: no SlurmdSpoolDir is known for this node; this sweep runs without taking "
                        "turns with other sweeps of this node") == LogLevel::warn);
    CHECK_FALSE(path_exists("/leftover-sweep-n1.lock"));
}

// SPDX-License-Identifier: GPL-2.0-or-later
// The metrics' text: what one evaluation adds, the Prometheus text leftover writes, and
// that only that text is read back as ours.
#include "metrics/metrics.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;

namespace {

EvaluationSample one_kill() {
    EvaluationSample sample;
    sample.trigger = MetricsTrigger::epilog;
    sample.killed_sigterm = 1;
    sample.kept = {{Reason::protected_owner, 70}, {Reason::has_live_job, 2}};
    sample.users_swept = 1;
    sample.strays_found = 1;
    sample.timestamp_seconds = 1764600000.25;
    sample.duration_seconds = 0.0052;
    sample.killed_by_user = {{"lo_alice", 1}};
    return sample;
}

}  // namespace

TEST_CASE("metrics: a fresh set has every fixed series at 0") {
    const Metrics metrics;
    CHECK(metrics.value("leftover_evaluations_total", "step") == 0);
    CHECK(metrics.series().at("leftover_evaluations_total").size() == 4);
    CHECK(metrics.series().at("leftover_processes_kept_total").size() == 14);  // every reason but stray
    CHECK(metrics.series().at("leftover_processes_kept_total").count("stray") == 0);
    CHECK(metrics.series().at("leftover_lookup_errors_total").size() == 7);
    CHECK(metrics.series().at("leftover_sweep_turns_total").size() == 4);
    CHECK(metrics.series().at("leftover_slurmctld_answers_total").size() == 2);
    CHECK(metrics.series().at("leftover_user_processes_killed_total").empty());
}

TEST_CASE("metrics: samples add up in the counters, the last one sets the gauges") {
    Metrics metrics;
    metrics.add(one_kill());
    EvaluationSample failed;
    failed.trigger = MetricsTrigger::step;
    failed.failure = ErrorSource::config;
    failed.timestamp_seconds = 1764600060;
    metrics.add(failed);
    metrics.add(one_kill());
    CHECK(metrics.value("leftover_evaluations_total", "epilog") == 2);
    CHECK(metrics.value("leftover_evaluations_total", "step") == 1);
    CHECK(metrics.value("leftover_processes_killed_total", "SIGTERM") == 2);
    CHECK(metrics.value("leftover_processes_killed_total", "SIGKILL") == 0);
    CHECK(metrics.value("leftover_processes_kept_total", "protected_owner") == 140);
    CHECK(metrics.value("leftover_users_swept_total") == 2);
    CHECK(metrics.value("leftover_lookup_errors_total", "config") == 1);
    CHECK(metrics.value("leftover_last_evaluation_failed") == 0);
    CHECK(metrics.value("leftover_last_strays_found") == 1);
    CHECK(metrics.value("leftover_last_evaluation_timestamp_seconds") == 1764600000.25);
    CHECK(metrics.value("leftover_user_processes_killed_total", "lo_alice") == 2);
}

TEST_CASE("metrics: each sweep that may signal is counted by how it got its turn on the node") {
    Metrics metrics;
    EvaluationSample sample = one_kill();
    sample.turn = SweepTurn::waited;
    metrics.add(sample);
    sample.turn = SweepTurn::missed;
    metrics.add(sample);
    metrics.add(one_kill());  // a dry run or a check: no turn
    CHECK(metrics.value("leftover_sweep_turns_total", "waited") == 1);
    CHECK(metrics.value("leftover_sweep_turns_total", "missed") == 1);
    CHECK(metrics.value("leftover_sweep_turns_total", "free") == 0);
    CHECK(metrics.value("leftover_sweep_turns_total", "alone") == 0);
    const std::string text = metrics.render(true);
    CHECK(text.find("leftover_sweep_turns_total{turn=\"missed\"} 1\n") != std::string::npos);
    const auto back = Metrics::parse(text);
    REQUIRE(back.ok());
    CHECK(back->series() == metrics.series());
}

TEST_CASE("metrics: the text has HELP and TYPE lines and each series, and reads back the same") {
    Metrics metrics;
    metrics.add(one_kill());
    const std::string text = metrics.render(true);
    CHECK(text.find("# TYPE leftover_evaluations_total counter\n") != std::string::npos);
    CHECK(text.find("# HELP leftover_evaluations_total Evaluations, by what started them") != std::string::npos);
    CHECK(text.find("leftover_evaluations_total{trigger=\"epilog\"} 1\n") != std::string::npos);
    CHECK(text.find("leftover_evaluations_total{trigger=\"check\"} 0\n") != std::string::npos);
    CHECK(text.find("leftover_processes_kept_total{reason=\"protected\"} 0\n") != std::string::npos);
    CHECK(text.find("# TYPE leftover_last_strays_found gauge\nleftover_last_strays_found 1\n") != std::string::npos);
    CHECK(text.find("leftover_last_evaluation_timestamp_seconds 1764600000.25\n") != std::string::npos);
    CHECK(text.find("leftover_user_processes_killed_total{user=\"lo_alice\"} 1\n") != std::string::npos);
    const auto back = Metrics::parse(text);
    REQUIRE(back.ok());
    CHECK(back->series() == metrics.series());
    CHECK(back->render(true) == text);
}

TEST_CASE("metrics: without metrics_users no user name is written") {
    Metrics metrics;
    metrics.add(one_kill());
    const std::string text = metrics.render(false);
    CHECK(text.find("lo_alice") == std::string::npos);
    CHECK(text.find("leftover_user_processes_killed_total") == std::string::npos);
    CHECK(Metrics::parse(text).ok());
}

TEST_CASE("metrics: a user name with quotes, backslashes and a newline is escaped and read back") {
    EvaluationSample sample;
    sample.killed_by_user = {{"a\"b\\c\nd", 3}};
    Metrics metrics;
    metrics.add(sample);
    const std::string text = metrics.render(true);
    CHECK(text.find("leftover_user_processes_killed_total{user=\"a\\\"b\\\\c\\nd\"} 3\n") != std::string::npos);
    const auto back = Metrics::parse(text);
    REQUIRE(back.ok());
    CHECK(back->value("leftover_user_processes_killed_total", "a\"b\\c\nd") == 3);
}

TEST_CASE("metrics: text that is not ours is refused, saying where") {
    const std::string ours = Metrics().render(false);
    const auto refused = [](const std::string& text) {
        const auto parsed = Metrics::parse(text);
        REQUIRE_FALSE(parsed.ok());
        return parsed.error().message;
    };
    CHECK(refused("") == "empty");
    CHECK(refused(ours.substr(0, ours.size() - 3)) == "the last line is cut off");
    CHECK(refused("node_load1 0.5\n").find("line 1: unknown metric 'node_load1'") != std::string::npos);
    CHECK(refused(ours + "leftover_evaluations_total{trigger=\"cron\"} 1\n").find("unknown trigger 'cron'") !=
          std::string::npos);
    CHECK(refused(ours + "leftover_evaluations_total{node=\"n1\"} 1\n").find("takes only the label trigger") !=
          std::string::npos);
    CHECK(refused("leftover_survivors_total{kind=\"x\"} 1\n").find("has no label") != std::string::npos);
    CHECK(refused("leftover_survivors_total -1\n").find("negative") != std::string::npos);
    CHECK(refused("leftover_survivors_total lots\n").find("'lots' is not a number") != std::string::npos);
    CHECK(refused("leftover_survivors_total 1\nleftover_survivors_total 2\n").find("line 2: ") != std::string::npos);
    CHECK(refused("# a comment of someone else\n").find("not a line leftover writes") != std::string::npos);
    CHECK(refused("# TYPE leftover_survivors_total gauge\n").find("not a line leftover writes") != std::string::npos);
    CHECK(refused("\x7f"
                  "ELF\n") == "line 1: no value");
}

TEST_CASE("metrics: the words of triggers and error sources") {
    CHECK(std::string(to_string(MetricsTrigger::step)) == "step");
    CHECK(std::string(to_string(MetricsTrigger::check)) == "check");
    CHECK(std::string(failure_label(ErrorSource::users_file)) == "users_file");
    CHECK(std::string(failure_label(ErrorSource::account_lookup)) == "account_lookup");
    CHECK(std::string(failure_label(ErrorSource::proc)) == "proc");
    CHECK(std::string(failure_label(ErrorSource::other)) == "proc");
    // Every source's label is one of the fixed series, there from the start.
    const Metrics fresh;
    for (const ErrorSource source :
         {ErrorSource::other, ErrorSource::config, ErrorSource::users_file, ErrorSource::step_socket,
          ErrorSource::controller, ErrorSource::account_lookup, ErrorSource::deadline, ErrorSource::proc})
        CHECK(fresh.series().at("leftover_lookup_errors_total").count(failure_label(source)) == 1);
}

TEST_CASE("metrics: processes kept for an unreadable ancestry are counted and written") {
    Metrics metrics;
    EvaluationSample sample = one_kill();
    sample.kept = {{Reason::unreadable_ancestry, 3}};
    metrics.add(sample);
    const std::string text = metrics.render(false);
    CHECK(text.find("leftover_processes_kept_total{reason=\"unreadable_ancestry\"} 3\n") != std::string::npos);
    const auto back = Metrics::parse(text);
    REQUIRE(back.ok());
    CHECK(back->value("leftover_processes_kept_total", "unreadable_ancestry") == 3);
}

TEST_CASE("metrics: drain requests are counted by result, a drain alone is no evaluation") {
    Metrics metrics;
    CHECK(metrics.series().at("leftover_node_drains_total").size() == 3);
    EvaluationSample sweep = one_kill();
    sweep.drain = DrainResult::drained;
    metrics.add(sweep);
    EvaluationSample health;
    health.evaluation = false;
    health.drain = DrainResult::failed;
    metrics.add(health);
    CHECK(metrics.value("leftover_node_drains_total", "drained") == 1);
    CHECK(metrics.value("leftover_node_drains_total", "failed") == 1);
    CHECK(metrics.value("leftover_node_drains_total", "kept") == 0);
    CHECK(metrics.value("leftover_evaluations_total", "epilog") == 1);
    CHECK(metrics.value("leftover_evaluations_total", "sweep") == 0);
    CHECK(metrics.value("leftover_last_evaluation_duration_seconds") == sweep.duration_seconds);
    const auto back = Metrics::parse(metrics.render(false));
    REQUIRE(back.ok());
    CHECK(back->value("leftover_node_drains_total", "failed") == 1);
}

TEST_CASE("metrics: slurmctld's answers are counted by whether the sweep asked or took another sweep's") {
    Metrics metrics;
    EvaluationSample sample = one_kill();
    sample.answers_asked = 2;  // before grace and after it
    metrics.add(sample);
    sample.answers_asked = 0;
    sample.answers_shared = 1;
    metrics.add(sample);
    CHECK(metrics.value("leftover_slurmctld_answers_total", "asked") == 2);
    CHECK(metrics.value("leftover_slurmctld_answers_total", "shared") == 1);
    const std::string text = metrics.render(false);
    CHECK(text.find("leftover_slurmctld_answers_total{answer=\"shared\"} 1\n") != std::string::npos);
    const auto back = Metrics::parse(text);
    REQUIRE(back.ok());
    CHECK(back->series().at("leftover_slurmctld_answers_total") ==
          metrics.series().at("leftover_slurmctld_answers_total"));
}

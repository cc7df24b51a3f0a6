// SPDX-License-Identifier: GPL-2.0-or-later
// Where the metrics go: metrics_file and metrics_users, also from a config that failed
// to load, so that its config error is counted.
#include "config/metrics_config.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

using namespace leftover;
using leftover::test::TempDir;

TEST_CASE("metrics config: metrics_file must be an absolute path to a .prom file") {
    const auto ok = parse_config("metrics_file: /var/lib/prometheus/node-exporter/leftover.prom\nmetrics_users: true\n",
                                 "/etc/leftover.conf");
    REQUIRE(ok.ok());
    const auto settings = metrics_settings(ok.value());
    REQUIRE(settings);
    CHECK(settings->file == "/var/lib/prometheus/node-exporter/leftover.prom");
    CHECK(settings->users);
    CHECK_FALSE(metrics_settings(Config{}));
    for (const char* bad : {"leftover.prom", "/etc/passwd", "/var/lib/x/.prom", "/var/lib/x/", "[/a.prom]"}) {
        CAPTURE(bad);
        const auto refused = parse_config(std::string("metrics_file: ") + bad + "\n", "/etc/leftover.conf");
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().message.starts_with(
            "/etc/leftover.conf:1: key 'metrics_file': expected an absolute path to a file ending in .prom"));
    }
}

TEST_CASE("metrics config: a config that fails to load still names its metrics file") {
    TempDir dir;
    const auto path = dir.write("leftover.conf", "metrics_file: /m/leftover.prom\nprotected_user: [typo]\n");
    REQUIRE_FALSE(load_config(path, true).ok());
    const auto settings = metrics_settings_despite_error(path);
    REQUIRE(settings);
    CHECK(settings->file == "/m/leftover.prom");
    CHECK_FALSE(settings->users);
}

TEST_CASE("metrics config: no metrics file from a config that is untrusted, unreadable or has a bad one") {
    TempDir dir;
    CHECK_FALSE(metrics_settings_despite_error(
        dir.write("others", "metrics_file: /m/leftover.prom\nbad_key: 1\n", 0644, 41001)));
    CHECK_FALSE(metrics_settings_despite_error(dir.write("writable", "metrics_file: /m/leftover.prom\nx: 1\n", 0666)));
    CHECK_FALSE(metrics_settings_despite_error(dir.write("syntax", "metrics_file: /m/leftover.prom\n{[\n")));
    CHECK_FALSE(metrics_settings_despite_error(dir.write("bad path", "metrics_file: /etc/passwd\nx: 1\n")));
    CHECK_FALSE(metrics_settings_despite_error(dir.write("list", "- metrics_file\n")));
    CHECK_FALSE(metrics_settings_despite_error(dir / "missing"));
}

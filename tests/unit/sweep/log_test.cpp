// SPDX-License-Identifier: GPL-2.0-or-later
// The Logger both front ends write through: debuglevel decides what reaches the sink.
#include "support/recording_sink.hpp"
#include "sweep/log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

using namespace leftover;
using leftover::test::RecordingSink;

namespace {

using Lines = std::vector<std::pair<LogLevel, std::string>>;

}  // namespace

TEST_CASE("log: lines below the threshold are dropped, the rest reach the sink with their level") {
    RecordingSink sink;
    sweep::Logger log(sink);  // info, as when the config does not say
    log.debug("log test: debug");
    log.info("log test: info");
    log.warn("log test: warn");
    log.error("log test: error");
    log.action(LogLevel::debug, "log test: a pid already gone");
    log.action(LogLevel::info, "log test: a kill");
    CHECK(sink.lines == Lines{{LogLevel::info, "log test: info"},
                              {LogLevel::warn, "log test: warn"},
                              {LogLevel::err, "log test: error"},
                              {LogLevel::info, "log test: a kill"}});
}

TEST_CASE("log: the threshold set from the config applies to every later line") {
    RecordingSink sink;
    sweep::Logger log(sink, LogLevel::warn);
    log.info("log test: dropped at warn");
    log.set_threshold(LogLevel::debug);
    log.debug("log test: kept at debug");
    log.set_threshold(LogLevel::critical);
    log.error("log test: dropped at critical");
    log.action(LogLevel::critical, "log test: kept at critical");
    CHECK(sink.lines ==
          Lines{{LogLevel::debug, "log test: kept at debug"}, {LogLevel::critical, "log test: kept at critical"}});
}

TEST_CASE("log: a drain's line is a warning when drained, information when kept, an error when it failed") {
    RecordingSink sink;
    sweep::Logger log(sink);
    sweep::log_drain(log, {drain::DrainResult::drained, "log test: node n1 drained: x"});
    sweep::log_drain(log, {drain::DrainResult::kept, "log test: node n1 is IDLE+DRAIN already"});
    sweep::log_drain(log, {drain::DrainResult::failed, "log test: drain of node n1 failed"});
    CHECK(sink.lines == Lines{{LogLevel::warn, "log test: node n1 drained: x"},
                              {LogLevel::info, "log test: node n1 is IDLE+DRAIN already"},
                              {LogLevel::err, "log test: drain of node n1 failed"}});
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "json.hpp"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

using namespace leftover::cli;

TEST_CASE("json: strings are quoted and escaped so any byte string stays valid JSON") {
    CHECK(json_quote("plain") == "\"plain\"");
    CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(json_quote("line\nnext\ttab") == "\"line\\nnext\\ttab\"");
    CHECK(json_quote(std::string("nul\0bell\x07", 9)) == "\"nul\\u0000bell\\u0007\"");
    CHECK(json_quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");        // valid UTF-8 passes
    CHECK(json_quote("bad\xff\xc3") == "\"bad\\ufffd\\ufffd\"");  // invalid bytes do not
    CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");        // overlong '/'
    CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
}

TEST_CASE("json: nested objects and arrays, commas and empty containers") {
    JsonWriter json;
    json.begin_object();
    json.key("n").value(1);
    json.key("list").begin_array().value("a").value(false).null().end_array();
    json.key("empty").begin_array().end_array();
    json.key("inner").begin_object().key("big").value(std::uint64_t{4294967295u}).end_object();
    json.end_object();
    const std::string text = json.str();
    CHECK(text ==
          "{\n"
          "  \"n\": 1,\n"
          "  \"list\": [\n"
          "    \"a\",\n"
          "    false,\n"
          "    null\n"
          "  ],\n"
          "  \"empty\": [],\n"
          "  \"inner\": {\n"
          "    \"big\": 4294967295\n"
          "  }\n"
          "}\n");
    const YAML::Node parsed = YAML::Load(text);  // JSON is YAML: a second parser agrees
    CHECK(parsed["inner"]["big"].as<std::uint64_t>() == 4294967295u);
    CHECK(parsed["list"].size() == 3);
}

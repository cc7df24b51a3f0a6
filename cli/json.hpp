// SPDX-License-Identifier: GPL-2.0-or-later
// A small JSON writer for `leftover check --json`: objects, arrays, strings, numbers,
// booleans and null, pretty-printed with two-space indentation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leftover::cli {

// A JSON string literal, quotes included. Control characters become \u00XX; bytes that
// are not valid UTF-8 become U+FFFD, so the document is always valid JSON.
std::string json_quote(std::string_view text);

class JsonWriter {
public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(std::string_view name);  // inside an object, before each value
    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    JsonWriter& value(std::int64_t number);
    JsonWriter& value(std::uint64_t number);
    JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
    JsonWriter& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
    JsonWriter& value(bool flag);
    JsonWriter& null();

    // The document, with a final newline.
    std::string str() const { return out_ + "\n"; }

private:
    void before_value();
    void open(char bracket);
    void close(char bracket);

    struct Level {
        bool empty = true;
    };
    std::string out_;
    std::vector<Level> levels_;
    bool after_key_ = false;
};

}  // namespace leftover::cli

// SPDX-License-Identifier: GPL-2.0-or-later
// tests/fault_catalogue.md names, for each fault of the catalogue, the tests that prove
// it. This keeps the table and the tests in step: a test it names that no longer
// exists, or a catalogue test missing from it, fails here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path source_dir = LEFTOVER_SOURCE_DIR;

std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// `tests/<unit|e2e>/<file>: <test>`: a doctest case, or a pytest function.
struct TestReference {
    std::string file;
    std::string name;
};

std::vector<TestReference> references(const std::string& table) {
    std::vector<TestReference> out;
    for (std::size_t open = table.find('`'); open != std::string::npos; open = table.find('`', open + 1)) {
        const std::size_t close = table.find('`', open + 1);
        if (close == std::string::npos) break;
        const std::string span = table.substr(open + 1, close - open - 1);
        open = close;
        const std::size_t colon = span.find(": ");
        if (!span.starts_with("tests/") || colon == std::string::npos) continue;
        const std::string file = span.substr(0, colon);
        if (file.ends_with(".cpp") || file.ends_with(".py")) out.push_back({file, span.substr(colon + 2)});
    }
    return out;
}

// Each name in text that begins with `start` right after `before` and ends before `after`.
void find_names(const std::string& text, const std::string& before, const std::string& start, const std::string& after,
                std::set<std::string>& out) {
    const std::string begin = before + start;
    for (std::size_t at = text.find(begin); at != std::string::npos; at = text.find(begin, at + 1)) {
        const std::size_t from = at + before.size();
        const std::size_t stop = text.find(after, from);
        if (stop == std::string::npos) break;
        out.insert(text.substr(from, stop - from));
    }
}

// Every test that says by its name that it is a catalogue test: a doctest case named
// `fault catalogue: ...`, a pytest function named `test_fault_catalogue_...`.
std::set<std::string> catalogue_tests() {
    std::set<std::string> out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source_dir / "tests")) {
        const auto extension = entry.path().extension();
        if (!entry.is_regular_file()) continue;
        if (extension == ".cpp") find_names(read(entry.path()), "TEST_CASE(\"", "fault catalogue: ", "\")", out);
        if (extension == ".py") find_names(read(entry.path()), "def ", "test_fault_catalogue_", "(", out);
    }
    return out;
}

}  // namespace

TEST_CASE("fault catalogue table: every test it names exists, and every fault catalogue test is in it") {
    const std::string table = read(source_dir / "tests/fault_catalogue.md");
    REQUIRE_FALSE(table.empty());
    const auto named = references(table);
    CHECK(named.size() > 40);

    std::set<std::string> listed;
    for (const TestReference& test : named) {
        CAPTURE(test.file);
        CAPTURE(test.name);
        const std::string source = read(source_dir / test.file);
        REQUIRE_MESSAGE(!source.empty(), test.file << " does not exist");
        const std::string definition =
            test.file.ends_with(".cpp") ? "TEST_CASE(\"" + test.name + "\")" : "def " + test.name + "(";
        CHECK_MESSAGE(source.find(definition) != std::string::npos, test.file << " has no test " << test.name);
        listed.insert(test.name);
    }

    const auto catalogue = catalogue_tests();
    CHECK(catalogue.size() > 15);
    for (const std::string& name : catalogue) CHECK_MESSAGE(listed.count(name) == 1, name << " is not in the table");
}

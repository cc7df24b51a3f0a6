// SPDX-License-Identifier: GPL-2.0-or-later
// ctest runs the unit tests side by side in one pid namespace, and a Sweeper kills every
// process of its uid when it is done: two test cases with the same Sweeper uid kill each
// other's strays, a failure that shows only under load.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

TEST_CASE("test isolation: every Sweeper in the unit tests has a uid of its own") {
    const std::regex sweeper_uid(R"(Sweeper\s+\w+\((\d+))");
    std::map<std::string, std::string> first_use;  // uid -> file:line
    int sweepers = 0;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::filesystem::path(LEFTOVER_SOURCE_DIR) / "tests/unit")) {
        if (entry.path().extension() != ".cpp" && entry.path().extension() != ".hpp") continue;
        std::ifstream in(entry.path());
        std::string line;
        for (int number = 1; std::getline(in, line); ++number) {
            std::smatch match;
            if (!std::regex_search(line, match, sweeper_uid)) continue;
            ++sweepers;
            const std::string here = entry.path().filename().string() + ":" + std::to_string(number);
            const auto [it, fresh] = first_use.emplace(match[1].str(), here);
            INFO("uid ", match[1].str(), " at ", here, " is already used at ", it->second);
            CHECK(fresh);
        }
    }
    CHECK(sweepers > 20);  // the pattern still finds them
}

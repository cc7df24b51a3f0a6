// SPDX-License-Identifier: GPL-2.0-or-later
// A file leftover keeps between its runs: believed only as root's, written by root alone,
// in a directory only root (or SlurmdUser) can write; replaced whole.
#include "support/temp_dir.hpp"
#include "util/root_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <string>

using namespace leftover;
using leftover::test::TempDir;

namespace {

bool says(const Status& status, const std::string& text) {
    return !status.ok() && status.error().message.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("root file: none there reads as none, one written whole in mode 0600 reads back, then is removed") {
    TempDir dir;
    const RootFile file{"the test's file", dir / "kept", std::nullopt};
    const auto none = read_root_file(file, 1024);
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
    REQUIRE(write_root_file(file, "one\ntwo\n").ok());
    REQUIRE(write_root_file(file, "three\n").ok());  // replaced, not appended
    struct stat st {};
    REQUIRE(::stat(file.path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    const auto read = read_root_file(file, 1024);
    REQUIRE(read.ok());
    CHECK(**read == "three\n");
    CHECK_FALSE(test::path_exists(file.path + ".tmp." + std::to_string(::gettid())));
    REQUIRE(remove_root_file(file).ok());
    CHECK_FALSE(test::path_exists(file.path));
    CHECK(remove_root_file(file).ok());  // none there: nothing to do
}

TEST_CASE("root file: a file or directory another user could have written is not believed") {
    TempDir dir;
    const RootFile file{"the test's file", dir / "kept", std::nullopt};
    Result<std::optional<std::string>> read = std::optional<std::string>();
    std::string says_why;
    SUBCASE("a file writable by others") {
        dir.write("kept", "text\n", 0606);
        says_why = "the test's file " + file.path + ": writable by group or others (mode 0606)";
    }
    SUBCASE("a file of another uid") {
        dir.write("kept", "text\n", 0600, 41901);
        says_why = "owned by uid 41901, not by root";
    }
    SUBCASE("a file too large") {
        dir.write("kept", std::string(2048, 'x'), 0600);
        says_why = "too large";
    }
    SUBCASE("a symbolic link") {
        const std::string target = dir.write("target", "text\n", 0600);
        REQUIRE(::symlink(target.c_str(), file.path.c_str()) == 0);
        says_why = "cannot open it";
    }
    SUBCASE("a directory writable by others") {
        dir.write("kept", "text\n", 0600);
        REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
        says_why = "its directory is writable by group or others (mode 0777)";
        CHECK(says(write_root_file(file, "new\n"), says_why));
    }
    read = read_root_file(file, 1024);
    REQUIRE_FALSE(read.ok());
    INFO(read.error().message);
    CHECK(read.error().message.find(says_why) != std::string::npos);
}

TEST_CASE("root file: a directory of SlurmdUser's holds it when SlurmdUser is named") {
    TempDir dir;
    REQUIRE(::chown(dir.path().c_str(), 41902, 0) == 0);
    const RootFile named{"the test's file", dir / "kept", 41902};
    REQUIRE(write_root_file(named, "text\n").ok());
    const RootFile unnamed{"the test's file", dir / "kept", std::nullopt};
    CHECK(says(write_root_file(unnamed, "text\n"), "its directory is owned by uid 41902, not by root or SlurmdUser"));
    REQUIRE_FALSE(read_root_file(unnamed, 1024).ok());
    CHECK(read_root_file(named, 1024).ok());
}

TEST_CASE("root file: word lines are read in order, a word alone is an empty value, any other line is none") {
    const WordLines read = read_word_lines("job 7\nuid\nnode lo n1\nbegan 5\njob 9 uid 3\n", {"job", "uid", "node"});
    REQUIRE(read.values.size() == 3);
    CHECK(read.values[0] == "7");
    CHECK(read.values[1] == "");
    CHECK(read.values[2] == "lo n1");
    CHECK(read.rest == "began 5\njob 9 uid 3\n");
    // Another word, a word run into its value, a line missing: none, and nothing left.
    const WordLines wrong = read_word_lines("uid 7\njobs 8", {"job", "job", "job"});
    CHECK_FALSE(wrong.values[0]);
    CHECK_FALSE(wrong.values[1]);
    CHECK_FALSE(wrong.values[2]);
    CHECK(wrong.rest.empty());
}

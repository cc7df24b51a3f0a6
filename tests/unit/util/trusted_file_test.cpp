// SPDX-License-Identifier: GPL-2.0-or-later
// Files that decide who is protected (the config, the users files, the query helper):
// only a root-owned regular file nobody else can write is believed, and read whole.
#include "support/temp_dir.hpp"
#include "util/trusted_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace leftover;
using leftover::test::TempDir;

TEST_CASE("trusted file: a root-owned file nobody else can write is read whole") {
    TempDir dir;
    const std::string content = "root\n" + std::string(50000, 'x') + "\n";  // more than one read
    const auto path = dir.write("users", content, 0600);
    const auto read = read_trusted_file(path);
    REQUIRE(read.ok());
    CHECK(read.value() == content);
    CHECK(check_trusted_file(path).ok());
    CHECK(read_trusted_file(dir.write("empty", "", 0444)).value().empty());
}

TEST_CASE("trusted file: the owner required can be another uid") {
    TempDir dir;
    const auto path = dir.write("mine", "x", 0644, 41001);
    CHECK(read_trusted_file(path, 41001).value() == "x");
    CHECK(check_trusted_file(path, 41001).ok());
    CHECK(read_trusted_file(path).error().fault == FileFault::bad_owner);
    CHECK(read_trusted_file(dir.write("root's", "x"), 41001).error().fault == FileFault::bad_owner);
}

TEST_CASE("trusted file: every other file is refused with its fault, and the path and why in the message") {
    TempDir dir;
    const auto trusted = dir.write("trusted", "root\n");
    REQUIRE(::symlink(trusted.c_str(), (dir / "link").c_str()) == 0);
    REQUIRE(::mkdir((dir / "directory").c_str(), 0755) == 0);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const auto large = dir.write("large", "");
    REQUIRE(::truncate(large.c_str(), static_cast<off_t>(kMaxTrustedFileSize) + 1) == 0);

    struct Refused {
        std::string path;
        FileFault fault;
        std::string why;
    };
    const std::string writable = "; it must not be writable by group or others";
    const std::vector<Refused> refused = {
        {dir / "absent", FileFault::missing, "does not exist"},
        {dir / "link", FileFault::symlink, "is a symbolic link; expected a regular file"},
        {dir / "directory", FileFault::not_regular, "is a directory; expected a regular file"},
        {dir / "fifo", FileFault::not_regular, "is not a regular file"},
        {trusted + "/x", FileFault::unreadable, "cannot open: Not a directory"},
        {dir.write("user's", "x", 0644, 41001), FileFault::bad_owner, "is owned by uid 41001; expected uid 0 (root)"},
        {dir.write("group", "x", 0664), FileFault::bad_mode, "has mode 0664" + writable},
        {dir.write("others", "x", 0606), FileFault::bad_mode, "has mode 0606" + writable},
        {large, FileFault::too_large, "is larger than 4194304 bytes"},
    };
    for (const Refused& r : refused) {
        CAPTURE(r.path);
        const auto read = read_trusted_file(r.path);
        REQUIRE_FALSE(read.ok());
        CHECK(read.error().fault == r.fault);
        CHECK(read.error().message == r.path + ": " + r.why);
        // The same checks before a program is run as root, as a lookup error.
        const auto checked = check_trusted_file(r.path);
        REQUIRE_FALSE(checked.ok());
        CHECK(checked.error().kind == ErrorKind::lookup);
        CHECK(checked.error().message == read.error().message);
    }
}

TEST_CASE("fault catalogue: a trusted file in a directory others can write is refused") {
    TempDir dir;
    // Whoever can write the directory can replace the file, or remove it (and a missing
    // config at the default path means all defaults).
    REQUIRE(::mkdir((dir / "open").c_str(), 0755) == 0);
    REQUIRE(::chmod((dir / "open").c_str(), 0777) == 0);
    const auto in_open = dir.write("open/leftover.conf", "{}\n");
    const auto read = read_trusted_file(in_open);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().fault == FileFault::bad_parent);
    CHECK(read.error().message ==
          in_open + ": directory " + (dir / "open") + " has mode 0777; it must not be writable by group or others");
    CHECK(read_trusted_file(dir / "open/absent").error().fault == FileFault::bad_parent);
    CHECK(check_trusted_file(in_open).error().message == read.error().message);

    // A directory someone else owns, however deep above the file.
    REQUIRE(::mkdir((dir / "users").c_str(), 0755) == 0);
    REQUIRE(::chown((dir / "users").c_str(), 41001, 41001) == 0);
    REQUIRE(::mkdir((dir / "users/etc").c_str(), 0755) == 0);
    const auto below_user = dir.write("users/etc/leftover.conf", "{}\n");
    CHECK(read_trusted_file(below_user).error().message ==
          below_user + ": directory " + (dir / "users") + " is owned by uid 41001; expected uid 0 (root)");

    // A sticky directory (/tmp) keeps others from renaming or removing root's entries.
    REQUIRE(::mkdir((dir / "sticky").c_str(), 0755) == 0);
    REQUIRE(::chmod((dir / "sticky").c_str(), 01777) == 0);
    CHECK(read_trusted_file(dir.write("sticky/leftover.conf", "{}\n")).ok());
}

TEST_CASE("fault catalogue: a trusted file that changes while it is read is refused") {
    // A file that reads other than its size says, as one being rewritten in place
    // while it is read does: the kernel's own hostname file has size 0 and a name.
    const std::string changing = "/proc/sys/kernel/hostname";
    const auto read = read_trusted_file(changing);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().fault == FileFault::changed);
    CHECK(read.error().message.rfind(changing + ": changed while it was read (", 0) == 0);
}

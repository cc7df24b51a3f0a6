// SPDX-License-Identifier: GPL-2.0-or-later
// The survivors' record between sweeps: read back as written, whatever the names, and
// gone when nothing survives.
#include "drain/survivor_record.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

using namespace leftover::drain;
using namespace std::chrono_literals;

TEST_CASE("survivor record: read back as written, names of any bytes, nothing left removes the file") {
    leftover::test::TempDir spool;
    ::chmod(spool.path().c_str(), 0755);
    const RecordPlace place{survivor_record_path(spool.path(), "lo-n1/x y"), std::nullopt, "a1b2"};
    CHECK(place.path == spool / "leftover-survivors-lo-n1_x_y");
    const auto none = read_survivor_record(place);
    REQUIRE(none.ok());
    CHECK(none->empty());
    const std::vector<RecordedSurvivor> written = {{501, 7501, 41002, "bob\n 502 1 2 3 x", 1000000ms},
                                                   {502, 7502, 41003, "", 999ms}};
    REQUIRE(write_survivor_record(place, written).ok());
    struct stat st {};
    REQUIRE(::stat(place.path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    const auto read = read_survivor_record(place);
    REQUIRE(read.ok());
    CHECK(*read == written);
    REQUIRE(write_survivor_record(place, {}).ok());
    CHECK(::access(place.path.c_str(), F_OK) != 0);
}

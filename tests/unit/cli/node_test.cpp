// SPDX-License-Identifier: GPL-2.0-or-later
#include "node.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace leftover;
using namespace leftover::cli;
using leftover::test::TempDir;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("spool dir: must be an existing directory") {
    TempDir dir;
    CHECK(check_spool_dir(dir.path()).ok());
    CHECK(check_spool_dir(dir / "none").error().kind == ErrorKind::not_a_slurm_node);
    CHECK(has(check_spool_dir(dir / "none").error().message, "slurmd's spool directory"));
    CHECK(has(check_spool_dir(dir.write("file", "")).error().message, "is not a directory"));
}

// SPDX-License-Identifier: GPL-2.0-or-later
// doctest's main, with one difference: a run whose filters match no test case fails.
// ctest runs one entry per test case, selecting it by name (--test-case=<name>); an
// entry whose name doctest cannot match would otherwise pass having run nothing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace {

// How many test cases the last run selected; unset when nothing was run (--count,
// --list-test-cases, --help and the like answer a query instead).
std::optional<unsigned> g_cases_run;

class RunTally final : public doctest::IReporter {
public:
    explicit RunTally(const doctest::ContextOptions&) {}
    void test_run_end(const doctest::TestRunStats& stats) override { g_cases_run = stats.numTestCasesPassingFilters; }

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_case_start(const doctest::TestCaseData&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

DOCTEST_REGISTER_LISTENER("run_tally", 0, RunTally);

}  // namespace

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const int status = context.run();
    if (context.shouldExit() || status != EXIT_SUCCESS) return status;
    if (g_cases_run == 0u) {
        std::fputs(
            "unit_tests: no test case matches the filters. A ctest entry selects its case by name: "
            "a name with ; [ ] * ? or a backslash cannot be selected, rename the test case.\n",
            stderr);
        return EXIT_FAILURE;
    }
    return status;
}

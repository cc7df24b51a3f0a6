// SPDX-License-Identifier: GPL-2.0-or-later
// The fuzz targets' main() without libFuzzer: runs LLVMFuzzerTestOneInput once on each file
// named (for a directory, on each file in it), so that the test command replays the seed
// corpus under its own build's sanitizers, with any compiler. Finding new inputs is
// scripts/fuzz.sh's (libFuzzer, clang). A broken check or a sanitizer report aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
        std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
        return false;
    }
    // As libFuzzer does: a buffer of exactly the input's size, so reading past it is a
    // heap overflow ASan reports.
    const auto copy = std::make_unique<std::uint8_t[]>(bytes.size());
    std::copy(bytes.begin(), bytes.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg(argv[i]);
        if (!std::filesystem::is_directory(arg)) {
            files.push_back(arg);
            continue;
        }
        std::vector<std::filesystem::path> inside;
        for (const auto& entry : std::filesystem::directory_iterator(arg))
            if (entry.is_regular_file()) inside.push_back(entry.path());
        std::sort(inside.begin(), inside.end());
        files.insert(files.end(), inside.begin(), inside.end());
    }
    bool ok = !files.empty();
    for (const auto& file : files) ok = replay(file) && ok;
    std::printf("replay: %zu inputs%s\n", files.size(), ok ? "" : ", FAILED");
    return ok ? 0 : 1;
}

# SPDX-License-Identifier: GPL-2.0-or-later
# Warnings and sanitizers as small INTERFACE targets that every target links.
add_library(leftover_warnings INTERFACE)
target_compile_options(leftover_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(LEFTOVER_WERROR)
  target_compile_options(leftover_warnings INTERFACE -Werror)
endif()

add_library(leftover_sanitizers INTERFACE)
if(LEFTOVER_FUZZ)
  # The libraries the fuzz targets link get libFuzzer's coverage hooks without its main();
  # the targets themselves add -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
  target_compile_options(leftover_sanitizers INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(leftover_sanitizers INTERFACE -fsanitize=address,undefined)
elseif(LEFTOVER_SANITIZE)
  target_compile_options(leftover_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(leftover_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

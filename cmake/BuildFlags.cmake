# SPDX-License-Identifier: GPL-2.0-or-later
# Warnings, sanitizers and hardening as small INTERFACE targets that every target links.
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
  # A sanitized build runs the tests and never ships: -Og (after the build type's -O2)
  # compiles it about three times faster than -O2 and keeps its stack traces readable;
  # -g1 keeps the line tables a report needs and compiles a third faster than -g.
  target_compile_options(leftover_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -Og -g1)
  target_link_options(leftover_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# Hardening for code that runs as root inside slurmstepd: bounds-checked libc calls where
# the size is known (_FORTIFY_SOURCE, which only works with optimisation), stack canaries,
# a read-only GOT resolved at load (relro + now) and no executable stack.
# Under the sanitizers fortify stays off: ASan intercepts the same calls and the _chk
# variants hide the accesses from it. A _FORTIFY_SOURCE the build's own flags already set
# (a distribution's %optflags, dpkg-buildflags) wins over ours.
add_library(leftover_hardening INTERFACE)
if(NOT LEFTOVER_SANITIZE AND NOT LEFTOVER_FUZZ AND NOT CMAKE_CXX_FLAGS MATCHES "_FORTIFY_SOURCE")
  target_compile_definitions(leftover_hardening INTERFACE
    $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:_FORTIFY_SOURCE=2>)
endif()
target_compile_options(leftover_hardening INTERFACE -fstack-protector-strong)
target_link_options(leftover_hardening INTERFACE
  LINKER:-z,relro LINKER:-z,now LINKER:-z,noexecstack)

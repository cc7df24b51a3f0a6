#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Mutants: wrong behaviour the soak must catch (see tests/README.md, "Mutants").
#   scripts/soak-mutants.sh [--mutants "a b ..."] [--configs "linuxproc cgroup"] [--minutes M]
#                           [--tries N] [--seed S] [--uid-base B] [--load K] [--build-only]
# Each tests/soak/mutants/<name>.patch (its "expect: (N)" line names the invariant whose
# violation must be reported, its "kinds: a,b" line, if any, the only kinds of action its
# soak runs, its "finding: ERE" the finding's text, matched against the
# run's findings.txt) is applied to a throwaway copy of this tree (its tracked
# and untracked files, in build/mutants/tree, never the tree itself), only the plugin
# (leftover_spank) is built there (ccache, with CCACHE_NOHASHDIR), the patch is taken
# back, and the soak runs with that plugin, one configuration a try (cycling through --configs,
# seed S, S+1, ...), until the oracle reports a violation of the expected invariant or
# --tries runs are spent. A patch that no longer applies or a build that fails is a
# miss, never a skip. Prints "mutants: N caught, M missed"; exits 1 on any miss.
# The soak runs as a block of accounts of its own (default 46500), holding its lock.
# --build-only: only the builds (ccache then has every mutant: a later run rebuilds each
# in seconds). --check: only whether each patch still applies to this tree (no build, no
# soak; scripts/test.sh runs it, so that a change of the code a mutant changes fails there).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/tests/soak/mutants"
mutants=""
configs="linuxproc cgroup"
minutes=1
tries=4
seed=$(( (RANDOM << 15 | RANDOM) % 1000000 + 1 ))
uid_base=46500
load=0
build_only=0
check=0
while [ $# -gt 0 ]; do
  case $1 in
    --mutants) mutants=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --tries) tries=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --uid-base) uid_base=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --check) check=1; shift ;;
    *) echo "soak-mutants.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$mutants" ]; then
  for patch in "$dir"/*.patch; do mutants+="$(basename "$patch" .patch) "; done
fi
read -r -a mutant_list <<<"$mutants"
read -r -a config_list <<<"$configs"
if [ "$check" = 1 ]; then
  stale=0
  for name in "${mutant_list[@]}"; do
    if ! out=$(patch --dry-run --batch -s -p1 -d "$top" <"$dir/$name.patch" 2>&1); then
      echo "mutants: $name.patch no longer applies: $(head -n1 <<<"$out")"
      stale=$((stale + 1))
    fi
  done
  echo "mutants: ${#mutant_list[@]} patches, $((${#mutant_list[@]} - stale)) apply"
  [ "$stale" -eq 0 ]
  exit
fi
export PYTHONPATH="$top/tests${PYTHONPATH:+:$PYTHONPATH}"
work="$top/build/mutants"
mkdir -p "$work"
# One runner at a time: they share the copy of the tree.
exec 9>"$work/lock"
flock 9
echo "mutants: seed $seed, configs $configs, $minutes min a try, at most $tries tries each"
caught=0
missed=0
results=()
# One copy of the tree, built once; each mutant is applied, built (its files and the link)
# and taken back in turn. tar keeps the files' times, so a second run rebuilds what changed.
tree="$work/tree"
mkdir -p "$tree"
(cd "$top" && git ls-files -z --cached --others --exclude-standard | grep -zv '^build/' |
  tar --null -T - -c) | tar -x -C "$tree"
# A repository of its own: git apply run below another tree's top would skip the paths.
[ -d "$tree/.git" ] || git init -q "$tree"
# A run interrupted while a mutant was applied: the copy above put its files back with
# their old times, older than the mutant's objects, so they are made newer.
if [ -f "$work/applied" ]; then
  sed -n 's|^+++ b/||p' "$(cat "$work/applied")" | while read -r path; do touch "$tree/$path"; done
  rm -f "$work/applied"
fi
# The same launcher and flags as scripts/build.sh; the build dir two levels below the copy,
# as build/<flavour> below the tree, so that ccache's base_dir makes the same paths.
launcher=()
command -v ccache >/dev/null &&
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros;CCACHE_NOHASHDIR=1;ccache")
build() {
  cmake -S "$tree" -B "$tree/build/m" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DLEFTOVER_TESTS=OFF -DLEFTOVER_SANITIZE=OFF >/dev/null &&
    nice cmake --build "$tree/build/m" -j "$(nproc)" --target leftover_spank
}
begin=$(date +%s)
build >"$work/build.log" 2>&1 || { echo "mutants: the unmutated copy does not build ($work/build.log)"; exit 1; }
echo "mutants: the unmutated plugin built in $(($(date +%s) - begin)) s"
for name in "${mutant_list[@]}"; do
  patch="$dir/$name.patch"
  expect=$(sed -n 's/^expect: (\([0-9]\)).*/\1/p' "$patch" 2>/dev/null | head -n1)
  finding=$(sed -n 's/^finding: //p' "$patch" 2>/dev/null | head -n1)
  # "kinds: a,b": the soak runs only those kinds of action, the shape that shows the mutant.
  kinds=$(sed -n 's/^kinds: //p' "$patch" 2>/dev/null | head -n1)
  # The plugin finds leftover-query beside itself: both are kept.
  plugin="$work/$name/leftover.so"
  start=$(date +%s)
  verdict=""
  rm -f "$plugin"
  if [ -z "$expect" ] || [ -z "$finding" ]; then
    verdict="MISSED (no expect: or finding: line in $patch)"
  elif ! echo "$patch" >"$work/applied" || ! git -C "$tree" apply "$patch" 2>"$work/$name.apply"; then
    verdict="MISSED (the patch no longer applies: $(head -n1 "$work/$name.apply"))"
  else
    build >"$work/$name.build.log" 2>&1 && mkdir -p "$work/$name" &&
      cp "$tree/build/m/spank/leftover.so" "$tree/build/m/spank/leftover-query" "$work/$name/" ||
      verdict="MISSED (the build failed: $work/$name.build.log)"
    git -C "$tree" apply -R "$patch"
  fi
  rm -f "$work/applied"
  built=$(date +%s)
  if [ "$build_only" = 1 ]; then
    echo "mutant $name: ${verdict:-built} [build $((built - start)) s]"
    [ -z "$verdict" ] || missed=$((missed + 1))
    continue
  fi
  try=0
  while [ -z "$verdict" ] && [ "$try" -lt "$tries" ]; do
    config=${config_list[$((try % ${#config_list[@]}))]}
    run_seed=$((seed + try))
    try=$((try + 1))
    log="$work/$name-$config-$run_seed.log"
    rc=0
    LEFTOVER_PLUGIN="$plugin" LEFTOVER_SOAK_OUT="$work/out/$name" LEFTOVER_SOAK_UID_BASE="$uid_base" \
      flock "/tmp/leftover-soak-uids-$uid_base.lock" /usr/bin/python3 -m soak.soak --seed "$run_seed" \
      --minutes "$minutes" --config "$config" --load "$load" ${kinds:+--kinds "$kinds"} >"$log" 2>&1 || rc=$?
    line=$(grep -m1 '^soak violations' "$log" || true)
    # The expected finding itself, not any violation of its invariant (an unmutated soak
    # may show another one): the lines of findings.txt that match.
    n=$(grep -cE -- "$finding" "$work/out/$name/leftover-soak-$config-$run_seed-u$uid_base/findings.txt" 2>/dev/null || true)
    echo "mutant $name, try $try ($config, seed $run_seed, exit $rc): ${line:-no verdict (see $log)}"
    # Exit 2: the run could not be judged (the witness lost events, ...): no verdict.
    if [ "$rc" -eq 1 ] && [ "${n:-0}" -gt 0 ]; then
      verdict="caught: $n findings of ($expect) /$finding/ ($config, seed $run_seed; replay: LEFTOVER_PLUGIN=$plugin PYTHONPATH=tests python3 -m soak.soak --seed $run_seed --minutes $minutes --config $config --uid-base $uid_base${kinds:+ --kinds $kinds})"
    fi
  done
  [ -n "$verdict" ] || verdict="MISSED: no finding of ($expect) /$finding/ in $tries tries (logs: $work/$name-*.log)"
  end=$(date +%s)
  if [[ $verdict == caught* ]]; then caught=$((caught + 1)); else missed=$((missed + 1)); fi
  results+=("mutant $name: $verdict [build $((built - start)) s, runs $((end - built)) s]")
  echo "${results[-1]}"
done
[ "$build_only" = 0 ] || { echo "mutants: built, $missed failed"; [ "$missed" -eq 0 ]; exit; }
printf '%s\n' "${results[@]}"
echo "mutants: $caught caught, $missed missed (seed $seed)"
[ "$missed" -eq 0 ]

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fails when a product file includes a folder that ARCHITECTURE.md's layer table does not
allow for its own folder, or sits in a folder the table does not name:
check-layers.py [top of the tree]. The table is the one list of the product's folders:
check-layers.py --folders [top] prints them in its order, one a line (scripts/lint.sh
gives them to clang-tidy as its header filter; CMakeLists.txt reads the table itself).

The table's rows look like  | `kill/` | `util` `procfs` `policy` | ... |  -- the first
cell names the folder, the second the folders it may include ("nothing" for none). A
folder may always include itself. Tests, benchmarks and fuzz targets are not layered.
It also fails when a product file's `namespace leftover...` lines name another namespace
than the rest of its folder: one namespace per folder (the first one seen is the folder's)."""
import pathlib
import re
import subprocess
import sys

args = sys.argv[1:]
list_folders = bool(args) and args[0] == "--folders"
if list_folders:
    args = args[1:]
top = pathlib.Path(args[0] if args else ".").resolve()
table = {}
for line in (top / "ARCHITECTURE.md").read_text().splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 2 and re.fullmatch(r"`[a-z]+/`", cells[0]):
        table[cells[0].strip("`/")] = set(re.findall(r"`([a-z]+)/?`", cells[1]))
if not table:
    sys.exit("check-layers: no layer table in ARCHITECTURE.md")
if list_folders:
    print("\n".join(table))
    sys.exit(0)

files = sorted(set(subprocess.run(["git", "-C", str(top), "ls-files", "*.cpp", "*.hpp"],
                                  capture_output=True, text=True, check=True).stdout.split()))
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
namespace = re.compile(r"^\s*namespace\s+(leftover(?:::\w+)*)\b")
folder_namespace = {}  # folder -> (its one namespace, the file that named it first)
bad = []
for name in files:
    folder = name.split("/")[0]
    if folder in ("tests", "bench"):
        continue
    if folder not in table:
        bad.append(f"{name}: folder {folder}/ is not in ARCHITECTURE.md's layer table")
        continue
    for number, text in enumerate((top / name).read_text().splitlines(), 1):
        match = include.match(text)
        if match and match.group(1) != folder and match.group(1) not in table[folder]:
            bad.append(f"{name}:{number}: {folder}/ may not include {match.group(1)}/ ({text.strip()})")
        match = namespace.match(text)
        if match:
            ours, first = folder_namespace.setdefault(folder, (match.group(1), name))
            if match.group(1) != ours:
                bad.append(f"{name}:{number}: namespace {match.group(1)}, but {folder}/ is {ours} (as in {first})")
for line in bad:
    print(f"check-layers: {line}", file=sys.stderr)
if bad:
    sys.exit(1)
print(f"check-layers: {len(files)} files, {len(table)} folders, every include allowed, one namespace per folder")

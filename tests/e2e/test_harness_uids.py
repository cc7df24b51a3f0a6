# SPDX-License-Identifier: GPL-2.0-or-later
"""The test uids: a test that needs an account of its own takes it from the harness's
allocator (harness.e2e_accounts.fresh_accounts), never by picking a uid, so no two tests
can meet on one. Proven here: what the allocator hands out is unique and inside the test
range, and no module of the tests or the harness writes a uid of that range or makes an
account itself. Starts no cluster and needs no root."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness.e2e_accounts import (TEST_UID_MAX, TEST_UID_MIN, TEST_USERS, UidAllocator, fresh_account,
                                  fresh_accounts)
from harness.e2e_processes import HarnessError

TESTS = Path(__file__).resolve().parents[1]
# The one module that may name test uids: where the fixed accounts and the range are set.
ACCOUNTS_MODULE = TESTS / "harness" / "e2e_accounts.py"
SCANNED = sorted(p for d in ("e2e", "harness", "soak") for p in (TESTS / d).glob("*.py") if p != ACCOUNTS_MODULE)
FIXED_UIDS = {user.uid for user in TEST_USERS}


def uid_literals(source: str) -> list[tuple[int, int]]:
    """(line, uid) of each uid of TEST_UID_MIN..TEST_UID_MAX the code writes: an int, or
    digits inside a string or f-string. Comments and docstrings are not code."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings or isinstance(node.value, bool):
            continue
        if isinstance(node.value, int):
            numbers = [node.value]
        elif isinstance(node.value, str):
            numbers = [int(digits) for digits in re.findall(r"\d+", node.value)]
        else:
            continue
        found += [(node.lineno, n) for n in numbers if TEST_UID_MIN <= n <= TEST_UID_MAX]
    return sorted(found)


def accounts_made(source: str) -> list[int]:
    """The lines that call Account(...): an account made by hand, with a uid picked by hand."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Account"]


def test_fresh_accounts_are_unique_inside_the_test_range_and_no_fixed_accounts_uid():
    accounts = [fresh_account() for _ in range(5)] + list(fresh_accounts(3)) + list(fresh_accounts(2))
    uids = [account.uid for account in accounts]
    assert len(set(uids)) == len(uids), uids
    assert all(TEST_UID_MIN <= uid < TEST_UID_MAX for uid in uids), uids
    assert not set(uids) & FIXED_UIDS
    # Named after the uid: whichever test gets a uid, it is the same account on this machine.
    assert len({account.name for account in accounts}) == len(accounts)
    assert all(str(account.uid) in account.name for account in accounts)


def test_a_group_of_fresh_accounts_has_consecutive_uids():
    group = fresh_accounts(4)
    assert [account.uid for account in group] == list(range(group[0].uid, group[0].uid + 4))


def test_an_allocator_hands_out_every_free_uid_once_and_then_refuses():
    allocator = UidAllocator(100, 109, taken={100, 104})
    uids = [uid for _ in range(8) for uid in allocator.take()]
    assert uids == [101, 102, 103, 105, 106, 107, 108, 109]
    with pytest.raises(HarnessError):
        allocator.take()


def test_an_allocators_group_skips_a_taken_uid_and_never_leaves_the_range():
    allocator = UidAllocator(100, 109, taken={102})
    assert allocator.take(3) == [103, 104, 105]
    assert allocator.take(2) == [106, 107]
    with pytest.raises(HarnessError):
        allocator.take(3)  # 108, 109 and then 110, outside
    assert allocator.take(2) == [108, 109]


def test_the_scans_see_a_hand_picked_uid_in_code_and_not_in_docstrings_or_comments():
    uid = TEST_UID_MIN + 50
    source = (f'"""Module docstring: uid {uid}."""\n'
              f'def f():\n    """uid {uid}"""\n    return 1  # uid {uid}\n'
              f'A = Account("lo_x", {uid})\nB = f"uid={{A}} {uid + 1}"\nC = "uid {uid + 2}"\nD = {TEST_UID_MAX + 1}\n')
    assert uid_literals(source) == [(5, uid), (6, uid + 1), (7, uid + 2)]
    assert accounts_made(source) == [5]


def test_no_module_of_the_tests_or_the_harness_hard_codes_a_test_uid():
    assert {"test_cli.py", "slurm_cluster.py", "soak_cluster.py"} <= {p.name for p in SCANNED}  # it scans them
    found = {str(p.relative_to(TESTS)): uids for p in SCANNED if (uids := uid_literals(p.read_text()))}
    assert not found, f"(line, uid) written by hand; use USERS[name].uid or fresh_accounts(): {found}"


def test_no_e2e_module_makes_an_account_of_its_own():
    found = {str(p.relative_to(TESTS)): lines for p in SCANNED
             if p.parent.name in ("e2e", "harness") and (lines := accounts_made(p.read_text()))}
    assert not found, f"Account(...) by hand on these lines; take one from fresh_accounts(): {found}"

"""The accounts e2e tests run jobs and plant processes as.

`ensure_test_users()` creates them (with fixed uids, gid == uid) when they are
missing and refuses an existing account whose uid differs.  A test that needs an
account of its own (one whose uid alone its config sweeps, say) takes it from
`fresh_accounts()`, never by picking a uid: each uid is handed out once per process.

TEST_UID_MIN..TEST_UID_MAX is the one range of uids the tests' sweeps may
reach: every leftover config they write sets uid_min/uid_max to it
(plugin_support.leftover_conf), so a node-wide sweep on this machine never
touches a user of the machine who has no job on the test cluster.
"""

from __future__ import annotations

import pwd
import subprocess
from typing import Iterable, NamedTuple

from .e2e_processes import HarnessError


class Account(NamedTuple):
    name: str
    uid: int


# The accounts tests may use; uid == primary gid for each.
TEST_USERS = (
    Account("lo_alice", 41001),
    Account("lo_bob", 41002),
    Account("je.kim", 41003),   # a dot in the name
    Account("jeXkim", 41004),   # matches "je.kim" if a dot were a regex
    Account("lo_low", 900),     # below UID_MIN (system range)
    Account("lo_high", 61000),  # above UID_MAX
    Account("alice", 41005),    # protected by the predecessor's config verbatim
    Account("bobby", 41006),    # "bob" is protected; "bobby" must not be
)
USERS = {u.name: u for u in TEST_USERS}

# Every test account but lo_low and lo_high (outside on purpose) has its uid in
# this range; no account has TEST_UID_MAX itself, so a config whose range is
# only TEST_UID_MAX sweeps nobody.
TEST_UID_MIN = 41001
TEST_UID_MAX = 41099
OUTSIDE_TEST_UIDS = ("lo_low", "lo_high")


class UidAllocator:
    """Hands out the uids of first..last that are not `taken`, lowest first, each once."""

    def __init__(self, first: int, last: int, taken: Iterable[int] = ()):
        self.first, self.last = first, last
        self._taken = set(taken)
        self._next = first  # every uid below it is handed out or skipped for good

    def take(self, count: int = 1) -> list[int]:
        """`count` consecutive free uids (so uid_min..uid_max over them holds no other);
        HarnessError when the range has no such run left."""
        if count < 1:
            raise ValueError(f"count {count}: at least 1")
        start = self._next
        while start + count - 1 <= self.last:
            run = range(start, start + count)
            blocked = [uid for uid in run if uid in self._taken]
            if not blocked:
                self._next = start + count
                return list(run)
            start = blocked[-1] + 1
        raise HarnessError(f"no {count} free consecutive uids left in {self.first}..{self.last} "
                           f"(from {self._next} on)")


# The shared range but TEST_UID_MAX and the fixed accounts' uids.
_FRESH_UIDS = UidAllocator(TEST_UID_MIN, TEST_UID_MAX - 1, taken=(u.uid for u in TEST_USERS))


def fresh_accounts(count: int = 1) -> tuple[Account, ...]:
    """`count` test accounts of consecutive uids that no fixed account and no other
    caller in this process has, inside TEST_UID_MIN..TEST_UID_MAX - 1.  Each is named
    after its uid (lo_<uid>), so a uid is always the same account whichever test gets it;
    ensure_test_users() creates them."""
    return tuple(Account(f"lo_{uid}", uid) for uid in _FRESH_UIDS.take(count))


def fresh_account() -> Account:
    """One account of fresh_accounts()."""
    return fresh_accounts(1)[0]


def ensure_test_users(users: Iterable[Account] = TEST_USERS) -> None:
    """Creates the test accounts if missing; refuses a name with another uid."""
    for user in users:
        try:
            existing = pwd.getpwnam(user.name)
        except KeyError:
            try:
                taken = pwd.getpwuid(user.uid).pw_name
            except KeyError:
                _create_user(user)
                continue
            raise HarnessError(f"uid {user.uid} belongs to {taken}, tests need it for {user.name}")
        if existing.pw_uid != user.uid:
            raise HarnessError(
                f"user {user.name} exists with uid {existing.pw_uid}, "
                f"tests need {user.uid}")


def _create_user(user: Account) -> None:
    # The group first, with gid == uid, so useradd never picks another gid.
    if subprocess.run(["getent", "group", str(user.uid)],
                      capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "-g", str(user.uid), user.name],
                       check=True, capture_output=True)
    # --badname: "je.kim" and uids outside UID_MIN..UID_MAX are on purpose.
    subprocess.run(
        ["useradd", "--badname", "-u", str(user.uid), "-g", str(user.uid),
         "-M", "-d", "/tmp", "-s", "/bin/sh", user.name],
        check=True, capture_output=True)


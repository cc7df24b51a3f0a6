// SPDX-License-Identifier: GPL-2.0-or-later
// The SysV part of the cleanup (cleanup/cleanup_ipc.cpp): the /proc/sysvipc parser, and
// real segments, semaphores and queues that test uids 41603-41606 create (IPC_PRIVATE),
// each removed at the end of its test whatever happened.
#include "cleanup/cleanup.hpp"
#include "cleanup/cleanup_ipc.hpp"
#include "support/processes.hpp"
#include "support/scripted_cleanup_calls.hpp"
#include "support/temp_dir.hpp"

#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cerrno>
#include <csignal>
#include <map>
#include <vector>

using namespace leftover;
using namespace leftover::test;

namespace {

constexpr uid_t kUser = 41603;
constexpr uid_t kOther = 41604;

// The objects a test made, removed when it ends (also when a check failed).
struct OwnedIpc {
    std::vector<std::pair<SysvKind, int>> objects;
    std::vector<pid_t> holders;  // processes that keep a segment attached
    ~OwnedIpc() {
        for (const pid_t pid : holders) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        for (const auto& [kind, id] : objects) real_cleanup_calls().sysv_remove(kind, id);
    }
    int add(SysvKind kind, int id) {
        REQUIRE(id >= 0);
        objects.emplace_back(kind, id);
        return id;
    }
};

// Runs `make` as `uid` in a forked child and returns the id it made (-1 on failure).
// With `stay`, the child stays (attached) until it is killed.
int made_as(uid_t uid, int (*make)(), OwnedIpc& owned, bool stay = false) {
    int ids[2];
    REQUIRE(::pipe(ids) == 0);
    const pid_t pid = spawn_forked_as(uid, [&] {
        int id = make();
        (void)!::write(ids[1], &id, sizeof id);
        if (stay) {
            if (id >= 0) (void)::shmat(id, nullptr, 0);
            for (;;) ::pause();
        }
    });
    int id = -1;
    REQUIRE(::read(ids[0], &id, sizeof id) == sizeof id);
    ::close(ids[0]);
    ::close(ids[1]);
    if (stay)
        owned.holders.push_back(pid);
    else
        ::waitpid(pid, nullptr, 0);
    return id;
}

int make_shm() { return ::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600); }
int make_sem() { return ::semget(IPC_PRIVATE, 1, IPC_CREAT | 0600); }
int make_msg() { return ::msgget(IPC_PRIVATE, IPC_CREAT | 0600); }

bool alive(SysvKind kind, int id) {
    SysvStat st;
    return real_cleanup_calls().sysv_stat(kind, id, st) == 0;
}

// Attached processes of a segment.
std::uint64_t attached(int id) {
    SysvStat st;
    REQUIRE(real_cleanup_calls().sysv_stat(SysvKind::shm, id, st) == 0);
    return st.attached;
}

CleanupOptions ipc_only() {
    CleanupOptions options;
    options.kinds = {CleanupKind::ipc};
    return options;
}

const CleanupRecord* record_of(const CleanupReport& report, int id) {
    for (const CleanupRecord& r : report.records)
        if (r.name == std::to_string(id)) return &r;
    return nullptr;
}

}  // namespace

TEST_CASE("cleanup ipc: /proc/sysvipc tables are read by their header's column names") {
    const std::string shm =
        "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime"
        "      dtime      ctime                   rss                  swap\n"
        "         0      32769   600                  4096  1234  1234      0 41603 41603 41603 41603          0"
        "          0 1700000000                     0                     0\n"
        "         0      32770   600              1048576  1234  1234      2  1000  1000     0     0          0"
        "          0 1700000000                     0                     0\n";
    const auto parsed = parse_sysvipc(shm, SysvKind::shm, "shm");
    REQUIRE(parsed.ok());
    REQUIRE(parsed->size() == 2);
    CHECK(parsed->at(0).id == 32769);
    CHECK(parsed->at(0).uid == 41603);
    CHECK(parsed->at(0).bytes == 4096);
    CHECK(parsed->at(1).attached == 2);
    CHECK(parsed->at(1).cuid == 0);

    const std::string msg =
        "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid"
        "      stime      rtime      ctime\n"
        "         0          3   600          12          1     0     0  1000  1000  1001  1001"
        "          0          0 1700000000\n";
    const auto queues = parse_sysvipc(msg, SysvKind::msg, "msg");
    REQUIRE(queues.ok());
    CHECK(queues->at(0).bytes == 12);
    CHECK(queues->at(0).cuid == 1001);

    CHECK_FALSE(parse_sysvipc("key semid perms\n", SysvKind::sem, "sem").ok());  // no uid column
    const auto garbage =
        parse_sysvipc("key semid perms nsems uid gid cuid cgid\n1 x 600 1 2 3 4 5\n", SysvKind::sem, "sem");
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.error().message == "sem:2: a line that does not parse");
    CHECK_FALSE(parse_sysvipc("", SysvKind::msg, "msg").ok());
}

TEST_CASE("cleanup ipc: a user's segment, semaphore and queue go, an attached segment and another user's stay") {
    OwnedIpc owned;
    const int shm = owned.add(SysvKind::shm, made_as(kUser, make_shm, owned));
    const int sem = owned.add(SysvKind::sem, made_as(kUser, make_sem, owned));
    const int msg = owned.add(SysvKind::msg, made_as(kUser, make_msg, owned));
    const int busy = owned.add(SysvKind::shm, made_as(kUser, make_shm, owned, true));
    const int others = owned.add(SysvKind::shm, made_as(kOther, make_shm, owned));
    // The holder attaches after it wrote the id: wait for it.
    for (int i = 0; i < 200 && attached(busy) == 0; ++i) ::usleep(10000);
    REQUIRE(attached(busy) == 1);

    SUBCASE("dry run") {
        CleanupOptions options = ipc_only();
        options.dry_run = true;
        const CleanupReport report = clean_up({kUser}, options);
        CHECK(report.errors.empty());
        REQUIRE(record_of(report, shm) != nullptr);
        CHECK(record_of(report, shm)->outcome == CleanupOutcome::would_remove);
        CHECK(record_of(report, shm)->bytes == 4096);
        CHECK(alive(SysvKind::shm, shm));
        CHECK(alive(SysvKind::sem, sem));
        CHECK(alive(SysvKind::msg, msg));
    }
    SUBCASE("removal") {
        const CleanupReport report = clean_up({kUser}, ipc_only());
        CHECK(report.errors.empty());
        CHECK_FALSE(alive(SysvKind::shm, shm));
        CHECK_FALSE(alive(SysvKind::sem, sem));
        CHECK_FALSE(alive(SysvKind::msg, msg));
        CHECK(alive(SysvKind::shm, busy));
        CHECK(alive(SysvKind::shm, others));
        CHECK(record_of(report, busy) == nullptr);
        CHECK(record_of(report, others) == nullptr);
        REQUIRE(record_of(report, sem) != nullptr);
        CHECK(record_of(report, sem)->kind == ObjectKind::semaphore);
        CHECK(record_of(report, sem)->outcome == CleanupOutcome::removed);
        CHECK(totals_of(report, false).ipc_objects == 3);
    }
}

namespace {

// A stat_path script: /proc/1/ns/ipc cannot be read (EACCES), and /proc/self/ns/ipc is
// the namespace of inode `own`.
auto namespaces_where_init_unreadable(ino_t own) {
    return [own](const std::string& path, EntryStat& out) {
        if (path.ends_with("/1/ns/ipc")) return -EACCES;
        const int rc = real_cleanup_calls().stat_path(path, out);
        if (path.ends_with("/self/ns/ipc")) out.ino = own;
        return rc;
    };
}

}  // namespace

TEST_CASE("cleanup ipc: the owner is checked again right before IPC_RMID, and a failure is reported") {
    OwnedIpc owned;
    const int shm = owned.add(SysvKind::shm, made_as(41605, make_shm, owned));
    ScriptedCleanupCalls calls;
    SUBCASE("owner changed") {
        calls.script.sysv_stat = [](SysvKind kind, int id, SysvStat& out) {
            const int rc = real_cleanup_calls().sysv_stat(kind, id, out);
            out.uid = 41606;  // IPC_STAT says another owner
            return rc;
        };
        const CleanupReport report = clean_up({41605}, ipc_only(), calls);
        REQUIRE(record_of(report, shm) != nullptr);
        CHECK(record_of(report, shm)->outcome == CleanupOutcome::changed);
        CHECK(calls.count.sysv_remove == 0);
        CHECK(alive(SysvKind::shm, shm));
    }
    SUBCASE("IPC_RMID fails") {
        calls.script.sysv_remove = [](SysvKind, int) { return -EPERM; };
        const CleanupReport report = clean_up({41605}, ipc_only(), calls);
        REQUIRE(record_of(report, shm) != nullptr);
        CHECK(record_of(report, shm)->outcome == CleanupOutcome::failed);
        CHECK(record_of(report, shm)->error == EPERM);
        CHECK(totals_of(report, false).errors == 1);
    }
}

TEST_CASE("cleanup ipc: outside the host IPC namespace nothing is touched") {
    OwnedIpc owned;
    const int shm = owned.add(SysvKind::shm, made_as(41606, make_shm, owned));
    ScriptedCleanupCalls calls;
    calls.script.stat_path = [](const std::string& path, EntryStat& out) {
        const int rc = real_cleanup_calls().stat_path(path, out);
        if (path.ends_with("/self/ns/ipc")) out.ino += 1;
        return rc;
    };
    const CleanupReport report = clean_up({41606}, ipc_only(), calls);
    CHECK(report.records.empty());
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors.front().find("not in the host IPC namespace") != std::string::npos);
    CHECK(calls.count.sysv_remove == 0);
    CHECK(alive(SysvKind::shm, shm));
}

TEST_CASE("cleanup ipc: where pid 1's namespace cannot be read, only the kernel's initial one counts as the host's") {
    OwnedIpc owned;
    const int shm = owned.add(SysvKind::shm, made_as(41607, make_shm, owned));
    ScriptedCleanupCalls calls;
    SUBCASE("the initial namespace") {
        calls.script.stat_path = namespaces_where_init_unreadable(0xEFFFFFFFU);
        const CleanupReport report = clean_up({41607}, ipc_only(), calls);
        CHECK(report.errors.empty());
        CHECK_FALSE(alive(SysvKind::shm, shm));
    }
    SUBCASE("another namespace") {
        calls.script.stat_path = namespaces_where_init_unreadable(4026532000U);
        const CleanupReport report = clean_up({41607}, ipc_only(), calls);
        REQUIRE(report.errors.size() == 1);
        CHECK(report.errors.front().find("not in the host IPC namespace") != std::string::npos);
        CHECK(report.errors.front().find("/proc/1/ns/ipc cannot be read: Permission denied") != std::string::npos);
        CHECK(calls.count.sysv_remove == 0);
        CHECK(alive(SysvKind::shm, shm));
    }
}

namespace {

// Hands an object to `owner` as root may (IPC_SET): its creator stays who made it.
void give_to(SysvKind kind, int id, uid_t owner) {
    switch (kind) {
        case SysvKind::shm: {
            shmid_ds ds{};
            REQUIRE(::shmctl(id, IPC_STAT, &ds) == 0);
            ds.shm_perm.uid = owner;
            REQUIRE(::shmctl(id, IPC_SET, &ds) == 0);
            return;
        }
        case SysvKind::sem: {
            union semun {  // the caller defines it (semctl(2))
                int val;
                semid_ds* buf;
            };
            semid_ds ds{};
            semun arg{};
            arg.buf = &ds;
            REQUIRE(::semctl(id, 0, IPC_STAT, arg) == 0);
            ds.sem_perm.uid = owner;
            REQUIRE(::semctl(id, 0, IPC_SET, arg) == 0);
            return;
        }
        case SysvKind::msg: {
            msqid_ds ds{};
            REQUIRE(::msgctl(id, IPC_STAT, &ds) == 0);
            ds.msg_perm.uid = owner;
            REQUIRE(::msgctl(id, IPC_SET, &ds) == 0);
            return;
        }
    }
}

}  // namespace

TEST_CASE("cleanup ipc: an object is matched by its owner only: one the swept user created and another owns stays") {
    constexpr uid_t creator = 41600;
    constexpr uid_t owner = 41608;
    OwnedIpc owned;
    const std::map<SysvKind, int> ids{{SysvKind::shm, owned.add(SysvKind::shm, made_as(creator, make_shm, owned))},
                                      {SysvKind::sem, owned.add(SysvKind::sem, made_as(creator, make_sem, owned))},
                                      {SysvKind::msg, owned.add(SysvKind::msg, made_as(creator, make_msg, owned))}};
    for (const auto& [kind, id] : ids) give_to(kind, id, owner);

    const CleanupReport creators = clean_up({creator}, ipc_only());
    CHECK(creators.errors.empty());
    for (const auto& [kind, id] : ids) {
        CHECK(alive(kind, id));
        CHECK(record_of(creators, id) == nullptr);
    }
    // Its owner's cleanup takes them, each recorded under the owner.
    const CleanupReport owners = clean_up({owner}, ipc_only());
    for (const auto& [kind, id] : ids) {
        CHECK_FALSE(alive(kind, id));
        REQUIRE(record_of(owners, id) != nullptr);
        CHECK(record_of(owners, id)->uid == owner);
    }
}

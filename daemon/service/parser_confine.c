/* SPDX-License-Identifier: MIT */
/*
 * parser_confine.c — the parser helper's privilege drop and seccomp filter (parser_confine.h).
 * Must never print, and never let the helper serve when a step failed.
 */
#include "service/parser_confine.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/prctl.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

/* What parsing needs (found by running the helper under the filter on real modules and debug
 * files): memory, reading the descriptors it is given, its socket, and openat read-only for
 * debug files under /usr/lib/debug/.build-id (debuginfo_find.h; the uid is the parser
 * user's, so only world-readable files open), and a memfd for the rows of an unwind table
 * (stack/cfi_wire.h: memfd_create, and ftruncate, on no descriptor below 3: the daemon's
 * standard streams are inherited). No socket, connect, execve, fork, ptrace, write to a file,
 * or any *at that changes the file system. */
static const int allowed[] = {
    SCMP_SYS(read),
    SCMP_SYS(pread64),
    SCMP_SYS(readv),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mprotect),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(lseek),
    SCMP_SYS(fcntl),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(close),
    SCMP_SYS(futex),
    SCMP_SYS(exit_group),
    SCMP_SYS(exit),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(getrandom),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(gettid),
    SCMP_SYS(getpid),
    SCMP_SYS(sched_yield),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getcwd),
    SCMP_SYS(sysinfo),
    SCMP_SYS(setitimer),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(memfd_create),
};

static int load_seccomp(void)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
        if (!ctx)
                return -ENOMEM;
        int err = 0;
        for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++)
                err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
        /* openat: read-only, never creating or truncating. */
        if (!err)
                err = seccomp_rule_add(
                    ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC | O_TMPFILE, 0));
        if (!err)
                err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ftruncate), 1,
                                       SCMP_A0(SCMP_CMP_GT, STDERR_FILENO));
        if (!err)
                err = seccomp_load(ctx);
        seccomp_release(ctx);
        return err;
}

/* uid and gid of user (see parser_confine.h). 0 or -ENOENT. */
static int lookup_user(const char *user, uid_t *uid, gid_t *gid)
{
        int dflt = !user || !*user || !strcmp(user, PARSER_USER_DEFAULT);
        struct passwd *pw = getpwnam(dflt ? PARSER_USER_DEFAULT : user);
        if (pw) {
                *uid = pw->pw_uid;
                *gid = pw->pw_gid;
                return 0;
        }
        if (!dflt)
                return -ENOENT;
        *uid = PARSER_UID_FALLBACK;
        *gid = PARSER_UID_FALLBACK;
        return 0;
}

static int set_limits(void)
{
        const struct rlimit core = {0, 0}, nofile = {PARSER_NOFILE_MAX, PARSER_NOFILE_MAX},
                            as = {PARSER_AS_MAX, PARSER_AS_MAX};

        if (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_NOFILE, &nofile))
                return -1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        /* The sanitizer builds (tests) reserve terabytes of shadow address space. */
        (void)as;
        return 0;
#else
        return setrlimit(RLIMIT_AS, &as);
#endif
}

/* Every capability out of the bounding set (needs CAP_SETPCAP: before the uid change). */
static int clear_bounding(void)
{
        for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
                if (CAP_IS_SUPPORTED(c) && cap_get_bound(c) == 1 && cap_drop_bound(c))
                        return -1;
        return 0;
}

/* 1 when every set of this process is empty, the bounding set included. */
static int caps_empty(void)
{
        cap_t cur = cap_get_proc(), none = cap_init();
        int empty = cur && none && !cap_compare(cur, none);
        cap_free(cur);
        cap_free(none);
        for (cap_value_t c = 0; empty && c <= CAP_LAST_CAP; c++)
                if (CAP_IS_SUPPORTED(c) && (cap_get_bound(c) != 0 || cap_get_ambient(c) != 0))
                        empty = 0;
        return empty;
}

static int clear_caps(void)
{
        cap_t none = cap_init();
        int err = !none || cap_reset_ambient() || cap_set_proc(none);
        cap_free(none);
        return err || !caps_empty();
}

int parser_confine(int sock, const char *user)
{
        uid_t uid;
        gid_t gid;
        if ((sock > STDERR_FILENO + 1 && close_range(STDERR_FILENO + 1, (unsigned)sock - 1, 0)) ||
            close_range((unsigned)sock + 1, ~0u, 0))
                return PARSER_EXIT_FDS;
        prctl(PR_SET_NAME, PARSER_COMM, 0, 0, 0); /* its name in ps, not "exe" */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
                return PARSER_EXIT_PDEATHSIG;
        if (lookup_user(user, &uid, &gid))
                return PARSER_EXIT_USER;
        if (set_limits())
                return PARSER_EXIT_RLIMIT;
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
                return PARSER_EXIT_DUMPABLE;
        if (setgroups(0, NULL))
                return PARSER_EXIT_GROUPS;
        if (setresgid(gid, gid, gid))
                return PARSER_EXIT_GID;
        if (clear_bounding())
                return PARSER_EXIT_BOUNDING;
        if (uid == 0 || setresuid(uid, uid, uid) || getuid() == 0 || geteuid() == 0)
                return PARSER_EXIT_UID;
        if (clear_caps())
                return PARSER_EXIT_CAPS;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
                return PARSER_EXIT_NNP;
        if (load_seccomp())
                return PARSER_EXIT_SECCOMP;
        return 0;
}

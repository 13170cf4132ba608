/* SPDX-License-Identifier: MIT */
/*
 * util/target_named_open.c — a file a target names by convention, opened below its root
 * (see target_named_open.h). Must never open the path in the daemon's own mount namespace,
 * never open anything but O_PATH before the type, owner and FUSE check, never print.
 */
#include "util/target_named_open.h"
#include "util/proc_pin.h"
#include "util/target_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The target's user: the owner of /proc/PID (its effective uid). */
static int target_uid(pid_t pid, uid_t *uid)
{
        char fn[32];
        struct statx sx;
        snprintf(fn, sizeof(fn), "/proc/%d", (int)pid);
        if (statx(AT_FDCWD, fn, AT_STATX_DONT_SYNC, STATX_UID, &sx))
                return -ENOENT;
        *uid = sx.stx_uid;
        return 0;
}

/* target_refuse_fuse for pid: 0 or -errno. */
static int refuse_fuse(pid_t pid, const struct statx *sx, struct target_stats *st)
{
        int procdir = proc_pid_dir(pid);
        if (procdir < 0)
                return -ENOENT;
        int r = target_refuse_fuse(procdir, sx, st);
        close(procdir);
        return r;
}

/* Step 1: path below the target's root, O_PATH; -errno. */
static int open_path_in_root(pid_t pid, const char *path, struct target_stats *st)
{
        char fn[32];
        snprintf(fn, sizeof(fn), "/proc/%d/root", (int)pid);
        int root = open(fn, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -ENOENT;
        struct open_how how = {
            .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
        int e = errno;
        close(root);
        if (fd >= 0)
                return fd;
        if (e == ENOENT)
                return -ENOENT;
        target_stats_count(TARGET_STATS_FIELD(st, unresolved));
        return -EXDEV;
}

int target_open_named(pid_t pid, const char *path, struct target_stats *st)
{
        uid_t uid;
        if (pid <= 0 || !path || path[0] != '/')
                return -EINVAL;
        if (target_uid(pid, &uid))
                return -ENOENT;
        int opath = open_path_in_root(pid, path, st);
        if (opath < 0)
                return opath;
        struct statx sx;
        int r = 0;
        if (statx(opath, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
                  STATX_TYPE | STATX_UID | STATX_MNT_ID, &sx)) {
                r = -errno;
        } else if (!S_ISREG(sx.stx_mode)) {
                target_stats_count(TARGET_STATS_FIELD(st, not_regular));
                r = -EINVAL;
        } else if (sx.stx_uid != uid) {
                target_stats_count(TARGET_STATS_FIELD(st, not_owner));
                r = -EPERM;
        } else {
                r = refuse_fuse(pid, &sx, st); /* its OPEN and READs could never end */
        }
        if (!r)
                r = target_reopen(opath, st);
        close(opath);
        return r;
}

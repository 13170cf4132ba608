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

/* The target's user: the owner of its /proc/PID (procdir; its effective uid). */
static int target_uid(int procdir, uid_t *uid)
{
        struct statx sx;
        if (statx(procdir, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_UID, &sx))
                return -ENOENT;
        *uid = sx.stx_uid;
        return 0;
}

/* Step 1: path below the target's root, O_PATH; -errno. */
static int open_path_in_root(int procdir, const char *path, struct target_stats *st)
{
        int root = openat(procdir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
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

/* Steps 1-3 below the /proc/PID directory procdir: a readable descriptor or -errno. */
static int open_named_at(int procdir, const char *path, struct target_stats *st)
{
        uid_t uid;
        if (target_uid(procdir, &uid))
                return -ENOENT;
        int opath = open_path_in_root(procdir, path, st);
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
                /* its OPEN and READs could never end */
                r = target_refuse_fuse(procdir, &sx, st);
        }
        if (!r)
                r = target_reopen(opath, st);
        close(opath);
        return r;
}

int target_open_named(pid_t pid, const char *path, struct target_stats *st)
{
        if (pid <= 0 || !path || path[0] != '/')
                return -EINVAL;
        /* one /proc/PID for the owner, the root and the mounts: one process's, whatever
         * happens to the pid meanwhile */
        int procdir = proc_pid_dir(pid);
        if (procdir < 0)
                return -ENOENT;
        int r = open_named_at(procdir, path, st);
        close(procdir);
        return r;
}

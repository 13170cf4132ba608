/* SPDX-License-Identifier: MIT */
/*
 * util/target_open.c — opening a file a target maps (see target_open.h). Must never open a
 * target-named path in the daemon's own mount namespace, never open anything but O_PATH
 * before the identity check, never print.
 */
#include "util/target_open.h"
#include "util/proc_lines.h"
#include "util/proc_pin.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* glibc 2.36 has no openat2 wrapper. */
static int sys_openat2(int dirfd, const char *path, const struct open_how *how)
{
        return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

/* Step 2: f->path below the target's root, O_PATH; -errno. */
static int open_in_root(int procdir, const struct target_file *f, struct target_stats *st)
{
        int root = openat(procdir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return errno == ENOENT ? -ENOENT : -errno;
        /* RESOLVE_CACHED: from the dentry cache alone, never a file system's lookup (a FUSE
         * server can leave one unanswered for good). The path of a file a process maps is
         * in the cache (the mapping pins its dentry and every parent's); one that is not is
         * not the mapped file (-EAGAIN: counted as unresolved). */
        struct open_how how = {
            .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED,
        };
        int fd = sys_openat2(root, f->path, &how);
        int e = errno;
        close(root);
        if (fd < 0) {
                target_stats_count(TARGET_STATS_FIELD(st, unresolved));
                return e == ENOENT ? -ENOENT : e == EAGAIN ? -EAGAIN : -EXDEV;
        }
        target_stats_count(TARGET_STATS_FIELD(st, opened_by_path));
        return fd;
}

/* 1 if mount mnt_id of pid's mount namespace is a FUSE file system ("fuse", "fuseblk",
 * "fuse.NAME") or is not listed in /proc/PID/mountinfo (a mount detached since, or an
 * internal one): 0 when listed with another type, -errno when unreadable. */
static int mount_is_fuse(int procdir, uint64_t mnt_id, struct target_stats *st)
{
        char *line;
        struct proc_lines r;
        size_t len;
        int err, found = 1;

        err = proc_lines_openat(&r, procdir, "mountinfo", PROC_LINE_MAX_MAPS, st);
        if (err)
                return err;
        while ((err = proc_lines_next(&r, &line, &len)) == 1) {
                char *sep, *end;
                uint64_t id = strtoull(line, &end, 10);

                if (end == line || *end != ' ' || id != mnt_id)
                        continue;
                /* "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE SOURCE SUPEROPTS" */
                sep = strstr(line, " - ");
                found = !sep || !strncmp(sep + 3, "fuse", 4); /* no type: not trusted */
                break;
        }
        proc_lines_close(&r);
        return err < 0 ? err : found;
}

/* Step 3: 0 when fd is a regular file with f's dev:inode, on no FUSE mount, else -errno
 * (counted). */
static int check_identity(int procdir, int fd, const struct target_file *f, struct target_stats *st)
{
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_MNT_ID,
                  &sx))
                return -errno;
        if (!S_ISREG(sx.stx_mode)) {
                target_stats_count(TARGET_STATS_FIELD(st, not_regular));
                return -EINVAL;
        }
        if (makedev(sx.stx_dev_major, sx.stx_dev_minor) != f->dev || sx.stx_ino != f->ino) {
                target_stats_count(TARGET_STATS_FIELD(st, mismatch));
                return -ESTALE;
        }
        return target_refuse_fuse(procdir, &sx, st);
}

int target_refuse_fuse(int procdir, const struct statx *sx, struct target_stats *st)
{
        if (sx->stx_dev_major == 0 &&
            (!(sx->stx_mask & STATX_MNT_ID) || mount_is_fuse(procdir, sx->stx_mnt_id, st) != 0)) {
                target_stats_count(TARGET_STATS_FIELD(st, on_fuse));
                return -EREMOTE;
        }
        return 0;
}

int target_open_path(pid_t pid, const struct target_file *f, struct target_stats *st)
{
        if (pid <= 0 || !f)
                return -EINVAL;
        int procdir = proc_pid_dir(pid);
        if (procdir < 0)
                return -ENOENT;
        int fd = target_open_path_at(procdir, f, st);
        close(procdir);
        return fd;
}

int target_open_path_at(int procdir, const struct target_file *f, struct target_stats *st)
{
        if (procdir < 0 || !f)
                return -EINVAL;
        char fn[96];
        snprintf(fn, sizeof(fn), "map_files/%" PRIx64 "-%" PRIx64, f->start, f->end);
        int fd = openat(procdir, fn, O_PATH | O_CLOEXEC);
        if (fd < 0) {
                if (errno != EPERM && errno != EACCES) {
                        /* no such mapping (the line was forged, or unmapped since): nothing
                         * by path */
                        target_stats_count(TARGET_STATS_FIELD(st, no_mapping));
                        return -ENOENT;
                }
                if (!f->path || f->path[0] != '/' || f->deleted) {
                        target_stats_count(TARGET_STATS_FIELD(st, unresolved));
                        return -ENOENT;
                }
                fd = open_in_root(procdir, f, st);
                if (fd < 0)
                        return fd;
        }
        int r = check_identity(procdir, fd, f, st);
        if (r) {
                close(fd);
                return r;
        }
        return fd;
}

int target_reopen(int opath_fd, struct target_stats *st)
{
        char fn[64];
        snprintf(fn, sizeof(fn), "/proc/self/fd/%d", opath_fd);
        int fd = open(fn, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                target_stats_count(TARGET_STATS_FIELD(st, open_failed));
                return -e;
        }
        target_stats_count(TARGET_STATS_FIELD(st, opened));
        return fd;
}

/* The readable descriptor behind opath (a target_open_path* result, closed here). */
static int reopen_close(int opath, struct target_stats *st)
{
        if (opath < 0)
                return opath;
        int fd = target_reopen(opath, st);
        close(opath);
        return fd;
}

int target_open(pid_t pid, const struct target_file *f, struct target_stats *st)
{
        return reopen_close(target_open_path(pid, f, st), st);
}

int target_open_at(int procdir, const struct target_file *f, struct target_stats *st)
{
        return reopen_close(target_open_path_at(procdir, f, st), st);
}

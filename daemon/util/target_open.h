/* SPDX-License-Identifier: MIT */
/*
 * util/target_open.h — the one way the daemon opens a file a target process names (a file it
 * maps). The daemon runs as root beside processes any user controls, and everything about
 * the file (its maps line, its path, what is at that path now) is the target's to choose, so:
 *
 *   1. /proc/PID/map_files/START-END, opened O_PATH: exactly the inode the process maps (no
 *      driver ->open, no FIFO wait). ENOENT (no such mapping: a forged maps line, or unmapped
 *      since) is refused; nothing is looked up by path then.
 *   2. Only when map_files is refused (EPERM/EACCES: no CAP_CHECKPOINT_RESTORE/SYS_ADMIN,
 *      user namespaces, old kernels): openat2 of the path below an O_PATH descriptor of
 *      /proc/PID/root, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED, O_PATH |
 *      O_NOFOLLOW: from the dentry cache only (a mapped file's path is there, pinned by the
 *      mapping), so a FUSE directory on the way can never make the lookup wait.
 *   3. statx of that descriptor (AT_STATX_DONT_SYNC: a FUSE server cannot make it wait):
 *      refused unless a regular file with the maps line's dev:inode, on no FUSE mount (the
 *      mount's type from /proc/PID/mountinfo, looked up for anonymous devices only): the
 *      reopen below runs a FUSE server's OPEN, and every read its READ, which the server
 *      may never answer (the thread would block for good).
 *   4. Only then reopened readable through /proc/self/fd/N, O_RDONLY | O_NONBLOCK | O_NOCTTY:
 *      the inode is pinned by the O_PATH descriptor, so there is no race left.
 *
 * Nothing in the daemon opens a target-named path any other way (tests/lint/test_safe_open.sh).
 * Every refusal is counted by reason in the caller's struct target_stats. Never prints.
 */
#ifndef CTXPROF_UTIL_TARGET_OPEN_H
#define CTXPROF_UTIL_TARGET_OPEN_H

#include <stdint.h>
#include <sys/types.h>

#include "util/maps_line.h"
#include "util/target_stats.h"

/* A mapped file as a maps line shows it. */
struct target_file {
        uint64_t start, end; /* the mapping's range: the map_files entry's name */
        dev_t dev;
        ino_t ino;
        const char *path; /* in the target's mount namespace; NULL or deleted: no fallback */
        int deleted;      /* the maps line said " (deleted)" */
};

/* The mapped file a maps line names (path points into l). */
static inline struct target_file target_file_of(const struct maps_line *l)
{
        return (struct target_file){.start = l->start,
                                    .end = l->end,
                                    .dev = l->dev,
                                    .ino = l->ino,
                                    .path = l->path,
                                    .deleted = l->deleted};
}

/* A verified O_PATH descriptor of f (steps 1-3), or -errno: -ENOENT no such mapping (or the
 * process is gone), -EINVAL not a regular file, -ESTALE another dev:inode, -EXDEV the path
 * does not resolve inside the target's root, -EAGAIN not in the dentry cache (step 2),
 * -EREMOTE on a FUSE mount, other openat2/statx errors. */
int target_open_path(pid_t pid, const struct target_file *f, struct target_stats *st);
/* The same below procdir, a /proc/PID directory descriptor (a pinned one, util/proc_pin.h:
 * map_files, root and mountinfo are then the pinned process's, never a recycled pid's). */
int target_open_path_at(int procdir, const struct target_file *f, struct target_stats *st);

/* A readable descriptor (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) of the file behind a
 * descriptor target_open_path returned (step 4), or -errno. The caller keeps opath_fd. */
int target_reopen(int opath_fd, struct target_stats *st);

/* 0, or -EREMOTE (counted: on_fuse) when the file sx describes (a statx of an O_PATH
 * descriptor in the mount namespace of the process whose /proc/PID directory procdir is, with
 * STATX_MNT_ID asked) is on a FUSE mount, or on an anonymous-device mount its mountinfo does
 * not list. Only anonymous-device
 * mounts (major 0) are looked up: an unprivileged user can mount FUSE only there (fuseblk
 * needs a block device and root). The check step 3 makes, for any file a target names. */
struct statx;
int target_refuse_fuse(int procdir, const struct statx *sx, struct target_stats *st);

/* Both: the readable descriptor of f, or -errno as above. */
int target_open(pid_t pid, const struct target_file *f, struct target_stats *st);
int target_open_at(int procdir, const struct target_file *f, struct target_stats *st);

#endif

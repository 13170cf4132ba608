/* SPDX-License-Identifier: MIT */
/*
 * util/target_named_open.h — opening a file a target names by convention, not by mapping it
 * (a runtime's perf map, /tmp/perf-PID.map): the path is ours to form, but whatever is at it
 * inside the target's root is the target's (or another user's: /tmp is shared) to choose. So:
 *
 *   1. openat2 of the path below an O_PATH descriptor of /proc/PID/root, RESOLVE_IN_ROOT |
 *      RESOLVE_NO_MAGICLINKS, O_PATH | O_NOFOLLOW: the target's mount namespace, no symlink
 *      out of it, no open of a driver, no FIFO wait;
 *   2. statx of that descriptor (AT_STATX_DONT_SYNC): refused unless a regular file owned by
 *      the target's user (the owner of /proc/PID): a file another user planted in /tmp must
 *      not name someone else's frames; and, like a mapped file (util/target_open.h step 3),
 *      unless on no FUSE mount: a FUSE server may never answer the OPEN or a READ;
 *   3. reopened O_RDONLY | O_NONBLOCK | O_NOCTTY through /proc/self/fd/N (target_reopen).
 *
 * Files a target maps go through util/target_open.h instead (their identity is the maps
 * line's dev:inode). Refusals are counted in the caller's target_stats. Never prints.
 */
#ifndef CTXPROF_UTIL_TARGET_NAMED_OPEN_H
#define CTXPROF_UTIL_TARGET_NAMED_OPEN_H

#include <sys/types.h>

#include "util/target_stats.h"

/* A readable descriptor of path (absolute, in pid's root) or -errno: -ENOENT no such file
 * (or the process is gone), -EXDEV it does not resolve inside the root (a symlink, ..),
 * -EINVAL not a regular file, -EPERM another owner than the target's user, -EREMOTE on a
 * FUSE mount. The lookup itself may still wait on a FUSE mount the path crosses (a target's
 * /tmp): callers run it off the sampling loop, as a target job with a deadline. */
int target_open_named(pid_t pid, const char *path, struct target_stats *st);

#endif

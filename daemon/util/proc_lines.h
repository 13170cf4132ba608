/* SPDX-License-Identifier: MIT */
/*
 * util/proc_lines.h — reading text a target controls (/proc/PID/maps, status, cgroup, ...)
 * line by line with a cap: a line longer than its cap is consumed to its newline, counted
 * (target_stats.lines_too_long) and never handed out, so no parser ever sees the tail of a
 * line as a line of its own. Memory is one buffer of cap + 1 bytes, whatever the file holds.
 * Never prints, never blocks on anything but the read of the file the caller names.
 */
#ifndef CTXPROF_UTIL_PROC_LINES_H
#define CTXPROF_UTIL_PROC_LINES_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/target_stats.h"

/* A /proc/PID/maps line: the fields (at most ~90 bytes) and a path of up to PATH_MAX bytes,
 * plus " (deleted)". Longer lines cannot come from the kernel for a real path. */
#define PROC_LINE_MAX_MAPS (PATH_MAX + 128)
/* Lines of /proc/PID/status, cgroup, mounts: names are bounded by the kernel or by us. */
#define PROC_LINE_MAX_SHORT 4096

struct proc_lines {
        int fd;
        char *buf;
        size_t cap;      /* longest line handed out, in bytes without its newline */
        size_t pos, len; /* unread bytes are buf[pos, len) */
        int eof, skipping;
        struct target_stats *st; /* may be NULL */
};

/* Open path (O_RDONLY | O_CLOEXEC; a /proc file of a pid, never a target-named path) for
 * lines of at most cap bytes. 0, -ESRCH (ENOENT: the process is gone), -ENOMEM, -errno. */
int proc_lines_open(struct proc_lines *r, const char *path, size_t cap, struct target_stats *st);
/* The same for path relative to dirfd (a pinned /proc/PID, util/proc_pin.h; or AT_FDCWD). */
int proc_lines_openat(struct proc_lines *r, int dirfd, const char *path, size_t cap,
                      struct target_stats *st);
/* The next line, NUL-terminated without its newline, in *line (valid until the next call):
 * 1, 0 at the end, -errno on a read error. A last line without a newline counts as a line. */
int proc_lines_next(struct proc_lines *r, char **line, size_t *len);
void proc_lines_close(struct proc_lines *r);
/* The value of field key in /proc/PID/status (the text after "key:" and its blanks, up to the
 * line's end, cut to len - 1 bytes) into out. 0, -ENOENT (no such line), or proc_lines_open's
 * and proc_lines_next's errors. */
int proc_status_value(pid_t pid, const char *key, char *out, size_t len, struct target_stats *st);
/* The same for the status file in procdir relative to dirfd ("." of a pinned /proc/PID
 * descriptor, util/proc_pin.h; or "/proc/PID" and AT_FDCWD). */
int proc_status_value_at(int dirfd, const char *procdir, const char *key, char *out, size_t len,
                         struct target_stats *st);

#endif

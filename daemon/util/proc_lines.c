/* SPDX-License-Identifier: MIT */
/*
 * util/proc_lines.c — the capped line reader (see proc_lines.h). Owns one buffer per open
 * file; must never grow it, never resynchronise inside a line, never print.
 */
#include "util/proc_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_lines_open(struct proc_lines *r, const char *path, size_t cap, struct target_stats *st)
{
        return proc_lines_openat(r, AT_FDCWD, path, cap, st);
}

int proc_lines_openat(struct proc_lines *r, int dirfd, const char *path, size_t cap,
                      struct target_stats *st)
{
        if (!r || !path || !cap)
                return -EINVAL;
        memset(r, 0, sizeof(*r));
        r->buf = malloc(cap + 1);
        if (!r->buf)
                return -ENOMEM;
        r->fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) {
                int e = errno;

                free(r->buf);
                r->buf = NULL;
                return e == ENOENT ? -ESRCH : -e;
        }
        r->cap = cap;
        r->st = st;
        return 0;
}

/* Append what the file gives to buf[len, cap]: bytes read, 0 at the end, -errno. */
static ssize_t fill(struct proc_lines *r)
{
        if (r->pos) {
                memmove(r->buf, r->buf + r->pos, r->len - r->pos);
                r->len -= r->pos;
                r->pos = 0;
        }
        for (;;) {
                ssize_t n = read(r->fd, r->buf + r->len, r->cap + 1 - r->len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == ESRCH ? -ESRCH : -errno;
                r->len += (size_t)n;
                return n;
        }
}

int proc_lines_next(struct proc_lines *r, char **line, size_t *len)
{
        if (!r || !r->buf || !line)
                return -EINVAL;
        for (;;) {
                char *start = r->buf + r->pos;
                char *nl = memchr(start, '\n', r->len - r->pos);

                if (nl) {
                        r->pos = (size_t)(nl - r->buf) + 1;
                        if (r->skipping) { /* the end of a line too long: refused */
                                r->skipping = 0;
                                continue;
                        }
                        *nl = '\0';
                        *line = start;
                        if (len)
                                *len = (size_t)(nl - start);
                        return 1;
                }
                if (r->len - r->pos > r->cap) { /* cap + 1 bytes and no newline yet */
                        if (!r->skipping)
                                target_stats_count(TARGET_STATS_FIELD(r->st, lines_too_long));
                        r->skipping = 1;
                        r->pos = r->len = 0;
                }
                if (r->eof) {
                        if (r->skipping || r->pos == r->len)
                                return 0;
                        r->buf[r->len] = '\0'; /* len - pos <= cap: room for the NUL */
                        *line = start;
                        if (len)
                                *len = r->len - r->pos;
                        r->pos = r->len;
                        return 1;
                }
                ssize_t n = fill(r);

                if (n < 0)
                        return (int)n;
                if (n == 0)
                        r->eof = 1;
        }
}

void proc_lines_close(struct proc_lines *r)
{
        if (!r || !r->buf)
                return;
        close(r->fd);
        free(r->buf);
        r->buf = NULL;
}

int proc_status_value(pid_t pid, const char *key, char *out, size_t len, struct target_stats *st)
{
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        return proc_status_value_at(AT_FDCWD, path, key, out, len, st);
}

int proc_status_value_at(int dirfd, const char *procdir, const char *key, char *out, size_t len,
                         struct target_stats *st)
{
        size_t klen = strlen(key);
        struct proc_lines r;
        char path[80], *line;
        int err, n;

        snprintf(path, sizeof(path), "%s/status", procdir);
        err = proc_lines_openat(&r, dirfd, path, PROC_LINE_MAX_SHORT, st);
        if (err)
                return err;
        err = -ENOENT;
        while ((n = proc_lines_next(&r, &line, NULL)) > 0) {
                if (strncmp(line, key, klen) || line[klen] != ':')
                        continue;
                line += klen + 1;
                snprintf(out, len, "%s", line + strspn(line, " \t"));
                err = 0;
                break;
        }
        if (n < 0)
                err = n;
        proc_lines_close(&r);
        return err;
}

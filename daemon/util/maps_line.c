/* SPDX-License-Identifier: MIT */
/*
 * util/maps_line.c — /proc/PID/maps lines to struct maps_line (see maps_line.h). Must never
 * read a line but through proc_lines (capped), never open a mapped file, never print.
 */
#include "util/maps_line.h"
#include "util/proc_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

int maps_line_parse(char *line, size_t len, struct maps_line *l)
{
        static const char del[] = " (deleted)";
        unsigned long long start, end, off, ino;
        unsigned maj, min;
        int pathpos = 0;

        memset(l, 0, sizeof(*l));
        if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, l->perms, &off, &maj,
                   &min, &ino, &pathpos) < 7)
                return -EINVAL;
        l->start = start;
        l->end = end;
        l->pgoff = off;
        l->dev = makedev(maj, min);
        l->ino = (ino_t)ino;
        char *path = pathpos > 0 && (size_t)pathpos <= len ? line + pathpos : line + len;
        size_t pl = strlen(path);
        if (pl >= sizeof(del) - 1 && !strcmp(path + pl - (sizeof(del) - 1), del)) {
                path[pl - (sizeof(del) - 1)] = 0;
                l->deleted = 1;
        }
        l->path = path;
        return 0;
}

/* Every mapping line of the maps file fn (relative to dirfd) to cb. */
static int maps_foreach_file(int dirfd, const char *fn, int (*cb)(const struct maps_line *, void *),
                             void *arg, struct target_stats *st)
{
        struct proc_lines r;
        int ret = proc_lines_openat(&r, dirfd, fn, PROC_LINE_MAX_MAPS, st);
        if (ret)
                return ret;
        char *line;
        size_t len;
        int more;
        while ((more = proc_lines_next(&r, &line, &len)) > 0) {
                struct maps_line l;

                if (maps_line_parse(line, len, &l))
                        continue; /* not a mapping line: ignore rather than fail */
                ret = cb(&l, arg);
                if (ret)
                        break;
        }
        proc_lines_close(&r);
        if (!ret && more < 0)
                ret = more == -ESRCH ? -ESRCH : -EIO;
        return ret;
}

int maps_foreach(pid_t pid, int (*cb)(const struct maps_line *, void *), void *arg,
                 struct target_stats *st)
{
        if (pid <= 0 || !cb)
                return -EINVAL;
        char fn[64];
        snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
        return maps_foreach_file(AT_FDCWD, fn, cb, arg, st);
}

int maps_foreach_at(int procdir, int (*cb)(const struct maps_line *, void *), void *arg,
                    struct target_stats *st)
{
        if (procdir < 0 || !cb)
                return -EINVAL;
        return maps_foreach_file(procdir, "maps", cb, arg, st);
}

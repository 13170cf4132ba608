/* SPDX-License-Identifier: MIT */
/*
 * mm_stall.c — a thread of the host asleep in FUSE while it holds a memory map (see
 * mm_stall.h). Owns nothing past a call. Must never open a path a target chose (only
 * /proc/PID/task/TID files, formatted from numbers) nor read more than a bounded stack.
 */
#include "engine/mm_stall.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/proc_id.h"
#include "util/proc_lines.h"

/* Where a thread that waits for a FUSE server sleeps (fs/fuse/dev.c), and the frame of an
 * access to a process's memory that holds its mmap lock (mm/memory.c: __access_remote_vm,
 * reached from /proc/PID/mem, ptrace and /proc/PID/cmdline|environ). */
#define MM_STALL_FUSE_WAIT "request_wait_answer"
#define MM_STALL_HOLDER    "access_remote_vm"
/* Lines of a kernel stack read (the kernel prints at most 64 frames). */
#define MM_STALL_MAX_FRAMES 64

/* Does the file at path (one line or a stack) have a line containing word? 0 when it cannot
 * be read (the thread is gone, or no privilege: nothing is known of it). */
static int has_line_with(const char *path, const char *word, unsigned max_lines)
{
        struct proc_lines r;
        size_t len;
        char *line;
        unsigned n = 0;
        int found = 0;

        if (proc_lines_open(&r, path, PROC_LINE_MAX_SHORT, NULL))
                return 0;
        while (!found && n++ < max_lines && proc_lines_next(&r, &line, &len) == 1)
                found = strstr(line, word) != NULL;
        proc_lines_close(&r);
        return found;
}

/* Is thread tid of pid asleep in FUSE inside an access to a memory map? */
static int stalled_holder(pid_t pid, pid_t tid)
{
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, (int)tid);
        if (!has_line_with(path, MM_STALL_FUSE_WAIT, 1))
                return 0; /* the common case: one small read a thread */
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
        return has_line_with(path, MM_STALL_HOLDER, MM_STALL_MAX_FRAMES);
}

/* A thread of pid that is such a holder: its tid, or 0. */
static pid_t holder_of(pid_t pid)
{
        struct dirent *de;
        char path[32];
        pid_t tid = 0;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        d = opendir(path);
        if (!d)
                return 0; /* gone */
        while (!tid && (de = readdir(d))) {
                pid_t t = proc_id(de->d_name);

                if (t && stalled_holder(pid, t))
                        tid = t;
        }
        closedir(d);
        return tid;
}

int mm_stall_find(pid_t *pid, pid_t *tid)
{
        struct dirent *de;
        pid_t p, t = 0;
        DIR *d;

        d = opendir("/proc");
        if (!d)
                return -errno;
        while (!t && (de = readdir(d))) {
                p = proc_id(de->d_name);
                t = p ? holder_of(p) : 0;
                if (t)
                        *pid = p;
        }
        closedir(d);
        if (t)
                *tid = t;
        return t ? 1 : 0;
}

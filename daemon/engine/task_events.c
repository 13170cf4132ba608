/* SPDX-License-Identifier: MIT */
/*
 * engine/task_events.c — per-thread sampling events of `record`'s targets (see
 * task_events.h): lists a target's threads in /proc/PID/task, opens one inherited perf event
 * per thread and attaches the sampling program with a BPF link, whose descriptor it keeps
 * (the perf descriptor is closed: the link holds the event). Must never read a target's
 * memory or files: the task directory's names are all it reads.
 */
#include "engine/task_events.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "util/grow.h"
#include "util/proc_id.h"

struct task_events {
        int prog_fd;
        struct perf_event_attr attr;
        int *fds; /* link descriptors */
        size_t n, cap;
};

struct task_events *task_events_new(int prog_fd, const struct perf_event_attr *attr,
                                    int follow_children)
{
        struct task_events *te = calloc(1, sizeof(*te));

        if (!te)
                return NULL;
        te->prog_fd = prog_fd;
        te->attr = *attr;
        te->attr.inherit = 1;
        /* not following children: a forked process does not inherit (it is no target) */
        te->attr.inherit_thread = !follow_children;
        return te;
}

static int open_task_event(const struct perf_event_attr *attr, pid_t tid)
{
        int fd = (int)syscall(__NR_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : fd;
}

int task_events_probe(const struct perf_event_attr *attr)
{
        int fd = open_task_event(attr, 0);

        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

static int keep(struct task_events *te, int fd)
{
        int err = grow_array((void **)&te->fds, &te->cap, sizeof(*te->fds), te->n + 1, 16);

        if (!err)
                te->fds[te->n++] = fd;
        return err;
}

/* One thread: its event, the program on it. 0, -ESRCH (the thread exited) or an error. */
static int add_thread(struct task_events *te, pid_t tid)
{
        int fd = open_task_event(&te->attr, tid), link, err;

        if (fd < 0)
                return fd;
        link = bpf_link_create(te->prog_fd, fd, BPF_PERF_EVENT, NULL);
        err = link < 0 ? -errno : 0;
        close(fd); /* the link holds the event */
        if (err)
                return err;
        err = keep(te, link);
        if (err)
                close(link);
        return err;
}

int task_events_add(struct task_events *te, pid_t pid)
{
        char path[48];
        struct dirent *d;
        int err = 0, opened = 0;
        DIR *dir;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        dir = opendir(path);
        if (!dir)
                return errno == ENOENT ? -ESRCH : -errno;
        while (!err && (d = readdir(dir))) {
                pid_t tid = proc_id(d->d_name);
                int e;

                if (!tid)
                        continue;
                e = add_thread(te, tid);
                if (!e)
                        opened++;
                else if (e != -ESRCH) /* a thread that exited meanwhile is no error */
                        err = e;
        }
        closedir(dir);
        return err ? err : opened ? 0 : -ESRCH;
}

unsigned task_events_count(const struct task_events *te)
{
        return te ? (unsigned)te->n : 0;
}

void task_events_free(struct task_events *te)
{
        size_t i;

        if (!te)
                return;
        for (i = 0; i < te->n; i++)
                close(te->fds[i]);
        free(te->fds);
        free(te);
}

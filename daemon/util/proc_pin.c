/* SPDX-License-Identifier: MIT */
/*
 * util/proc_pin.c — a target process pinned by its pidfd (see proc_pin.h). Must never hand out
 * anything opened or read by pid without the liveness check after it, never signal the
 * process, never print.
 */
#include "util/proc_pin.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* The field of /proc/PID/stat that holds the start time, and how many fields come after the
 * command's closing ')' before it (the state is field 3). */
#define STAT_FIELD_STATE     3
#define STAT_FIELD_STARTTIME 22
/* One stat line: 52 numeric fields after a comm of at most 16 bytes. */
#define STAT_LINE_MAX 1024

/* glibc 2.36 has no pidfd_open wrapper. */
static int sys_pidfd_open(pid_t pid)
{
        return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The state letter and start time of the process behind procdir. */
static int stat_state_start(int procdir, char *state, uint64_t *start)
{
        char buf[STAT_LINE_MAX];
        int fd = openat(procdir, "stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int e = errno;
        close(fd);
        if (n < 0)
                return -e;
        if (n == 0)
                return -ESRCH;
        buf[n] = '\0';
        char *s = strrchr(buf, ')');
        if (!s)
                return -EINVAL;
        s++;
        for (int f = STAT_FIELD_STATE; f <= STAT_FIELD_STARTTIME; f++) {
                s += strspn(s, " ");
                if (!*s)
                        return -EINVAL;
                if (f == STAT_FIELD_STATE)
                        *state = *s;
                if (f == STAT_FIELD_STARTTIME) {
                        char *end;
                        errno = 0;
                        unsigned long long v = strtoull(s, &end, 10);
                        if (end == s || errno)
                                return -EINVAL;
                        *start = v;
                        return 0;
                }
                s += strcspn(s, " ");
        }
        return -EINVAL;
}

int proc_pid_dir(pid_t pid)
{
        char fn[32];
        snprintf(fn, sizeof(fn), "/proc/%d", (int)pid);
        int fd = open(fn, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        return fd;
}

/* 0 while p's process has not exited: its pidfd turns readable (POLLIN) when it exits and
 * hangs up (POLLHUP) when reaped. */
static int alive(const struct proc_pin *p)
{
        if (!p || p->pidfd < 0)
                return -ESRCH;
        struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
        int r = poll(&pfd, 1, 0);
        if (r < 0)
                return -errno;
        return r == 0 ? 0 : -ESRCH;
}

int proc_stat_start(int procdir, uint64_t *start)
{
        char state;

        return stat_state_start(procdir, &state, start);
}

/* The check failed (the pinned process exited): count it when /proc/PID is another process
 * now: a new start time, or one not exited (the start time counts clock ticks, and a pid
 * reused within the tick of the first process's start has the same). */
static void count_recycled(const struct proc_pin *p, int procdir, struct target_stats *st)
{
        uint64_t start;
        char state = 0;
        int dir = procdir >= 0 ? procdir : proc_pid_dir(p->pid);
        if (dir < 0)
                return;
        if (!stat_state_start(dir, &state, &start) &&
            (start != p->start || (state != 'Z' && state != 'X')))
                target_stats_count(TARGET_STATS_FIELD(st, pid_recycled));
        if (dir != procdir)
                close(dir);
}

int proc_pin_open(struct proc_pin *p, pid_t pid)
{
        if (!p)
                return -EINVAL;
        *p = (struct proc_pin)PROC_PIN_INIT;
        if (pid <= 0)
                return -EINVAL;
        int pidfd = sys_pidfd_open(pid);
        if (pidfd < 0)
                return errno == ESRCH || errno == EINVAL ? -ESRCH : -errno;
        p->pid = pid;
        p->pidfd = pidfd;
        int dir = proc_pid_dir(pid);
        int r = dir < 0 ? dir : proc_stat_start(dir, &p->start);
        if (dir >= 0)
                close(dir);
        if (!r) /* the stat read was of the pidfd's process only if it still lives */
                r = alive(p);
        if (r)
                proc_pin_close(p);
        return r;
}

void proc_pin_close(struct proc_pin *p)
{
        if (!p)
                return;
        if (p->pidfd >= 0)
                close(p->pidfd);
        *p = (struct proc_pin)PROC_PIN_INIT;
}

int proc_pin_dup(struct proc_pin *dst, const struct proc_pin *src)
{
        if (!dst)
                return -EINVAL;
        *dst = (struct proc_pin)PROC_PIN_INIT;
        if (!src || src->pidfd < 0)
                return -ESRCH;
        int fd = fcntl(src->pidfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        *dst = *src;
        dst->pidfd = fd;
        return 0;
}

int proc_pin_check(const struct proc_pin *p, struct target_stats *st)
{
        int r = alive(p);
        if (r == -ESRCH && p && p->pidfd >= 0)
                count_recycled(p, -1, st);
        return r;
}

int proc_pin_dir(const struct proc_pin *p, struct target_stats *st)
{
        if (!p || p->pidfd < 0)
                return -ESRCH;
        int dir = proc_pid_dir(p->pid);
        if (dir < 0)
                return dir;
        int r = alive(p);
        if (r) {
                if (r == -ESRCH)
                        count_recycled(p, dir, st);
                close(dir);
                return r;
        }
        return dir;
}

ssize_t proc_pin_vm_read(const struct proc_pin *p, void *dst, uint64_t addr, size_t len,
                         struct target_stats *st)
{
        if (!p || p->pidfd < 0 || !dst)
                return -ESRCH;
        struct iovec local = {.iov_base = dst, .iov_len = len};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
        ssize_t n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
        int e = errno;
        int r = proc_pin_check(p, st);
        if (r) {
                memset(dst, 0, len);
                return r;
        }
        return n < 0 ? -e : n;
}

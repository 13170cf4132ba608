/* SPDX-License-Identifier: MIT */
/*
 * util/proc_pin.h — a target process pinned by its pidfd, so that a recycled pid never
 * redirects a read. A pid is only a number: once its process is reaped the kernel may hand it
 * to any other process (another user's), and /proc/PID, map_files, process_vm_readv(PID) then
 * show that one. The pin is taken when the process is first seen: pidfd_open(pid) and its
 * start time (field 22 of /proc/PID/stat) as its identity.
 *
 * Every /proc/PID access for a pinned target then checks *after* the open that the pinned
 * process still lives (its pidfd is not readable: poll, no signal permission needed). While
 * it lives nothing else can hold its pid, so what was opened by that pid is its own; a
 * /proc/PID descriptor opened for it stays bound to it (a dead process's gives ESRCH or empty
 * reads, never another process's bytes). So:
 *
 *   - proc_pin_dir: /proc/PID opened O_PATH | O_DIRECTORY, then the check; read everything
 *     relative to it (openat, maps_foreach_at, proc_lines_openat, target_open_path_at);
 *   - proc_pin_check: the check alone, after an open by pid that cannot go through a
 *     directory descriptor (process_vm_readv: after the read, its bytes dropped when it fails).
 *
 * A failed check is -ESRCH; when /proc/PID then shows another start time (the pid went to a
 * new process) it is counted (target_stats.pid_recycled). Owns the pidfd; never prints, never
 * reads anything of the target but its stat line.
 */
#ifndef CTXPROF_UTIL_PROC_PIN_H
#define CTXPROF_UTIL_PROC_PIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

struct proc_pin {
        pid_t pid;
        int pidfd;      /* -1: not pinned (every check fails) */
        uint64_t start; /* start time in clock ticks since boot (its identity) */
};

/* An unpinned pin (close and checks are no-ops / -ESRCH). */
#define PROC_PIN_INIT                                                                              \
        {                                                                                          \
                .pid = 0, .pidfd = -1, .start = 0                                                  \
        }

/* Pin the process that has pid now: 0, -ESRCH (gone, or died while being pinned), -errno. */
int proc_pin_open(struct proc_pin *p, pid_t pid);
void proc_pin_close(struct proc_pin *p);
/* dst pins what src pins (its own pidfd, a dup): 0 or -errno (-ESRCH: src pins nothing). */
int proc_pin_dup(struct proc_pin *dst, const struct proc_pin *src);

/* 0 while the pinned process lives (not yet exited), -ESRCH once it exited (or not pinned).
 * st (may be NULL) counts pid_recycled when /proc/PID is another process's now. */
int proc_pin_check(const struct proc_pin *p, struct target_stats *st);

/* /proc/PID of the pinned process, O_PATH | O_DIRECTORY | O_CLOEXEC, checked after the open:
 * a descriptor the caller closes, or -ESRCH (counted as proc_pin_check does), -errno. */
int proc_pin_dir(const struct proc_pin *p, struct target_stats *st);

/* /proc/PID, O_PATH | O_DIRECTORY | O_CLOEXEC, of whatever process has pid now (no pin, no
 * check: for the readers' by-pid forms): a descriptor or -ESRCH, -errno. */
int proc_pid_dir(pid_t pid);

/* Start time (field 22 of stat, clock ticks since boot) of the process whose /proc/PID
 * directory is procdir: 0 or -errno (-ESRCH: gone). */
int proc_stat_start(int procdir, uint64_t *start);

/* process_vm_readv of len bytes at addr into dst, then the check: the number of bytes read,
 * or -errno (-ESRCH when the process exited: the bytes are dropped, they may be another's). */
ssize_t proc_pin_vm_read(const struct proc_pin *p, void *dst, uint64_t addr, size_t len,
                         struct target_stats *st);

#endif

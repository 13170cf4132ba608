/* SPDX-License-Identifier: MIT */
/*
 * mm_stall.h — is a thread on the host asleep in FUSE while it holds a process's memory map?
 * A read of another process's memory through the kernel's access_remote_vm (/proc/PID/mem,
 * ptrace, /proc/PID/cmdline) keeps that process's mmap lock while the page it reads comes
 * from FUSE, and a user's own FUSE server may never answer. Attaching a uprobe takes the
 * mmap lock of every process mapping the probed file for writing (register_for_each_vma: not
 * killable), holding the kernel's dup_mmap_sem meanwhile: the attach, and every fork() on the
 * host, would wait for that user (docs/daemon.md, "The library-load hook and FUSE"). The
 * load hook asks here just before it attaches one.
 *
 * Reads only /proc (kernel text: each thread's wchan, then the kernel stack of one that
 * waits in FUSE), never a path a target chose. The stacks need CAP_SYS_ADMIN. Never prints.
 * Thread safety: no state.
 */
#ifndef CTXPROF_MM_STALL_H
#define CTXPROF_MM_STALL_H

#include <sys/types.h>

/* 1 with *tid (and *pid, its process) set when a thread of the host waits in FUSE inside an
 * access to a memory map; 0 when none does; -errno when /proc cannot be listed. */
int mm_stall_find(pid_t *pid, pid_t *tid);

#endif

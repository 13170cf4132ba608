/* SPDX-License-Identifier: MIT */
/*
 * privileges.h — dropping the capabilities the daemon no longer needs once BPF is loaded and
 * the perf events are open. Never prints.
 */
#ifndef CTXPROF_PRIVILEGES_H
#define CTXPROF_PRIVILEGES_H

#include <stdint.h>

/* Keep only what running needs (reading targets: CAP_SYS_PTRACE for /proc/PID/mem, maps,
 * root, exe; CAP_CHECKPOINT_RESTORE for /proc/PID/map_files; CAP_DAC_READ_SEARCH for module
 * files whatever their mode; CAP_SYSLOG for kernel symbol addresses in /proc/kallsyms),
 * clear every other capability from the effective, permitted, inheritable, ambient and
 * bounding sets, and set no_new_privs. CAP_SETUID, CAP_SETGID and CAP_SETPCAP go too: parser
 * helpers are started by the spawner forked before this drop (util/parser_spawner.h), the only
 * process of ours that keeps them. Capabilities the process does not hold are skipped. flags:
 * PRIVILEGES_KEEP_DAC_OVERRIDE keeps CAP_DAC_OVERRIDE effective too. 0 or -errno. */
#define PRIVILEGES_KEEP_DAC_OVERRIDE 0x1 /* record: the output where its user asked (-o) */
int privileges_drop(unsigned flags);
/* The effective capability mask of this process (from /proc/self/status), 0 on error. */
uint64_t privileges_effective(void);

#endif

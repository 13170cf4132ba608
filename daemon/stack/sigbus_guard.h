/* SPDX-License-Identifier: MIT */
/*
 * sigbus_guard.h — survive target files that shrink under us. libelf and libdw map the ELF
 * and DWARF files they read (libdwfl always does); the files are the targets' own
 * (/proc/PID/map_files, /proc/PID/root), so a hostile or careless target can truncate one
 * while ctxprof reads it, and touching a mapped page past the new end of file raises SIGBUS,
 * which would kill the daemon. The guard turns such a fault into a page of zeros: elfutils
 * then sees a corrupt file (no name, no CFI for that module: counted, never a crash).
 * Never prints.
 */
#ifndef CTXPROF_SIGBUS_GUARD_H
#define CTXPROF_SIGBUS_GUARD_H

#include <stdint.h>

/* Install the process-wide SIGBUS handler once (later calls do nothing). Only faults of kind
 * BUS_ADRERR (an access past the end of a mapped file) are repaired; any other SIGBUS keeps
 * its default action. Every file mapping in ctxprof is read-only input, so a page of zeros
 * never hides lost output. 0 or -errno. */
int sigbus_guard_install(void);
/* How many pages the guard has replaced with zeros since start. */
uint64_t sigbus_guard_repaired(void);

#endif

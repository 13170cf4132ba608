/* SPDX-License-Identifier: MIT */
/*
 * util/proc_id.h — the id a /proc directory entry names: a process in /proc, a thread in
 * /proc/PID/task. One rule for every reader of those directories. Never prints.
 */
#ifndef CTXPROF_UTIL_PROC_ID_H
#define CTXPROF_UTIL_PROC_ID_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

/* The pid or tid entry name spells (all decimal digits, 1 to INT32_MAX), or 0 for ".", ".."
 * and every other entry ("self", "sys", ...). */
static inline pid_t proc_id(const char *name)
{
        char *end;
        long v = strtol(name, &end, 10);

        return *name && !*end && v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

#endif

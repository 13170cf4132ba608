/* SPDX-License-Identifier: MIT */
/*
 * perf_map.h — a JIT runtime's perf map (/tmp/perf-PID.map, the convention perf reads: one
 * line `START SIZE name` per compiled function, START and SIZE in hex, appended as the
 * runtime compiles; written by node --perf-basic-prof, the JVM's Compiler.perfmap, Python
 * -X perf, .NET, LuaJIT) naming the ips of a process's anonymous executable memory.
 *
 * The file is the target's (hostile input): opened only through util/target_named_open.h (in
 * the target's root, as /tmp/perf-NSPID.map with its pid in its own namespace; a regular file
 * owned by the target's user), read with pread only (never blocks: a regular file, opened
 * O_NONBLOCK), at most PERF_MAP_MAX_BYTES bytes and PERF_MAP_MAX_ENTRIES entries of one map
 * (then the rest is ignored: target_stats.perf_map_full), and all maps together within the
 * perf-map budget and their user's share of it (stack/perf_map_budget.h), lines of at most
 * PERF_MAP_LINE_MAX
 * bytes (longer ones, and lines that are not `START SIZE name`, are skipped:
 * target_stats.perf_map_bad_lines). Re-read as the runtime appends: only the new complete
 * lines are parsed; a file that shrank is read again from its start. Never prints.
 *
 * A struct perf_map is used by one thread at a time (the symbolizer holds its lock).
 */
#ifndef CTXPROF_PERF_MAP_H
#define CTXPROF_PERF_MAP_H

#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

/* The module path a process's perf map is registered under (stack/modules.h): frames of its
 * anonymous executable memory are (this module, raw address). Brackets: no mapped file has
 * such a path in /proc/PID/maps (the kernel's own names are [heap], [anon:NAME], ...). */
#define PERF_MAP_MODULE "[perf-map]"

#define PERF_MAP_MAX_BYTES   (16u << 20)  /* bytes of one perf map read */
#define PERF_MAP_MAX_ENTRIES (256u << 10) /* entries of one perf map kept */
#define PERF_MAP_LINE_MAX    4096         /* bytes of one line (the name is the most of it) */

/* Where a perf map found is: its file's identity (the module registry's key). */
struct perf_map_file {
        dev_t dev;
        ino_t ino;
};
/* A readable descriptor of pid's perf map (util/target_named_open.h: a regular file owned by
 * the target's user, on no FUSE mount) and its identity into out, or -errno (-ENOENT: the
 * process writes none). The path lookup may wait on a FUSE mount the target's /tmp is: call
 * it off the sampling loop (a target job with a deadline, engine/procs.c). */
int perf_map_find(pid_t pid, struct perf_map_file *out, struct target_stats *st);

struct perf_map;
/* A perf map read from fd (owned from now on, also on failure), charged to the budget of
 * the file's owner (stack/perf_map_budget.h); nothing is read yet. NULL: -ENOMEM, or fd is
 * not a descriptor. */
struct perf_map *perf_map_new(int fd);
void perf_map_free(struct perf_map *);
/* Parse what the runtime appended since the last call (refusals counted in st, may be NULL):
 * 0 or -errno (-ENOMEM: what was parsed so far is kept). Each read of at most 64 KiB is
 * charged first to the process-wide perf-map budget (stack/perf_map_budget.h); one the budget
 * or the owner's share refuses ends this call (target_stats.perf_map_budget, once until a
 * read fits again), and the rest is read at a later call when there is room. */
int perf_map_update(struct perf_map *, struct target_stats *st);
/* The name of the entry covering addr (the latest written, for equal starts), as written;
 * NULL if none. Valid until the next perf_map_update or perf_map_free. */
const char *perf_map_lookup(struct perf_map *, uint64_t addr);

#endif

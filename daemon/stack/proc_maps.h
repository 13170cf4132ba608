/* SPDX-License-Identifier: MIT */
/*
 * proc_maps.h — one process's executable mappings, turning instruction addresses into
 * (module, file offset) frames while the mapping is known. Reads /proc/PID/maps
 * (util/maps_line.h, lines capped) and opens mapped files only through util/target_open.h
 * (map_files, else the path under the target's root; a regular file with the line's
 * dev:inode) to read build ids, so containers and deleted files work. Anonymous executable
 * memory (a JIT's code) is the module of the process's perf map when it writes one
 * (stack/perf_map.h: found by the caller off the sampling loop, parsed only by the
 * symbolizer). Refusals are counted in the registry's target_stats. Never prints; never
 * reads process memory.
 *
 * Each mapping of the table holds a reference on its module (stack/modules.h): a module lives
 * while some process's table maps it.
 * A struct proc_maps is used by one thread at a time (the sampler's consumer); the modules
 * registry it feeds is thread-safe.
 */
#ifndef CTXPROF_PROC_MAPS_H
#define CTXPROF_PROC_MAPS_H

#include <stdint.h>
#include <sys/types.h>

#include "stack/frame.h"
#include "stack/modules.h"

/* Executable mappings of one process that get a module (more are UNKNOWN, counted in the
 * registry's target_full): what one process can make the module registry hold. */
#define PROC_MAPS_MAX_MODULES 4096

/* A miss re-reads /proc/PID/maps at most this often. */
#define PROC_MAPS_REFRESH_NS 50000000ull /* 50 ms */
/* ... and a process whose last read took more than MAPS_BUDGET_CHEAP_NS reads at most every
 * this many times that (at most 1/PROC_MAPS_COST_RATIO of the loop's time, however many
 * mappings it makes). Every read of every process is also put off while the registry's
 * budget is spent (stack/maps_budget.h), never waited for; a read put off is counted in the
 * registry's target_stats (maps_deferred). */
#define PROC_MAPS_COST_RATIO 20
/* A process with anonymous executable memory and no perf map found: asked for again at most
 * this often (proc_maps_perf_map_wanted; stack/perf_map.h). */
#define PROC_MAPS_PERF_MAP_RETRY_NS 1000000000ull /* 1 s */

struct proc_maps;
struct proc_pin;

/* Reads the maps now. -ESRCH no such process, -EACCES, -ENOMEM, -EAGAIN put off (over the
 * registry's maps budget: open again later). */
int proc_maps_open(struct modules *, pid_t pid, struct proc_maps **out);
/* The same for the process pin pins (util/proc_pin.h; the table keeps its own dup): every
 * read of its maps, its mapped files and its perf map is then checked to be that process's;
 * once its pid is another process's the reads fail (-ESRCH, counted pid_recycled in the
 * registry's target_stats) and the last table is kept. proc_maps_open pins pid itself. */
int proc_maps_open_pinned(struct modules *, const struct proc_pin *pin, struct proc_maps **out);
/* ip -> frame (module id + file offset); re-reads /proc/PID/maps on a miss (rate-limited);
 * an ip in an anonymous executable region (JIT) -> {ip, the process's perf-map module}
 * once the caller handed it over (proc_maps_set_perf_map; read by the symbolizer), else
 * {ip, UNKNOWN} and the perf map is wanted (proc_maps_perf_map_wanted); an unmapped ip ->
 * {ip, UNKNOWN}.
 * Returns 0 (also for unknown ips) or -EINVAL. out->flags is set to 0. */
int proc_maps_resolve(struct proc_maps *, uint64_t ip, struct ctxprof_frame *out);
void proc_maps_free(struct proc_maps *);

/* The process's perf map, looked for by the caller off the sampling loop (a path the target
 * names: perf_map_find in a target job, which may stall on a FUSE lookup). 1 when a sample
 * landed in anonymous executable memory and no perf map is known nor was looked for in the
 * last PROC_MAPS_PERF_MAP_RETRY_NS. */
int proc_maps_perf_map_wanted(const struct proc_maps *);
/* The caller looks for it now: not wanted again before PROC_MAPS_PERF_MAP_RETRY_NS after now. */
void proc_maps_perf_map_looked(struct proc_maps *, uint64_t now);
/* Found: registers fd (perf_map_find's, taken: closed here, also on failure) as the
 * process's perf-map module. 0 or -errno (modules_intern's). */
struct perf_map_file;
int proc_maps_set_perf_map(struct proc_maps *, int fd, const struct perf_map_file *f);
/* Re-read /proc/PID/maps now (no 50 ms limit; the process's share and the budget still
 * apply): 0 or -errno, -EAGAIN put off (the old table is kept either way). */
int proc_maps_refresh(struct proc_maps *);

/* One executable mapping as the table holds it. */
struct proc_maps_entry {
        uint64_t start, end, pgoff;
        uint32_t module_id; /* CTXPROF_MODULE_UNKNOWN: anonymous or unreadable file */
};
/* The executable mappings, sorted by start; stops when cb returns non-zero and returns it. */
int proc_maps_foreach(const struct proc_maps *, int (*cb)(const struct proc_maps_entry *, void *),
                      void *arg);

/* Counters for the caller's statistics. */
struct proc_maps_stats {
        uint64_t refreshes; /* successful re-reads after the first */
        uint64_t misses;    /* resolves that ended as UNKNOWN */
};
void proc_maps_stats(const struct proc_maps *, struct proc_maps_stats *out);

#endif

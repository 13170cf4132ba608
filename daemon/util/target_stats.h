/* SPDX-License-Identifier: MIT */
/*
 * util/target_stats.h — what the daemon refused of the text and files a target process
 * names, by reason: one struct a caller owns (the module registry, the unwinder, the
 * sampler, the target selector) and passes to the readers in util/ (proc_lines.h,
 * maps_line.h, target_open.h), which count into it. Counters are added atomically (relaxed),
 * so one struct may be shared by threads. Never prints.
 */
#ifndef CTXPROF_UTIL_TARGET_STATS_H
#define CTXPROF_UTIL_TARGET_STATS_H

#include <stdint.h>

struct target_stats {
        uint64_t lines_too_long; /* /proc lines longer than their cap: consumed, never parsed */
        uint64_t opened;         /* target files opened: regular, dev/inode as the maps line */
        uint64_t opened_by_path; /* of those, by path under the target's root (map_files refused) */
        uint64_t no_mapping;  /* the maps line's range is not mapped (forged line, or unmapped) */
        uint64_t not_regular; /* a FIFO, device, socket or directory: refused */
        uint64_t mismatch;    /* another file than the maps line's dev:inode: refused */
        uint64_t unresolved;  /* the path does not resolve inside the target's root */
        uint64_t open_failed; /* the checked file could not be reopened readable */
        uint64_t not_owner;   /* a file named by convention (a perf map) owned by another user */
        uint64_t perf_map_bad_lines; /* perf-map lines not `START SIZE name` or too long */
        uint64_t perf_map_full; /* perf maps read up to PERF_MAP_MAX_BYTES/_ENTRIES, rest ignored */
        uint64_t perf_map_budget; /* perf-map reads refused: every map's budget or the user's
                                   * share of it spent (stack/perf_map_budget.h) */
        uint64_t on_fuse;       /* a file on a FUSE mount (or an anonymous-device mount the target's
                                 * mountinfo does not list): refused, its reads could block forever */
        uint64_t maps_deferred; /* /proc/PID/maps reads put off: over the loop's time budget for
                                 * them (stack/maps_budget.h), or the process's own share */
        uint64_t pid_recycled;  /* reads of a pinned target refused: its pid is another
                                 * process's now (util/proc_pin.h) */
};

/* *counter += 1 when the caller gave a stats struct (counter points into it), else nothing. */
static inline void target_stats_count(uint64_t *counter)
{
        if (counter)
                __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* The address of a counter in st, or NULL when st is NULL (no one counts). */
#define TARGET_STATS_FIELD(st, f) ((st) ? &(st)->f : (uint64_t *)0)

/* *dst += *src, field by field (for a caller summing the structs it owns). */
static inline void target_stats_add(struct target_stats *dst, const struct target_stats *src)
{
        const uint64_t *s = (const uint64_t *)src;
        uint64_t *d = (uint64_t *)dst;

        for (unsigned i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
                d[i] += __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

#endif

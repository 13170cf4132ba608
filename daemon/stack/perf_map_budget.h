/* SPDX-License-Identifier: MIT */
/*
 * perf_map_budget.h — the memory every parsed perf map of this process may hold together
 * (stack/perf_map.h: entries and names, which grow with what targets write), and the share
 * of it one user may hold: the owner of a map's file (perf maps are refused unless owned by
 * the target's user). Without it each map was bounded alone, and 110 processes with 16 MiB
 * maps took the daemon to 1.87 GB; now all of them take at most PERF_MAP_BUDGET_BYTES, and
 * one user's processes at most PERF_MAP_USER_SHARE of that, so other users' maps still
 * parse while one user floods.
 *
 * A map charges what a read may add before it reads, and gives back what it did not use;
 * what it holds is given back when it is reset or freed. A charge that does not fit is
 * refused (the map keeps what it has and is read on at a later lookup, when there is room):
 * the caller counts it (target_stats.perf_map_budget). Users are tracked exactly, up to
 * PERF_MAP_BUDGET_USERS holding bytes at once (a charge for one more is refused).
 *
 * Thread safety: any thread (one lock, taken once per read chunk of a map). Never prints.
 */
#ifndef CTXPROF_PERF_MAP_BUDGET_H
#define CTXPROF_PERF_MAP_BUDGET_H

#include <stdint.h>

#define PERF_MAP_BUDGET_BYTES (128ull << 20) /* every perf map of the process */
#define PERF_MAP_USER_SHARE   (32ull << 20)  /* the perf maps of one user's files */
#define PERF_MAP_BUDGET_USERS 4096           /* users holding bytes at once */

/* Charge bytes to uid: 0, or -ENOSPC when the budget or uid's share would be exceeded
 * (nothing charged). */
int perf_map_budget_charge(uint32_t uid, uint64_t bytes);
/* Give back bytes charged to uid before. */
void perf_map_budget_release(uint32_t uid, uint64_t bytes);

struct perf_map_budget_stats {
        uint64_t bytes;   /* charged now, all users */
        uint64_t peak;    /* the most ever charged at once */
        uint64_t refused; /* charges refused */
};
void perf_map_budget_get(struct perf_map_budget_stats *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * stack/maps_budget.h — how much wall time the sampling loop may spend reading targets'
 * /proc/PID/maps (stack/proc_maps.c: a process's first read, a re-read on a miss or a
 * library load). A target chooses what that costs: with vm.max_map_count (65,530)
 * executable mappings one read takes ~100 ms here, and every return address it forges in no
 * mapping asks for one. So the reads of all targets share a token bucket of time: it refills
 * at MAPS_BUDGET_SHARE_PCT of wall time up to MAPS_BUDGET_BURST_NS, a read may start while
 * it holds any, and what a read took is charged after (the bucket may go into debt, at most
 * MAPS_BUDGET_DEBT_MAX_NS). A process whose last read was cheap (a new process, or one of
 * at most MAPS_BUDGET_CHEAP_NS) may also read while the debt is under
 * MAPS_BUDGET_RESERVE_NS: targets that map a few hundred files keep reading while others'
 * expensive reads wait for the refill. A read refused is put off (the caller keeps its old
 * table, or none), never waited for.
 *
 * One budget per module registry (modules_maps_budget). Thread-safe. Never prints.
 */
#ifndef CTXPROF_STACK_MAPS_BUDGET_H
#define CTXPROF_STACK_MAPS_BUDGET_H

#include <pthread.h>
#include <stdint.h>

#define MAPS_BUDGET_SHARE_PCT  10          /* of wall time, on average, for every target */
#define MAPS_BUDGET_BURST_NS   500000000ll /* 500 ms: many targets found at once (a start) */
#define MAPS_BUDGET_CHEAP_NS   2000000ll   /* 2 ms: a few thousand mappings */
#define MAPS_BUDGET_RESERVE_NS 250000000ll /* the debt cheap reads may still run in */
/* The most debt one read leaves (a read that blocked): refilled within 50 s. */
#define MAPS_BUDGET_DEBT_MAX_NS 5000000000ll

struct maps_budget {
        pthread_mutex_t lock;
        int64_t tokens_ns; /* < 0: in debt, reads wait for the refill */
        uint64_t last_ns;  /* CLOCK_MONOTONIC of the last refill */
};

/* Full bucket. 0 or -errno. */
int maps_budget_init(struct maps_budget *);
void maps_budget_destroy(struct maps_budget *);
/* 1 when a read expected to take expect_ns (the process's last; 0 for a first) may start at
 * now (CLOCK_MONOTONIC ns), 0 when it is to be put off. */
int maps_budget_allow(struct maps_budget *, uint64_t now, uint64_t expect_ns);
/* A read that started at start took cost_ns. */
void maps_budget_charge(struct maps_budget *, uint64_t start, uint64_t cost_ns);

#endif

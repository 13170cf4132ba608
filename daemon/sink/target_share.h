/* SPDX-License-Identifier: MIT */
/*
 * target_share.h — each target process's share of a sink's per-chunk stores (stacks in the
 * trace table, label-set bytes, thread-table entries), so that one target flooding a store
 * costs that target and not the others. Per store: a global cap, a per-target cap, and a
 * reserve (the top of the global cap that only a target still under a small "light" amount
 * may use: a flood by many processes leaves room for the quiet ones). The shares bite once
 * the store is half full: below that any process may add; above it a process adds only while
 * it holds no more than the average of the processes using the store (and its per-target
 * cap), so a flooding process stops where it is and the others catch up. Usage is counted
 * per process for the current chunk and forgotten at share_new_chunk.
 *
 * Owns a fixed table of per-process usage (SHARE_TARGETS entries, allocated once; untouched
 * pages cost no RAM). Never allocates after share_new, never prints. One thread (the sink's
 * consuming thread) calls everything.
 */
#ifndef CTXPROF_TARGET_SHARE_H
#define CTXPROF_TARGET_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Processes tracked per chunk; further ones share one entry (counted: share_overflow). */
#define SHARE_TARGETS 4096u

enum share_store {
        SHARE_STACKS,      /* new stacks stored in the trace table */
        SHARE_LABEL_BYTES, /* bytes of label sets interned */
        SHARE_THREADS,     /* threads named in the chunk */
        SHARE_STORES
};

/* One store's bounds per chunk. */
struct share_limit {
        uint64_t total;      /* the whole store */
        uint64_t per_target; /* one process */
        uint64_t reserve;    /* the top `reserve` of total: only for processes at <= light */
        uint64_t light;
};

struct target_share;

/* limits[SHARE_STORES]; NULL: ENOMEM or EINVAL (a limit with per_target or light > total). */
struct target_share *share_new(const struct share_limit *limits);
void share_free(struct target_share *t);
/* Forget every process's usage (a new chunk began). */
void share_new_chunk(struct target_share *t);
/* May pid add `amount` to store st, which holds `store_used` now (the caller's count: the
 * trace table's fill, the bytes interned)? Does not count it: share_add does. */
bool share_allows(struct target_share *t, pid_t pid, enum share_store st, uint64_t store_used,
                  uint64_t amount);
void share_add(struct target_share *t, pid_t pid, enum share_store st, uint64_t amount);
/* Usage of pid in this chunk (0 when unknown). */
uint64_t share_used(const struct target_share *t, pid_t pid, enum share_store st);
/* Processes past SHARE_TARGETS that were folded into the shared entry (cumulative). */
uint64_t share_overflow(const struct target_share *t);

#endif

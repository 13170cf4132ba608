/* SPDX-License-Identifier: MIT */
/*
 * perf_map_budget.c — the process-wide budget of parsed perf maps and each user's share of
 * it (see perf_map_budget.h). Owns the per-user table and the totals. Must never print,
 * never allocate (a fixed table), never let a charge through that exceeds either bound.
 */
#include "stack/perf_map_budget.h"

#include <errno.h>
#include <pthread.h>

struct user_share {
        uint32_t uid;
        uint64_t bytes; /* 0: a free slot */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct user_share users[PERF_MAP_BUDGET_USERS];
static struct perf_map_budget_stats totals;

/* uid's slot, or a free one for it (want_free), or NULL. Under lock. */
static struct user_share *slot_of(uint32_t uid, int want_free)
{
        struct user_share *free_slot = NULL;

        for (unsigned i = 0; i < PERF_MAP_BUDGET_USERS; i++) {
                if (users[i].bytes && users[i].uid == uid)
                        return &users[i];
                if (!users[i].bytes && !free_slot)
                        free_slot = &users[i];
        }
        if (!want_free || !free_slot)
                return NULL;
        free_slot->uid = uid;
        return free_slot;
}

int perf_map_budget_charge(uint32_t uid, uint64_t bytes)
{
        int r = 0;

        if (!bytes)
                return 0;
        pthread_mutex_lock(&lock);
        struct user_share *u = slot_of(uid, 1);
        if (!u || bytes > PERF_MAP_BUDGET_BYTES - totals.bytes ||
            bytes > PERF_MAP_USER_SHARE - u->bytes) {
                totals.refused++;
                r = -ENOSPC;
        } else {
                u->bytes += bytes;
                totals.bytes += bytes;
                if (totals.bytes > totals.peak)
                        totals.peak = totals.bytes;
        }
        pthread_mutex_unlock(&lock);
        return r;
}

void perf_map_budget_release(uint32_t uid, uint64_t bytes)
{
        if (!bytes)
                return;
        pthread_mutex_lock(&lock);
        struct user_share *u = slot_of(uid, 0);
        if (u) {
                uint64_t n = bytes < u->bytes ? bytes : u->bytes;
                u->bytes -= n; /* 0: the slot is free again */
                totals.bytes -= n;
        }
        pthread_mutex_unlock(&lock);
}

void perf_map_budget_get(struct perf_map_budget_stats *out)
{
        pthread_mutex_lock(&lock);
        *out = totals;
        pthread_mutex_unlock(&lock);
}

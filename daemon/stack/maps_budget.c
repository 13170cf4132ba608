/* SPDX-License-Identifier: MIT */
/*
 * stack/maps_budget.c — the token bucket of wall time for the loop's /proc/PID/maps reads
 * (maps_budget.h). Owns only its counters; must never read a file, sleep or print.
 */
#include "stack/maps_budget.h"

#include <errno.h>

int maps_budget_init(struct maps_budget *b)
{
        int err = pthread_mutex_init(&b->lock, NULL);
        if (err)
                return -err;
        b->tokens_ns = MAPS_BUDGET_BURST_NS;
        b->last_ns = 0;
        return 0;
}

void maps_budget_destroy(struct maps_budget *b)
{
        pthread_mutex_destroy(&b->lock);
}

/* Add what elapsed since the last refill, at the share, up to the burst. Lock held. */
static void refill(struct maps_budget *b, uint64_t now)
{
        if (!b->last_ns || now <= b->last_ns) {
                if (!b->last_ns)
                        b->last_ns = now;
                return;
        }
        uint64_t add = (now - b->last_ns) / 100 * MAPS_BUDGET_SHARE_PCT;
        b->last_ns = now;
        /* tokens_ns is in [-MAPS_BUDGET_DEBT_MAX_NS, MAPS_BUDGET_BURST_NS]: room >= 0 */
        uint64_t room = (uint64_t)(MAPS_BUDGET_BURST_NS - b->tokens_ns);
        b->tokens_ns = add >= room ? MAPS_BUDGET_BURST_NS : b->tokens_ns + (int64_t)add;
}

int maps_budget_allow(struct maps_budget *b, uint64_t now, uint64_t expect_ns)
{
        pthread_mutex_lock(&b->lock);
        refill(b, now);
        int ok = b->tokens_ns > 0 || (expect_ns <= (uint64_t)MAPS_BUDGET_CHEAP_NS &&
                                      b->tokens_ns > -MAPS_BUDGET_RESERVE_NS);
        pthread_mutex_unlock(&b->lock);
        return ok;
}

void maps_budget_charge(struct maps_budget *b, uint64_t start, uint64_t cost_ns)
{
        pthread_mutex_lock(&b->lock);
        refill(b, start);
        if (cost_ns > (uint64_t)MAPS_BUDGET_DEBT_MAX_NS)
                cost_ns = (uint64_t)MAPS_BUDGET_DEBT_MAX_NS;
        b->tokens_ns -= (int64_t)cost_ns;
        if (b->tokens_ns < -MAPS_BUDGET_DEBT_MAX_NS)
                b->tokens_ns = -MAPS_BUDGET_DEBT_MAX_NS;
        pthread_mutex_unlock(&b->lock);
}

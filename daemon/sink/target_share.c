/* SPDX-License-Identifier: MIT */
/*
 * target_share.c — per-process usage of a sink's per-chunk stores and the rule that bounds
 * it (see target_share.h). Open addressing on the pid with a chunk generation per entry, so
 * a new chunk costs one increment, not a clear of the table. Never allocates after
 * share_new, never prints.
 */
#include "sink/target_share.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SHARE_BUCKETS (2 * SHARE_TARGETS) /* load <= 1/2: short probes */
#define OVERFLOW_PID  ((pid_t)-1)         /* the entry every process past SHARE_TARGETS shares */

struct share_ent {
        pid_t pid;
        uint32_t gen; /* chunk generation it was last used in; other = empty */
        uint64_t used[SHARE_STORES];
};

struct target_share {
        struct share_limit lim[SHARE_STORES];
        struct share_ent *v;          /* SHARE_BUCKETS */
        uint32_t gen, n;              /* this chunk's generation (>= 1) and its entries */
        uint32_t users[SHARE_STORES]; /* entries that hold some of each store */
        uint64_t overflow;
};

struct target_share *share_new(const struct share_limit *limits)
{
        for (int i = 0; i < SHARE_STORES; i++)
                if (limits[i].per_target > limits[i].total || limits[i].light > limits[i].total ||
                    limits[i].reserve > limits[i].total) {
                        errno = EINVAL;
                        return NULL;
                }
        struct target_share *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->v = calloc(SHARE_BUCKETS, sizeof(*t->v));
        if (!t->v) {
                free(t);
                return NULL;
        }
        memcpy(t->lim, limits, sizeof(t->lim));
        t->gen = 1;
        return t;
}

void share_free(struct target_share *t)
{
        if (!t)
                return;
        free(t->v);
        free(t);
}

void share_new_chunk(struct target_share *t)
{
        t->n = 0;
        memset(t->users, 0, sizeof(t->users));
        if (++t->gen == 0) { /* after 2^32 chunks: the old generations must not match */
                memset(t->v, 0, SHARE_BUCKETS * sizeof(*t->v));
                t->gen = 1;
        }
}

static uint32_t bucket_of(pid_t pid)
{
        return ((uint32_t)pid * 2654435761u) & (SHARE_BUCKETS - 1);
}

/* pid's entry in this chunk, or NULL when it has none. */
static struct share_ent *find(const struct target_share *t, pid_t pid)
{
        for (uint32_t h = bucket_of(pid);; h = (h + 1) & (SHARE_BUCKETS - 1)) {
                struct share_ent *e = &t->v[h];
                if (e->gen != t->gen)
                        return NULL;
                if (e->pid == pid)
                        return e;
        }
}

/* pid's entry, created when missing (the shared overflow entry once SHARE_TARGETS are in). */
static struct share_ent *entry(struct target_share *t, pid_t pid)
{
        struct share_ent *e = find(t, pid);

        if (e)
                return e;
        if (t->n >= SHARE_TARGETS - 1 && pid != OVERFLOW_PID) {
                t->overflow++;
                return entry(t, OVERFLOW_PID);
        }
        uint32_t h = bucket_of(pid);
        while (t->v[h].gen == t->gen)
                h = (h + 1) & (SHARE_BUCKETS - 1);
        e = &t->v[h];
        memset(e, 0, sizeof(*e));
        e->pid = pid;
        e->gen = t->gen;
        t->n++;
        return e;
}

bool share_allows(struct target_share *t, pid_t pid, enum share_store st, uint64_t store_used,
                  uint64_t amount)
{
        const struct share_limit *l = &t->lim[st];
        const struct share_ent *e = find(t, pid);

        if (!e && t->n >= SHARE_TARGETS - 1) /* would be folded into the shared entry */
                e = find(t, OVERFLOW_PID);
        uint64_t had = e ? e->used[st] : 0, mine = had + amount, after = store_used + amount;
        uint64_t users = t->users[st] + (had ? 0 : 1);

        if (after > l->total)
                return false;
        if (after <= l->total / 2)
                return true; /* no pressure yet: shares bite once the store is half full */
        if (after > l->total - l->reserve)
                return mine <= l->light;
        /* Under pressure a process adds only while it holds no more than the average of the
         * processes using the store: a flood stops where it is, the others catch up. */
        return mine <= l->per_target && mine * users <= after;
}

void share_add(struct target_share *t, pid_t pid, enum share_store st, uint64_t amount)
{
        struct share_ent *e = entry(t, pid);

        if (!e->used[st] && amount)
                t->users[st]++;
        e->used[st] += amount;
}

uint64_t share_used(const struct target_share *t, pid_t pid, enum share_store st)
{
        const struct share_ent *e = find(t, pid);

        return e ? e->used[st] : 0;
}

uint64_t share_overflow(const struct target_share *t)
{
        return t->overflow;
}

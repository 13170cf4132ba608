/* SPDX-License-Identifier: MIT */
/*
 * test_trace_table.c — single-thread semantics of the trace table: dedup, id layout, drops
 * when full, epochs, preservation across rotations, liveness checkers, clearing, hazard-slot
 * exhaustion (slots held by helper threads). Concurrency lives in tsan_trace_table.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sink/hazard.h"
#include "sink/trace_table.h"

/* A deterministic stack: n frames derived from `seed`. */
static void make_stack(struct ctxprof_frame *f, uint32_t n, uint64_t seed)
{
        for (uint32_t i = 0; i < n; i++) {
                uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
                f[i].offset = x >> 12;
                f[i].module_id = CTXPROF_MODULE_FIRST + (uint32_t)(x % 7);
                f[i].flags = i ? CTXPROF_FRAME_RETADDR : 0;
        }
}

/* Collects what a rotation hands out. */
#define MAXREC 4096
struct got {
        unsigned n;
        uint64_t id[MAXREC];
        uint32_t nframes[MAXREC];
        bool truncated[MAXREC];
        struct ctxprof_frame frames[MAXREC][8];
};

static void collect(void *ctx, uint64_t id, const struct ctxprof_frame *frames, uint32_t n,
                    bool truncated)
{
        struct got *g = ctx;
        cr_assert_lt(g->n, MAXREC);
        cr_assert_neq(id, TRACE_DROPPED_ID);
        g->id[g->n] = id;
        g->nframes[g->n] = n;
        g->truncated[g->n] = truncated;
        memcpy(g->frames[g->n], frames, (n < 8 ? n : 8) * sizeof(*frames));
        g->n++;
}

static int find(const struct got *g, uint64_t id)
{
        int at = -1;
        for (unsigned i = 0; i < g->n; i++)
                if (g->id[i] == id) {
                        cr_assert_eq(at, -1, "id %#lx handed out twice in one rotation", id);
                        at = (int)i;
                }
        return at;
}

static struct trace_table *new_table(uint32_t capacity, uint64_t arena, uint32_t slots)
{
        struct trace_table_config c = {
            .capacity = capacity, .arena_bytes = arena, .hazard_slots = slots};
        struct trace_table *tt = trace_table_new(&c);
        cr_assert_not_null(tt, "trace_table_new: %s", strerror(errno));
        return tt;
}

Test(trace_table, dedup_and_key)
{
        struct trace_table *tt = new_table(64, 0, 0);
        struct ctxprof_frame a[8], b[8];
        make_stack(a, 8, 1);
        memcpy(b, a, sizeof(a));

        uint64_t ia = trace_table_put(tt, a, 8, false);
        cr_assert_neq(ia, TRACE_DROPPED_ID);
        cr_assert_eq(trace_table_put(tt, b, 8, false), ia, "equal stack, same epoch: one id");
        cr_assert_neq(trace_table_put(tt, a, 8, true), ia, "truncated flag is part of the key");
        cr_assert_neq(trace_table_put(tt, a, 7, false), ia, "length is part of the key");
        b[3].module_id ^= 1;
        cr_assert_neq(trace_table_put(tt, b, 8, false), ia, "module id is part of the key");
        memcpy(b, a, sizeof(a));
        b[7].flags ^= CTXPROF_FRAME_KERNEL;
        cr_assert_neq(trace_table_put(tt, b, 8, false), ia, "frame flags are part of the key");
        memcpy(b, a, sizeof(a));
        b[0].offset++;
        cr_assert_neq(trace_table_put(tt, b, 8, false), ia, "offset is part of the key");

        /* The empty stack is a valid key (an unwind that produced nothing). */
        uint64_t ie = trace_table_put(tt, NULL, 0, true);
        cr_assert_neq(ie, TRACE_DROPPED_ID);
        cr_assert_eq(trace_table_put(tt, NULL, 0, true), ie);
        cr_assert_neq(trace_table_put(tt, NULL, 0, false), ie);

        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        cr_assert_eq(s.puts, 10);
        cr_assert_eq(s.inserts, 8);
        cr_assert_eq(s.hits, 2);
        cr_assert_eq(s.dropped, 0);
        cr_assert_eq(s.active_fill, 8);
        trace_table_free(tt);
}

Test(trace_table, id_layout)
{
        struct trace_table *tt = new_table(1000, 0, 0);
        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        cr_assert_eq(s.epoch, 1, "epochs start at 1");
        cr_assert_eq(s.index_buckets, 2048, "power of two >= capacity * 4/3");

        uint64_t seen[1000];
        for (unsigned i = 0; i < 1000; i++) {
                struct ctxprof_frame f[4];
                make_stack(f, 4, i);
                seen[i] = trace_table_put(tt, f, 4, false);
                cr_assert_eq(trace_id_epoch(seen[i]), 1);
                cr_assert_lt(trace_id_slot(seen[i]), s.index_buckets);
                for (unsigned j = 0; j < i; j++)
                        cr_assert_neq(seen[j], seen[i], "distinct stacks, distinct ids");
        }
        trace_table_free(tt);
}

Test(trace_table, dropped_when_full)
{
        struct trace_table *tt = new_table(8, 0, 0);
        struct ctxprof_frame f[4];
        uint64_t ids[8];
        for (unsigned i = 0; i < 8; i++) {
                make_stack(f, 4, i);
                ids[i] = trace_table_put(tt, f, 4, false);
                cr_assert_neq(ids[i], TRACE_DROPPED_ID);
        }
        make_stack(f, 4, 100);
        cr_assert_eq(trace_table_put(tt, f, 4, false), TRACE_DROPPED_ID, "table full");
        for (unsigned i = 0; i < 8; i++) {
                make_stack(f, 4, i);
                cr_assert_eq(trace_table_put(tt, f, 4, false), ids[i], "hits still work when full");
        }
        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        cr_assert_eq(s.dropped_table_full, 1);
        cr_assert_eq(s.dropped, 1);

        /* After a rotation the new ACTIVE has room again. */
        cr_assert_eq(trace_table_rotate(tt, NULL, NULL), 0);
        cr_assert_neq(trace_table_put(tt, f, 4, false), TRACE_DROPPED_ID);
        trace_table_free(tt);

        /* Arena full: room for two 4-frame records (88 bytes each), not three. */
        tt = new_table(64, 2 * (24 + 4 * 16) + 40, 0);
        for (unsigned i = 0; i < 2; i++) {
                make_stack(f, 4, i);
                cr_assert_neq(trace_table_put(tt, f, 4, false), TRACE_DROPPED_ID);
        }
        make_stack(f, 4, 2);
        cr_assert_eq(trace_table_put(tt, f, 4, false), TRACE_DROPPED_ID, "arena full");
        cr_assert_neq(trace_table_put(tt, f, 1, false), TRACE_DROPPED_ID, "a small one still fits");
        trace_table_stats(tt, &s);
        cr_assert_eq(s.dropped_arena_full, 1);
        cr_assert_eq(s.dropped_table_full, 0);
        trace_table_free(tt);
}

Test(trace_table, invalid_input_is_dropped)
{
        struct trace_table_config c = {.capacity = 16, .max_frames = 4};
        struct trace_table *tt = trace_table_new(&c);
        cr_assert_not_null(tt);
        struct ctxprof_frame f[5];
        make_stack(f, 5, 1);
        cr_assert_eq(trace_table_put(tt, f, 5, false), TRACE_DROPPED_ID);
        cr_assert_eq(trace_table_put(tt, NULL, 3, false), TRACE_DROPPED_ID);
        cr_assert_neq(trace_table_put(tt, f, 4, false), TRACE_DROPPED_ID);
        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        cr_assert_eq(s.dropped_invalid, 2);
        trace_table_free(tt);

        struct trace_table_config bad = {.hazard_slots = 3};
        errno = 0;
        cr_assert_null(trace_table_new(&bad));
        cr_assert_eq(errno, EINVAL);
        struct trace_table_config huge = {.capacity = (1u << 30) + 1};
        cr_assert_null(trace_table_new(&huge));
        cr_assert_eq(errno, EINVAL);
        trace_table_free(NULL);
}

Test(trace_table, epochs_grow_and_clear_really_clears)
{
        struct trace_table *tt = new_table(32, 0, 0);
        struct ctxprof_frame f[6];
        make_stack(f, 6, 42);
        uint64_t prev = 0;
        static struct got g;
        for (uint32_t r = 0; r < 50; r++) {
                uint64_t id = trace_table_put(tt, f, 6, false);
                cr_assert_eq(trace_id_epoch(id), r + 1, "epoch %u after %u rotations", r + 1, r);
                cr_assert_neq(id, prev, "a new epoch never reuses an id");
                prev = id;
                g.n = 0;
                cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
                cr_assert_eq(g.n, 1, "exactly the one stack of the old ACTIVE");
                cr_assert_eq(g.id[0], id);
                struct trace_table_stats s;
                trace_table_stats(tt, &s);
                cr_assert_eq(s.epoch, r + 2);
                cr_assert_eq(s.active_fill, 0, "the new ACTIVE is empty");
                cr_assert_eq(s.active_arena_used, 0, "and its arena is reset");
                cr_assert_eq(s.standby_fill, 0, "nothing kept without checkers");
                cr_assert_eq(s.rotations, r + 1);
        }
        /* Two rotations with no puts: nothing left anywhere. */
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(g.n, 0, "cleared tables hand out nothing");
        trace_table_free(tt);
}

/* Keeps the ids listed in ctx. */
struct keep_set {
        unsigned n;
        uint64_t ids[16];
        unsigned calls;
};
static bool keep_listed(void *ctx, uint64_t id)
{
        struct keep_set *k = ctx;
        k->calls++;
        for (unsigned i = 0; i < k->n; i++)
                if (k->ids[i] == id)
                        return true;
        return false;
}

Test(trace_table, preserved_ids_stable_across_rotations)
{
        struct trace_table *tt = new_table(64, 0, 0);
        struct ctxprof_frame a[5], b[3], c[7];
        make_stack(a, 5, 1);
        make_stack(b, 3, 2);
        make_stack(c, 7, 3);
        uint64_t ia = trace_table_put(tt, a, 5, true);
        uint64_t ib = trace_table_put(tt, b, 3, false);
        uint64_t ic = trace_table_put(tt, c, 7, false);
        struct keep_set keep = {.n = 1, .ids = {ia}};
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_listed, &keep), 0);

        static struct got g;
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(g.n, 3);
        cr_assert_geq(find(&g, ia), 0);
        cr_assert_geq(find(&g, ib), 0);
        cr_assert_geq(find(&g, ic), 0);
        cr_assert_eq(keep.calls, 3, "the checker sees every handed-out trace");

        for (int r = 0; r < 200; r++) {
                /* New traffic every rotation, including stack a again: a new epoch gives it a new
                 * id, while the kept one keeps its old id. */
                uint64_t ia2 = trace_table_put(tt, a, 5, true);
                cr_assert_neq(ia2, ia);
                struct ctxprof_frame d[2];
                make_stack(d, 2, 1000 + r);
                uint64_t id_d = trace_table_put(tt, d, 2, false);
                g.n = 0;
                cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
                cr_assert_eq(g.n, 3, "kept a + new a + d");
                int at = find(&g, ia);
                cr_assert_geq(at, 0, "kept trace handed out again in rotation %d", r);
                cr_assert_eq(g.nframes[at], 5);
                cr_assert(g.truncated[at]);
                cr_assert_eq(memcmp(g.frames[at], a, 5 * sizeof(a[0])), 0, "kept frames intact");
                cr_assert_geq(find(&g, ia2), 0);
                cr_assert_geq(find(&g, id_d), 0);
                cr_assert_lt(find(&g, ib), 0, "not kept: gone");
                struct trace_table_stats s;
                trace_table_stats(tt, &s);
                cr_assert_eq(s.last_preserved, 1);
                cr_assert_eq(s.standby_fill, 1);
        }
        /* Stop keeping it: handed out once more (it was kept by the last rotation), then gone. */
        keep.n = 0;
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_geq(find(&g, ia), 0);
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(g.n, 0);
        trace_table_free(tt);
}

static bool keep_odd_slot(void *ctx, uint64_t id)
{
        (void)ctx;
        return trace_id_slot(id) & 1;
}
static bool keep_none(void *ctx, uint64_t id)
{
        (void)ctx;
        (void)id;
        return false;
}

Test(trace_table, liveness_checkers_union)
{
        struct trace_table *tt = new_table(256, 0, 0);
        struct keep_set keep = {0};
        cr_assert_eq(trace_table_add_liveness_checker(tt, NULL, NULL), -EINVAL);
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_none, NULL), 0);
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_odd_slot, NULL), 0);
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_listed, &keep), 0);
        for (int i = 3; i < TRACE_TABLE_MAX_CHECKERS; i++)
                cr_assert_eq(trace_table_add_liveness_checker(tt, keep_none, NULL), 0);
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_none, NULL), -ENOSPC);

        uint64_t ids[100];
        unsigned odd = 0;
        for (unsigned i = 0; i < 100; i++) {
                struct ctxprof_frame f[3];
                make_stack(f, 3, i);
                ids[i] = trace_table_put(tt, f, 3, false);
                odd += trace_id_slot(ids[i]) & 1;
        }
        /* The listed checker adds two even-slot ids. */
        for (unsigned i = 0; i < 100 && keep.n < 2; i++)
                if (!(trace_id_slot(ids[i]) & 1))
                        keep.ids[keep.n++] = ids[i];

        static struct got g;
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(g.n, 100);
        g.n = 0;
        cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
        cr_assert_eq(g.n, odd + 2, "kept: odd slots (checker 2) plus two listed (checker 3)");
        for (unsigned i = 0; i < 100; i++) {
                bool want =
                    (trace_id_slot(ids[i]) & 1) || ids[i] == keep.ids[0] || ids[i] == keep.ids[1];
                cr_assert_eq(find(&g, ids[i]) >= 0, want, "id %#lx", ids[i]);
        }
        trace_table_free(tt);
}

Test(trace_table, preserve_overflow_is_counted)
{
        struct trace_table *tt = new_table(4, 0, 0);
        cr_assert_eq(trace_table_add_liveness_checker(tt, keep_odd_slot, NULL), 0);
        static struct got g;
        /* Fill ACTIVE with 4 traces per rotation; keep those with odd slots. STANDBY holds at
         * most 4, so after a few rotations some live traces cannot be kept: counted. */
        uint64_t lost = 0;
        for (int r = 0; r < 40; r++) {
                for (int i = 0; i < 4; i++) {
                        struct ctxprof_frame f[2];
                        make_stack(f, 2, (uint64_t)r * 10 + i);
                        trace_table_put(tt, f, 2, false);
                }
                g.n = 0;
                cr_assert_eq(trace_table_rotate(tt, collect, &g), 0);
                struct trace_table_stats s;
                trace_table_stats(tt, &s);
                cr_assert_leq(s.standby_fill, 4);
                lost = s.preserve_dropped;
        }
        cr_assert_gt(lost, 0);
        trace_table_free(tt);
}

/* rotate is not reentrant: a processor that rotates gets -EBUSY. */
struct reenter {
        struct trace_table *tt;
        int rc;
};
static void rotate_inside(void *ctx, uint64_t id, const struct ctxprof_frame *f, uint32_t n, bool t)
{
        (void)id, (void)f, (void)n, (void)t;
        struct reenter *r = ctx;
        r->rc = trace_table_rotate(r->tt, NULL, NULL);
}

Test(trace_table, rotate_busy)
{
        struct trace_table *tt = new_table(16, 0, 0);
        struct ctxprof_frame f[1];
        make_stack(f, 1, 1);
        trace_table_put(tt, f, 1, false);
        struct reenter r = {.tt = tt, .rc = 0};
        cr_assert_eq(trace_table_rotate(tt, rotate_inside, &r), 0);
        cr_assert_eq(r.rc, -EBUSY);
        trace_table_free(tt);
}

/* Hazard-slot exhaustion: helper threads hold every slot of a 4-slot table. */
struct holder {
        struct hazard_domain *hz;
        pthread_barrier_t *held, *done;
        int slot;
};
static void *hold_slot(void *arg)
{
        struct holder *h = arg;
        h->slot = hazard_acquire(h->hz, NULL);
        pthread_barrier_wait(h->held);
        pthread_barrier_wait(h->done);
        if (h->slot >= 0)
                hazard_release(h->hz, h->slot);
        return NULL;
}

Test(trace_table, hazard_exhaustion_degrades_gracefully)
{
        enum { SLOTS = 4 };
        struct trace_table *tt = new_table(16, 0, SLOTS);
        struct hazard_domain *hz = trace_table_hazards(tt);
        cr_assert_eq(hazard_domain_slots(hz), SLOTS);
        pthread_barrier_t held, done;
        pthread_barrier_init(&held, NULL, SLOTS + 1);
        pthread_barrier_init(&done, NULL, SLOTS + 1);
        struct holder h[SLOTS];
        pthread_t th[SLOTS];
        for (int i = 0; i < SLOTS; i++) {
                h[i] = (struct holder){.hz = hz, .held = &held, .done = &done};
                cr_assert_eq(pthread_create(&th[i], NULL, hold_slot, &h[i]), 0);
        }
        pthread_barrier_wait(&held);
        for (int i = 0; i < SLOTS; i++)
                cr_assert_geq(h[i].slot, 0, "4 threads fit in 4 slots (full probe cycle)");

        struct ctxprof_frame f[3];
        make_stack(f, 3, 7);
        cr_assert_eq(trace_table_put(tt, f, 3, false), TRACE_DROPPED_ID, "no slot: dropped");
        cr_assert_eq(hazard_release(hz, h[0].slot), false, "a slot is released only by its owner");
        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        cr_assert_eq(s.dropped_no_hazard, 1);
        cr_assert_geq(s.hazard_collisions, SLOTS);
        /* Rotation is not blocked by slots that protect nothing. */
        cr_assert_eq(trace_table_rotate(tt, NULL, NULL), 0);

        pthread_barrier_wait(&done);
        for (int i = 0; i < SLOTS; i++)
                pthread_join(th[i], NULL);
        uint64_t id = trace_table_put(tt, f, 3, false);
        cr_assert_neq(id, TRACE_DROPPED_ID, "slots free again: stored");
        cr_assert_eq(trace_id_epoch(id), 2);
        pthread_barrier_destroy(&held);
        pthread_barrier_destroy(&done);
        trace_table_free(tt);
}

Test(trace_table, hazard_domain_basics)
{
        cr_assert_null(hazard_domain_new(6));
        struct hazard_domain *d = hazard_domain_new(0);
        cr_assert_not_null(d);
        cr_assert_eq(hazard_domain_slots(d), TRACE_HAZARD_SLOTS);
        int s = hazard_acquire(d, NULL);
        cr_assert_geq(s, 0);
        cr_assert_not(hazard_in_use(d, 77));
        hazard_protect(d, s, 77);
        cr_assert(hazard_in_use(d, 77));
        cr_assert(hazard_release(d, s));
        cr_assert_not(hazard_in_use(d, 77));
        cr_assert_eq(hazard_wait_clear(d, 77), 0);
        hazard_domain_free(d);
}

/* A put that may not insert still finds a stored stack, refuses a new one (counted as
 * dropped_share, nothing stored), and says which puts inserted. */
Test(trace_table, put_share_refuses_only_new_stacks)
{
        struct trace_table_config c = {.capacity = 64};
        struct trace_table *tt = trace_table_new(&c);
        struct ctxprof_frame a[4], b[4];
        struct trace_table_stats st;
        bool ins = true;

        cr_assert_not_null(tt);
        make_stack(a, 4, 1);
        make_stack(b, 4, 2);
        uint64_t ida = trace_table_put_share(tt, a, 4, false, true, &ins);
        cr_assert_neq(ida, TRACE_DROPPED_ID);
        cr_assert(ins);
        cr_assert_eq(trace_table_fill(tt), 1);
        cr_assert_eq(trace_table_put_share(tt, a, 4, false, false, &ins), ida, "a hit is served");
        cr_assert_not(ins);
        cr_assert_eq(trace_table_put_share(tt, b, 4, false, false, &ins), TRACE_DROPPED_ID);
        cr_assert_not(ins);
        cr_assert_eq(trace_table_fill(tt), 1, "the refused stack took no slot");
        trace_table_stats(tt, &st);
        cr_assert_eq(st.dropped_share, 1);
        cr_assert_eq(st.dropped, 1);
        cr_assert_eq(st.inserts, 1);
        cr_assert_eq(trace_table_capacity(tt), 64);
        trace_table_free(tt);
}

/* SPDX-License-Identifier: MIT */
/*
 * trace_table.c — triple-buffered stack dedup table (see trace_table.h and
 * docs/trace-table.md). Owns three fixed-size tables (hash index + frame arena each), the
 * ACTIVE/STANDBY/SCRATCH roles and the counters. Must never allocate or block in put,
 * never hand the processor a pointer into memory that is being cleared, never return an id
 * whose stack is not the caller's, never print.
 *
 * Concurrency in one paragraph. `state` names the ACTIVE table and its epoch in one word
 * (epoch << 32 | table index); the epoch doubles as the generation counter: it grows with
 * every rotation, so a state word is never reused and a put that read an old one cannot be
 * fooled by the same table coming back to ACTIVE (ABA). A put publishes the word it read in
 * a hazard slot and re-reads `state`; only if unchanged does it touch that table. The
 * rotator exchanges `state` and then waits until no hazard slot holds the old word (hazard.c
 * has the seq_cst argument). After that wait the old ACTIVE is the rotator's alone. Inside
 * ACTIVE, puts only ever add: a record is written into a private arena range, then published
 * by a CAS of its index bucket from 0 (release); readers load buckets with acquire.
 */
#include "sink/trace_table.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>

#include "sink/hazard.h"
#include "util/clock.h"

#define XXH_INLINE_ALL /* header-only use of libxxhash-dev: nothing to link */
#include <xxhash.h>

#define DEFAULT_CAPACITY         16384u
#define MAX_CAPACITY             (1u << 30)
#define DEFAULT_FRAMES_PER_TRACE 32u
/* A put whose ACTIVE table changes between its read and its re-read retries this often
 * before dropping; each retry needs a whole rotation to slip in between two loads. */
#define VALIDATE_TRIES 8

/* One stored stack. Written once by the put that allocated it, before publication; never
 * modified while reachable from an ACTIVE index. */
struct tt_rec {
        uint64_t hash;
        uint64_t id;
        uint32_t n;
        uint32_t truncated;
        struct ctxprof_frame frames[];
};
_Static_assert(sizeof(struct tt_rec) == 24, "record header is 3 words");
_Static_assert(sizeof(struct ctxprof_frame) == 16, "frames are hashed as bytes: no padding");

/* Index bucket: 0 = empty, else (hash & 0xffffffff00000000) | (arena offset / 8 + 1). The
 * hash half filters mismatches without touching the arena; the offset half is never 0. */
#define BUCKET_HASH_MASK 0xffffffff00000000ull
#define MAX_ARENA_BYTES  ((uint64_t)0xfffffffeull * 8)

struct tt_table {
        _Atomic uint64_t *index;     /* buckets entries */
        unsigned char *arena;        /* arena_bytes, records 8-aligned */
        _Atomic uint64_t arena_used; /* bytes handed out */
        _Atomic uint32_t fill;       /* ACTIVE: buckets reserved/used; STANDBY: records */
        bool index_dirty;            /* rotator only: index may hold non-zero buckets */
};

/* Counters a put updates while it owns hazard slot i: only the owner writes them, so they
 * need no read-modify-write (relaxed load + store); ownership hand-over is ordered by the
 * hazard slot's acquire/release. 32 bytes: neighbours rarely belong to busy threads. */
struct slot_stats {
        _Atomic uint64_t puts, hits, probes;
        uint64_t pad;
};

struct checker {
        trace_table_liveness_fn fn;
        void *ctx;
};

struct trace_table {
        /* Read by every put, written once per rotation: alone on its cache line. */
        _Alignas(64) _Atomic uint64_t state;
        _Alignas(64) struct tt_table t[3];
        uint32_t capacity, buckets, max_frames;
        uint64_t arena_bytes;
        size_t memory_bytes;
        struct hazard_domain *hz;
        struct slot_stats *sstats;

        /* Rotator side. `rotating` serializes rotate and checker registration; its acquire/
         * release makes one rotator's plain writes visible to the next. */
        atomic_flag rotating;
        _Atomic unsigned standby, scratch; /* relaxed: read by trace_table_stats */
        struct checker checkers[TRACE_TABLE_MAX_CHECKERS];
        unsigned ncheckers;

        /* Rare events, shared by all puts (relaxed RMW: counters publish nothing). */
        _Alignas(64) _Atomic uint64_t inserts, drop_table_full, drop_arena_full,
            drop_no_hazard, drop_race, drop_invalid, drop_refused, insert_races,
            wasted_bytes, probe_max, hazard_collisions;
        _Atomic uint64_t rotations, rotation_waits, last_rotation_ns, last_preserved,
            preserve_dropped;
};

static inline void bump(_Atomic uint64_t *c, uint64_t v)
{
        atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t rd(_Atomic uint64_t *c)
{
        return atomic_load_explicit(c, memory_order_relaxed);
}

static inline size_t rec_size(uint32_t n)
{
        return sizeof(struct tt_rec) + (size_t)n * sizeof(struct ctxprof_frame);
}

static inline struct tt_rec *rec_at(const struct tt_table *t, uint64_t off)
{
        return (struct tt_rec *)(t->arena + off);
}

static inline uint64_t bucket_off(uint64_t v)
{
        return ((v & 0xffffffffull) - 1) << 3;
}

static uint64_t stack_hash(const struct ctxprof_frame *frames, uint32_t n, bool truncated)
{
        /* XXH3: strong 64-bit hash, ~30 GB/s on long input; n and truncated go into the seed so
         * that stacks differing only there hash apart. */
        static const struct ctxprof_frame none[1]; /* n == 0: a valid pointer, never read */
        return XXH3_64bits_withSeed(n ? frames : none, (size_t)n * sizeof(*frames),
                                    ((uint64_t)n << 1) | (truncated ? 1 : 0));
}

static bool rec_equal(const struct tt_rec *r, uint64_t h, const struct ctxprof_frame *frames,
                      uint32_t n, bool truncated)
{
        return r->hash == h && r->n == n && r->truncated == (truncated ? 1u : 0u) &&
               (n == 0 || memcmp(r->frames, frames, (size_t)n * sizeof(*frames)) == 0);
}

/* Hand out `bytes` of t's arena; -1 if it does not fit. Relaxed: the counter only carves
 * disjoint ranges; their contents are published by the bucket CAS, not by this counter. A
 * CAS loop (not fetch_add) so that a refused large record does not use up space a smaller
 * one could still take. */
static int64_t arena_alloc(struct trace_table *tt, struct tt_table *t, size_t bytes)
{
        uint64_t used = atomic_load_explicit(&t->arena_used, memory_order_relaxed);
        do {
                if (used + bytes > tt->arena_bytes)
                        return -1;
        } while (!atomic_compare_exchange_weak_explicit(
            &t->arena_used, &used, used + bytes, memory_order_relaxed, memory_order_relaxed));
        return (int64_t)used;
}

enum put_outcome { PUT_HIT, PUT_INSERT, PUT_RACE, PUT_TABLE_FULL, PUT_ARENA_FULL, PUT_REFUSED };

/* The table is ACTIVE and protected by the caller's hazard slot. A miss stores the stack
 * only when may_insert (else PUT_REFUSED: the caller's share of the table is used up). */
static uint64_t table_put(struct trace_table *tt, struct tt_table *t, uint32_t epoch, uint64_t h,
                          const struct ctxprof_frame *frames, uint32_t n, bool truncated,
                          bool may_insert, uint32_t *probes, enum put_outcome *outcome)
{
        uint32_t mask = tt->buckets - 1;
        uint32_t i = (uint32_t)h & mask;
        size_t bytes = rec_size(n);
        struct tt_rec *mine = NULL;
        uint64_t mine_off = 0;

        /* At most `capacity` < buckets buckets are ever non-empty, so an empty bucket or the
         * stack itself is always found; the bound is only a guard. */
        for (uint32_t p = 1; p <= tt->buckets; p++, i = (i + 1) & mask) {
                /* Acquire: pairs with the release CAS that published the bucket, so the record
                 * it points to is fully written before we compare it. */
                uint64_t v = atomic_load_explicit(&t->index[i], memory_order_acquire);
                if (v == 0) {
                        if (!mine && !may_insert) {
                                *probes = p;
                                *outcome = PUT_REFUSED;
                                return TRACE_DROPPED_ID;
                        }
                        if (!mine) {
                                /* Reserve a bucket first so that fill never exceeds capacity. */
                                if (atomic_fetch_add_explicit(&t->fill, 1, memory_order_relaxed) >=
                                    tt->capacity) {
                                        atomic_fetch_sub_explicit(&t->fill, 1,
                                                                  memory_order_relaxed);
                                        *probes = p;
                                        *outcome = PUT_TABLE_FULL;
                                        return TRACE_DROPPED_ID;
                                }
                                int64_t off = arena_alloc(tt, t, bytes);
                                if (off < 0) {
                                        atomic_fetch_sub_explicit(&t->fill, 1,
                                                                  memory_order_relaxed);
                                        *probes = p;
                                        *outcome = PUT_ARENA_FULL;
                                        return TRACE_DROPPED_ID;
                                }
                                mine_off = (uint64_t)off;
                                mine = rec_at(t, mine_off);
                                mine->hash = h;
                                mine->n = n;
                                mine->truncated = truncated ? 1 : 0;
                                if (n)
                                        memcpy(mine->frames, frames, (size_t)n * sizeof(*frames));
                        }
                        /* Still private: plain write. The id names the bucket it is published in.
                         */
                        mine->id = ((uint64_t)epoch << 32) | i;
                        uint64_t want = (h & BUCKET_HASH_MASK) | ((mine_off >> 3) + 1);
                        /* Release on success: publishes the record written above to every acquire
                         * load of this bucket. Acquire on failure: `v` then names another put's
                         * record, which we are about to read. */
                        if (atomic_compare_exchange_strong_explicit(&t->index[i], &v, want,
                                                                    memory_order_release,
                                                                    memory_order_acquire)) {
                                *probes = p;
                                *outcome = PUT_INSERT;
                                return mine->id;
                        }
                }
                if (((v ^ h) & BUCKET_HASH_MASK) == 0) {
                        const struct tt_rec *r = rec_at(t, bucket_off(v));
                        if (rec_equal(r, h, frames, n, truncated)) {
                                *probes = p;
                                if (mine) {
                                        /* Same stack stored concurrently: our copy stays
                                         * unreachable. */
                                        atomic_fetch_sub_explicit(&t->fill, 1,
                                                                  memory_order_relaxed);
                                        bump(&tt->wasted_bytes, bytes);
                                        *outcome = PUT_RACE;
                                } else {
                                        *outcome = PUT_HIT;
                                }
                                return r->id;
                        }
                }
        }
        if (mine) {
                atomic_fetch_sub_explicit(&t->fill, 1, memory_order_relaxed);
                bump(&tt->wasted_bytes, bytes);
        }
        *probes = tt->buckets;
        *outcome = PUT_TABLE_FULL;
        return TRACE_DROPPED_ID;
}

uint64_t trace_table_put(struct trace_table *tt, const struct ctxprof_frame *frames, uint32_t n,
                         bool truncated)
{
        return trace_table_put_share(tt, frames, n, truncated, true, NULL);
}

uint64_t trace_table_put_share(struct trace_table *tt, const struct ctxprof_frame *frames,
                               uint32_t n, bool truncated, bool may_insert, bool *inserted)
{
        if (inserted)
                *inserted = false;
        if (n > tt->max_frames || (n > 0 && !frames)) {
                bump(&tt->drop_invalid, 1);
                return TRACE_DROPPED_ID;
        }
        /* Hash before taking a hazard slot: keeps the protected window short. */
        uint64_t h = stack_hash(frames, n, truncated);

        unsigned coll = 0;
        int slot = hazard_acquire(tt->hz, &coll);
        if (coll)
                bump(&tt->hazard_collisions, coll);
        if (slot < 0) {
                bump(&tt->drop_no_hazard, 1);
                return TRACE_DROPPED_ID;
        }

        uint64_t st;
        for (int tries = 0;; tries++) {
                /* Relaxed: only a candidate; the seq_cst re-read below is what we trust. */
                st = atomic_load_explicit(&tt->state, memory_order_relaxed);
                hazard_protect(tt->hz, slot, st);
                /* seq_cst: the load half of the store->load pattern (hazard.c). Reading `st`
                 * here also acquires from the rotator's exchange that wrote it, so the table's
                 * clearing in rotation step 2 is visible to us. */
                if (atomic_load_explicit(&tt->state, memory_order_seq_cst) == st)
                        break;
                if (tries + 1 >= VALIDATE_TRIES) {
                        struct slot_stats *ss = &tt->sstats[slot];
                        atomic_store_explicit(&ss->puts, rd(&ss->puts) + 1, memory_order_relaxed);
                        hazard_release(tt->hz, slot);
                        bump(&tt->drop_race, 1);
                        return TRACE_DROPPED_ID;
                }
        }

        uint32_t probes = 0;
        enum put_outcome outcome;
        uint64_t id = table_put(tt, &tt->t[st & 3], (uint32_t)(st >> 32), h, frames, n, truncated,
                                may_insert, &probes, &outcome);

        /* Owner-only counters: plain relaxed load + store, no lock prefix. */
        struct slot_stats *ss = &tt->sstats[slot];
        atomic_store_explicit(&ss->puts, rd(&ss->puts) + 1, memory_order_relaxed);
        atomic_store_explicit(&ss->probes, rd(&ss->probes) + probes, memory_order_relaxed);
        if (outcome == PUT_HIT)
                atomic_store_explicit(&ss->hits, rd(&ss->hits) + 1, memory_order_relaxed);
        hazard_release(tt->hz, slot);

        switch (outcome) {
        case PUT_HIT:
                break;
        case PUT_INSERT:
                bump(&tt->inserts, 1);
                if (inserted)
                        *inserted = true;
                break;
        case PUT_REFUSED:
                bump(&tt->drop_refused, 1);
                break;
        case PUT_RACE:
                bump(&tt->insert_races, 1);
                break;
        case PUT_TABLE_FULL:
                bump(&tt->drop_table_full, 1);
                break;
        case PUT_ARENA_FULL:
                bump(&tt->drop_arena_full, 1);
                break;
        }
        uint64_t pm = rd(&tt->probe_max);
        while (probes > pm &&
               !atomic_compare_exchange_weak_explicit(&tt->probe_max, &pm, probes,
                                                      memory_order_relaxed, memory_order_relaxed))
                ;
        return id;
}

/* ---------------------------------------------------------------------------------------
 * Rotator side. Everything below runs with `rotating` held, on tables no put can reach:
 * STANDBY and SCRATCH are never named by `state`, and the old ACTIVE only after
 * hazard_wait_clear. Relaxed atomics suffice there; the hazard and flag orderings provide
 * the happens-before edges with the puts that wrote the data. */

/* Empty a table the rotator owns exclusively. */
static void table_clear(struct tt_table *t, uint32_t buckets)
{
        if (t->index_dirty) {
                for (uint32_t i = 0; i < buckets; i++)
                        atomic_store_explicit(&t->index[i], 0, memory_order_relaxed);
                t->index_dirty = false;
        }
        atomic_store_explicit(&t->arena_used, 0, memory_order_relaxed);
        atomic_store_explicit(&t->fill, 0, memory_order_relaxed);
}

/* STANDBY layout: records packed from arena offset 0, `fill` of them, no index. */
static bool standby_append(struct trace_table *tt, struct tt_table *t, const struct tt_rec *r)
{
        uint64_t used = atomic_load_explicit(&t->arena_used, memory_order_relaxed);
        uint32_t fill = atomic_load_explicit(&t->fill, memory_order_relaxed);
        size_t bytes = rec_size(r->n);
        if (fill >= tt->capacity || used + bytes > tt->arena_bytes)
                return false;
        memcpy(t->arena + used, r, bytes);
        atomic_store_explicit(&t->arena_used, used + bytes, memory_order_relaxed);
        atomic_store_explicit(&t->fill, fill + 1, memory_order_relaxed);
        return true;
}

static bool is_live(struct trace_table *tt, uint64_t id)
{
        for (unsigned c = 0; c < tt->ncheckers; c++)
                if (tt->checkers[c].fn(tt->checkers[c].ctx, id))
                        return true;
        return false;
}

int trace_table_rotate(struct trace_table *tt, trace_table_processor_fn processor, void *ctx)
{
        /* Acquire: we see everything the previous rotator wrote before its release. */
        if (atomic_flag_test_and_set_explicit(&tt->rotating, memory_order_acquire))
                return -EBUSY;
        uint64_t t0 = mono_ns();

        /* Relaxed: only rotators store `state`, and the flag orders us after the last one. */
        uint64_t old_state = atomic_load_explicit(&tt->state, memory_order_relaxed);
        unsigned a = (unsigned)(old_state & 3);
        unsigned s = atomic_load_explicit(&tt->standby, memory_order_relaxed);
        unsigned x = atomic_load_explicit(&tt->scratch, memory_order_relaxed);
        struct tt_table *A = &tt->t[a], *S = &tt->t[s], *X = &tt->t[x];

        /* Step 1: collect STANDBY. Its records move into SCRATCH, which becomes the next
         * STANDBY, because step 2 clears STANDBY before the processor runs (the seed hands the
         * processor pointers into the table it just cleared; copying the few kept traces
         * avoids that). SCRATCH was cleared when the previous rotation drained it. */
        table_clear(X, tt->buckets);
        uint64_t s_used = atomic_load_explicit(&S->arena_used, memory_order_relaxed);
        for (uint64_t off = 0; off < s_used;) {
                const struct tt_rec *r = rec_at(S, off);
                standby_append(tt, X, r); /* same capacity as S: always fits */
                off += rec_size(r->n);
        }

        /* Step 2: clear STANDBY and give it the next epoch (0 is never an epoch: after 2^32-1
         * rotations ids start repeating, ~136 years at one rotation per second). */
        table_clear(S, tt->buckets);
        uint32_t epoch = (uint32_t)(old_state >> 32) + 1;
        if (epoch == 0)
                epoch = 1;
        S->index_dirty = true; /* about to receive puts */

        /* Step 3: the swap. STANDBY -> ACTIVE in one seq_cst exchange of the state word (the
         * store half of the rotator's store->load pattern; also the release that publishes
         * step 2's clearing to puts); ACTIVE -> SCRATCH and SCRATCH -> STANDBY are
         * rotator-private role changes. */
        atomic_exchange_explicit(&tt->state, ((uint64_t)epoch << 32) | s, memory_order_seq_cst);
        atomic_store_explicit(&tt->scratch, a, memory_order_relaxed);
        atomic_store_explicit(&tt->standby, x, memory_order_relaxed);

        /* Step 4: wait until no put is inside the old ACTIVE; from then on it is ours. */
        uint64_t waits = hazard_wait_clear(tt->hz, old_state);

        /* Steps 5 and 6, fused per trace: hand each trace of the union (old STANDBY's, now in
         * X, then the old ACTIVE's) to the processor, then keep it in the new STANDBY (X) if a
         * checker wants it. X is compacted in place: the write cursor never passes the read
         * cursor. */
        uint64_t kept = 0, lost = 0;
        uint64_t x_used = atomic_load_explicit(&X->arena_used, memory_order_relaxed), w = 0;
        uint32_t x_fill = 0;
        for (uint64_t off = 0; off < x_used;) {
                struct tt_rec *r = rec_at(X, off);
                size_t bytes = rec_size(r->n);
                if (processor)
                        processor(ctx, r->id, r->frames, r->n, r->truncated != 0);
                if (is_live(tt, r->id)) {
                        if (w != off)
                                memmove(X->arena + w, r, bytes);
                        w += bytes;
                        x_fill++;
                }
                off += bytes;
        }
        atomic_store_explicit(&X->arena_used, w, memory_order_relaxed);
        atomic_store_explicit(&X->fill, x_fill, memory_order_relaxed);
        kept = x_fill;

        for (uint32_t i = 0; i < tt->buckets; i++) {
                /* Acquire: pairs with the publishing CAS (the hazard wait already ordered it). */
                uint64_t v = atomic_load_explicit(&A->index[i], memory_order_acquire);
                if (v == 0)
                        continue;
                const struct tt_rec *r = rec_at(A, bucket_off(v));
                if (processor)
                        processor(ctx, r->id, r->frames, r->n, r->truncated != 0);
                if (is_live(tt, r->id)) {
                        if (standby_append(tt, X, r))
                                kept++;
                        else
                                lost++;
                }
        }

        /* SCRATCH drained: clear it now so that it holds nothing stale between rotations. */
        table_clear(A, tt->buckets);

        bump(&tt->rotations, 1);
        bump(&tt->rotation_waits, waits);
        bump(&tt->preserve_dropped, lost);
        atomic_store_explicit(&tt->last_preserved, kept, memory_order_relaxed);
        atomic_store_explicit(&tt->last_rotation_ns, mono_ns() - t0, memory_order_relaxed);
        /* Release: hands our plain writes (index_dirty, checker list) to the next rotator. */
        atomic_flag_clear_explicit(&tt->rotating, memory_order_release);
        return 0;
}

int trace_table_add_liveness_checker(struct trace_table *tt, trace_table_liveness_fn fn, void *ctx)
{
        if (!fn)
                return -EINVAL;
        while (atomic_flag_test_and_set_explicit(&tt->rotating, memory_order_acquire))
                sched_yield(); /* a rotation is running; it is bounded */
        int rc = 0;
        if (tt->ncheckers >= TRACE_TABLE_MAX_CHECKERS) {
                rc = -ENOSPC;
        } else {
                tt->checkers[tt->ncheckers].fn = fn;
                tt->checkers[tt->ncheckers].ctx = ctx;
                tt->ncheckers++;
        }
        atomic_flag_clear_explicit(&tt->rotating, memory_order_release);
        return rc;
}

/* --------------------------------------------------------------------------------------- */

/*
 * The index and arena of each table come straight from mmap, not malloc: untouched pages
 * cost no RAM, and munmap gives every touched page back when a table is freed. From malloc,
 * once glibc has raised its mmap threshold (it does after freeing one big block), they came
 * from the brk heap, were zeroed page by page and stayed resident after free: with
 * split = process and thousands of short processes, 735-752 MB.
 */
static void *pages_new(size_t bytes)
{
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        return p == MAP_FAILED ? NULL : p;
}

static void pages_free(void *p, size_t bytes)
{
        if (p)
                munmap(p, bytes);
}

struct trace_table *trace_table_new(const struct trace_table_config *cfg)
{
        struct trace_table_config c = {0};
        if (cfg)
                c = *cfg;
        if (c.capacity == 0)
                c.capacity = DEFAULT_CAPACITY;
        if (c.max_frames == 0)
                c.max_frames = CTXPROF_MAX_FRAMES;
        if (c.arena_bytes == 0)
                c.arena_bytes = (uint64_t)c.capacity * rec_size(DEFAULT_FRAMES_PER_TRACE);
        if (c.capacity > MAX_CAPACITY || c.arena_bytes > MAX_ARENA_BYTES ||
            c.arena_bytes < sizeof(struct tt_rec)) {
                errno = EINVAL;
                return NULL;
        }
        /* Load factor <= 3/4 keeps linear probes short and guarantees an empty bucket. */
        uint64_t want = (uint64_t)c.capacity + c.capacity / 3 + 1;
        uint32_t buckets = 16;
        while (buckets < want)
                buckets <<= 1;

        struct trace_table *tt = aligned_alloc(64, (sizeof(*tt) + 63) & ~(size_t)63);
        if (!tt) {
                errno = ENOMEM;
                return NULL;
        }
        memset(tt, 0, sizeof(*tt));
        tt->capacity = c.capacity;
        tt->buckets = buckets;
        tt->max_frames = c.max_frames;
        tt->arena_bytes = (c.arena_bytes + 7) & ~(uint64_t)7;
        atomic_flag_clear(&tt->rotating);

        tt->hz = hazard_domain_new(c.hazard_slots);
        if (!tt->hz) {
                int e = errno;
                free(tt);
                errno = e;
                return NULL;
        }
        uint32_t nslots = hazard_domain_slots(tt->hz);
        tt->sstats = calloc(nslots, sizeof(*tt->sstats));
        bool ok = tt->sstats != NULL;
        for (int i = 0; i < 3 && ok; i++) {
                /* Zero bytes are a valid empty state for these lock-free atomics. */
                tt->t[i].index = pages_new((size_t)buckets * sizeof(*tt->t[i].index));
                tt->t[i].arena = pages_new(tt->arena_bytes);
                ok = tt->t[i].index && tt->t[i].arena;
        }
        if (!ok) {
                trace_table_free(tt);
                errno = ENOMEM;
                return NULL;
        }
        tt->memory_bytes = sizeof(*tt) + hazard_domain_bytes(tt->hz) +
                           (size_t)nslots * sizeof(*tt->sstats) +
                           3 * ((size_t)buckets * sizeof(uint64_t) + tt->arena_bytes);

        /* Table 0 is ACTIVE with epoch 1, 1 is STANDBY, 2 is SCRATCH. Nothing else can see tt
         * yet; the caller's hand-over of the pointer to other threads orders these stores. */
        tt->t[0].index_dirty = true;
        atomic_store_explicit(&tt->standby, 1, memory_order_relaxed);
        atomic_store_explicit(&tt->scratch, 2, memory_order_relaxed);
        atomic_store_explicit(&tt->state, (1ull << 32) | 0, memory_order_relaxed);
        return tt;
}

void trace_table_free(struct trace_table *tt)
{
        if (!tt)
                return;
        for (int i = 0; i < 3; i++) {
                pages_free(tt->t[i].index, (size_t)tt->buckets * sizeof(*tt->t[i].index));
                pages_free(tt->t[i].arena, tt->arena_bytes);
        }
        free(tt->sstats);
        hazard_domain_free(tt->hz);
        free(tt);
}

uint32_t trace_table_fill(struct trace_table *tt)
{
        /* Relaxed: a hint for share decisions, exact only while no put runs. */
        uint64_t st = atomic_load_explicit(&tt->state, memory_order_relaxed);

        return atomic_load_explicit(&tt->t[st & 3].fill, memory_order_relaxed);
}

uint32_t trace_table_capacity(const struct trace_table *tt)
{
        return tt->capacity;
}

struct hazard_domain *trace_table_hazards(struct trace_table *tt)
{
        return tt->hz;
}

void trace_table_stats(struct trace_table *tt, struct trace_table_stats *out)
{
        memset(out, 0, sizeof(*out));
        uint32_t nslots = hazard_domain_slots(tt->hz);
        for (uint32_t i = 0; i < nslots; i++) {
                out->puts += rd(&tt->sstats[i].puts);
                out->hits += rd(&tt->sstats[i].hits);
                out->probes += rd(&tt->sstats[i].probes);
        }
        out->inserts = rd(&tt->inserts);
        out->dropped_table_full = rd(&tt->drop_table_full);
        out->dropped_arena_full = rd(&tt->drop_arena_full);
        out->dropped_no_hazard = rd(&tt->drop_no_hazard);
        out->dropped_rotation_race = rd(&tt->drop_race);
        out->dropped_invalid = rd(&tt->drop_invalid);
        out->dropped_share = rd(&tt->drop_refused);
        out->dropped = out->dropped_table_full + out->dropped_arena_full + out->dropped_no_hazard +
                       out->dropped_rotation_race + out->dropped_invalid + out->dropped_share;
        out->insert_races = rd(&tt->insert_races);
        out->wasted_arena_bytes = rd(&tt->wasted_bytes);
        out->probe_max = rd(&tt->probe_max);
        out->hazard_collisions = rd(&tt->hazard_collisions);
        out->rotations = rd(&tt->rotations);
        out->rotation_hazard_waits = rd(&tt->rotation_waits);
        out->last_rotation_ns = rd(&tt->last_rotation_ns);
        out->last_preserved = rd(&tt->last_preserved);
        out->preserve_dropped = rd(&tt->preserve_dropped);

        /* Relaxed reads of words a rotation may be changing: a snapshot, not a transaction. */
        uint64_t st = atomic_load_explicit(&tt->state, memory_order_relaxed);
        unsigned s = atomic_load_explicit(&tt->standby, memory_order_relaxed);
        out->epoch = (uint32_t)(st >> 32);
        out->capacity = tt->capacity;
        out->index_buckets = tt->buckets;
        out->active_fill = atomic_load_explicit(&tt->t[st & 3].fill, memory_order_relaxed);
        out->standby_fill = atomic_load_explicit(&tt->t[s].fill, memory_order_relaxed);
        out->active_arena_used = rd(&tt->t[st & 3].arena_used);
        out->arena_bytes = tt->arena_bytes;
        out->memory_bytes = tt->memory_bytes;
}

/* SPDX-License-Identifier: MIT */
/*
 * tsan_trace_table.c — the trace table under concurrency (also built with TSan and ASan):
 * put threads store random stacks from a known set while one thread rotates continuously.
 * Every put must return TRACE_DROPPED_ID or an id whose exact stack the processor later
 * receives; no id is handed out twice in one rotation or lost; one id per stack per epoch;
 * kept traces come back in the following rotations, unchanged.
 *
 * A plain program, not Criterion: Criterion 2.4 aborts at start-up under gcc's TSan
 * ("Could not initialize inheritable arena", Snaipe/Criterion#274), and this file must run
 * under TSan. Exit 0 = pass; a failed check prints what and where, and exits 1.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink/trace_table.h"

#define CHECK(cond, ...)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
                        fprintf(stderr, " " __VA_ARGS__);                                          \
                        fprintf(stderr, "\n");                                                     \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

#define NSTACKS        512
#define MAXN           40
#define KEEP_ROTATIONS 3

struct known {
        struct ctxprof_frame f[MAXN];
        uint32_t n;
        bool truncated;
};
static struct known known[NSTACKS];

static void init_known(void)
{
        uint64_t x = 88172645463325252ull;
        for (uint32_t k = 0; k < NSTACKS; k++) {
                struct known *s = &known[k];
                s->n = 1 + k % MAXN;
                s->truncated = k % 3 == 0;
                s->f[0] = (struct ctxprof_frame){.offset = k, .module_id = CTXPROF_MODULE_FIRST};
                for (uint32_t i = 1; i < s->n; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        /* Few distinct callers: stacks share suffixes like real ones do. */
                        s->f[i].offset = (x % 8) * 0x1000 + i;
                        s->f[i].module_id = CTXPROF_MODULE_FIRST + (uint32_t)(x % 3);
                        s->f[i].flags = CTXPROF_FRAME_RETADDR;
                }
        }
}

/* What the processor saw, per id (rotator thread only until joined). */
struct seen {
        uint64_t id; /* 0 = empty bucket */
        uint32_t k, first_rot, last_rot, count;
        bool logged;
};

struct run {
        struct trace_table *tt;
        struct seen *map;
        uint32_t map_mask;
        uint32_t rot; /* index of the rotation in progress */
        uint64_t stamp_rot[NSTACKS], stamp_id[NSTACKS];
        /* violations, counted by the rotator, asserted by the main thread */
        uint64_t corrupt, dup_in_rotation, gap, two_ids_one_epoch, wrong_epoch, map_full;
        atomic_bool stop_put, stop_rot;
        bool same_order;
};

static struct seen *lookup(struct run *r, uint64_t id, bool insert)
{
        uint32_t i = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & r->map_mask;
        for (uint32_t p = 0; p <= r->map_mask; p++, i = (i + 1) & r->map_mask) {
                if (r->map[i].id == id)
                        return &r->map[i];
                if (r->map[i].id == 0) {
                        if (!insert)
                                return NULL;
                        r->map[i].id = id;
                        return &r->map[i];
                }
        }
        return NULL;
}

static bool selected(uint64_t id)
{
        return ((id * 0xBF58476D1CE4E5B9ull) >> 62) == 0; /* a quarter of the ids */
}

static void processor(void *ctx, uint64_t id, const struct ctxprof_frame *frames, uint32_t n,
                      bool truncated)
{
        struct run *r = ctx;
        uint64_t k = n ? frames[0].offset : NSTACKS;
        if (k >= NSTACKS || known[k].n != n || known[k].truncated != truncated ||
            memcmp(known[k].f, frames, n * sizeof(*frames)) != 0) {
                r->corrupt++;
                return;
        }
        struct seen *e = lookup(r, id, true);
        if (!e) {
                r->map_full++;
                return;
        }
        if (e->count == 0) {
                /* First time: it was stored in the ACTIVE table this rotation drains, whose epoch
                 * is rot + 1; and no other id of that epoch may carry the same stack. */
                e->k = (uint32_t)k;
                e->first_rot = e->last_rot = r->rot;
                e->count = 1;
                if (trace_id_epoch(id) != r->rot + 1)
                        r->wrong_epoch++;
                if (r->stamp_rot[k] == r->rot + 1 && r->stamp_id[k] != id)
                        r->two_ids_one_epoch++;
                r->stamp_rot[k] = r->rot + 1;
                r->stamp_id[k] = id;
                return;
        }
        if (e->k != k)
                r->corrupt++;
        if (e->last_rot == r->rot)
                r->dup_in_rotation++;
        else if (e->last_rot + 1 != r->rot)
                r->gap++;
        e->last_rot = r->rot;
        e->count++;
}

static bool checker(void *ctx, uint64_t id)
{
        struct run *r = ctx;
        struct seen *e = lookup(r, id, false);
        return e && selected(id) && r->rot - e->first_rot < KEEP_ROTATIONS;
}

struct putter {
        struct run *r;
        size_t log_max; /* puts logged; the thread stops when its log is full */
        uint64_t rng;
        uint64_t calls, dropped;
        size_t nlog;
        uint64_t *log_id;
        uint32_t *log_k;
};

static void *put_main(void *arg)
{
        struct putter *p = arg;
        while (!atomic_load(&p->r->stop_put) && p->nlog < p->log_max) {
                p->rng ^= p->rng << 13, p->rng ^= p->rng >> 7, p->rng ^= p->rng << 17;
                /* same_order: every thread walks the stack set in the same order, so first
                 * puts of a stack collide (exercises the insert race). */
                uint32_t k = p->r->same_order ? (uint32_t)(p->calls % NSTACKS)
                                              : (uint32_t)(p->rng % NSTACKS);
                uint64_t id = trace_table_put(p->r->tt, known[k].f, known[k].n, known[k].truncated);
                p->calls++;
                if (id == TRACE_DROPPED_ID) {
                        p->dropped++;
                        continue;
                }
                /* Some pacing so that the run spans many rotations, not just the first ones. */
                if ((p->rng >> 20) % 8 == 0)
                        sched_yield();
                p->log_id[p->nlog] = id;
                p->log_k[p->nlog] = k;
                p->nlog++;
        }
        return NULL;
}

static void *rotate_main(void *arg)
{
        struct run *r = arg;
        while (!atomic_load(&r->stop_rot)) {
                CHECK(trace_table_rotate(r->tt, processor, r) == 0);
                r->rot++;
                sched_yield();
        }
        return NULL;
}

static void run_case(unsigned nthreads, size_t log_max, uint32_t hazard_slots, uint32_t capacity,
                     uint64_t arena_bytes, unsigned seconds, bool strict, bool same_order)
{
        init_known();
        struct trace_table_config cfg = {
            .capacity = capacity, .arena_bytes = arena_bytes, .hazard_slots = hazard_slots};
        struct run *r = calloc(1, sizeof(*r));
        CHECK((r) != NULL);
        r->same_order = same_order;
        r->tt = trace_table_new(&cfg);
        CHECK((r->tt) != NULL);
        /* Distinct ids <= logged puts: keep the map at most half full. */
        uint32_t map_size = 1024;
        while (map_size < 2 * nthreads * log_max)
                map_size <<= 1;
        r->map_mask = map_size - 1;
        r->map = calloc(r->map_mask + 1, sizeof(*r->map));
        CHECK((r->map) != NULL);
        CHECK(trace_table_add_liveness_checker(r->tt, checker, r) == 0);

        struct putter *p = calloc(nthreads, sizeof(*p));
        pthread_t *th = calloc(nthreads, sizeof(*th));
        CHECK(p && th);
        pthread_t rt;
        CHECK(pthread_create(&rt, NULL, rotate_main, r) == 0);
        for (unsigned i = 0; i < nthreads; i++) {
                p[i].r = r;
                p[i].rng = 0x9E3779B97F4A7C15ull * (i + 1);
                p[i].log_max = log_max;
                p[i].log_id = calloc(log_max, sizeof(uint64_t));
                p[i].log_k = calloc(log_max, sizeof(uint32_t));
                CHECK(p[i].log_id && p[i].log_k);
                CHECK(pthread_create(&th[i], NULL, put_main, &p[i]) == 0);
        }
        struct timespec end, now;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += seconds;
        do {
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while (now.tv_sec < end.tv_sec ||
                 (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
        atomic_store(&r->stop_put, true);
        for (unsigned i = 0; i < nthreads; i++)
                pthread_join(th[i], NULL);
        atomic_store(&r->stop_rot, true);
        pthread_join(rt, NULL);
        /* Drain: one rotation hands out the last ACTIVE, the next ones run kept traces out. */
        for (int i = 0; i < KEEP_ROTATIONS + 2; i++) {
                CHECK(trace_table_rotate(r->tt, processor, r) == 0);
                r->rot++;
        }

        struct trace_table_stats s;
        trace_table_stats(r->tt, &s);
        uint64_t calls = 0, dropped = 0, logged = 0;
        for (unsigned i = 0; i < nthreads; i++) {
                calls += p[i].calls;
                dropped += p[i].dropped;
                logged += p[i].nlog;
        }
        fprintf(stderr,
                "%s%u threads, %u hazard slots, capacity %u: %lu puts (%lu dropped: table %lu "
                "arena %lu hazard %lu race %lu), %u rotations, %lu hits, %lu insert races, "
                "%lu rotation waits, %lu preserve drops, probe max %lu\n",
                same_order ? "same order, " : "", nthreads, hazard_slots, capacity, calls, dropped,
                s.dropped_table_full, s.dropped_arena_full, s.dropped_no_hazard,
                s.dropped_rotation_race, r->rot, s.hits, s.insert_races, s.rotation_hazard_waits,
                s.preserve_dropped, s.probe_max);

        CHECK((r->corrupt) == (0), "a handed-out stack differs from what was put");
        CHECK((r->map_full) == (0));
        CHECK((r->dup_in_rotation) == (0), "an id handed out twice in one rotation");
        CHECK((r->gap) == (0), "a kept trace skipped a rotation");
        CHECK((r->two_ids_one_epoch) == (0), "one stack got two ids in one epoch");
        CHECK((r->wrong_epoch) == (0), "a trace was handed out in the wrong rotation");
        CHECK((s.dropped) == (dropped), "every DROPPED is counted");
        CHECK(s.puts + s.dropped_no_hazard + s.dropped_invalid == calls);
        CHECK((s.active_fill) == (0));
        CHECK((s.standby_fill) == (0), "everything ran out after the drain");

        /* Every id a put returned reached the processor with the put's stack. */
        for (unsigned i = 0; i < nthreads; i++)
                for (size_t j = 0; j < p[i].nlog; j++) {
                        struct seen *e = lookup(r, p[i].log_id[j], false);
                        CHECK((e) != NULL, "id %#lx from a put never reached the processor",
                              p[i].log_id[j]);
                        CHECK((e->k) == (p[i].log_k[j]), "id %#lx: put stack %u, handed out %u",
                              p[i].log_id[j], p[i].log_k[j], e->k);
                        e->logged = true;
                }
        /* ...and nothing else did; kept ones came back exactly KEEP_ROTATIONS more times. */
        uint64_t ids = 0;
        for (uint32_t i = 0; i <= r->map_mask; i++) {
                struct seen *e = &r->map[i];
                if (!e->id)
                        continue;
                ids++;
                CHECK(e->logged, "id %#lx handed out but never returned by a put", e->id);
                uint32_t want = selected(e->id) ? 1 + KEEP_ROTATIONS : 1;
                if (strict)
                        CHECK((e->count) == (want), "id %#lx handed out %u times, want %u", e->id,
                              e->count, want);
                else
                        CHECK(e->count >= 1 && e->count <= want);
        }
        CHECK((ids) <= (logged));
        if (strict) {
                CHECK((s.preserve_dropped) == (0));
                CHECK((s.dropped) == (s.dropped_rotation_race),
                      "room for everything: no other drop");
                CHECK((logged) > (0));
        }

        for (unsigned i = 0; i < nthreads; i++) {
                free(p[i].log_id);
                free(p[i].log_k);
        }
        free(p);
        free(th);
        trace_table_free(r->tt);
        free(r->map);
        free(r);
}

/* Two threads put the same brand-new stack at the same moment, round after round: one
 * stores it, the other must get the same id (the loser's arena copy is counted as waste). */
#ifdef __SANITIZE_THREAD__
#define RACE_ROUNDS 5000 /* TSan makes the spin barrier slow; its wider window races more */
#else
#define RACE_ROUNDS 20000
#endif
struct racer {
        struct trace_table *tt;
        _Atomic uint64_t *arrived; /* spin barrier: a futex wake-up would serialize the pair */
        uint64_t ids[RACE_ROUNDS];
};

static void *race_main(void *arg)
{
        struct racer *rc = arg;
        struct ctxprof_frame f[24];
        uint64_t x = (uint64_t)(uintptr_t)rc | 1;
        for (uint32_t i = 0; i < 24; i++)
                f[i] =
                    (struct ctxprof_frame){.offset = 0x4000 + i, .module_id = CTXPROF_MODULE_FIRST};
        for (uint32_t round = 0; round < RACE_ROUNDS; round++) {
                f[0].offset = round; /* new in every round */
                atomic_fetch_add(rc->arrived, 1);
                for (unsigned spin = 0; atomic_load(rc->arrived) < 2 * (round + 1);)
                        if (++spin % (1u << 14) == 0)
                                sched_yield(); /* the other thread is not running */
                /* Jitter of a few dozen ns, so that some rounds line the two puts up within
                 * the insert window whichever thread saw the barrier open first. */
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                for (volatile unsigned d = (unsigned)(x % 48); d > 0; d--)
                        ;
                rc->ids[round] = trace_table_put(rc->tt, f, 24, false);
        }
        return NULL;
}

static void insert_race_case(void)
{
        /* Room to spare: with exactly RACE_ROUNDS, both racers of the last round reserve a
         * bucket and the second finds the table full, a legitimate DROPPED. */
        struct trace_table_config cfg = {.capacity = 2 * RACE_ROUNDS};
        struct trace_table *tt = trace_table_new(&cfg);
        CHECK(tt != NULL);
        _Atomic uint64_t arrived = 0;
        struct racer *rc = calloc(2, sizeof(*rc));
        CHECK(rc != NULL);
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
                rc[i].tt = tt;
                rc[i].arrived = &arrived;
                CHECK(pthread_create(&th[i], NULL, race_main, &rc[i]) == 0);
        }
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        for (uint32_t round = 0; round < RACE_ROUNDS; round++) {
                CHECK(rc[0].ids[round] != TRACE_DROPPED_ID);
                CHECK(rc[0].ids[round] == rc[1].ids[round], "round %u: %#lx vs %#lx", round,
                      rc[0].ids[round], rc[1].ids[round]);
        }
        struct trace_table_stats s;
        trace_table_stats(tt, &s);
        fprintf(stderr,
                "insert race: %u rounds, %lu inserts, %lu hits, %lu races, %lu bytes wasted\n",
                RACE_ROUNDS, s.inserts, s.hits, s.insert_races, s.wasted_arena_bytes);
        CHECK(s.inserts == RACE_ROUNDS);
        CHECK(s.hits + s.insert_races == RACE_ROUNDS);
        CHECK(s.active_fill == RACE_ROUNDS, "a lost race gives its bucket reservation back");
        free(rc);
        trace_table_free(tt);
}

int main(void)
{
        insert_race_case();
        /* The scenario: 8 put threads, one rotator, room for everything. */
        run_case(8, 40000, 0, 1024, 0, 3, true, false);
        /* Scarcity everywhere: 4 hazard slots for 16 threads, a table smaller than the stack
         * set, a small arena. Drops of every kind are expected; wrong ids never. */
        run_case(16, 15000, 4, 64, 64 * 300, 2, false, false);
        /* All threads put the same stacks in the same order: concurrent first puts of one
         * stack race to store it; the loser must return the winner's id. */
        run_case(8, 20000, 0, 1024, 0, 2, true, true);
        printf("PASS tsan_trace_table\n");
        return 0;
}

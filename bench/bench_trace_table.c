/* SPDX-License-Identifier: MIT */
/*
 * bench_trace_table.c — throughput of trace_table_put (hit and miss paths, 1 and 2 threads)
 * and rotation latency vs table size, side by side with a mutex-protected hash table doing
 * the same work (same hash, same key comparison, same record layout). Prints medians of
 * several runs; asserts nothing. Budget from issue 4: hit-path put <= 100 ns, 32 frames.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink/trace_table.h"
#include "util/clock.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define FRAMES 32
#define HOT    1024 /* distinct stacks on the hit path */
#define RUNS   7

/* CPU time of the calling thread: on a shared, overloaded machine wall time mostly measures
 * the other tenants. Both are printed. */
static uint64_t cpu_ns(void)
{
        return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return v[n / 2];
}

static void make_stack(struct ctxprof_frame *f, uint32_t n, uint64_t seed)
{
        for (uint32_t i = 0; i < n; i++) {
                uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
                f[i].offset = x >> 12;
                f[i].module_id = CTXPROF_MODULE_FIRST + (uint32_t)(x % 7);
                f[i].flags = i ? CTXPROF_FRAME_RETADDR : 0;
        }
}

/* ---- baseline: one mutex around an open-addressing table with a bump arena ---------------- */
struct mrec {
        uint64_t hash, id;
        uint32_t n, truncated;
        struct ctxprof_frame frames[];
};
struct mutex_table {
        pthread_mutex_t lock;
        uint32_t buckets, fill, capacity;
        struct mrec **index;
        unsigned char *arena;
        size_t used, arena_bytes;
};

static struct mutex_table *mt_new(uint32_t capacity, size_t arena_bytes)
{
        struct mutex_table *m = calloc(1, sizeof(*m));
        uint32_t b = 16;
        while (b < capacity + capacity / 3 + 1)
                b <<= 1;
        m->buckets = b;
        m->capacity = capacity;
        m->index = calloc(b, sizeof(*m->index));
        m->arena = calloc(1, arena_bytes);
        m->arena_bytes = arena_bytes;
        pthread_mutex_init(&m->lock, NULL);
        return m;
}

static void mt_free(struct mutex_table *m)
{
        free(m->index);
        free(m->arena);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static uint64_t mt_put(struct mutex_table *m, const struct ctxprof_frame *f, uint32_t n, bool t)
{
        uint64_t h = XXH3_64bits_withSeed(f, n * sizeof(*f), ((uint64_t)n << 1) | t);
        uint64_t id = TRACE_DROPPED_ID;
        pthread_mutex_lock(&m->lock);
        for (uint32_t i = (uint32_t)h & (m->buckets - 1);; i = (i + 1) & (m->buckets - 1)) {
                struct mrec *r = m->index[i];
                if (!r) {
                        size_t bytes = sizeof(*r) + n * sizeof(*f);
                        if (m->fill >= m->capacity || m->used + bytes > m->arena_bytes)
                                break;
                        r = (struct mrec *)(m->arena + m->used);
                        m->used += bytes;
                        m->fill++;
                        *r = (struct mrec){
                            .hash = h, .id = (1ull << 32) | i, .n = n, .truncated = t};
                        memcpy(r->frames, f, n * sizeof(*f));
                        m->index[i] = r;
                        id = r->id;
                        break;
                }
                if (r->hash == h && r->n == n && r->truncated == t &&
                    memcmp(r->frames, f, n * sizeof(*f)) == 0) {
                        id = r->id;
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        return id;
}

/* ---- workloads ------------------------------------------------------------------------------ */
static struct ctxprof_frame hot[HOT][FRAMES];

struct job {
        struct trace_table *tt; /* or */
        struct mutex_table *mt;
        bool miss; /* every put a new stack */
        uint32_t thread, puts;
        uint64_t ns, cpu;
        uint64_t bad;
        pthread_barrier_t *go;
};

static void *job_main(void *arg)
{
        struct job *j = arg;
        struct ctxprof_frame miss[FRAMES];
        make_stack(miss, FRAMES, 999999 + j->thread);
        uint64_t x = 0x9E3779B97F4A7C15ull * (j->thread + 7);
        pthread_barrier_wait(j->go);
        uint64_t t0 = mono_ns(), c0 = cpu_ns();
        for (uint32_t i = 0; i < j->puts; i++) {
                const struct ctxprof_frame *f;
                if (j->miss) {
                        miss[0].offset = ((uint64_t)j->thread << 40) | i; /* unique */
                        f = miss;
                } else {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        f = hot[x & (HOT - 1)];
                }
                uint64_t id = j->tt ? trace_table_put(j->tt, f, FRAMES, false)
                                    : mt_put(j->mt, f, FRAMES, false);
                j->bad += id == TRACE_DROPPED_ID;
        }
        j->cpu = cpu_ns() - c0;
        j->ns = mono_ns() - t0;
        return NULL;
}

/* One run: `threads` threads, `puts` each. Returns CPU ns per put (summed over threads);
 * *wall gets wall ns per put (slowest thread's time / total puts). */
static double run(bool lockfree, bool miss, unsigned threads, uint32_t puts, uint64_t *bad,
                  double *wall)
{
        uint32_t cap = miss ? threads * puts + 16 : 4 * HOT;
        size_t arena = (size_t)cap * (24 + FRAMES * 16);
        struct trace_table *tt = NULL;
        struct mutex_table *mt = NULL;
        if (lockfree) {
                struct trace_table_config c = {.capacity = cap, .arena_bytes = arena};
                tt = trace_table_new(&c);
                if (!tt) {
                        perror("trace_table_new");
                        exit(1);
                }
        } else {
                mt = mt_new(cap, arena);
        }
        if (!miss) /* warm: the hot set is stored, every measured put is a hit */
                for (int i = 0; i < HOT; i++)
                        tt ? trace_table_put(tt, hot[i], FRAMES, false)
                           : mt_put(mt, hot[i], FRAMES, false);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, threads);
        struct job j[2];
        pthread_t th[2];
        for (unsigned t = 0; t < threads; t++) {
                j[t] = (struct job){
                    .tt = tt, .mt = mt, .miss = miss, .thread = t, .puts = puts, .go = &go};
                pthread_create(&th[t], NULL, job_main, &j[t]);
        }
        uint64_t worst = 0, cpu = 0;
        for (unsigned t = 0; t < threads; t++) {
                pthread_join(th[t], NULL);
                worst = j[t].ns > worst ? j[t].ns : worst;
                cpu += j[t].cpu;
                *bad += j[t].bad;
        }
        pthread_barrier_destroy(&go);
        trace_table_free(tt);
        if (mt)
                mt_free(mt);
        *wall = (double)worst / ((double)puts * threads);
        return (double)cpu / ((double)puts * threads);
}

static void throughput(void)
{
        printf("put cost, %d-frame stacks, median of %d runs: CPU ns per put (thread CPU time /"
               " puts), and wall ns per put (slowest thread / all puts)\n",
               FRAMES, RUNS);
        printf("  %-5s %-8s %-26s %-26s\n", "path", "threads", "lock-free trace_table",
               "mutex hash table");
        for (int miss = 0; miss <= 1; miss++)
                for (unsigned threads = 1; threads <= 2; threads++) {
                        uint32_t puts = miss ? 100000 : 1000000;
                        double a[RUNS], b[RUNS], aw[RUNS], bw[RUNS];
                        uint64_t bad = 0;
                        for (int r = 0; r < RUNS; r++) {
                                a[r] = run(true, miss, threads, puts, &bad, &aw[r]);
                                b[r] = run(false, miss, threads, puts, &bad, &bw[r]);
                        }
                        printf("  %-5s %-8u cpu %6.1f  wall %7.1f    cpu %6.1f  wall %7.1f%s\n",
                               miss ? "miss" : "hit", threads, median(a, RUNS), median(aw, RUNS),
                               median(b, RUNS), median(bw, RUNS), bad ? "   (drops!)" : "");
                }
}

static void count_proc(void *ctx, uint64_t id, const struct ctxprof_frame *f, uint32_t n, bool t)
{
        (void)id, (void)f, (void)n, (void)t;
        ++*(uint64_t *)ctx;
}

static void rotation(void)
{
        printf("rotation cost (CPU us, median of %d), table half full with 8-frame stacks; then"
               " a rotation with nothing stored\n",
               RUNS);
        printf("  %-10s %-10s %-12s %-14s %-10s\n", "capacity", "traces", "rotate", "empty rotate",
               "memory MB");
        const uint32_t caps[] = {1024, 16384, 65536, 262144};
        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
                struct trace_table_config cfg = {.capacity = caps[c],
                                                 .arena_bytes = (uint64_t)caps[c] * (24 + 8 * 16)};
                struct trace_table *tt = trace_table_new(&cfg);
                if (!tt) {
                        perror("trace_table_new");
                        exit(1);
                }
                double full[RUNS], empty[RUNS];
                uint32_t n = caps[c] / 2;
                for (int r = 0; r < RUNS; r++) {
                        struct ctxprof_frame f[8];
                        make_stack(f, 8, 1);
                        for (uint32_t i = 0; i < n; i++) {
                                f[0].offset = i;
                                trace_table_put(tt, f, 8, false);
                        }
                        uint64_t cnt = 0, t0 = cpu_ns();
                        trace_table_rotate(tt, count_proc, &cnt);
                        full[r] = (cpu_ns() - t0) / 1e3;
                        if (cnt != n)
                                printf("  (rotation handed out %lu of %u traces!)\n", cnt, n);
                        t0 = cpu_ns();
                        trace_table_rotate(tt, count_proc, &cnt);
                        empty[r] = (cpu_ns() - t0) / 1e3;
                }
                struct trace_table_stats s;
                trace_table_stats(tt, &s);
                printf("  %-10u %-10u %-12.1f %-14.1f %-10.1f\n", caps[c], n, median(full, RUNS),
                       median(empty, RUNS), s.memory_bytes / 1048576.0);
                trace_table_free(tt);
        }
}

int main(void)
{
        for (int i = 0; i < HOT; i++)
                make_stack(hot[i], FRAMES, (uint64_t)i);
        throughput();
        rotation();
        return 0;
}

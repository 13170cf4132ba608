/* SPDX-License-Identifier: MIT */
/*
 * wl_flood.c — a hostile target for the store bounds (tests/hostile/test_hostile_*_flood.sh):
 * it publishes context through libctx (so the daemon's default mode takes it as a target)
 * and floods one of the daemon's per-chunk stores.
 *
 *   wl_flood stacks SECONDS [THREADS]   every sample a new stack: a random walk over 16
 *                                       distinct functions, 24 to 39 calls deep, new at
 *                                       every ~50 µs step (16^24 paths)
 *   wl_flood labels SECONDS [THREADS]   every request a new label set: 10 labels of 250
 *                                       bytes, unique per request (~200 µs each)
 *
 * SECONDS 0 = until SIGTERM. THREADS default 2, at most 16. Exits 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctx/ctx.h>

#define NSTEPS     16
#define MIN_DEPTH  24
#define NLABELS    10
#define VALUE_LEN  250
#define MAX_THREAD 16

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

static uint64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(uint64_t r)
{
        return r * 6364136223846793005ull + 1442695040888963407ull;
}

__attribute__((noinline)) static void burn(uint64_t r, unsigned rounds)
{
        for (unsigned i = 0; i < rounds; i++)
                r = (r ^ (r >> 29)) * 0xBF58476D1CE4E5B9ull + i;
        sink += r;
}

typedef void (*step_fn)(uint64_t r, unsigned depth);
static step_fn steps[NSTEPS];

/* One of NSTEPS distinct functions: calls a random one of them depth more times, then burns.
 * The add after the call keeps it from being a tail call (its frame stays on the stack). */
#define STEP(i)                                                                                    \
        __attribute__((noinline)) static void step##i(uint64_t r, unsigned depth)                  \
        {                                                                                          \
                if (!depth) {                                                                      \
                        burn(r, 20000);                                                            \
                        return;                                                                    \
                }                                                                                  \
                r = next_rand(r);                                                                  \
                steps[(r >> 59) & (NSTEPS - 1)](r, depth - 1);                                     \
                sink += depth + i;                                                                 \
        }
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)
STEP(8)
STEP(9)
STEP(10)
STEP(11)
STEP(12)
STEP(13)
STEP(14)
STEP(15)
static step_fn steps[NSTEPS] = {step0, step1, step2,  step3,  step4,  step5,  step6,  step7,
                                step8, step9, step10, step11, step12, step13, step14, step15};

static void flood_stacks(uint64_t r)
{
        while (!stop) {
                r = next_rand(r);
                steps[r >> 60](r, MIN_DEPTH + (unsigned)((r >> 40) & 15));
        }
}

static void flood_labels(uint64_t r)
{
        char val[VALUE_LEN + 1];

        for (uint64_t req = 0; !stop; req++) {
                for (unsigned k = 0; k < NLABELS; k++) {
                        char key[8];
                        int n = snprintf(val, sizeof(val), "%016llx-%02u-%016llx-",
                                         (unsigned long long)r, k, (unsigned long long)req);
                        memset(val + n, 'a' + (int)(req % 26), VALUE_LEN - (size_t)n);
                        snprintf(key, sizeof(key), "k%u", k);
                        ctx_set_label(key, strlen(key), val, VALUE_LEN);
                }
                burn(req, 4000);
                ctx_clear_labels();
        }
}

static int labels_mode;

static void *worker(void *arg)
{
        uint64_t r = next_rand((uint64_t)(uintptr_t)arg ^ mono_ns());

        ctx_thread_init();
        ctx_set_label_str("role", "flood");
        if (labels_mode)
                flood_labels(r);
        else
                flood_stacks(r);
        return NULL;
}

static void on_signal(int sig)
{
        (void)sig;
        stop = 1;
}

int main(int argc, char **argv)
{
        pthread_t th[MAX_THREAD];
        unsigned n = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
        uint64_t secs = argc > 2 ? (uint64_t)atoi(argv[2]) : 0, end;

        if (argc < 3 || (strcmp(argv[1], "stacks") && strcmp(argv[1], "labels"))) {
                fprintf(stderr, "usage: wl_flood stacks|labels SECONDS [THREADS]\n");
                return 2;
        }
        labels_mode = !strcmp(argv[1], "labels");
        if (n < 1 || n > MAX_THREAD)
                n = 2;
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        for (unsigned i = 0; i < n; i++)
                pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
        end = secs ? mono_ns() + secs * 1000000000ull : 0;
        while (!stop && (!end || mono_ns() < end)) {
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
        }
        stop = 1;
        for (unsigned i = 0; i < n; i++)
                pthread_join(th[i], NULL);
        return 0;
}

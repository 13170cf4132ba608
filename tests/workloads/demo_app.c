/* SPDX-License-Identifier: MIT */
/*
 * demo_app.c — the built-in demo workload for `make demo`: a pretend request server.
 * Worker threads take "requests" for three routes; each request gets a span (span id,
 * local root span id) and labels (route, tier) through libctx, then burns CPU in a
 * route-specific call chain, so a profile splits cleanly by request context.
 * Runs until killed, or for argv[1] seconds. Never exits with context half-set.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ctx/ctx.h>

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t spin_hash(uint64_t seed, unsigned rounds)
{
        uint64_t h = seed;
        for (unsigned i = 0; i < rounds; i++)
                h = (h ^ (h >> 31)) * 0x9E3779B97F4A7C15ULL + i;
        return h;
}

__attribute__((noinline)) static uint64_t compute_tax(uint64_t order)
{
        return spin_hash(order, 400000);
}

__attribute__((noinline)) static uint64_t handle_checkout(uint64_t order)
{
        return compute_tax(order) + spin_hash(order, 100000);
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return (x > y) - (x < y);
}

/* The scratch array lives outside the stack: a 16 KiB local would fill the whole 16 KiB of
 * stack that --call-graph dwarf copies per sample, and every sample taken in qsort below it
 * would be cut short (22% of the demo's samples were). */
static _Thread_local uint32_t v[4096];

__attribute__((noinline)) static uint64_t rank_results(uint64_t q)
{
        for (unsigned i = 0; i < 4096; i++)
                v[i] = (uint32_t)spin_hash(q + i, 8);
        qsort(v, 4096, sizeof v[0], cmp_u32);
        return v[17];
}

__attribute__((noinline)) static uint64_t handle_search(uint64_t q)
{
        return rank_results(q);
}

__attribute__((noinline)) static uint64_t check_password(uint64_t user)
{
        return spin_hash(user, 150000);
}

__attribute__((noinline)) static uint64_t handle_login(uint64_t user)
{
        return check_password(user);
}

static void *worker(void *arg)
{
        unsigned id = (unsigned)(uintptr_t)arg;
        uint64_t seq = (uint64_t)id << 40;
        static const char *const tiers[] = {"free", "pro", "enterprise"};
        ctx_thread_init();
        while (!stop) {
                uint64_t root = ++seq;
                unsigned route = (unsigned)(spin_hash(root, 3) % 6);
                ctx_set_span(root * 16 + 1, root);
                ctx_set_label_str("tier", tiers[route % 3]);
                if (route < 3) {
                        ctx_set_label_str("route", "/checkout");
                        sink += handle_checkout(root);
                } else if (route < 5) {
                        ctx_set_label_str("route", "/search");
                        sink += handle_search(root);
                } else {
                        ctx_set_label_str("route", "/login");
                        sink += handle_login(root);
                }
                ctx_clear_labels();
                ctx_clear_span();
        }
        return NULL;
}

static void on_signal(int sig)
{
        (void)sig;
        stop = 1;
}

int main(int argc, char **argv)
{
        unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
        unsigned nthreads = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
        pthread_t th[16];
        if (nthreads < 1 || nthreads > 16)
                nthreads = 2;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        for (unsigned i = 0; i < nthreads; i++) {
                char name[32];
                pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
                snprintf(name, sizeof name, "worker-%u", i);
                pthread_setname_np(th[i], name);
        }
        uint64_t end = seconds ? now_ns() + (uint64_t)seconds * 1000000000u : 0;
        while (!stop && (!end || now_ns() < end))
                usleep(20000);
        stop = 1;
        for (unsigned i = 0; i < nthreads; i++)
                pthread_join(th[i], NULL);
        return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * wl_offcpu.c — off-CPU workload for tests/integration/test_offcpu*.sh and the off-CPU bench.
 * Each worker thread sets its label op=KIND and span (SPAN_BASE + k, root SPAN_BASE) once
 * its start barrier is passed, then for SECONDS repeats one kind of waiting, timing every
 * blocking call itself with CLOCK_MONOTONIC:
 *
 *   wl-sleep   op=sleep   do_sleep:  nanosleep 20 ms
 *   wl-short   op=short   do_short:  nanosleep 100 us (every interval under a 1 ms threshold)
 *   wl-mutex   op=mutex   do_lock:   pthread_mutex_lock of a mutex wl-holder keeps for 15 ms,
 *                                    then 3 ms of nanosleep under op=mutex-nap without a span
 *   wl-holder  op=holder  (holds the mutex while sleeping 15 ms, then 5 ms without it)
 *   wl-pipe    op=pipe    do_read:   read of a pipe wl-feeder writes a byte to every 10 ms
 *   wl-feeder  op=feeder  (sleeps 10 ms, writes one byte)
 *   wl-burn    op=burn    do_burn:   CPU only
 *
 *   wl_offcpu OUTFILE SECONDS         at the end each thread writes one line to OUTFILE:
 *                                     "NAME TID op=KIND span=HEX blocked_ns=N calls=C"
 *                                     (blocked_ns: the sum of its timed blocking calls)
 *   wl_offcpu churn SECONDS           short-lived threads and processes that exit while
 *                                     blocked (a thread sleeping when its process is killed,
 *                                     threads cancelled in a nanosleep) for SECONDS
 * Built with frame pointers against libctx.a (TLS exported with libctx's dynamic list).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"

#define SPAN_BASE       0x7000u
#define SLEEP_NS        20000000L /* 20 ms */
#define SHORT_NS        100000L   /* 100 us */
#define HOLD_NS         15000000L /* 15 ms */
#define RELEASED_NS     5000000L  /* 5 ms */
#define FEED_NS         10000000L /* 10 ms */
#define MUTEX_NAP_NS    3000000L  /* 3 ms: wl-mutex between two waits (op=mutex-nap) */
#define CHURN_THREADS   8
#define NS_PER_SEC_WL   1000000000ull
#define BURN_ITERATIONS 100000

enum kind { K_SLEEP, K_SHORT, K_MUTEX, K_HOLDER, K_PIPE, K_FEEDER, K_BURN, K_N };
static const char *const kind_name[K_N] = {"sleep", "short",  "mutex", "holder",
                                           "pipe",  "feeder", "burn"};

struct worker {
        enum kind kind;
        pthread_t th;
        pid_t tid;
        uint64_t blocked_ns, calls;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static int pipefd[2];
static uint64_t deadline_ns;
static volatile uint64_t sink_value;

static uint64_t now_ns(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * NS_PER_SEC_WL + (uint64_t)t.tv_nsec;
}

/* Blocks in libc's nanosleep (no frame pointer there): off-CPU stacks must show
 * do_sleep;nap;<libc> in every call-graph mode (tests/integration/test_offcpu_stacks.sh). */
__attribute__((noinline)) static void nap(long ns)
{
        struct timespec d = {ns / (long)NS_PER_SEC_WL, ns % (long)NS_PER_SEC_WL};

        while (nanosleep(&d, &d))
                ;
}

__attribute__((noinline)) static void do_sleep(long ns)
{
        nap(ns);
}

__attribute__((noinline)) static void do_short(void)
{
        nap(SHORT_NS);
}

__attribute__((noinline)) static void do_lock(void)
{
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void do_read(void)
{
        char c;

        if (read(pipefd[0], &c, 1) < 0)
                perror("read");
}

__attribute__((noinline)) static void do_burn(void)
{
        uint64_t x = sink_value;

        for (int i = 0; i < BURN_ITERATIONS; i++)
                x = x * 6364136223846793005ull + 1442695040888963407ull;
        sink_value = x;
}

/* One blocking call of the worker's kind, timed when it is a measured one. */
static void one_round(struct worker *w)
{
        uint64_t t0 = now_ns();

        switch (w->kind) {
        case K_SLEEP:
                do_sleep(SLEEP_NS);
                break;
        case K_SHORT:
                do_short();
                break;
        case K_MUTEX:
                do_lock();
                w->blocked_ns += now_ns() - t0;
                w->calls++;
                /* let the holder take it again, outside the span and label measured */
                ctx_clear_span();
                ctx_set_label_str("op", "mutex-nap");
                nap(MUTEX_NAP_NS);
                ctx_set_label_str("op", kind_name[w->kind]);
                ctx_set_span(SPAN_BASE + (uint64_t)w->kind + 1, SPAN_BASE);
                return;
        case K_PIPE:
                do_read();
                break;
        case K_HOLDER:
                pthread_mutex_lock(&lock);
                nap(HOLD_NS);
                pthread_mutex_unlock(&lock);
                nap(RELEASED_NS);
                return;
        case K_FEEDER:
                nap(FEED_NS);
                if (write(pipefd[1], "x", 1) != 1)
                        perror("write");
                return;
        case K_BURN:
                do_burn();
                return;
        default:
                return;
        }
        w->blocked_ns += now_ns() - t0;
        w->calls++;
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        char name[16];

        w->tid = (pid_t)syscall(SYS_gettid);
        snprintf(name, sizeof(name), "wl-%s", kind_name[w->kind]);
        prctl(PR_SET_NAME, name);
        ctx_thread_init();
        pthread_barrier_wait(&start);
        ctx_set_label_str("op", kind_name[w->kind]);
        ctx_set_span(SPAN_BASE + (uint64_t)w->kind + 1, SPAN_BASE);
        while (now_ns() < deadline_ns)
                one_round(w);
        /* the pipe reader may be waiting for one more byte */
        if (w->kind == K_FEEDER && write(pipefd[1], "x", 1) != 1)
                perror("write");
        ctx_clear_span();
        ctx_clear_labels();
        return NULL;
}

static int run(const char *out, long seconds)
{
        struct worker w[K_N];
        FILE *f;
        int k;

        if (pipe(pipefd)) {
                perror("pipe");
                return 1;
        }
        pthread_barrier_init(&start, NULL, K_N + 1);
        memset(w, 0, sizeof(w));
        for (k = 0; k < K_N; k++) {
                w[k].kind = (enum kind)k;
                if (pthread_create(&w[k].th, NULL, worker_main, &w[k])) {
                        perror("pthread_create");
                        return 1;
                }
        }
        deadline_ns = now_ns() + (uint64_t)seconds * NS_PER_SEC_WL;
        pthread_barrier_wait(&start);
        for (k = 0; k < K_N; k++) {
                if (k == K_FEEDER) /* the reader needs a last byte to see the deadline */
                        continue;
                pthread_join(w[k].th, NULL);
                if (k == K_PIPE)
                        pthread_join(w[K_FEEDER].th, NULL);
        }
        f = fopen(out, "w");
        if (!f) {
                perror(out);
                return 1;
        }
        for (k = 0; k < K_N; k++)
                fprintf(f, "wl-%s %d op=%s span=%llx blocked_ns=%llu calls=%llu\n", kind_name[k],
                        (int)w[k].tid, kind_name[k],
                        (unsigned long long)(SPAN_BASE + (unsigned)k + 1),
                        (unsigned long long)w[k].blocked_ns, (unsigned long long)w[k].calls);
        fclose(f);
        return 0;
}

static void *churn_thread(void *arg)
{
        (void)arg;
        ctx_set_label_str("op", "churn");
        nap(SLEEP_NS * 50); /* blocked when it is cancelled or its process is killed */
        return NULL;
}

/* Threads cancelled and processes killed while they are blocked, for `seconds`. */
static int churn(long seconds)
{
        uint64_t end = now_ns() + (uint64_t)seconds * NS_PER_SEC_WL;

        while (now_ns() < end) {
                pthread_t th[CHURN_THREADS];
                pid_t child = fork();
                int i;

                if (child == 0) {
                        for (i = 0; i < CHURN_THREADS; i++)
                                pthread_create(&th[i], NULL, churn_thread, NULL);
                        churn_thread(NULL);
                        _exit(0);
                }
                for (i = 0; i < CHURN_THREADS; i++)
                        pthread_create(&th[i], NULL, churn_thread, NULL);
                nap(SLEEP_NS / 2);
                for (i = 0; i < CHURN_THREADS; i++) {
                        pthread_cancel(th[i]);
                        pthread_join(th[i], NULL);
                }
                if (child > 0) {
                        kill(child, SIGKILL);
                        waitpid(child, NULL, 0);
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && !strcmp(argv[1], "churn"))
                return churn(atol(argv[2]));
        if (argc != 3) {
                fprintf(stderr, "usage: wl_offcpu OUTFILE SECONDS | wl_offcpu churn SECONDS\n");
                return 2;
        }
        return run(argv[1], atol(argv[2]));
}

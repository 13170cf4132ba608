/* SPDX-License-Identifier: MIT */
/*
 * wl_attrib.c — attribution workload for the sampler tests and benchmarks. Threads alternate
 * between work_A (under label phase=A and span 0xA / root 0xA0) and work_B (phase=B, span
 * 0xB / root 0xB0); the context is set before the call and changed only after it returns, so
 * every sample whose stack holds work_A must carry phase=A and span 0xA.
 *
 *   wl_attrib long SECONDS NTHREADS    NTHREADS threads named wl-0.. (the main thread too,
 *                                      as wl-0), for SECONDS (0 = until killed); at exit each
 *                                      thread prints "cpu TID NAME NS" from its schedstat;
 *                                      SIGUSR1 ends the run early the same way (tests that must
 *                                      not race a fixed duration against the daemon's timing)
 *   wl_attrib short SECONDS NTHREADS   NTHREADS at a time of short-lived threads (~20 ms each)
 *   wl_attrib bench SECONDS NTHREADS   no context; prints "ops N cpu_us M" at exit
 *   wl_attrib deep SECONDS NTHREADS    like long, but each thread keeps two labels (tier=gold,
 *                                      phase=A|B) and no span, and works DEEP_FRAMES calls
 *                                      deeper: 13 frames from __libc_start_call_main to work_X
 *                                      (the BPF cost benchmark's sample)
 * A 4th argument "noctx" (long mode) adds a thread wl-noctx that burns CPU in work_C and never
 * touches libctx (with dynamic TLS its DTV entry stays unallocated).
 * Built with -DWL_DLOPEN, libctx is dlopen'ed at start (path: $WL_LIBCTX, default
 * ../../libctx.so.1 next to this executable) and called through dlsym; with
 * $WL_DLOPEN_AFTER_MS, only after the main thread burned CPU that long in before_dlopen (a
 * late dlopen: the process is sampled, and located without context, before it).
 * Built with frame pointers; never exits early on its own errors except with a message.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef WL_DLOPEN
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>

static int (*ctx_set_span)(uint64_t, uint64_t);
static int (*ctx_set_label_str)(const char *, const char *);

__attribute__((noinline)) static void before_dlopen(long ms)
{
        struct timespec t0, t;
        volatile uint64_t x = 0;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
                for (int i = 0; i < 100000; i++)
                        x += (uint64_t)i;
                clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void load_libctx(void)
{
        char exe[PATH_MAX], path[PATH_MAX + 32];
        const char *p = getenv("WL_LIBCTX");
        const char *after = getenv("WL_DLOPEN_AFTER_MS");
        ssize_t n;
        void *h;

        if (after)
                before_dlopen(atol(after));

        if (!p) {
                n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (n < 0) {
                        perror("readlink");
                        exit(1);
                }
                exe[n] = '\0';
                snprintf(path, sizeof(path), "%s/../../libctx.so.1", dirname(exe));
                p = path;
        }
        h = dlopen(p, RTLD_NOW);
        if (!h) {
                fprintf(stderr, "wl_attrib: dlopen %s: %s\n", p, dlerror());
                exit(1);
        }
        *(void **)&ctx_set_span = dlsym(h, "ctx_set_span");
        *(void **)&ctx_set_label_str = dlsym(h, "ctx_set_label_str");
        if (!ctx_set_span || !ctx_set_label_str) {
                fprintf(stderr, "wl_attrib: dlsym: %s\n", dlerror());
                exit(1);
        }
}
#else
#include "ctx/ctx.h"
static void load_libctx(void)
{
}
#endif

#define DEEP_FRAMES 8 /* deep mode: calls of descend between long_thread and run_phases */

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static int use_ctx = 1;
static int deep; /* deep mode: two labels, no span, DEEP_FRAMES more frames */
static uint64_t ops_total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void step(uint64_t *x)
{
        __asm__ volatile("" : "+r"(*x));
}

__attribute__((noinline)) void work_A(void)
{
        uint64_t x = 1;
        int i, j;

        for (i = 0; i < 200; i++) {
                for (j = 0; j < 2000; j++)
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                step(&x);
        }
        sink += x;
}

__attribute__((noinline)) void work_B(void)
{
        uint64_t x = 2;
        int i, j;

        for (i = 0; i < 200; i++) {
                for (j = 0; j < 2000; j++)
                        x = x * 2862933555777941757ull + 3037000493ull;
                step(&x);
        }
        sink += x;
}

__attribute__((noinline)) void work_C(void)
{
        uint64_t x = 5;
        int i, j;

        for (i = 0; i < 200; i++) {
                for (j = 0; j < 2000; j++)
                        x = x * 6364136223846793005ull + 7;
                step(&x);
        }
        sink += x;
}

static void *noctx_thread(void *arg)
{
        (void)arg;
        pthread_setname_np(pthread_self(), "wl-noctx");
        while (!stop)
                work_C();
        return NULL;
}

__attribute__((noinline)) static uint64_t run_phases(int rounds)
{
        uint64_t n = 0;

        while (!stop && (rounds < 0 || rounds-- > 0)) {
                if (use_ctx) {
                        if (!deep)
                                ctx_set_span(0xA, 0xA0);
                        ctx_set_label_str("phase", "A");
                }
                work_A();
                if (use_ctx) {
                        if (!deep)
                                ctx_set_span(0xB, 0xB0);
                        ctx_set_label_str("phase", "B");
                }
                work_B();
                n++;
        }
        return n;
}

/* deep mode: depth more frames, then the phases */
__attribute__((noinline)) static uint64_t descend(int depth)
{
        uint64_t n;

        if (!depth)
                return run_phases(-1);
        n = descend(depth - 1);
        __asm__ volatile("" : "+r"(n)); /* not a tail call: the frame stays */
        return n;
}

static void report_cpu(void)
{
        char path[96], name[32] = "?";
        unsigned long long ns = 0;
        pid_t tid = (pid_t)syscall(SYS_gettid);
        FILE *f;

        pthread_getname_np(pthread_self(), name, sizeof(name));
        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
        f = fopen(path, "r");
        if (f) {
                if (fscanf(f, "%llu", &ns) != 1)
                        ns = 0;
                fclose(f);
        }
        pthread_mutex_lock(&lock);
        printf("cpu %d %s %llu\n", (int)tid, name, ns);
        fflush(stdout);
        pthread_mutex_unlock(&lock);
}

static void *long_thread(void *arg)
{
        char name[16];
        uint64_t n;

        snprintf(name, sizeof(name), "wl-%d", (int)(intptr_t)arg);
        pthread_setname_np(pthread_self(), name);
        if (deep)
                ctx_set_label_str("tier", "gold");
        n = deep ? descend(DEEP_FRAMES) : run_phases(-1);
        pthread_mutex_lock(&lock);
        ops_total += n;
        pthread_mutex_unlock(&lock);
        if (use_ctx)
                report_cpu();
        return NULL;
}

static void *timer_thread(void *arg)
{
        pthread_setname_np(pthread_self(), "wl-timer");
        sleep((unsigned)(intptr_t)arg);
        stop = 1;
        return NULL;
}

static void on_usr1(int sig)
{
        (void)sig;
        stop = 1;
}

static void *short_thread(void *arg)
{
        (void)arg;
        pthread_setname_np(pthread_self(), "wl-short");
        run_phases(4);
        return NULL;
}

int main(int argc, char **argv)
{
        int seconds, nthreads, i;
        pthread_t *th;
        time_t end;

        if (argc != 4 && argc != 5) {
                fprintf(stderr,
                        "usage: wl_attrib long|short|bench|deep SECONDS NTHREADS [noctx]\n");
                return 2;
        }
        seconds = atoi(argv[2]);
        nthreads = atoi(argv[3]);
        if (nthreads < 1 || nthreads > 64 || seconds < 0) {
                fprintf(stderr, "wl_attrib: bad arguments\n");
                return 2;
        }
        signal(SIGUSR1, on_usr1);
        th = calloc((size_t)nthreads, sizeof(*th));
        if (!th)
                return 1;
        end = time(NULL) + (seconds ? seconds : 1000000000);
        if (!strcmp(argv[1], "short")) {
                load_libctx();
                while (time(NULL) < end) {
                        for (i = 0; i < nthreads; i++)
                                if (pthread_create(&th[i], NULL, short_thread, NULL)) {
                                        perror("pthread_create");
                                        return 1;
                                }
                        for (i = 0; i < nthreads; i++)
                                pthread_join(th[i], NULL);
                }
                return 0;
        }
        use_ctx = strcmp(argv[1], "bench") != 0;
        deep = !strcmp(argv[1], "deep");
        if (use_ctx)
                load_libctx();
        if (argc == 5 && !strcmp(argv[4], "noctx")) {
                pthread_t t;

                if (pthread_create(&t, NULL, noctx_thread, NULL)) {
                        perror("pthread_create");
                        return 1;
                }
                pthread_detach(t);
        }
        /* the main thread is wl-0, the others wl-1.. */
        for (i = 1; i < nthreads; i++)
                if (pthread_create(&th[i], NULL, long_thread, (void *)(intptr_t)i)) {
                        perror("pthread_create");
                        return 1;
                }
        if (seconds) {
                pthread_t t;

                if (pthread_create(&t, NULL, timer_thread, (void *)(intptr_t)seconds)) {
                        perror("pthread_create");
                        return 1;
                }
                pthread_detach(t);
        }
        long_thread((void *)(intptr_t)0); /* main -> long_thread -> run_phases -> work_X */
        for (i = 1; i < nthreads; i++)
                pthread_join(th[i], NULL);
        if (!use_ctx) {
                struct rusage ru;

                /* The process's own CPU time: throughput per CPU second is what a profiler's
                 * in-target cost changes, whatever else competes for the CPUs. */
                getrusage(RUSAGE_SELF, &ru);
                printf("ops %llu cpu_us %lld\n", (unsigned long long)ops_total,
                       (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                           ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        }
        free(th);
        return 0;
}

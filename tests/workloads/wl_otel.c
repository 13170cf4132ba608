/* SPDX-License-Identifier: MIT */
/*
 * wl_otel.c — OpenTelemetry context workload (tests/integration/test_otel_*.sh, make bench).
 * Its threads alternate between work_A (trace A, span A, attributes A) and work_B (trace B,
 * span B, attributes B), published with tests/workloads/otel_spec_writer.c (no libctx). The
 * context is set before the call and changed only after it returns, so every sample whose
 * stack holds work_A must carry trace A, span A and the attributes of A:
 *
 *   A: trace 0af7651916cd43dd8448eb211c80319c span b7ad6b7169203331
 *      http.route=/a (written after a first http.route=/wrong: the last duplicate wins)
 *      tier=gold user=alice region=eu
 *   B: trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7
 *      http.route=/b tier=free user=bob region=us
 *
 *   wl_otel SECONDS NTHREADS      threads wl-0.. (0 = until killed; SIGTERM ends it)
 *
 * Environment:
 *   WL_OTEL_PROTO=flip            update by clearing/setting `valid` (default: pointer swap);
 *                   flip-slow     the same with a 20 us pause inside the update
 *   WL_OTEL_SIGHZ=N               a per-thread timer signal at N Hz interrupts the writers
 *   WL_OTEL_PCTX=memfd|anon|none|late|newkeys|corrupt|huge|deep|datadog   the process context
 *       (memfd); datadog: key 0 is datadog.local_root_span_id (A's and B's routes under it);
 *       late: published 1 s after start; newkeys: republished at 1 s with a 5th key
 *       "late.key", which threads then set (=v) in A, and again every 500 ms after (the same
 *       context, a new timestamp: a reader's look after its first decode always finds one
 *       to read, however late that first decode came); corrupt: a broken protobuf; huge:
 *       payload_size 2^31; deep: an attribute nested 30 000 arrays deep
 *   WL_OTEL_HOSTILE=bigsize|overrun|badkey|badutf8|wildptr|invalid   a third phase, work_H,
 *       under trace H 11111111111111111111111111111111 span 2222222222222222 with a broken
 *       record: attrs_data_size 65535 (http.route=/h, tier=ok, duplicates of tier=ok up to
 *       4 bytes before the 640-byte budget, then http.route=/cut... crossing it); an entry
 *       past attrs_data_size; a key index (200) beyond the key map; a value with invalid
 *       UTF-8 (tier="ok\xff"); a wild pointer; valid = 0. A correct reader shows, in work_H,
 *       at most trace H, span H, http.route=/h and tier=ok.
 *   WL_OTEL_HOSTILE=zeroids       work_H's record has all-zero trace and span ids, and
 *       http.route=/h, tier=ok (trace_flags 0, as older writers write it)
 *   WL_OTEL_HOSTILE=datadog       (with WL_OTEL_PCTX=datadog) work_H's record has key 0 =
 *       00000000075bcd15 (Datadog's local root span id 123456789) and tier=ok
 *   WL_OTEL_OFF=1                 never set a record (the pointer stays NULL: make bench)
 *   WL_OTEL_LIB=path              dlopen build (-DWL_DLOPEN): the writer library
 * Prints "ready" once the contexts are published (and the process context if any).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "otel_spec_writer.h"

#ifdef WL_DLOPEN
static void (*p_set)(int, const uint8_t *, const uint8_t *, const struct otelw_attr *, unsigned);
static void (*p_set_raw)(const void *, size_t);
static void (*p_set_ptr)(void *);
static int (*p_publish)(int, int, const char *, const char *const *, unsigned);
#define otelw_set             p_set
#define otelw_set_raw         p_set_raw
#define otelw_set_ptr         p_set_ptr
#define otelw_publish_process p_publish
#endif

#define WORK_MS 3

static const uint8_t trace_a[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
                                    0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
static const uint8_t span_a[8] = {0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
static const uint8_t trace_b[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                    0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t span_b[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const uint8_t trace_h[16] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                    0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};
static const uint8_t span_h[8] = {0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22};

#define A(k, s)                                                                                    \
        {                                                                                          \
                k, s, sizeof(s) - 1                                                                \
        }
static const struct otelw_attr attrs_a[] = {A(0, "/wrong"), A(0, "/a"), A(1, "gold"),
                                            A(2, "alice"),  A(3, "eu"), A(4, "v")};
static const struct otelw_attr attrs_b[] = {A(0, "/b"), A(1, "free"), A(2, "bob"), A(3, "us")};
static const char *const keys[] = {"http.route", "tier", "user", "region", "late.key"};
static const char *const keys_dd[] = {"datadog.local_root_span_id", "tier", "user", "region"};
#define NKEYS_FIRST 4

static volatile int stop;
static volatile int late_key; /* threads add late.key to A once it is published */
static int protocol, nthreads, off;
static const char *hostile;
static long sighz;
static volatile uint64_t sink;
static volatile int phase;

__attribute__((noinline)) static void burn(long ms)
{
        struct timespec t0, t;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
                for (int i = 0; i < 20000; i++)
                        sink += (uint64_t)i * 7;
                clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

__attribute__((noinline)) static void work_A(void)
{
        phase = 1; /* distinct bodies: the compiler must not fold the three into one */
        burn(WORK_MS);
        __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void work_B(void)
{
        phase = 2; /* distinct bodies: the compiler must not fold the three into one */
        burn(WORK_MS);
        __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void work_H(void)
{
        phase = 3; /* distinct bodies: the compiler must not fold the three into one */
        burn(WORK_MS);
        __asm__ volatile("" ::: "memory");
}

/* The hostile record of WL_OTEL_HOSTILE (see the header comment). */
static void set_hostile(void)
{
        uint8_t r[OTELW_REC_MAX + 64];
        uint16_t size;
        size_t n = OTELW_HDR_BYTES;

        memset(r, 0, sizeof(r));
        memcpy(r, trace_h, 16);
        memcpy(r + 16, span_h, 8);
        r[24] = strcmp(hostile, "invalid") ? 1 : 0;
        if (!strcmp(hostile, "wildptr")) {
                otelw_set_ptr((void *)(uintptr_t)0xdead0000ull);
                return;
        }
        if (!strcmp(hostile, "zeroids"))
                memset(r, 0, 24);
        if (!strcmp(hostile, "datadog")) {
                memcpy(r + n,
                       "\x00\x10"
                       "00000000075bcd15",
                       18);
                n += 18;
        } else {
                memcpy(r + n, "\x00\x02/h", 4); /* http.route=/h */
                n += 4;
        }
        if (!strcmp(hostile, "bigsize")) {
                /* entries up to 4 bytes before the budget, then one that crosses it */
                while (n + 4 <= OTELW_REC_MAX - 4) {
                        memcpy(r + n, "\x01\x02ok", 4);
                        n += 4;
                }
                memcpy(r + n, "\x00\x28/cut", 6);
                n += 2 + 40;
        } else if (!strcmp(hostile, "badutf8")) {
                memcpy(r + n, "\x01\x03ok\xff", 5);
                n += 5;
        } else if (!strcmp(hostile, "badkey")) {
                memcpy(r + n, "\xc8\x01x\x01\x02ok", 7); /* key 200 = x, then tier=ok */
                n += 7;
        } else if (!strcmp(hostile, "zeroids") || !strcmp(hostile, "datadog")) {
                memcpy(r + n, "\x01\x02ok", 4);
                n += 4;
        } else if (!strcmp(hostile, "overrun")) {
                memcpy(r + n, "\x02\xc8", 2); /* user, 200 bytes: far past the record */
                n += 2;
        }
        size = strcmp(hostile, "bigsize") ? (uint16_t)(n - OTELW_HDR_BYTES) : 65535;
        memcpy(r + 26, &size, 2);
        otelw_set_raw(r, sizeof(r));
}

static void on_timer(int sig)
{
        (void)sig;
        sink++;
}

/* A CLOCK_THREAD_CPUTIME_ID timer signalling this thread at sighz. */
static void start_thread_timer(void)
{
        struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN};
        struct itimerspec its = {{0, 1000000000L / sighz}, {0, 1000000000L / sighz}};
        timer_t t;

#ifdef sigev_notify_thread_id /* musl */
        ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
        ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) || timer_settime(t, 0, &its, NULL)) {
                perror("timer");
                exit(1);
        }
}

static void *worker(void *arg)
{
        char name[16];
        unsigned na = sizeof(attrs_a) / sizeof(attrs_a[0]) - 1;

        snprintf(name, sizeof(name), "wl-%ld", (long)(intptr_t)arg);
        prctl(PR_SET_NAME, name);
        if (sighz > 0)
                start_thread_timer();
        while (!stop) {
                if (!off)
                        otelw_set(protocol, trace_a, span_a, attrs_a, late_key ? na + 1 : na);
                work_A();
                if (!off)
                        otelw_set(protocol, trace_b, span_b, attrs_b,
                                  sizeof(attrs_b) / sizeof(attrs_b[0]));
                work_B();
                if (hostile) {
                        set_hostile();
                        work_H();
                }
        }
        return NULL;
}

#ifdef WL_DLOPEN
static void load_writer(void)
{
        const char *lib = getenv("WL_OTEL_LIB");
        void *h = dlopen(lib ? lib : "libotelw_desc.so", RTLD_NOW);

        if (!h) {
                fprintf(stderr, "wl_otel: dlopen: %s\n", dlerror());
                exit(1);
        }
        *(void **)&p_set = dlsym(h, "otelw_set");
        *(void **)&p_set_raw = dlsym(h, "otelw_set_raw");
        *(void **)&p_set_ptr = dlsym(h, "otelw_set_ptr");
        *(void **)&p_publish = dlsym(h, "otelw_publish_process");
        if (!p_set || !p_set_raw || !p_set_ptr || !p_publish) {
                fprintf(stderr, "wl_otel: dlsym failed\n");
                exit(1);
        }
}
#endif

static void on_term(int sig)
{
        (void)sig;
        stop = 1;
}

static void publish(int bad, unsigned nkeys)
{
        const char *k = getenv("WL_OTEL_PCTX");
        int kind = k && !strcmp(k, "anon") ? OTELW_PCTX_ANON : OTELW_PCTX_MEMFD;

        if (otelw_publish_process(kind, bad, "checkout-svc",
                                  k && !strcmp(k, "datadog") ? keys_dd : keys, nkeys)) {
                perror("otelw_publish_process");
                exit(1);
        }
}

#define REPUBLISH_NS 500000000L /* newkeys: the context republished this often after 1 s */

/* newkeys: the 5th key at 1 s, then the same context republished until the end. */
static void *republisher(void *arg)
{
        const struct timespec every = {0, REPUBLISH_NS};

        (void)arg;
        sleep(1);
        publish(OTELW_PCTX_GOOD, NKEYS_FIRST + 1);
        late_key = 1;
        for (;;) {
                nanosleep(&every, NULL);
                publish(OTELW_PCTX_GOOD, NKEYS_FIRST + 1);
        }
        return NULL;
}

int main(int argc, char **argv)
{
        const char *pctx = getenv("WL_OTEL_PCTX") ? getenv("WL_OTEL_PCTX") : "memfd";
        const char *p = getenv("WL_OTEL_PROTO");
        pthread_t th[64];
        long secs;

        if (argc < 3) {
                fprintf(stderr, "usage: wl_otel SECONDS NTHREADS\n");
                return 2;
        }
        secs = atol(argv[1]);
        nthreads = atoi(argv[2]);
        if (nthreads < 1 || nthreads > 64)
                return 2;
        protocol = p && !strcmp(p, "flip")        ? OTELW_FLIP
                   : p && !strcmp(p, "flip-slow") ? OTELW_FLIP_SLOW
                                                  : OTELW_SWAP;
        hostile = getenv("WL_OTEL_HOSTILE");
        off = getenv("WL_OTEL_OFF") != NULL;
        sighz = getenv("WL_OTEL_SIGHZ") ? atol(getenv("WL_OTEL_SIGHZ")) : 0;
        signal(SIGTERM, on_term);
        signal(SIGINT, on_term);
        signal(SIGRTMIN, on_timer);
#ifdef WL_DLOPEN
        load_writer();
#endif
        if (!strcmp(pctx, "memfd") || !strcmp(pctx, "anon") || !strcmp(pctx, "newkeys") ||
            !strcmp(pctx, "datadog"))
                publish(OTELW_PCTX_GOOD, NKEYS_FIRST);
        else if (!strcmp(pctx, "corrupt"))
                publish(OTELW_PCTX_CORRUPT, NKEYS_FIRST);
        else if (!strcmp(pctx, "huge"))
                publish(OTELW_PCTX_HUGE, NKEYS_FIRST);
        else if (!strcmp(pctx, "deep"))
                publish(OTELW_PCTX_DEEP, NKEYS_FIRST);
        for (long i = 1; i < nthreads; i++)
                pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
        printf("ready\n");
        fflush(stdout);
        if (!strcmp(pctx, "late")) {
                /* the main thread sleeps through the first second, then publishes */
                sleep(1);
                publish(OTELW_PCTX_GOOD, NKEYS_FIRST);
        } else if (!strcmp(pctx, "newkeys")) {
                pthread_t rt;

                if (pthread_create(&rt, NULL, republisher, NULL)) {
                        perror("pthread_create");
                        return 1;
                }
        }
        if (secs > 0) {
                struct sigaction sa = {.sa_handler = on_term};

                sigaction(SIGALRM, &sa, NULL);
                alarm((unsigned)secs - !strcmp(pctx, "late"));
        }
        worker((void *)0);
        for (long i = 1; i < nthreads; i++)
                pthread_join(th[i], NULL);
        return 0;
}

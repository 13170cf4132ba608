/* SPDX-License-Identifier: MIT */
/*
 * bench_jfr.c — JFR writer throughput and size on a synthetic labelled workload shaped like
 * one 60 s chunk at 99 Hz x 8 threads: ~400 distinct stacks (Zipf), 3 label keys, requests
 * of ~80 ms with a root span and child spans every ~20 ms, 15% of samples outside any
 * request. Prints events/s, bytes per sample (pools and metadata included), and chunk
 * latency (encode + write, with and without fsync), and what JFR_WRITER_REPLACE (record's
 * rename per chunk) costs per chunk on files of 10 and 100 MB in this directory's
 * filesystem against appending in place. Prints numbers; asserts nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jfr/jfr_file.h"
#include "jfr/jfr_writer.h"
#include "util/clock.h"

#define THREADS 8
#define HZ      99
#define SECONDS 60
#define NSTACKS 400
#define NFUNCS  300

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}
static double unif(void)
{
        return (double)(rnd() >> 11) / 9007199254740992.0;
}
/* Zipf-ish index in [0, n): skewed to small values */
static unsigned zipf(unsigned n)
{
        return (unsigned)(pow(unif(), 3.0) * n);
}

static char func_names[NFUNCS][64];
static const char *modules[] = {
    "app", "libc.so.6", "libssl.so.3", "libstdc++.so.6", "[kernel.kallsyms]", "libz.so.1"};
static struct jfr_frame stacks[NSTACKS][48];
static int depth[NSTACKS];

static void make_stacks(void)
{
        for (int i = 0; i < NFUNCS; i++)
                snprintf(func_names[i], sizeof(func_names[i]),
                         i % 3 ? "handler_%d_process_request"
                               : "ns%d::Service::call(Request const&)",
                         i);
        for (int s = 0; s < NSTACKS; s++) {
                depth[s] = 10 + (int)(rnd() % 30);
                for (int f = 0; f < depth[s]; f++) {
                        /* outer frames shared (main, event loop), leaves varied */
                        unsigned fn = f > depth[s] - 5 ? (unsigned)(depth[s] - f) : zipf(NFUNCS);
                        unsigned mod = fn % 6;
                        stacks[s][f] = (struct jfr_frame){
                            func_names[fn], modules[mod], mod == 0 ? (int)(fn * 7 % 900) : -1,
                            jfr_frame_type_for(func_names[fn], mod == 4)};
                }
        }
}

struct run_result {
        size_t bytes;
        uint64_t samples, add_ns, finish_ns;
};

/* mode 0: labelled workload; 1: no context at all; 2: a new random span every sample */
static struct run_result run_chunk(struct jfr_writer *w, int mode, uint64_t t0)
{
        static const char *routes[20], *tenants[50], *regions[] = {"eu", "us", "ap"};
        static char rbuf[20][32], tbuf[50][32];
        for (int i = 0; i < 20; i++) {
                snprintf(rbuf[i], sizeof(rbuf[i]), "/api/v1/resource%d/{id}", i);
                routes[i] = rbuf[i];
        }
        for (int i = 0; i < 50; i++) {
                snprintf(tbuf[i], sizeof(tbuf[i]), "tenant-%d", i);
                tenants[i] = tbuf[i];
        }
        struct run_result r = {0};
        uint64_t a = mono_ns();
        jfr_writer_begin_chunk(w, 1700000000000000000ull, t0);
        for (int t = 0; t < THREADS; t++) {
                char name[32];
                snprintf(name, sizeof(name), "worker-%d", t);
                jfr_writer_add_thread(w, 1000 + t, name, NULL);
        }
        for (int s = 0; s < NSTACKS; s++)
                jfr_writer_add_stack(w, (uint64_t)s + 1, stacks[s], (size_t)depth[s], 0);
        uint32_t next_ctx = 1;
        for (int t = 0; t < THREADS; t++) {
                uint64_t req_end = 0, span_end = 0, span = 0, root = 0;
                uint32_t ctx = 0;
                for (uint64_t ts = t0; ts < t0 + SECONDS * 1000000000ull;
                     ts += 1000000000ull / HZ) {
                        if (ts >= req_end) { /* next request (or idle gap) */
                                req_end = ts + (uint64_t)(-log(unif() + 1e-9) * 80e6);
                                if (unif() < 0.15) {
                                        root = span = 0;
                                        ctx = 0;
                                } else {
                                        root = span = rnd();
                                        struct jfr_label l[3] = {
                                            {"http.route", routes[zipf(20)], 10, 0},
                                            {"tenant", tenants[zipf(50)], 6, 0},
                                            {"region", regions[rnd() % 3], 6, 0}};
                                        for (int i = 0; i < 3; i++)
                                                l[i].value_len = strlen(l[i].value);
                                        ctx = next_ctx++;
                                        jfr_writer_add_labels(w, ctx, l, 3);
                                }
                                span_end = ts + 20000000;
                        }
                        if (root && ts >= span_end) {
                                span = rnd();
                                span_end = ts + (uint64_t)(-log(unif() + 1e-9) * 20e6);
                        }
                        struct jfr_sample smp = {ts, 1 + zipf(NSTACKS), span, root, ctx, 1000 + t};
                        if (mode == 1)
                                smp.span_id = smp.root_span_id = smp.context_id = 0;
                        if (mode == 2)
                                smp.span_id = rnd() | 1;
                        jfr_writer_add_sample(w, &smp);
                        r.samples++;
                }
        }
        uint64_t b = mono_ns();
        jfr_writer_finish_chunk(w, t0 + SECONDS * 1000000000ull, &r.bytes);
        uint64_t c = mono_ns();
        r.add_ns = b - a;
        r.finish_ns = c - b;
        return r;
}

#define COST_CHUNK (200u << 10) /* a chunk of a busy 60 s period */
#define COST_MB    (1u << 20)

/* A synthetic chunk jfr_file accepts (valid header, patterned body). */
static uint8_t *fake_chunk(size_t len)
{
        uint8_t *c = malloc(len);
        if (!c)
                return NULL;
        memset(c, 0x5a, len);
        memset(c, 0, 68);
        memcpy(c, "FLR\0", 4);
        c[5] = 2;
        c[7] = 1;
        for (int i = 0; i < 8; i++) {
                c[8 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
                c[24 + i] = (uint8_t)(68ull >> (56 - 8 * i));
        }
        return c;
}

/* Mean time of appending a COST_CHUNK chunk to a file of `mb` MB, with `flags`. */
static double append_cost_ms(const char *path, unsigned mb, int flags)
{
        struct jfr_file *f;
        uint8_t *big = fake_chunk(COST_MB), *c = fake_chunk(COST_CHUNK);
        double ms = -1;
        if (!big || !c || jfr_file_open(&f, path, JFR_FILE_NO_FSYNC, NULL))
                goto out;
        for (unsigned i = 0; i < mb; i++)
                jfr_file_append(f, big, COST_MB);
        jfr_file_close(f);
        sync();
        if (jfr_file_open(&f, path, JFR_FILE_APPEND | flags, NULL))
                goto out;
        const int reps = 5;
        uint64_t t0 = mono_ns();
        for (int i = 0; i < reps; i++)
                jfr_file_append(f, c, COST_CHUNK);
        ms = (double)(mono_ns() - t0) / reps / 1e6;
        jfr_file_close(f);
out:
        free(big);
        free(c);
        return ms;
}

static void replace_cost(const char *path)
{
        static const unsigned sizes[] = {10, 100};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                printf("jfr file of %3u MB, %u KiB chunk, fsync: in place %.1f ms, "
                       "JFR_WRITER_REPLACE %.1f ms per chunk\n",
                       sizes[i], COST_CHUNK >> 10, append_cost_ms(path, sizes[i], 0),
                       append_cost_ms(path, sizes[i], JFR_FILE_REPLACE));
}

int main(void)
{
        char path[] = "/tmp/ctxprof-bench-jfr-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
                return 1;
        close(fd);
        make_stacks();
        static const char *names[] = {"labelled (3 keys, spans)", "no context",
                                      "labelled, unique span per sample"};
        for (int mode = 0; mode < 3; mode++) {
                for (int fs = 0; fs < 2; fs++) {
                        if (mode && fs)
                                continue;
                        struct jfr_writer *w;
                        struct jfr_recording_info info = {"bench", "cpu-clock", HZ,  "fp",
                                                          0,       NULL,        NULL};
                        int err = jfr_writer_open(&w, path, fs ? 0 : JFR_WRITER_NO_FSYNC, &info);
                        if (err) {
                                fprintf(stderr, "open: %s\n", strerror(-err));
                                return 1;
                        }
                        const int reps = 5;
                        struct run_result tot = {0};
                        uint64_t worst = 0;
                        for (int i = 0; i < reps; i++) {
                                struct run_result r =
                                    run_chunk(w, mode, 1000000000000ull + (uint64_t)i * 61e9);
                                tot.bytes += r.bytes;
                                tot.samples += r.samples;
                                tot.add_ns += r.add_ns;
                                tot.finish_ns += r.finish_ns;
                                worst = r.finish_ns > worst ? r.finish_ns : worst;
                        }
                        struct jfr_writer_counters c;
                        jfr_writer_counters(w, &c);
                        jfr_writer_close(w);
                        uint64_t events = c.samples + c.context_samples;
                        printf("jfr %-34s %s: %llu samples/chunk, %.1f bytes/sample, "
                               "%.2f Mevents/s (add+finish), chunk finish %.1f ms avg / %.1f ms "
                               "max, %.0f KiB/chunk\n",
                               names[mode], fs ? "fsync   " : "no fsync",
                               (unsigned long long)(tot.samples / reps),
                               (double)tot.bytes / (double)tot.samples,
                               (double)events / ((double)(tot.add_ns + tot.finish_ns) / 1e9) / 1e6,
                               (double)tot.finish_ns / reps / 1e6, (double)worst / 1e6,
                               (double)tot.bytes / reps / 1024);
                }
        }
        replace_cost(path);
        unlink(path);
        return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * wl_exec.c — exec workload for the sampler's ordering tests: a process that alternates
 * between two executables by exec'ing, burning CPU in a function named after the image that
 * runs it, so every sample says by its frames which image took it. Built twice (mk/60-sampler.mk):
 *
 *   wl_exec_ctx     links libctx: labels img=ctx, span 0xC / root 0xC0; work in work_ctx_image
 *   wl_exec_plain   no libctx; work in work_plain_image. A decoy: its static TLS block (1 KiB,
 *                   right below the thread pointer, where wl_exec_ctx keeps libctx's
 *                   variables) holds pointers to a Custom Labels set {img=stale} from the
 *                   moment the loader sets up TLS (initialized data of a non-PIE build), so
 *                   a reader that applies wl_exec_ctx's TLS offsets to this image finds
 *                   img=stale instead of nothing.
 *
 *   wl_exec_ctx|wl_exec_plain ROUNDS CTX_MS PLAIN_MS
 *
 * Each image works for its MS (CLOCK_MONOTONIC, no syscall in the loop), then, while ROUNDS
 * > 0, execs the other image (same directory) with ROUNDS - 1; at ROUNDS 0 it exits 0. An MS
 * of the form LO-HI sweeps: the image works LO + ROUNDS % (HI - LO + 1) ms. The
 * process keeps one pid and one thread, so its comm at sample time always names the image.
 * Built with frame pointers; exits 1 with a message on its own errors.
 */
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef WL_EXEC_CTX
#include "ctx/ctx.h"
#define IMAGE "wl_exec_ctx"
#define OTHER "wl_exec_plain"
#else
#include "ctx/abi.h"
#define IMAGE "wl_exec_plain"
#define OTHER "wl_exec_ctx"

static const unsigned char decoy_key[] = "img", decoy_value[] = "stale";
static custom_labels_label_t decoy_label = {{3, decoy_key}, {5, decoy_value}};
static custom_labels_labelset_t decoy_set = {&decoy_label, 1, 1};
/* Not static: kept although nothing here reads it. */
__thread custom_labels_labelset_t *wl_exec_decoy_tls[128] = {[0 ... 127] = &decoy_set};
#endif

static volatile uint64_t sink;

static unsigned parse_ms(const char *arg, long rounds)
{
        unsigned lo, hi;

        if (sscanf(arg, "%u-%u", &lo, &hi) == 2 && hi >= lo)
                return lo + (unsigned)(rounds % (long)(hi - lo + 1));
        return (unsigned)atoi(arg);
}

static uint64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void burn(uint64_t until_ns)
{
        uint64_t x = 3;
        int i;

        do {
                for (i = 0; i < 20000; i++)
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                __asm__ volatile("" : "+r"(x));
        } while (mono_ns() < until_ns);
        sink += x;
}

#ifdef WL_EXEC_CTX
__attribute__((noinline)) void work_ctx_image(unsigned ms)
{
        burn(mono_ns() + ms * 1000000ull);
        sink++; /* not a tail call: this frame stays on the stack */
}
#else
__attribute__((noinline)) void work_plain_image(unsigned ms)
{
        burn(mono_ns() + ms * 1000000ull);
        sink++; /* not a tail call: this frame stays on the stack */
}
#endif

int main(int argc, char **argv)
{
        char exe[PATH_MAX], next[PATH_MAX + 32], rounds[24];
        unsigned ms;
        ssize_t n;
        long r;

        if (argc != 4) {
                fprintf(stderr, "usage: %s ROUNDS CTX_MS PLAIN_MS\n", IMAGE);
                return 2;
        }
        r = atol(argv[1]);
#ifdef WL_EXEC_CTX
        ms = parse_ms(argv[2], r);
        ctx_set_span(0xC, 0xC0);
        ctx_set_label_str("img", "ctx");
        work_ctx_image(ms);
#else
        ms = parse_ms(argv[3], r);
        work_plain_image(ms);
#endif
        if (r <= 0)
                return 0;
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n < 0) {
                perror(IMAGE ": readlink");
                return 1;
        }
        exe[n] = '\0';
        snprintf(next, sizeof(next), "%s/" OTHER, dirname(exe));
        snprintf(rounds, sizeof(rounds), "%ld", r - 1);
        execl(next, OTHER, rounds, argv[2], argv[3], (char *)NULL);
        fprintf(stderr, IMAGE ": exec %s: ", next);
        perror("");
        return 1;
}

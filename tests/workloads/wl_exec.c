/*
 * wl_exec.c — exec workload for the sampler's ordering tests: a process that alternates
 * between two executables by exec'ing, burning CPU in a function named after the image that
 * runs it, so every sample says by its frames which image took it. Built twice (mk/60-sampler.mk):
 *
 *   wl_exec_ctx     links libctx: labels img=ctx, span 0xC / root 0xC0; work in work_ctx_image
 *   wl_exec_plain   no libctx; work in work_plain_image
 *
 *   wl_exec_ctx|wl_exec_plain ROUNDS CTX_MS PLAIN_MS
 *
 * Each image works for its MS (CLOCK_MONOTONIC, no syscall in the loop), then, while ROUNDS
 * > 0, execs the other image (same directory) with ROUNDS - 1; at ROUNDS 0 it exits 0. The
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
#define IMAGE "wl_exec_plain"
#define OTHER "wl_exec_ctx"
#endif

static volatile uint64_t sink;

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
        ms = (unsigned)atoi(argv[2]);
        ctx_set_span(0xC, 0xC0);
        ctx_set_label_str("img", "ctx");
        work_ctx_image(ms);
#else
        ms = (unsigned)atoi(argv[3]);
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

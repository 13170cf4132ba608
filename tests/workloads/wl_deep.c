/* SPDX-License-Identifier: MIT */
/*
 * wl_deep.c — a stack deeper than the 16 KiB --call-graph dwarf copies: main -> descend ->
 * ... (DEPTH frames of ~240 bytes: fewer than 128 fit in the copy) -> spin. DWARF unwinding
 * of its samples runs out of copied stack inside descend, so every one stops early in
 * wl_deep itself (the unwinder statistics test). Spins for SECONDS of wall time (no syscall
 * but the vDSO clock), then exits 0.
 *
 *   wl_deep SECONDS [DEPTH]     DEPTH default 1000 (about 240 KiB of stack)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void spin(uint64_t until_ns)
{
        uint64_t x = 7;
        int i;

        do {
                for (i = 0; i < 20000; i++)
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                __asm__ volatile("" : "+r"(x));
        } while (mono_ns() < until_ns);
        sink += x;
}

__attribute__((noinline)) static uint64_t descend(unsigned depth, uint64_t until_ns)
{
        volatile unsigned char pad[200];

        pad[0] = (unsigned char)depth;
        if (depth)
                sink += descend(depth - 1, until_ns);
        else
                spin(until_ns);
        return pad[0]; /* after the call: not a tail call, the frame stays */
}

int main(int argc, char **argv)
{
        unsigned seconds, depth = 1000;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: wl_deep SECONDS [DEPTH]\n");
                return 2;
        }
        seconds = (unsigned)atoi(argv[1]);
        if (argc == 3)
                depth = (unsigned)atoi(argv[2]);
        sink += descend(depth, mono_ns() + seconds * 1000000000ull);
        return 0;
}

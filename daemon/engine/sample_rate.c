/* SPDX-License-Identifier: MIT */
/*
 * sample_rate.c — the per-CPU frequency cap of sample_rate.h. Never prints, never fails.
 */
#include <unistd.h>

#include "engine/sample_rate.h"

unsigned sample_rate_cap(int call_graph, unsigned ncpu)
{
        unsigned host = call_graph ? SAMPLE_RATE_HOST_DWARF : SAMPLE_RATE_HOST_FP, cap;

        if (!ncpu) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);

                ncpu = n > 0 ? (unsigned)n : 1;
        }
        cap = host / ncpu;
        return cap < SAMPLE_RATE_MIN_CAP ? SAMPLE_RATE_MIN_CAP : cap;
}

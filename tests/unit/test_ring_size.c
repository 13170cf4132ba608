/* SPDX-License-Identifier: MIT */
/*
 * test_ring_size.c — the sample ring's size (engine/sampler.h, sampler_ring_bytes): a second
 * of every CPU's samples at the rate asked, between the floors (8 MiB; 32 MiB with a stack
 * copy) and the 128 MiB ceiling, a power of two; an explicit size rounded up to one.
 */
#include <criterion/criterion.h>
#include <unistd.h>

#include "engine/sampler.h"

#define MIB (1ull << 20)

static size_t ring(unsigned ncpu, unsigned freq, int cg, int event, size_t bytes)
{
        struct sampler_opts o = {
            .freq = freq, .call_graph = cg, .event = event, .ring_bytes = bytes};

        return sampler_ring_bytes(&o, ncpu);
}

Test(ring_size, sized_by_cpus_and_rate)
{
        /* this VM at the default rate, and at perf's: the floor */
        cr_expect_eq(ring(2, 99, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 0), 8 * MIB);
        cr_expect_eq(ring(2, 4000, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 0), 8 * MIB);
        /* 16 CPUs x 4000 Hz x 512 B = 31.25 MiB: 8 MiB held a quarter of a second of it */
        cr_expect_eq(ring(16, 4000, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 0), 32 * MIB);
        cr_expect_eq(ring(64, 999, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 0), 32 * MIB);
        /* 192 CPUs x 4999 Hz: the ceiling */
        cr_expect_eq(ring(192, 4999, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 0), 128 * MIB);
}

Test(ring_size, stack_copies_and_offcpu)
{
        cr_expect_eq(ring(2, 99, SAMPLER_CG_DWARF_COPY, SAMPLER_EV_CPU_CLOCK, 0), 32 * MIB);
        cr_expect_eq(ring(16, 999, SAMPLER_CG_DWARF_COPY, SAMPLER_EV_CPU_CLOCK, 0), 128 * MIB);
        /* off-CPU intervals only: no rate to size by */
        cr_expect_eq(ring(192, 4999, SAMPLER_CG_FP, SAMPLER_EV_OFFCPU, 0), 8 * MIB);
}

Test(ring_size, explicit_size_rounded_up)
{
        size_t page = (size_t)sysconf(_SC_PAGESIZE);

        cr_expect_eq(ring(192, 4999, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 3 * MIB), 4 * MIB);
        cr_expect_eq(ring(2, 99, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 512 * MIB), 512 * MIB);
        cr_expect_eq(ring(2, 99, SAMPLER_CG_FP, SAMPLER_EV_CPU_CLOCK, 1), page);
}

/* SPDX-License-Identifier: MIT */
/*
 * sample_rate.h — the highest sampling frequency ctxprof accepts on this host. Owns the rule;
 * never opens an event, never prints.
 *
 * The rule: one consumer thread handles every sample of the host, so what it can carry is a
 * host-wide rate, shared by the CPUs: SAMPLE_RATE_HOST_FP samples per second with frame
 * pointers, SAMPLE_RATE_HOST_DWARF with DWARF (each sample copies 16 KiB of stack in the
 * interrupt and costs the consumer an unwind). A frequency above host rate / online CPUs is
 * lowered to it (the caller says so); one above the kernel's perf_event_max_sample_rate is
 * refused by the caller, as perf_event_open would.
 */
#ifndef CTXPROF_SAMPLE_RATE_H
#define CTXPROF_SAMPLE_RATE_H

#define SAMPLE_RATE_HOST_FP    100000u /* samples/s, all CPUs, --call-graph fp */
#define SAMPLE_RATE_HOST_DWARF 20000u  /* samples/s, all CPUs, --call-graph dwarf */
#define SAMPLE_RATE_MIN_CAP    100u    /* never capped below this per CPU */

/* The highest per-CPU frequency for this call graph mode (enum sampler_callgraph) on ncpu
 * online CPUs (0 = ask sysconf). Every mode but fp takes SAMPLE_RATE_HOST_DWARF, the
 * in-kernel unwinder's `dwarf` too though it copies no stack (the rule predates it). */
unsigned sample_rate_cap(int call_graph, unsigned ncpu);

#endif

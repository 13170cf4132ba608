/* SPDX-License-Identifier: MIT */
/*
 * engine/sampler_counters.h — the sampler's statistics read from the kernel (see
 * sampler_counters.c): costly, so read only when used. Never prints.
 */
#ifndef CTXPROF_SAMPLER_COUNTERS_H
#define CTXPROF_SAMPLER_COUNTERS_H

#include <stdint.h>

#include "engine/sampler.h"

/* The BPF counters (bpf/sampler.bpf.c, ctxprof/sample.h CTXPROF_CNT_*) of ncpu CPUs summed
 * into out's kernel-side fields; out is unchanged when the map cannot be read. */
void sampler_counters_read(int counters_fd, int ncpu, struct sampler_stats *out);
/* A program's run time and runs (0/0 unless kernel.bpf_stats_enabled=1). 0, or -1 (unchanged). */
int bpf_prog_run_time(int prog_fd, uint64_t *run_ns, uint64_t *run_cnt);
/* Instructions the verifier processed for prog_fd (0 when the kernel does not say): its work
 * at load, as a count (kernel CPU time varies with the host). */
uint32_t bpf_prog_verified_insns(int prog_fd);
/* Entries of a BPF hash map keyed by __u32 (walks it). */
unsigned bpf_map_count_u32(int fd);

#endif

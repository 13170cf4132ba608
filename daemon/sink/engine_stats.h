/* SPDX-License-Identifier: MIT */
/*
 * engine_stats.h — the sampler's counters as the JFR statistics event (ctxprof.Statistics)
 * reports them, for `record` and the daemon alike. Never prints.
 */
#ifndef CTXPROF_ENGINE_STATS_H
#define CTXPROF_ENGINE_STATS_H

#include "sink/jfr_sink.h"
#include "engine/sampler.h"

/* Cumulative since the sampler started. bpf_ns_per_sample is the kernel's run time of the
 * sampling program (every invocation, other processes' filtered-out samples included)
 * divided by the samples it recorded: what one recorded sample costs in BPF, all in; 0 when
 * the kernel keeps no run-time stats (kernel.bpf_stats_enabled=0, the default). */
void engine_stats_get(struct sampler *s, struct jfr_sink_engine_counters *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * engine_stats.c — sampler counters -> struct jfr_sink_engine_counters (see engine_stats.h).
 * Owns no state; never prints.
 */
#include "sink/engine_stats.h"

void engine_stats_get(struct sampler *s, struct jfr_sink_engine_counters *out)
{
        struct sampler_stats st;

        sampler_get_stats(s, &st);
        *out = (struct jfr_sink_engine_counters){
            /* what reached the sink: not the samples held back before a location, nor those
             * the context filter dropped */
            .samples = st.received - st.ctx_missing.pending - (st.filtered - st.filtered_in_kernel),
            .filtered = st.filtered,
            .lost = st.lost,
            .torn_span_reads = st.ctx.torn_spans,
            .label_faults = st.label_faults + st.labelset_faults,
            .unwind_errors = st.unwind_errors,
            .bpf_ns_per_sample = st.bpf_run_cnt && st.samples ? st.bpf_run_ns / st.samples : 0,
            .ctx_missing =
                {
                    [JFR_CTX_MISSING_PENDING] = st.ctx_missing.pending,
                    [JFR_CTX_MISSING_STALE] = st.ctx_missing.stale,
                    [JFR_CTX_MISSING_NOT_LOCATED] = st.ctx_missing.not_located,
                    [JFR_CTX_MISSING_NO_TP] = st.ctx_missing.no_tp,
                    [JFR_CTX_MISSING_NO_STORAGE] = st.ctx_missing.unreachable,
                    [JFR_CTX_MISSING_READ_FAULT] = st.ctx_missing.read_fault,
                    [JFR_CTX_MISSING_NOT_SET] = st.ctx_missing.not_set,
                },
        };
}

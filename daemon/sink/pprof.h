/* SPDX-License-Identifier: MIT */
/*
 * pprof.h — the pprof output (`--format pprof`, `-o FILE.pb.gz`): a gzip'd profile.proto
 * (github.com/google/pprof/proto/profile.proto, encoded with protobuf-c) written from the
 * collapsed aggregation table (sink/collapsed.h, created with span_frames so the span is
 * part of the key): one Sample per distinct (process, thread, labels, span, stack) with
 * values [samples/count, cpu/nanoseconds = count * period]. Sample labels: `process`,
 * `thread`, `span_id` (16 hex digits, when the sample had a span), one string label per
 * context label key, and the numeric `pid`. Mappings carry the module path and build id;
 * functions and file:line come from the symbolizer (inline frames as extra Lines); a frame
 * it cannot name is a Location with its mapping and address only. Never prints except to the
 * FILE given to pprof_write.
 */
#ifndef CTXPROF_PPROF_H
#define CTXPROF_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "sink/collapsed.h"
#include "stack/modules.h"

struct pprof_meta {
        uint64_t period_ns;   /* nanoseconds of CPU one sample stands for (1e9 / freq) */
        uint64_t start_ns;    /* wall clock (CLOCK_REALTIME) when recording started */
        uint64_t duration_ns; /* length of the recording */
        /* 1: only the samples whose pid is pid (0: those counted under no process); a
         * Pyroscope upload of a host file sends one profile per process (service/uploader.c) */
        int by_pid;
        uint32_t pid;
};

/* Writes the whole profile, gzip'd. mods may be NULL (nothing symbolized).
 * 0 or -errno (-ENOMEM, -EIO on a write or compression error). */
int pprof_write(const struct collapsed *c, FILE *out, struct modules *mods,
                const struct pprof_meta *meta);
struct frame_names;
/* The same with frames named by names (sink/frame_names.h). */
int pprof_write_named(const struct collapsed *c, FILE *out, const struct frame_names *names,
                      const struct pprof_meta *meta);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * sample_sink.h — the seam between ingestion (engine/sampler_ingest.c: ring record -> decoded
 * sample with (module, offset) frames, tid, span, labels) and output (sink/collapsed.c, and
 * sink/jfr_sink.c through the trace table, alone or per file in service/recording_set.c). A
 * sink only sees decoded, validated data; it never sees raw BPF records and never touches the
 * target process. Declarations and one forwarder.
 */
#ifndef CTXPROF_SAMPLE_SINK_H
#define CTXPROF_SAMPLE_SINK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stack/frame.h"
#include "ctxprof/sample.h"

/* A label after the Custom Labels v1 reader rules (see context_decode.h). Not terminated. */
struct decoded_label {
        const char *key;
        size_t key_len;
        const char *value;
        size_t value_len;
        int value_truncated; /* value was longer than the cap and was cut at a UTF-8 boundary */
};

/* A process's OpenTelemetry resource (OTEP 4719 process context), strings not sanitized. */
struct decoded_resource {
        uint64_t version; /* changes when the process publishes a new one */
        unsigned n;
        char *const *keys, *const *values;
};

/* One sample, valid only for the duration of the sink callback. */
struct decoded_sample {
        pid_t pid; /* tgid as the daemon sees it (its PID namespace: BPF translates) */
        pid_t tid;
        uint32_t cpu;
        uint64_t time_ns;    /* CLOCK_MONOTONIC */
        const char *comm;    /* thread name at sample time */
        const char *process; /* process name: the OpenTelemetry resource's service.name when
                              * the process publishes one, else comm at first sight / exec */
        const char *service; /* that service.name, NULL when none (file names) */
        const char *image;   /* the process's own name (comm at first sight / exec), never
                              * its service: a change means a new image */
        uint64_t start;      /* the process's start time (clock ticks since boot, field 22 of
                              * /proc/PID/stat: its identity, util/proc_pin.h), 0 = unknown */
        const struct decoded_resource *resource; /* the process's resource, NULL = none */
        int has_span;                            /* checksum valid */
        uint64_t span_id;
        uint64_t root_span_id;
        unsigned n_labels;
        struct decoded_label labels[CTXPROF_MAX_LABELS];
        /* Leaf first: kernel frames (CTXPROF_FRAME_KERNEL) then user frames. */
        const struct ctxprof_frame *frames;
        unsigned n_frames;
        int truncated; /* the unwinder stopped before the outermost frame */
        /* Off-CPU interval (--event off-cpu / wall) instead of a CPU sample: time_ns is when
         * the thread blocked, the frames where it blocked (kernel frames first). */
        int off_cpu;
        uint64_t duration_ns; /* blocked until it ran again (run-queue delay included) */
        uint64_t runq_ns;     /* of that, runnable but waiting for a CPU */
        uint32_t off_state;   /* the task state it blocked in (1 = S, 2 = D, ...) */
};

/* A sink's return value above 0: the sample was taken, but these parts of it were refused
 * because its process had used its share of a bounded store (the caller counts them per
 * process; docs/daemon.md, "Memory bounds"). */
#define SAMPLE_SINK_STACK_REFUSED  0x1 /* a new stack: written as "[unknown stack]" */
#define SAMPLE_SINK_LABELS_REFUSED 0x2 /* a new label set: written without labels */
#define SAMPLE_SINK_THREAD_REFUSED 0x4 /* a new thread: written as its process's main thread */

struct sample_sink {
        void *ctx;
        /* 0, SAMPLE_SINK_*_REFUSED bits, or -errno; an error is counted by the caller and never
         * stops ingestion. */
        int (*sample)(void *ctx, const struct decoded_sample *s);
};

/*
 * A sink that passes every sample on to the sink ctx points to (a const struct sample_sink
 * *), read at each sample: for a sampler created before its output exists, or whose output
 * is replaced while it runs. While that sink has no callback the sample is lost, and it says
 * so with -ENODEV: the sampler then counts it (sink_errors) instead of taking it as written.
 */
static inline int sample_sink_forward(void *ctx, const struct decoded_sample *s)
{
        const struct sample_sink *to = ctx;

        return to->sample ? to->sample(to->ctx, s) : -ENODEV;
}

#endif

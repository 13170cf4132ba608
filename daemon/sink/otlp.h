/* SPDX-License-Identifier: MIT */
/*
 * otlp.h — the OTLP profiles output (`--format otlp`, `-o FILE.otlp`): one binary
 * `ExportProfilesServiceRequest` (opentelemetry-proto profiles v1development, v1.11; the
 * upstream schema in proto/otel/opentelemetry/, encoded with protobuf-c), written from the
 * collapsed aggregation table (sink/collapsed.h, created with span_frames so the span is
 * part of the key), the body an OTLP/HTTP receiver takes at /v1development/profiles.
 *
 * Layout: one ResourceProfiles per process (resource attributes `service.name` = the
 * process name — its OpenTelemetry service.name when it publishes one — and `process.pid`
 * (left out when 0: samples of no one process), or what otlp_meta says for every resource
 * or for this process, then otlp_meta's string attributes),
 * each with one ScopeProfiles (scope `ctxprof`) holding one Profile: sample type
 * samples/count, period type cpu/nanoseconds, `period` = ns per sample, the recording's time
 * range. One Sample per distinct (thread, labels, span, stack) with values [count]; its
 * attributes: `thread.name`, one string attribute per context label; an OpenTelemetry
 * trace context (labels trace_id and span_id) becomes the sample's Link, a span without a
 * trace id the attribute `span_id` (16 hex digits). The shared ProfilesDictionary holds
 * every table with its zero value at index 0: mappings (file name, attribute
 * `process.executable.build_id.gnu`), locations (mapping, module-relative address, lines
 * innermost first, attribute `profile.frame.type` native/kernel), functions (name, file),
 * stacks (leaf first; `[truncated]` / `[no stack]` pseudo frames at the root end as in
 * pprof), links, attributes, strings. Never prints except to the FILE given.
 */
#ifndef CTXPROF_OTLP_H
#define CTXPROF_OTLP_H

#include <stdint.h>
#include <stdio.h>

#include "sink/collapsed.h"
#include "stack/modules.h"

#define OTLP_RESOURCE_ATTRS_MAX 24 /* string attributes added to every resource */

/* More of every resource: string attributes (host.name, container.id, the user's tags...). */
struct otlp_resource_attrs {
        unsigned n; /* at most OTLP_RESOURCE_ATTRS_MAX */
        const char *key[OTLP_RESOURCE_ATTRS_MAX], *value[OTLP_RESOURCE_ATTRS_MAX];
};

/* What one resource says: service.name, process.pid (0: not written) and more attributes. */
struct otlp_resource {
        const char *service;
        int64_t pid;
        const struct otlp_resource_attrs *attrs; /* NULL: none */
};

struct otlp_meta {
        uint64_t period_ns;   /* nanoseconds of CPU one sample stands for (1e9 / freq) */
        uint64_t start_ns;    /* wall clock (CLOCK_REALTIME) when recording started */
        uint64_t duration_ns; /* length of the recording */
        const char *service;  /* service.name of every resource; NULL: the process's name */
        int64_t pid;          /* process.pid of every resource; 0: the process's own */
        const struct otlp_resource_attrs *attrs; /* NULL: none */
        /* Optional: the resource of the samples of process pid (a host recording split by
         * process); NULL from it, or no function: service, pid and attrs above */
        const struct otlp_resource *(*resource_of)(void *ctx, uint32_t pid);
        void *resource_ctx;
};

struct frame_names;

/* Writes the whole request (not compressed), frames named by names (sink/frame_names.h).
 * 0 or -errno (-ENOMEM, -EIO on a write error). */
int otlp_write(const struct collapsed *c, FILE *out, const struct frame_names *names,
               const struct otlp_meta *meta);
/* The same with frames named by a symbolizer over mods (NULL: nothing named). */
int otlp_write_symbolized(const struct collapsed *c, FILE *out, struct modules *mods,
                          const struct otlp_meta *meta);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * otel_libctx_writer.c — the otel_spec_writer.h interface implemented with libctx's public
 * API (ctx_set_trace, ctx_register_key, ctx_set_attr), so that wl_otel.c runs unchanged on
 * libctx's OWN OpenTelemetry writer (the end-to-end test, tests/integration/test_otel_libctx.sh).
 * The process context is libctx's: created when the library loads, service.name from
 * OTEL_SERVICE_NAME, the key map from the keys registered here. Only the well-formed paths
 * exist: the hostile records and publications are the spec writer's job (they abort here).
 * WL_OTEL_UNIQUE=1: every call publishes a new trace and span id (the workload's ids with a
 * per-thread request counter in their last bytes), as a server does per request (the JFR
 * size measurement of bench/bench_otel_jfr_size.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/ctx.h"
#include "otel_spec_writer.h"

#define WL_MAX_KEYS 16

static int key_index[WL_MAX_KEYS]; /* the workload's key number -> libctx's key index */

static uint64_t be64(const uint8_t b[8])
{
        uint64_t v = 0;

        for (int i = 0; i < 8; i++)
                v = v << 8 | b[i];
        return v;
}

static void check(int rc, const char *what)
{
        if (rc < 0) {
                fprintf(stderr, "otel_libctx_writer: %s: %d\n", what, rc);
                abort();
        }
}

/* The protocol is libctx's own: the workload's choice does not apply. */
void otelw_set(int protocol, const uint8_t trace_id[16], const uint8_t span_id[8],
               const struct otelw_attr *a, unsigned n)
{
        static int unique = -1;
        static __thread uint64_t request;
        uint8_t trace[16];
        uint64_t span = be64(span_id);

        (void)protocol;
        if (unique < 0)
                unique = getenv("WL_OTEL_UNIQUE") != NULL;
        memcpy(trace, trace_id, sizeof(trace));
        if (unique) {
                request++;
                for (int i = 0; i < 8; i++)
                        trace[8 + i] ^= (uint8_t)(request >> (8 * (7 - i)));
                span ^= request;
        }
        check(ctx_set_trace(trace, span, 0, 1), "ctx_set_trace");
        check(ctx_clear_labels(), "ctx_clear_labels");
        for (unsigned i = 0; i < n; i++) /* a repeated key: the later value replaces */
                check(ctx_set_attr(key_index[a[i].key], a[i].val, a[i].len), "ctx_set_attr");
}

void otelw_clear(void)
{
        check(ctx_clear_trace(), "ctx_clear_trace");
        check(ctx_clear_labels(), "ctx_clear_labels");
}

void otelw_set_raw(const void *rec, size_t len)
{
        (void)rec;
        (void)len;
        abort();
}

void otelw_set_ptr(void *p)
{
        (void)p;
        abort();
}

/* Registers the keys (libctx republishes its process context); the service name is left to
 * OTEL_SERVICE_NAME. Only a good memfd publication exists in libctx. */
int otelw_publish_process(int kind, int bad, const char *service, const char *const *keys,
                          unsigned nkeys)
{
        (void)service;
        if (kind != OTELW_PCTX_MEMFD || bad != OTELW_PCTX_GOOD || nkeys > WL_MAX_KEYS)
                abort();
        for (unsigned i = 0; i < nkeys; i++) {
                key_index[i] = ctx_register_key(keys[i], strlen(keys[i]));
                check(key_index[i], "ctx_register_key");
        }
        return 0;
}

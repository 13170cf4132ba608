/* SPDX-License-Identifier: MIT */
/*
 * otel_spec_writer.h — a writer of the OpenTelemetry thread context (OTEP 4947,
 * otel_thread_ctx_v1) and process context (OTEP 4719, the OTEL_CTX mapping) written from the
 * specs alone, without libctx, so that ctxprof's reader is tested against the standard and
 * not against our own library. Built into an executable, a TLSDESC shared library, a legacy
 * general-dynamic shared library, or dlopen'ed (tests/workloads/wl_otel.c).
 *
 * Every function is for the calling thread (thread context) or the whole process (process
 * context); none allocates on the thread-context path; all are test code and may abort.
 */
#ifndef OTEL_SPEC_WRITER_H
#define OTEL_SPEC_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define OTELW_REC_MAX   640 /* the OTEP's budget for one record */
#define OTELW_HDR_BYTES 28  /* trace_id, span_id, valid, trace_flags, attrs_data_size */

struct otelw_attr {
        uint8_t key; /* index into threadlocal.attribute_key_map */
        const char *val;
        uint8_t len;
};

/* How a thread publishes a new record: build it beside the live one and swap the TLS pointer
 * (OTELW_SWAP), or clear `valid`, rewrite the record in place and set it again (OTELW_FLIP;
 * OTELW_FLIP_SLOW spins ~20 us after the new trace id is written and before the rest, so
 * that readers often find a half-written record marked invalid). */
enum otelw_protocol { OTELW_SWAP = 0, OTELW_FLIP = 1, OTELW_FLIP_SLOW = 2 };

/* Publish trace/span/attributes for the calling thread. */
void otelw_set(int protocol, const uint8_t trace_id[16], const uint8_t span_id[8],
               const struct otelw_attr *a, unsigned n);
/* Hostile: publish len raw bytes as the record (valid and sizes as the caller made them). */
void otelw_set_raw(const void *rec, size_t len);
/* Hostile: point otel_thread_ctx_v1 at p (a wild pointer). */
void otelw_set_ptr(void *p);
/* No context on this thread (NULL pointer). */
void otelw_clear(void);

/* How the process context is published. */
enum otelw_pctx_kind {
        OTELW_PCTX_MEMFD = 0, /* memfd "OTEL_CTX" (/memfd:OTEL_CTX in maps) */
        OTELW_PCTX_ANON = 1,  /* anonymous memory named with PR_SET_VMA_ANON_NAME */
};
/* Hostile variants of a publication. */
enum otelw_pctx_bad {
        OTELW_PCTX_GOOD = 0,
        OTELW_PCTX_CORRUPT = 1, /* the payload is not a valid protobuf */
        OTELW_PCTX_HUGE = 2,    /* payload_size = 2^31 */
        OTELW_PCTX_DEEP = 3,    /* an attribute nested 30 000 arrays deep (~240 KB) */
};
/* (Re)publish the process context with the OTEP's seqlock: resource service.name (and
 * service.version), threadlocal.schema_version, threadlocal.attribute_key_map = keys.
 * The first call creates the mapping; later calls update it in place. 0 or -errno. */
int otelw_publish_process(int kind, int bad, const char *service, const char *const *keys,
                          unsigned nkeys);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * otel_decode.h — the OpenTelemetry thread context record (OTEP 4947, otel_thread_ctx_v1) as
 * BPF copied it into a sample record, validated by the OTEP's reader rules, and turned into
 * the sample's labels with the key names of the process context (engine/otel_process_ctx.h):
 *   record:     valid must be 1 (else: being updated, no context, counted); a trace id or
 *               span id of all zeros means no span is active (W3C: invalid ids): no trace,
 *               no span, but the attributes still apply (counted zero_ids; a zero-id record
 *               without attributes is no context); trace_flags (byte 25) is never required;
 *   attributes: attrs_data_size over the 640-byte budget keeps the complete entries within
 *               the budget (BPF copies that much) and leaves out the one cut at its end
 *               (OTEP 4947 allows it; counted oversized); an entry whose header or value goes
 *               past an attrs_data_size within the budget drops every attribute of the
 *               record (the entries after a bad one cannot be parsed, and one of them could
 *               be the last, winning, duplicate of an earlier key) but keeps trace and span;
 *               for duplicate key indexes the *last* entry wins; a key index the key map
 *               does not name is dropped (the caller re-reads the process context first);
 *   labels:     trace_id (32 lowercase hex digits), span_id (16) when the ids are not zero,
 *               then one label per attribute, named by the key map; values cut to their
 *               longest valid UTF-8 prefix (the label-bytes rule of docs/jfr.md). Labels
 *               past the sample's slots are dropped. Every drop is counted.
 *   root span:  an attribute whose key is datadog.local_root_span_id (Datadog's tracers put
 *               it at key index 0) with 16 lowercase hex digits is the sample's local root
 *               span id (and stays a label); any other value is counted root_span_bad.
 * Pure functions: never reads the target, never allocates, never prints.
 */
#ifndef CTXPROF_OTEL_DECODE_H
#define CTXPROF_OTEL_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "ctxprof/sample.h"
#include "engine/record_view.h"
#include "engine/sample_sink.h"

#define OTEL_TRACE_ID_BYTES 16
#define OTEL_SPAN_ID_BYTES  8
#define OTEL_MAX_KEYS       256 /* key indexes are one byte */
#define OTEL_HEX_BYTES      (2 * (OTEL_TRACE_ID_BYTES + OTEL_SPAN_ID_BYTES))
#define OTEL_DD_ROOT_KEY    "datadog.local_root_span_id" /* Datadog's key 0 */
#define OTEL_DD_ROOT_HEX    16                           /* its value: lowercase hex digits */

struct otel_attr {
        uint8_t key; /* index into threadlocal.attribute_key_map */
        uint8_t len;
        const uint8_t *val; /* into the sample record */
};

/* One validated record; attrs[] hold the winning entry of each key index, in no order. */
struct otel_ctx {
        uint8_t trace_id[OTEL_TRACE_ID_BYTES];
        uint8_t span_id[OTEL_SPAN_ID_BYTES];
        uint8_t trace_flags;
        int no_ids; /* trace or span id all zeros: no span active, attributes only */
        uint64_t local_root_span_id; /* otel_labels: Datadog's key, 0 = none */
        unsigned n_attrs;
        struct otel_attr attrs[OTEL_MAX_KEYS];
        char hex[OTEL_HEX_BYTES]; /* otel_labels: trace then span id in hex (not terminated) */
};

struct otel_decode_stats {
        uint64_t records;          /* valid records (trace and span delivered) */
        uint64_t not_valid;        /* valid != 1: being updated or cleared (no context) */
        uint64_t zero_ids;         /* valid, but an all-zero trace or span id: no trace or
                                    * span (the attributes are kept) */
        uint64_t oversized;        /* attrs_data_size past the budget: the entries past it
                                    * dropped */
        uint64_t root_span_bad;    /* datadog.local_root_span_id not 16 lowercase hex */
        uint64_t malformed;        /* an entry past attrs_data_size: attributes dropped */
        uint64_t duplicates;       /* entries overridden by a later one with the same key */
        uint64_t unknown_keys;     /* attributes whose key index the key map does not name */
        uint64_t values_truncated; /* values cut at their first byte that is not UTF-8 */
        uint64_t labels_dropped;   /* attributes past the sample's label slots, or named
                                    * like trace_id / span_id */
        uint64_t shadowed;         /* samples whose Custom Labels / span record were set
                                    * too, and not shown (docs/jfr.md, "Context sources") */
};

/* 1 and *out filled when v's record carries a valid OTel record (with ids, or zero ids and
 * attributes), else 0 (counted). */
int otel_decode(const struct record_view *v, struct otel_ctx *out, struct otel_decode_stats *st);

/* The span id as a number whose hex digits are the span id's (big-endian). */
uint64_t otel_span_u64(const struct otel_ctx *c);

/*
 * The record as labels: out[0..max) gets trace_id, span_id and the attributes whose key
 * index is below n_keys and names a key (keys[i] NULL: not a usable key name). Pointers go
 * into c (hex ids), keys[] and the record. Sets c->local_root_span_id. Returns the number of
 * labels.
 */
unsigned otel_labels(struct otel_ctx *c, const char *const *keys, unsigned n_keys,
                     struct decoded_label *out, unsigned max, struct otel_decode_stats *st);

/* 1 if some attribute of c has a key index >= n_keys (the key map may be out of date). */
int otel_has_unknown_key(const struct otel_ctx *c, unsigned n_keys);

#endif

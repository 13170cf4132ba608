/* SPDX-License-Identifier: MIT */
/*
 * context_decode.h — turns the raw context bytes of a sample record (span record, Custom
 * Labels v1 entries copied by the BPF program) into validated context, following the
 * readers' rules of the specs, not our writer's habits:
 *   span:   accepted only when checksum != 0 and checksum == ctx_span_checksum(span, root);
 *           all-zero = never set (not torn); anything else = torn read (no span, counted).
 *   labels: NULL key skipped; first duplicate key wins (keys compared as full byte strings);
 *           the label-bytes rule of every output (docs/jfr.md, "Label bytes"): a key that is
 *           empty, longer than CTXPROF_LABEL_KEY_MAX, not valid UTF-8 or holds a NUL is
 *           dropped (a cut or repaired key would be a different key); a value is cut at
 *           CTXPROF_LABEL_VAL_MAX and at its first byte that is not valid UTF-8 or is NUL
 *           (longest valid prefix, on a character boundary); NULL value buffers and read
 *           faults drop the label. Everything dropped or cut is counted.
 * Pure functions: never reads the target, never allocates, never prints.
 */
#ifndef CTXPROF_CONTEXT_DECODE_H
#define CTXPROF_CONTEXT_DECODE_H

#include <stdint.h>

#include "ctxprof/sample.h"
#include "engine/record_view.h"
#include "engine/sample_sink.h"

struct context_decode_stats {
        uint64_t spans;            /* valid spans */
        uint64_t torn_spans;       /* checksum 0 or mismatch (not all-zero) */
        uint64_t labels;           /* labels delivered */
        uint64_t null_keys;        /* skipped: key.buf == NULL */
        uint64_t duplicates;       /* skipped: a key seen earlier in the set */
        uint64_t dropped;          /* faults, NULL values, over-long or invalid keys */
        uint64_t values_truncated; /* values cut to the cap / a UTF-8 boundary */
        uint64_t sets_cut;         /* labelsets with more entries than CTXPROF_MAX_LABELS */
};

/*
 * A Go tracer's span among a goroutine's labels (docs/go.md): "span_id" as 16 hex digits
 * (OpenTelemetry's hex form, as Pyroscope's otel-profiling-go sets it), else "span id" as a
 * decimal number with "local root span id" beside it (dd-trace-go). 1 and *span (a non-zero
 * id), *root (0 when absent or unreadable) set, else 0.
 */
int context_go_span(const struct decoded_label *l, unsigned n, uint64_t *span, uint64_t *root);

/* 1 and *span, *root set when r holds a valid span record, else 0 (torn counted). */
int context_decode_span(const struct ctxprof_sample_rec *r, uint64_t *span, uint64_t *root,
                        struct context_decode_stats *st);

/* Fills out[0..n) with pointers into v's record; returns n (<= CTXPROF_MAX_LABELS). A read
 * entry whose copied bytes are not its lengths up to the caps is dropped. */
unsigned context_decode_labels(const struct record_view *v, struct decoded_label *out,
                               struct context_decode_stats *st);

/* 1 if l is one of libctx's span mirror labels (span-id / root-span-id, decimal) and says
 * exactly what ds's validated span record says. Outputs drop those: they carry the span
 * already, and a per-request label would make every request's context distinct. A mirror
 * without a valid span, or one that disagrees with it, is not a mirror (0). */
int context_is_span_mirror(const struct decoded_sample *ds, const struct decoded_label *l);

/* Length of the longest prefix of s[0..len) that is valid UTF-8 without NUL. */
size_t utf8_valid_prefix(const unsigned char *s, size_t len);

#endif

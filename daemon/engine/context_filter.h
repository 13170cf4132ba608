/* SPDX-License-Identifier: MIT */
/*
 * context_filter.h — which decoded samples a recording keeps, by their context (the seed
 * JEP's hasContext / hasNoContext / hasKey / hasEntry). Applied by engine/sampler_ingest.c
 * right after a sample's context is decoded, before its stack is built or a sink sees it, so
 * a sample filtered out costs no unwinding and no storage (it is counted instead).
 *
 * Syntax: a filter is one or more terms separated by ',' (all must match: AND); adding
 * more filters to the same struct ANDs them too. A term is
 *   has-context      the sample has a valid span or at least one label
 *   has-no-context   it has neither
 *   KEY              it has a label KEY (any value)
 *   KEY=VALUE        it has a label KEY whose value is exactly VALUE
 *   !KEY, !KEY=VALUE the negation (no label KEY; no label KEY with that value)
 * Keys are label keys as decoded: Custom Labels keys, OpenTelemetry attribute names,
 * trace_id and span_id (OpenTelemetry: 32 / 16 lowercase hex). span_id also matches a
 * span record's valid span id (16 lowercase hex) when no label is named span_id. There is no
 * OR; a value cannot hold ','. Values are compared as decoded (after the label-bytes rule).
 * Pure functions: never allocates, never prints.
 */
#ifndef CTXPROF_CONTEXT_FILTER_H
#define CTXPROF_CONTEXT_FILTER_H

#include "ctxprof/sample.h"
#include "engine/sample_sink.h"

#define CONTEXT_FILTER_MAX_TERMS 16

enum context_filter_kind {
        CONTEXT_FILTER_HAS_CONTEXT = 1,
        CONTEXT_FILTER_HAS_NO_CONTEXT,
        CONTEXT_FILTER_HAS_KEY,
        CONTEXT_FILTER_HAS_ENTRY,
};

struct context_filter_term {
        int kind;   /* enum context_filter_kind */
        int negate; /* '!': the term must not hold */
        unsigned key_len, value_len;
        char key[CTXPROF_LABEL_KEY_MAX + 1];
        char value[CTXPROF_LABEL_VAL_MAX + 1];
};

/* Zero-initialised = no terms = every sample kept. */
struct context_filter {
        unsigned n;
        struct context_filter_term t[CONTEXT_FILTER_MAX_TERMS];
};

/* Adds the terms of spec to f. 0; -EINVAL a bad term (*why says what, may be NULL), -E2BIG
 * more than CONTEXT_FILTER_MAX_TERMS in all. On error f is unchanged. */
int context_filter_add(struct context_filter *f, const char *spec, const char **why);

/* 1 when a sample without any context (no span, no label) fails f: some term needs a span
 * or a label (has-context, KEY, KEY=VALUE, !has-no-context). Then BPF drops the samples that
 * read no context source at all, before they take ring space. */
int context_filter_needs_context(const struct context_filter *f);

/* 1 when s passes every term of f (always with no terms), else 0. */
int context_filter_match(const struct context_filter *f, const struct decoded_sample *s);

#endif

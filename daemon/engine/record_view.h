/* SPDX-License-Identifier: MIT */
/*
 * record_view.h — a sample ring record (ctxprof/sample.h: a head, then variable-length parts)
 * split into its parts. Every count and length in the record is checked against the caps of
 * ctxprof/sample.h and the record's size before any part is pointed at: a record holds
 * lengths read from target memory, and the parts must tile the record exactly. Pure
 * function: never allocates, never copies, never prints.
 */
#ifndef CTXPROF_RECORD_VIEW_H
#define CTXPROF_RECORD_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ctxprof/sample.h"

/* One labelset entry: its head and the bytes that follow it in the record. */
struct record_label {
        const struct ctxprof_label_rec *h;
        const uint8_t *key; /* h->key_bytes bytes */
        const uint8_t *val; /* h->val_bytes bytes */
};

struct record_view {
        const struct ctxprof_sample_rec *r;
        const struct ctxprof_sample_copy_rec *copy; /* CTXPROF_REC_SAMPLE_COPY, else NULL */
        const struct ctxprof_offcpu_rec *off;       /* CTXPROF_REC_OFFCPU, else NULL */
        const uint64_t *ustack;                     /* n_ustack ips, leaf first */
        const uint64_t *kstack;                     /* n_kstack ips, leaf first */
        unsigned n_ustack, n_kstack, n_labels;
        struct record_label labels[CTXPROF_MAX_LABELS];
        const uint8_t *otel; /* otel_len bytes (0: none) */
        size_t otel_len;
        const uint8_t *stack; /* copy: stack_len bytes copied from the sampled sp */
        size_t stack_len;
};

/* Splits the size bytes at data (8-byte aligned, as ring records are) into *v. 0, or
 * -EBADMSG when the record is not a sample record whose parts tile it within the caps. */
int record_view_parse(const void *data, size_t size, struct record_view *v);

#endif
